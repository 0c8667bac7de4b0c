"""The ``skcrowd`` command line: aggregate a ratings file, list raters, demo.

    skcrowd aggregate ratings.csv -o truth.csv
    skcrowd raters ratings.csv --model dawid-skene
    skcrowd demo

Input is a long-form CSV with one rating per row (columns ``item, rater,
label``, or crowd-kit's ``task, worker, label``; other names set with
``--item/--rater/--label``), its delimiter (comma, tab or semicolon) sniffed
from the header.  Progress goes to stderr; an error is one line,
``skcrowd: error: ...`` (exit status 2 for a mistake in the flags, found
before any file is read, 1 for bad input).  ``aggregate``
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
from importlib.util import find_spec
from time import perf_counter, process_time

from . import __version__

# when this module was imported: the demo's wall time counts from the
# process's start where the OS tells it (/proc), else from here
_STARTED = perf_counter()

# Only the standard library at import: ``skcrowd --help`` and a usage
# mistake answer without loading numpy, scikit-learn, numba, pandas or the
# models; each command imports what it runs.

#: the flags that set a model parameter of the same name; the baselines
#: take --classes, the iterative models all four, AutoCrowd --random-state
#: (it seeds its folds; each candidate reads the classes from the ratings)
FLAGS = ("classes", "random_state", "max_iter", "n_init")
BASELINE_FLAGS = FLAGS[:1]

#: command-line model names -> (skcrowd class, parameters, the FLAGS it
#: takes, output): ``output`` is "class" (a label and its probability) or
#: "value" (a number on the label scale and its standard deviation)
MODELS = {
    "auto": ("AutoCrowd", {}, ("random_state",), "class"),
    "majority-vote": ("MajorityVote", {}, BASELINE_FLAGS, "class"),
    "mean": ("MeanRating", {}, BASELINE_FLAGS, "value"),
    "median": ("MedianRating", {}, BASELINE_FLAGS, "value"),
    "dawid-skene": ("DawidSkene", {}, FLAGS, "class"),
    "one-coin": ("DawidSkene", {"confusion": "one_coin"}, FLAGS, "class"),
    "glad": ("GLAD", {}, FLAGS, "class"),
    "irt3pl": ("IRT3PL", {}, FLAGS, "class"),
    "mace": ("MACE", {}, FLAGS, "class"),
    "ordinal": ("OrdinalMixture", {}, FLAGS, "value"),
}

#: without --model: the library's default estimator
DEFAULT_MODEL = "auto"


def _estimator(name):
    """A new estimator of the command-line model ``name``."""
    import skcrowd

    class_name, params, _, _ = MODELS[name]
    return getattr(skcrowd, class_name)(**params)


#: label cells read as *not rated*: pandas.read_csv's default missing
#: markers (``na_values``), so that a file written by pandas or R (``NA``)
#: reads as it does in pandas; ``--missing`` replaces the list, and an empty
#: cell is always missing.
MISSING_MARKERS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                   "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None",
                   "n/a", "nan", "null")

#: the column separators a file may use, sniffed from its header line
DELIMITERS = {",": "comma", "\t": "tab", ";": "semicolon"}


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _show_warning(message, category, *args, **kwargs):
    """A warning on one line of stderr, without Python's file, line and
    source text (``warnings.showwarning`` inside :func:`main`)."""
    _log(f"skcrowd: warning: {' '.join(str(message).split())}")


def _header_reader(f, name, columns):
    """A ``csv.reader`` over ``f`` after its header line, and the header.

    The delimiter is sniffed from the header: the first of comma, tab and
    semicolon that splits it into the wanted ``columns(header)`` (a function
    of the header's names, which picks crowd-kit's names when present),
    else the one that splits it into the most columns.  Returns ``(None,
    None, None)`` for an empty file, else ``(reader, header, delimiter)``."""
    first = f.readline()
    if not first:
        return None, None, None
    split = {}
    for delimiter in DELIMITERS:
        # skipinitialspace: "photo1, ann, cat" (a space after each comma, as
        # people type a CSV) has the label "cat", not a class " cat" beside
        # the "cat" of rows without the space
        header = next(csv.reader([first], delimiter=delimiter, skipinitialspace=True))
        if set(columns(header)) <= set(header):
            split = {delimiter: header}
            break
        split[delimiter] = header
    delimiter = max(split, key=lambda d: len(split[d]))
    # the rest of the file, read with the header's delimiter (line numbers
    # in errors count the header line)
    reader = csv.reader(f, delimiter=delimiter, skipinitialspace=True)
    return _Lines(reader), split[delimiter], delimiter


class _Lines:
    """A csv reader whose ``line_num`` counts the header line read before it."""

    def __init__(self, reader):
        self._reader = reader

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._reader)

    @property
    def line_num(self):
        return self._reader.line_num + 1


def _read_as(delimiter):
    """How a file was read, for an error about its columns."""
    return (f"read as {DELIMITERS[delimiter]}-separated (the delimiter, one of "
            f"{', '.join(DELIMITERS.values())}, is sniffed from the header)")


def _read_ratings(path, item, rater, label, missing=MISSING_MARKERS):
    """The ratings of a long-form CSV file (``-``: standard input), read as
    UTF-8 with or without a byte-order mark (Excel's "CSV UTF-8"); the
    delimiter (comma, tab or semicolon) is sniffed from the header.

    A label cell in ``missing`` (stripped of spaces) is not a rating, but
    the row's item and rater are kept, as ``Ratings.from_long`` keeps them
    for a missing label; a row with every field blank (the trailing rows of
    a spreadsheet's export) is skipped.  Returns the ratings and the count of
    each marker read as missing."""
    import numpy as np

    from ._ratings import Ratings, default_id_columns

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
        reader, header, delimiter = _header_reader(
            f, name, lambda names: (*default_id_columns(names, item, rater), label))
        if header is None:
            raise ValueError(f"{name} is empty: no header row, no ratings.")
        repeated = [c for c in dict.fromkeys((item, rater, label)) if header.count(c) > 1]
        if repeated:
            raise ValueError(
                f"{name} has more than one column named {repeated}; "
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
            raise ValueError(
                f"{', '.join(flags)} name the same column twice; the item, rater "
                "and label must be three different columns."
            )
        absent = [c for c in (item, rater, label) if c not in header]
        if absent:
            raise ValueError(
                f"{name} has no column(s) {absent}; it has {header}, {_read_as(delimiter)}. "
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
        raise ValueError(f"{name} has no ratings"
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
    import numpy as np

    values = np.asarray(values)
    for dtype in (np.int64, np.float64):
        try:
            typed = values.astype(dtype)
        except ValueError:
            continue
        if not np.any(np.isnan(typed)):  # "nan" not read as missing stays a string
            return typed
    return values


def _model(args):
    """The estimator of ``--model`` with the parameters the flags set (the
    flags were checked by :func:`_check_args`)."""
    model = _estimator(args.model)
    given = {name: getattr(args, name) for name in FLAGS
             if getattr(args, name, None) is not None}
    if "classes" in given:
        given["classes"] = _typed([c.strip() for c in given["classes"].split(",")])
    return model.set_params(**given)


def _missing_markers(args):
    """The label cells read as not rated: ``--missing`` (comma-separated;
    ``--missing ''``: only empty cells), else :data:`MISSING_MARKERS`."""
    given = getattr(args, "missing", None)
    return (MISSING_MARKERS if given is None
            else tuple(m.strip() for m in given.split(",")) + ("",))


def _check_args(args):
    """Mistakes in the flags alone, found before any file is read or any
    model imported: a usage error (``skcrowd: error: ...``, exit status 2)."""
    error = args.parser.error
    if args.func is cmd_demo:
        sets = [s.strip() for s in args.sets.split(",")]
        unknown = sorted(set(sets) - set(DEMO_SETS))
        if unknown:
            error(f"unknown data set(s) {unknown}; choose from {list(DEMO_SETS)}.")
        return
    _, _, takes, _ = MODELS[args.model]
    refused = [name for name in FLAGS if getattr(args, name) is not None and name not in takes]
    if refused:
        flags = ", ".join("--" + name.replace("_", "-") for name in refused)
        hint = ("; name a model, e.g. --model dawid-skene" if args.model == "auto"
                else "")
        error(f"--model {args.model} does not take {flags}{hint}.")
    if args.classes is not None:
        levels = [c.strip() for c in args.classes.split(",")]
        if "" in levels:
            error(f"--classes {args.classes!r} has an empty level; give the scale "
                  "comma-separated, e.g. --classes 1,2,3.")
        # a level that is also a missing marker: no rating could carry it
        clash = [c for c in levels if c in _missing_markers(args)]
        if clash:
            error(f"--classes names {clash}, which the reader takes for a missing "
                  "label; list the markers that mean missing with --missing "
                  "(--missing '' for empty cells only).")
    if args.output_format == "parquet":
        if not args.output or args.output == "-":
            error("--output-format parquet needs -o FILE (Parquet is not written to "
                  "standard output).")
        absent = [m for m in ("pandas", "pyarrow") if find_spec(m) is None]
        if absent:
            error(f"--output-format parquet needs {' and '.join(absent)} "
                  f"(pip install {' '.join(absent)}).")
    if args.func is cmd_raters and find_spec("pandas") is None:
        error("skcrowd raters writes the model's rater_table(), which needs pandas "
              "(pip install pandas).")
    if (args.func is cmd_aggregate and MODELS[args.model][3] == "value"
            and find_spec("pandas") is None):
        error(f"--model {args.model} writes the std column of its item_table(), which "
              "needs pandas (pip install pandas).")


def _read_gold(path, ratings, missing=MISSING_MARKERS):
    """``--gold FILE``: known labels (columns item, label, or crowd-kit's
    task, label) keyed by item id;
    a label in ``missing`` is not known; items without ratings are reported
    and left out."""
    import numpy as np

    def wanted(names):
        # crowd-kit's name for the item column, as in the ratings file
        return ("task" if "item" not in names and "task" in names else "item", "label")

    try:
        # read as the ratings file is: with or without a byte-order mark
        # (Excel's "CSV UTF-8", whose first column was '\ufeffitem'), spaces
        # after the commas skipped, the delimiter sniffed
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader, header, delimiter = _header_reader(f, path, wanted)
            if header is None:
                raise ValueError(f"gold file {path} is empty: no header row, no labels.")
            if not set(wanted(header)) <= set(header):
                raise ValueError(f"gold file {path} needs columns item,label (or "
                                 f"task,label); it has {header}, {_read_as(delimiter)}.")
            at_item, at_label = (header.index(c) for c in wanted(header))
            rows = [(r[at_item], r[at_label]) for r in reader
                    if len(r) > max(at_item, at_label) and r[at_label].strip() not in missing]
    except OSError as error:
        raise ValueError(f"cannot read gold file {path}: {error.strerror}.") from None
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
            raise ValueError(f"gold file {path} gives item {item!r} two labels, "
                             f"{_class_text(gold[item])} and {_class_text(label)}; give one "
                             "label per item.")
    return gold


def _fit(args, predict=False):
    """Read the ratings (and ``--gold``), fit the model; returns the ratings,
    the fitted model, the known labels (a dict by item id, or None) and,
    with ``predict``, ``fit_predict``'s labels (known items: their known
    label)."""
    model = _model(args)
    missing = _missing_markers(args)
    ratings, markers = _read_ratings(args.ratings, args.item, args.rater, args.label, missing)
    _log(f"read {ratings.n_ratings} ratings of {ratings.shape[0]} items by "
         f"{ratings.shape[1]} raters from {args.ratings}"
         + (f"; label(s) {', '.join(f'{m} ({n} rows)' for m, n in markers.items())} read "
            "as not rated (--missing sets the markers)" if markers else ""))
    gold = _read_gold(args.gold, ratings, missing) if args.gold else None
    start = perf_counter()
    # a ValueError is main's one-line user error; known labels are clamped
    # by the fit itself (fit's y)
    labels = model.fit_predict(ratings, gold) if predict else model.fit(ratings, gold)
    _log(f"fitted {type(model).__name__} in {perf_counter() - start:.2f}s"
         + (f" with {len(gold)} gold items" if gold else "")
         + (f"; it chose {model.selected_}" if hasattr(model, "selected_") else ""))
    return ratings, model, gold, labels


def _class_text(value):
    """A class as the output writes it, in the label column and in the
    ``p_<class>`` and ``recall_<class>`` headers alike: a number read as a
    float in 6 significant digits when that is exact (``1.0`` -> ``1``, as
    the probabilities), else in full (``1234567.5``, not ``1.23457e+06``:
    a label is a name and is never rounded)."""
    import numpy as np

    if isinstance(value, (float, np.floating)):
        short = f"{value:.6g}"
        return short if float(short) == value else repr(float(value))
    return value


def _write(columns, path, output_format="csv"):
    """Write a table given as a dict of equal-length columns: CSV (numbers
    with 6 significant digits) or Parquet (typed columns; needs pandas and
    pyarrow, checked with the flags)."""
    import numpy as np

    if output_format == "parquet":
        import pandas as pd

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


def cmd_aggregate(args):
    """Each item's label, its probability (a class) or standard deviation
    (a value on the label scale, from ``item_table()``), and the posterior
    probability of every class (``predict_proba``).  A known item (``--gold``)
    keeps its known label, with probability 1."""
    import numpy as np

    ratings, model, gold, labels = _fit(args, predict=True)
    proba = np.array(model.predict_proba(ratings), dtype=np.float64)
    labels = np.asarray(labels)
    classes = model.classes_.tolist()
    if gold:  # as the fit clamped them: certain
        position = {item: i for i, item in enumerate(ratings.item_ids.tolist())}
        code = {c: k for k, c in enumerate(classes)}
        rows = np.array([position[item] for item in gold])
        proba[rows] = 0.0
        proba[rows, [code[label] for label in gold.values()]] = 1.0
    if MODELS[args.model][3] == "class":
        name, values = "probability", proba.max(axis=1)
        if args.output_format == "csv":
            # a class, as its p_<class> column names it (Parquet keeps the type)
            labels = np.array([_class_text(c) for c in labels.tolist()], dtype=object)
    else:
        # the item's posterior standard deviation (OrdinalMixture) or the
        # standard error of the mean of its ratings (the baselines)
        name, values = "std", model.item_table(ratings)["std"].to_numpy()
    columns = {"item": ratings.item_ids, "label": labels, name: values}
    columns.update({f"p_{_class_text(c)}": proba[:, k] for k, c in enumerate(classes)})
    _write(columns, args.output, args.output_format)
    if args.output and args.output != "-":
        _log(f"wrote {len(labels)} items to {args.output}")


def cmd_raters(args):
    """The model's rater table (``rater_table()``)."""
    _, model, _, _ = _fit(args)
    table = model.rater_table()
    # per-class columns named as the aggregate output names the classes
    per_class = {f"recall_{c}": f"recall_{_class_text(c)}" for c in model.classes_.tolist()}
    columns = {"rater": table.index.to_numpy(),
               **{per_class.get(k, k): table[k].to_numpy() for k in table.columns}}
    _write(columns, args.output, args.output_format)


#: the demo's data sets: categorical (accuracy on gold) and graded (MSE,
#: correlation); the default leaves out trec2010 (91,783 ratings: its
#: OrdinalMixture fit alone takes half a minute)
DEMO_SETS = ("rte", "bluebirds", "dog", "web", "trec2010")
DEFAULT_DEMO_SETS = ("rte", "bluebirds", "dog", "web")
GRADED_SETS = ("web", "trec2010")

#: what the default demo cost, measured from an empty numba cache (the first
#: run after an install) and with that cache warm (doc/first_run.rst)
DEMO_FIRST_RUN = "5.7-6.0 s wall, 5.9-6.1 s CPU on a quiet two-core machine"
DEMO_WARM_RUN = "5.7-6.0 s wall"


def _demo_data(name):
    from . import datasets

    if name == "trec2010":
        return datasets.load_trec2010(preprocess="paper")
    return getattr(datasets, f"load_{name}")()


class _CompileClock:
    """CPU seconds numba spends compiling from now on: its own
    ``numba:compile`` events, outermost only (a kernel loaded from numba's
    cache has none)."""

    def __init__(self):
        from numba.core import event

        self.seconds = 0.0
        self._depth = 0
        self._start = 0.0
        clock = self

        class Listener(event.Listener):
            def on_start(self, ev):
                if clock._depth == 0:
                    clock._start = process_time()
                clock._depth += 1

            def on_end(self, ev):
                clock._depth -= 1
                if clock._depth == 0:
                    clock.seconds += process_time() - clock._start

        self._listener = Listener()
        event.register("numba:compile", self._listener)


def _demo_fit(name, ratings, compiling=None):
    """Fit model ``name`` as the demo does: (predictions, wall seconds,
    seconds of it numba spent compiling, when ``compiling`` counts them,
    the fitted model)."""
    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    model = _estimator(name)
    if "random_state" in model.get_params():
        # the models with random restarts (MACE, IRT3PL, OrdinalMixture):
        # seeded, so that every run prints the same numbers (the README's)
        model.set_params(random_state=0)
    if "n_jobs" in model.get_params():
        # One thread: the same results (the kernels' sums do not depend on
        # it), and on these sets the parallel variants of GLAD's and
        # OrdinalMixture's kernels would cost more to compile than they save
        # (7 s CPU of the first run, doc/first_run.rst).
        model.set_params(n_jobs=1)
    before = compiling.seconds if compiling is not None else 0.0
    start = perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        prediction = model.fit_predict(ratings)
    seconds = perf_counter() - start
    compiled = compiling.seconds - before if compiling is not None else 0.0
    return np.asarray(prediction, dtype=float), seconds, compiled, model


def _demo_cell(text, seconds, compiled):
    """A table cell: the result, the fit's seconds, ``*`` when numba
    compiled during it (0.05 s or more)."""
    return f"{text} ({seconds:.2f}s{'*' if compiled >= 0.05 else ' '})"


def cmd_demo(args):
    import numpy as np

    from .metrics import correlation, mean_squared_error

    sets = [s.strip() for s in args.sets.split(",")]  # checked by _check_args
    # the default (auto) first, then the models it chooses among and GLAD
    categorical = [n for n in MODELS if n not in ("mean", "median", "ordinal")]
    graded = ["majority-vote", "mean", "median", "dawid-skene", "glad", "ordinal"]
    print(f"skcrowd {__version__} demo: every model at its defaults (one thread, n_jobs=1) on "
          "the shipped data sets")
    # Say what it costs before the wait.
    print(f"At these sizes every model runs on numpy and nothing waits for numba's compiler: "
          f"measured from an empty cache (the first run after an install) {DEMO_FIRST_RUN}, "
          f"with the cache warm {DEMO_WARM_RUN}.", flush=True)
    compiling = _CompileClock()
    data = {name: _demo_data(name) for name in sets}
    print()
    for name in sets:
        r = data[name].ratings
        n_items, n_raters = r.shape
        kind = "graded" if name in GRADED_SETS else "categorical"
        print(f"{name:<10} {n_items:>6,} items {n_raters:>5,} raters {r.n_ratings:>7,} "
              f"ratings, {len(np.unique(r.label))} labels ({kind})")

    print("\nAccuracy on gold (seconds to fit; * = it included numba compiling)")
    print(f"{'data':<10}" + "".join(f"{n:>20}" for n in categorical))
    chosen = {}
    for name in (s for s in sets if s != "trec2010"):
        bunch = data[name]
        known = ~np.isnan(bunch.gold)
        binary = len(np.unique(bunch.ratings.label)) == 2
        cells = []
        for model_name in categorical:
            if model_name == "irt3pl" and not binary:
                cells.append("binary only ")
                continue
            labels, seconds, compiled, model = _demo_fit(model_name, bunch.ratings, compiling)
            if model_name == "auto":
                chosen[name] = model.selected_
            accuracy = np.mean(labels[known] == bunch.gold[known])
            cells.append(_demo_cell(f"{accuracy:.4f}", seconds, compiled))
        print(f"{name:<10}" + "".join(f"{c:>20}" for c in cells), flush=True)
    if chosen:
        print("auto (AutoCrowd, the default estimator) chose, without the gold: "
              + ", ".join(f"{name} {model}" for name, model in chosen.items()))

    graded_sets = [s for s in sets if s in GRADED_SETS]
    if graded_sets:
        print("\nGraded sets: MSE / correlation with the gold grade (seconds to fit)"
              + ("; trec2010 with the paper's preprocessing" if "trec2010" in graded_sets
                 else ""))
        print(f"{'model':<15}" + "".join(f"{s:>32}" for s in graded_sets))
        for model_name in graded:
            cells = []
            for name in graded_sets:
                bunch = data[name]
                values, seconds, compiled, _ = _demo_fit(model_name, bunch.ratings,
                                                         compiling)
                cells.append(_demo_cell(f"{mean_squared_error(bunch.gold, values):.4f} / "
                                        f"{correlation(bunch.gold, values):.4f}",
                                        seconds, compiled))
            print(f"{model_name:<15}" + "".join(f"{c:>32}" for c in cells), flush=True)
    # process_time: the CPU of the whole process (every thread) since it started
    print(f"\nThis run: {_process_seconds():.1f} s wall, {process_time():.1f} s CPU "
          f"(imports and data included), {compiling.seconds:.1f} s CPU of it numba compiling; "
          f"load average {_loadavg()}.")


def _process_seconds():
    """Wall seconds since the process started (Linux: from /proc, so that
    the interpreter's start and the imports count), else since this module
    was imported."""
    try:
        with open("/proc/self/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return perf_counter() - _STARTED


def _loadavg():
    """The 1-minute load average, or "unknown" where the OS has none."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse with a usage mistake on one line of stderr (exit status 2),
    without the usage block, which for ``aggregate`` runs to eight lines."""

    def error(self, message):
        # one prefix for every error, a subcommand's too ("skcrowd
        # aggregate: error" beside "skcrowd: error" read as two programs)
        self.exit(2, f"skcrowd: error: {' '.join(message.split())} "
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
        p.add_argument("ratings", help="long-form CSV, one rating per row (comma-, tab- "
                                      "or semicolon-separated: sniffed from the header)")
        p.add_argument("--model", choices=sorted(MODELS), default=DEFAULT_MODEL,
                       help=f"the estimator (default: {DEFAULT_MODEL}, AutoCrowd: the "
                            "model the ratings support best)")
        p.add_argument("--item", default="item",
                       help="item column (default: item, else crowd-kit's task)")
        p.add_argument("--rater", default="rater",
                       help="rater column (default: rater, else crowd-kit's worker)")
        p.add_argument("--label", default="label", help="label column (default: label)")
        p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
        p.add_argument("--output-format", choices=("csv", "parquet"), default="csv",
                       help="csv (default) or parquet (needs pandas and pyarrow)")
        p.add_argument("--random-state", type=int, default=None,
                       help="seed of the model's random starts (auto: of its folds)")
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
        p.add_argument("--gold", metavar="FILE",
                       help="CSV of known labels (columns item,label or task,label): "
                            "clamped in the fit")
        p.set_defaults(func=func, parser=p)
    p = sub.add_parser("demo", help="compare the models on shipped data sets")
    p.add_argument("--sets", default=",".join(DEFAULT_DEMO_SETS),
                   help=f"comma-separated data sets among {','.join(DEMO_SETS)} (default: "
                        f"{','.join(DEFAULT_DEMO_SETS)})")
    p.set_defaults(func=cmd_demo, parser=p)
    return parser


def main(argv=None):
    """Run the command line; a user error (unreadable input, bad data, a
    model that does not fit the labels) prints one line on stderr naming
    the problem and returns 1."""
    args = build_parser().parse_args(argv)
    _check_args(args)
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
