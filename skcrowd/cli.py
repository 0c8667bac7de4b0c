"""The ``skcrowd`` command line: aggregate a ratings file, list raters, demo.

    skcrowd aggregate ratings.csv --model dawid-skene -o truth.csv
    skcrowd raters ratings.csv --model dawid-skene
    skcrowd demo

Input is a long-form CSV with one rating per row (columns ``item, rater,
label``, or crowd-kit's ``task, worker, label``; other names set with
``--item/--rater/--label``).  Progress goes to stderr.  ``aggregate``
writes item, label, then ``probability`` (the posterior probability of
that label) for the models that output a class, or ``std`` for those that
output a number (MeanRating, MedianRating: the standard error of the mean
of the item's ratings; OrdinalMixture: the posterior standard deviation of
the item's value), then ``p_<class>`` for every class.
"""

import argparse
import csv
import io
import os
import sys
import warnings
from time import perf_counter

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import __version__
from ._baselines import MajorityVote, MeanRating, MedianRating
from ._dawid_skene import DawidSkene
from ._glad import GLAD
from ._irt import IRT3PL
from ._mace import MACE
from ._ordinal import OrdinalMixture
from ._ratings import Ratings, default_id_columns

#: command-line model names -> estimator factories
MODELS = {
    "majority-vote": MajorityVote,
    "mean": MeanRating,
    "median": MedianRating,
    "dawid-skene": DawidSkene,
    "one-coin": lambda: DawidSkene(confusion="one_coin"),
    "glad": GLAD,
    "irt3pl": IRT3PL,
    "mace": MACE,
    "ordinal": OrdinalMixture,
}


#: label cells read as *not rated*: pandas.read_csv's default missing
#: markers (``na_values``), so that a file written by pandas or R (``NA``)
#: reads as it does in pandas; ``--missing`` replaces the list, and an empty
#: cell is always missing.
MISSING_MARKERS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                   "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None",
                   "n/a", "nan", "null")


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _show_warning(message, category, *args, **kwargs):
    """A warning on one line of stderr, without Python's file, line and
    source text (``warnings.showwarning`` inside :func:`main`)."""
    _log(f"skcrowd: warning: {' '.join(str(message).split())}")


def _read_ratings(path, item, rater, label, missing=MISSING_MARKERS):
    """The ratings of a long-form CSV file (``-``: standard input), read as
    UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8").

    A label cell in ``missing`` (stripped of spaces) is not a rating, but
    the row's item and rater are kept, as ``Ratings.from_long`` keeps them
    for a missing label; a row with every field blank (the trailing rows of
    a spreadsheet's export) is skipped.  Returns the ratings and the count of
    each marker read as missing."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        f = (io.TextIOWrapper(stdin, encoding="utf-8-sig", newline="") if stdin is not None
             else sys.stdin)
    else:
        f = open(path, encoding="utf-8-sig", newline="")
    name = "standard input" if path == "-" else path
    missing = frozenset(missing) | {""}
    try:
        # csv.reader and three lists, not a dict per row: a million rows in
        # 0.4 s instead of 3.2 s (DictReader, then arrays from the row tuples)
        # skipinitialspace: "photo1, ann, cat" (a space after each comma, as
        # people type a CSV) has the label "cat", not a class " cat" beside
        # the "cat" of rows without the space
        reader = csv.reader(f, skipinitialspace=True)
        header = next(reader, None)
        if header is None:
            raise SystemExit(f"skcrowd: {name} is empty: no header row, no ratings.")
        repeated = [c for c in dict.fromkeys((item, rater, label)) if header.count(c) > 1]
        if repeated:
            raise SystemExit(
                f"skcrowd: {name} has more than one column named {repeated}; "
                "rename them so that each of --item/--rater/--label names one column."
            )
        # crowd-kit's column names, as the Python API reads them (doc/data.rst):
        # a crowd-kit export needs no flags here either
        item, rater = default_id_columns(header, item, rater)
        if len({item, rater, label}) < 3:
            # --label item read the item ids as the labels (one class per
            # item) and --item rater made each rater one item, silently
            flags = [f"--{flag} {c}" for flag, c in (("item", item), ("rater", rater),
                                                      ("label", label))]
            raise SystemExit(
                f"skcrowd: {', '.join(flags)} name the same column twice; the item, rater "
                "and label must be three different columns."
            )
        absent = [c for c in (item, rater, label) if c not in header]
        if absent:
            raise SystemExit(
                f"skcrowd: {name} has no column(s) {absent}; it has {header}. "
                "Name them with --item/--rater/--label."
            )
        at_item, at_rater, at_label = (header.index(c) for c in (item, rater, label))
        needed = max(at_item, at_rater, at_label) + 1
        items, raters, labels, unrated, markers = [], [], [], [], {}
        for row in reader:
            if len(row) < needed:
                if not row:
                    continue  # a blank line
                raise ValueError(
                    f"{name}, line {reader.line_num}: the row has {len(row)} field(s), "
                    f"fewer than the header's {len(header)}."
                )
            value = row[at_label].strip()
            if value in missing:  # not rated
                if value:
                    markers[value] = markers.get(value, 0) + 1
                unrated.append((row[at_item], row[at_rater]))
                continue
            if not (row[at_item].strip() and row[at_rater].strip()):
                empty = [c for c, at in ((item, at_item), (rater, at_rater))
                         if not row[at].strip()]
                raise ValueError(
                    f"{name}, line {reader.line_num}: the rating has no "
                    f"{' or '.join(empty)} id; every rating needs an item and a rater."
                )
            items.append(row[at_item])
            raters.append(row[at_rater])
            labels.append(row[at_label])
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{name} is not UTF-8 text (byte {error.object[error.start]:#04x} at "
            f"position {error.start}); save it as UTF-8 CSV."
        ) from None
    finally:
        if f is not sys.stdin:
            f.detach() if path == "-" else f.close()
    if not items:
        raise SystemExit(f"skcrowd: {name} has no ratings"
                         + (f" (every label is one of {sorted(markers)}, read as missing; "
                            "--missing sets what is)." if markers else "."))
    ids = {}
    if unrated:  # their items and raters are kept, as a matrix keeps empty rows
        for what, seen, extra in (("item_ids", items, [u[0] for u in unrated]),
                                  ("rater_ids", raters, [u[1] for u in unrated])):
            extra = {v for v in extra if v.strip()}
            if extra:
                ids[what] = np.array(sorted(extra.union(seen)), dtype=object)
    # object arrays of ids: Ratings encodes them by hashing
    return Ratings(np.array(items, dtype=object), np.array(raters, dtype=object),
                   _typed(np.array(labels)), **ids), markers


def _typed(values):
    """Strings read from a file or the command line as int, else float, else
    str - one rule for labels and ``--classes``, so they match."""
    values = np.asarray(values)
    for dtype in (np.int64, np.float64):
        try:
            typed = values.astype(dtype)
        except ValueError:
            continue
        if not np.any(np.isnan(typed)):  # "nan" not read as missing stays a string
            return typed
    return values


#: command-line flags that set a model parameter of the same name
MODEL_FLAGS = ("random_state", "max_iter", "n_init", "classes")


def _model(args):
    """The estimator of ``--model`` with the parameters the flags set."""
    model = MODELS[args.model]()
    given = {name: getattr(args, name) for name in MODEL_FLAGS
             if getattr(args, name, None) is not None}
    if "classes" in given:
        levels = [c.strip() for c in given["classes"].split(",")]
        if "" in levels:
            raise SystemExit(
                f"skcrowd: --classes {given['classes']!r} has an empty level; "
                "give the scale comma-separated, e.g. --classes 1,2,3."
            )
        given["classes"] = _typed(levels)
    unsupported = [name for name in given if name not in model.get_params()]
    if unsupported:
        flags = ", ".join("--" + name.replace("_", "-") for name in unsupported)
        raise SystemExit(f"skcrowd: --model {args.model} does not take {flags}.")
    return model.set_params(**given)


def _missing_markers(args):
    """The label cells read as not rated: ``--missing`` (comma-separated;
    ``--missing ''``: only empty cells), else :data:`MISSING_MARKERS`.  A
    level of ``--classes`` that is also a marker is an error, since no rating
    could carry it."""
    given = getattr(args, "missing", None)
    markers = (MISSING_MARKERS if given is None
               else tuple(m.strip() for m in given.split(",")) + ("",))
    classes = getattr(args, "classes", None)
    if classes is not None:
        clash = [c.strip() for c in classes.split(",") if c.strip() and c.strip() in markers]
        if clash:
            raise SystemExit(
                f"skcrowd: --classes names {clash}, which the reader takes for a missing "
                "label; list the markers that mean missing with --missing "
                "(--missing '' for empty cells only)."
            )
    return markers


def _read_gold(path, ratings, missing=MISSING_MARKERS):
    """``--gold FILE``: known labels (columns item, label, or crowd-kit's
    task, label) keyed by item id;
    a label in ``missing`` is not known; items without ratings are reported
    and left out."""
    try:
        # read as the ratings file is: with or without a byte-order mark
        # (Excel's "CSV UTF-8", whose first column was '\ufeffitem'), spaces
        # after the commas skipped
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f, skipinitialspace=True)
            columns = set(reader.fieldnames or [])
            # crowd-kit's name for the item column, as in the ratings file
            item = "task" if "item" not in columns and "task" in columns else "item"
            if not {item, "label"} <= columns:
                raise SystemExit(f"skcrowd: gold file {path} needs columns item,label (or "
                                 f"task,label); it has {reader.fieldnames}.")
            rows = [(r[item], r["label"]) for r in reader
                    if r["label"] is not None and r["label"].strip() not in missing]
    except OSError as error:
        raise SystemExit(f"skcrowd: cannot read gold file {path}: {error.strerror}.") from None
    rated = set(ratings.item_ids.tolist())
    kept = [(i, lab) for i, lab in rows if i in rated]
    if len(kept) < len(rows):
        _log(f"{len(rows) - len(kept)} gold items have no ratings in {path}; left out")
    if not kept:
        return None
    items, labels = (np.array(c) for c in zip(*kept))
    gold = {}
    for item, label in zip(items.tolist(), _typed(labels).tolist()):
        # one known label per item, as fit(X, y) requires (a dict kept the
        # file's last one without a word)
        if gold.setdefault(item, label) != label:
            raise SystemExit(f"skcrowd: gold file {path} gives item {item!r} two labels, "
                             f"{_class_text(gold[item])} and {_class_text(label)}; give one "
                             "label per item.")
    return gold


def _fit(args):
    missing = _missing_markers(args)
    ratings, markers = _read_ratings(args.ratings, args.item, args.rater, args.label, missing)
    _log(f"read {ratings.n_ratings} ratings of {ratings.shape[0]} items by "
         f"{ratings.shape[1]} raters from {args.ratings}"
         + (f"; label(s) {', '.join(f'{m} ({n} rows)' for m, n in markers.items())} read "
            "as not rated (--missing sets the markers)" if markers else ""))
    gold = (_read_gold(args.gold, ratings, missing) if getattr(args, "gold", None)
            else None)
    model = _model(args)
    start = perf_counter()
    model.fit(ratings, gold)  # a ValueError is main's one-line user error
    _log(f"fitted {type(model).__name__} in {perf_counter() - start:.2f}s"
         + (f" with {len(gold)} gold items" if gold else ""))
    args.known = gold or {}
    return ratings, model


def _class_text(value):
    """A class as the output writes it, in the label column and in the
    ``p_<class>`` and ``recall_<class>`` headers alike: a number read as a
    float in 6 significant digits when that is exact (``1.0`` -> ``1``, as
    the probabilities), else in full (``1234567.5``, not ``1.23457e+06``:
    a label is a name and is never rounded)."""
    if isinstance(value, (float, np.floating)):
        short = f"{value:.6g}"
        return short if float(short) == value else repr(float(value))
    return value


def _write(columns, path, output_format="csv"):
    """Write a table given as a dict of equal-length columns: CSV (numbers
    with 6 significant digits) or Parquet (typed columns; needs pyarrow)."""
    if output_format == "parquet":
        if not path or path == "-":
            raise SystemExit("skcrowd: --output-format parquet needs -o FILE.")
        try:
            import pandas as pd
            import pyarrow  # noqa: F401
        except ImportError:
            raise SystemExit("skcrowd: --output-format parquet needs pandas and pyarrow "
                             "(pip install pandas pyarrow).") from None
        pd.DataFrame({k: np.asarray(v) for k, v in columns.items()}).to_parquet(
            path, index=False)
        return

    def cell(value):
        return f"{value:.6g}" if isinstance(value, (float, np.floating)) else value

    def column(values):
        # a column at a time, not a cell: 200k rows of 8 columns in 0.5 s, not 2 s
        values = np.asarray(values)
        if values.dtype.kind == "f":
            return [f"{v:.6g}" for v in values.tolist()]
        if values.dtype.kind == "O":  # e.g. labels that mix gold and inferred ones
            return [cell(v) for v in values.tolist()]
        return values.tolist()

    out = open(path, "w", newline="") if path and path != "-" else sys.stdout
    try:
        # "\n", not the csv module's "\r\n": lines ended in a stray \r for
        # cut, awk and diff, and on Windows standard output (text mode) in
        # "\r\r\n"
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(list(columns))
        writer.writerows(zip(*(column(v) for v in columns.values())))
    finally:
        if out is not sys.stdout:
            out.close()


def _uncertainty(model, ratings, proba):
    """The second column of ``aggregate``: ``probability``, the posterior
    probability of the output label, for a model that outputs a class; for
    a real-valued output (MeanRating, MedianRating, OrdinalMixture) ``std``,
    its posterior standard deviation (OrdinalMixture) or the standard error of
    the mean of the item's ratings (the baselines)."""
    if model._prediction_name == "label":
        return "probability", proba.max(axis=1)
    data = model._encode(ratings, reset=False)
    return "std", model._item_diagnostics(data, model._infer_items(data))["std"]


def cmd_aggregate(args):
    ratings, model = _fit(args)
    labels = model.predict(ratings)
    proba = model.predict_proba(ratings)
    if args.known:  # gold items keep their known labels (as fit_predict)
        position = {item: i for i, item in enumerate(ratings.item_ids.tolist())}
        rows_known = np.array([position[i] for i in args.known])
        codes = np.searchsorted(model.classes_, np.array(list(args.known.values())))
        labels = np.array(labels, dtype=object)
        labels[rows_known] = model.classes_[codes]
        proba[rows_known] = 0.0
        proba[rows_known, codes] = 1.0
    name, values = _uncertainty(model, ratings, proba)
    if model._prediction_name == "label" and args.output_format == "csv":
        # a class, as its p_<class> column names it (Parquet keeps the type)
        labels = np.array([_class_text(c) for c in np.asarray(labels).tolist()], dtype=object)
    columns = {"item": ratings.item_ids, "label": labels, name: values}
    columns.update({f"p_{_class_text(c)}": proba[:, k] for k, c in enumerate(model.classes_)})
    _write(columns, args.output, args.output_format)
    if args.output and args.output != "-":
        _log(f"wrote {len(labels)} items to {args.output}")


def cmd_raters(args):
    """The model's rater table (``rater_table()``), written without pandas."""
    ratings, model = _fit(args)
    per_class = {f"recall_{c}": f"recall_{_class_text(c)}" for c in model.classes_.tolist()}
    columns = {"rater": model.rater_ids_, "n_ratings": model._rater_counts,
               **{per_class.get(k, k): v for k, v in model._rater_diagnostics().items()}}
    _write(columns, args.output, args.output_format)


#: the demo's data sets: categorical (accuracy on gold) and graded (MSE, correlation)
DEMO_SETS = ("rte", "bluebirds", "dog", "web", "trec2010")
GRADED_SETS = ("web", "trec2010")


def _demo_data(name):
    from . import datasets

    if name == "trec2010":
        return datasets.load_trec2010(preprocess="paper")
    return getattr(datasets, f"load_{name}")()


def _warm_up(names):
    """Fit every model as the demo will, on small simulated sets, so that
    numba compiles (or loads from its cache) every kernel the demo's fits
    use before they are timed; returns the seconds.

    The fits cover the paths that data shapes choose: one restart and two
    (restarts may run in threads with serial kernels), enough passes for an
    accelerated step, and two sizes.  IRT3PL merges items rated alike into
    patterns and runs a kernel in parallel only above a work threshold
    (patterns' ratings or raters, times its 735 nodes): 5 binary raters give
    at most 32 patterns (its serial kernels, as on caries); 80 raters, 12
    per item, give one pattern per item and a 117k-entry rater table (its
    parallel ones, as on RTE).
    """
    from .datasets import make_ordinal

    def binary(ratings):
        return Ratings(ratings.item, ratings.rater,
                       (ratings.label > np.median(ratings.label)).astype(int))

    small = make_ordinal(n_items=300, n_raters=5, random_state=0).ratings
    wide = make_ordinal(n_items=300, n_raters=80, ratings_per_item=12, random_state=0).ratings
    start = perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            restarts = (1, 2) if "n_init" in MODELS[name]().get_params() else (None,)
            for ratings in (small, wide):
                if name == "irt3pl":
                    ratings = binary(ratings)
                for n_init in restarts:
                    model = MODELS[name]()
                    if n_init is not None:
                        model.set_params(n_init=n_init, max_iter=10)
                    model.fit_predict(ratings)
    return perf_counter() - start


def _demo_fit(name, ratings):
    model = MODELS[name]()
    if "random_state" in model.get_params():
        # the models with random restarts (MACE, IRT3PL, OrdinalMixture):
        # seeded, so that every run prints the same numbers (the README's)
        model.set_params(random_state=0)
    start = perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        prediction = model.fit_predict(ratings)
    return np.asarray(prediction, dtype=float), perf_counter() - start


def cmd_demo(args):
    from .metrics import correlation, mean_squared_error

    sets = [s.strip() for s in args.sets.split(",")]
    unknown = sorted(set(sets) - set(DEMO_SETS))
    if unknown:
        raise SystemExit(f"skcrowd: unknown data set(s) {unknown}; choose from {list(DEMO_SETS)}.")
    categorical = [n for n in MODELS if n not in ("mean", "median", "ordinal")]
    graded = ["majority-vote", "mean", "median", "dawid-skene", "glad", "ordinal"]
    used = dict.fromkeys(categorical + (graded if set(sets) & set(GRADED_SETS) else []))
    print(f"skcrowd {__version__} demo: every model at its defaults on the shipped data sets")
    # Say it before the wait: the first run after an install compiles every
    # kernel (about a minute on two cores), later runs load numba's cache.
    print("numba compilation: warm-up fits of each model on small sets (the first run "
          "after an install compiles the kernels, which can take a minute; later runs "
          "load them from numba's cache) ...", end=" ", flush=True)
    print(f"{_warm_up(used):.2f}s; the times below are warm fits", flush=True)
    data = {name: _demo_data(name) for name in sets}

    print("\nAccuracy on gold (seconds to fit)")
    print(f"{'data':<10}" + "".join(f"{n:>20}" for n in categorical))
    for name in (s for s in sets if s != "trec2010"):
        bunch = data[name]
        known = ~np.isnan(bunch.gold)
        binary = len(np.unique(bunch.ratings.label)) == 2
        cells = []
        for model_name in categorical:
            if model_name == "irt3pl" and not binary:
                cells.append("binary only")
                continue
            labels, seconds = _demo_fit(model_name, bunch.ratings)
            accuracy = np.mean(labels[known] == bunch.gold[known])
            cells.append(f"{accuracy:.4f} ({seconds:.2f}s)")
        print(f"{name:<10}" + "".join(f"{c:>20}" for c in cells), flush=True)

    graded_sets = [s for s in sets if s in GRADED_SETS]
    if not graded_sets:
        return
    print("\nGraded sets: MSE / correlation with the gold grade (seconds to fit); "
          "trec2010 with the paper's preprocessing")
    print(f"{'model':<15}" + "".join(f"{s:>32}" for s in graded_sets))
    for model_name in graded:
        cells = []
        for name in graded_sets:
            bunch = data[name]
            values, seconds = _demo_fit(model_name, bunch.ratings)
            cells.append(f"{mean_squared_error(bunch.gold, values):.4f} / "
                         f"{correlation(bunch.gold, values):.4f} ({seconds:.2f}s)")
        print(f"{model_name:<15}" + "".join(f"{c:>32}" for c in cells), flush=True)


class _Parser(argparse.ArgumentParser):
    """argparse with a usage mistake on one line of stderr (exit status 2),
    without the usage block, which for ``aggregate`` runs to eight lines."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} "
                     f"(see {self.prog} --help)\n")


def build_parser():
    # the docstring's first line, without its reST markup (``skcrowd``)
    parser = _Parser(prog="skcrowd", description=__doc__.split("\n")[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"skcrowd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, help_text in (
        ("aggregate", cmd_aggregate, "infer the true label of each item"),
        ("raters", cmd_raters, "rater diagnostics table"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("ratings", help="long-form CSV, one rating per row")
        p.add_argument("--model", choices=sorted(MODELS), default="dawid-skene",
                       help="the estimator (default: dawid-skene)")
        p.add_argument("--item", default="item",
                       help="item column (default: item, else crowd-kit's task)")
        p.add_argument("--rater", default="rater",
                       help="rater column (default: rater, else crowd-kit's worker)")
        p.add_argument("--label", default="label", help="label column (default: label)")
        p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
        p.add_argument("--output-format", choices=("csv", "parquet"), default="csv",
                       help="csv (default) or parquet (needs pandas and pyarrow)")
        p.add_argument("--random-state", type=int, default=None,
                       help="seed of the model's random starts")
        p.add_argument("--max-iter", type=int, default=None,
                       help="iterations of the fit loop (iterative models)")
        p.add_argument("--n-init", type=int, default=None,
                       help="restarts; the best objective is kept (iterative models)")
        p.add_argument("--classes", default=None,
                       help="the scale, comma-separated (e.g. 1,2,3,4,5), for levels "
                            "nobody used")
        p.add_argument("--missing", default=None, metavar="MARKERS",
                       help="label cells read as not rated, comma-separated (default: "
                            "pandas.read_csv's, e.g. NA,NaN,N/A,NULL,None; an empty "
                            "cell always is; --missing '' for empty cells only)")
        if name == "aggregate":
            p.add_argument("--gold", metavar="FILE",
                           help="CSV of known labels (columns item,label or task,label): "
                                "clamped in the fit")
        p.set_defaults(func=func)
    p = sub.add_parser("demo", help="compare the models on shipped data sets")
    p.add_argument("--sets", default=",".join(DEMO_SETS),
                   help=f"comma-separated data sets (default: {','.join(DEMO_SETS)})")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv=None):
    """Run the command line; a user error (unreadable input, bad data, a
    model that does not fit the labels) prints one line on stderr naming
    the problem and returns 1."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run(args)


def _run(args):
    try:
        output = getattr(args, "output", "-")
        if output and output != "-":
            folder = os.path.dirname(output) or "."
            if not os.path.isdir(folder):
                raise ValueError(f"cannot write {output}: there is no directory {folder}.")
        args.func(args)
        sys.stdout.flush()  # a closed pipe is then an error here, not at exit
    except BrokenPipeError:
        # the reader of standard output went away (``skcrowd aggregate ... |
        # head``): not a mistake to report; standard output goes to devnull so
        # that Python's flush at exit does not print a traceback either
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):
            pass
        return 1
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        _log(f"skcrowd: error: {where}{error.strerror or error}")
        return 1
    except ValueError as error:
        _log("skcrowd: error: " + " ".join(str(error).split()))
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
