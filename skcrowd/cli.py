"""The ``skcrowd`` command line: aggregate a ratings file, list raters, demo.

    skcrowd aggregate ratings.csv --model dawid-skene -o truth.csv
    skcrowd raters ratings.csv --model dawid-skene
    skcrowd demo

Input is a long-form CSV with one rating per row (column names set with
``--item/--rater/--label``).  Progress goes to stderr.
"""

import argparse
import csv
import sys
from time import perf_counter

import numpy as np

from . import __version__
from ._baselines import MajorityVote, MeanRating, MedianRating
from ._dawid_skene import DawidSkene
from ._glad import GLAD
from ._irt import IRT3PL
from ._mace import MACE
from ._ordinal import OrdinalMixture
from ._ratings import Ratings

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


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _read_ratings(path, item, rater, label):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in (item, rater, label) if c not in (reader.fieldnames or [])]
        if missing:
            raise SystemExit(
                f"skcrowd: {path} has no column(s) {missing}; it has {reader.fieldnames}. "
                "Name them with --item/--rater/--label."
            )
        rows = [(r[item], r[rater], r[label]) for r in reader if r[label] != ""]
    if not rows:
        raise SystemExit(f"skcrowd: {path} has no ratings.")
    items, raters, labels = (np.array(c) for c in zip(*rows))
    try:
        labels = labels.astype(np.int64)
    except ValueError:
        try:
            labels = labels.astype(np.float64)
        except ValueError:
            pass
    return Ratings(items, raters, labels)


def _fit(args):
    ratings = _read_ratings(args.ratings, args.item, args.rater, args.label)
    _log(f"read {ratings.n_ratings} ratings of {ratings.shape[0]} items by "
         f"{ratings.shape[1]} raters from {args.ratings}")
    model = MODELS[args.model]()
    start = perf_counter()
    model.fit(ratings)
    _log(f"fitted {type(model).__name__} in {perf_counter() - start:.2f}s")
    return ratings, model


def _write(rows, header, path):
    out = open(path, "w", newline="") if path and path != "-" else sys.stdout
    try:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
    finally:
        if out is not sys.stdout:
            out.close()


def cmd_aggregate(args):
    ratings, model = _fit(args)
    labels = model.predict(ratings)
    proba = model.predict_proba(ratings)
    header = ["item", "label", "probability"] + [f"p_{c}" for c in model.classes_]
    rows = (
        [i, l, f"{p.max():.6g}", *(f"{v:.6g}" for v in p)]
        for i, l, p in zip(ratings.item_ids, labels, proba)
    )
    _write(rows, header, args.output)
    if args.output and args.output != "-":
        _log(f"wrote {len(labels)} items to {args.output}")


def cmd_raters(args):
    ratings, model = _fit(args)
    counts = np.bincount(ratings._rater, minlength=ratings.shape[1])
    columns = {"n_ratings": counts}
    for name in ("rater_accuracy_", "rater_ability_", "sensitivity_", "specificity_",
                 "rater_reliability_", "rater_precision_", "rater_competence_"):
        if hasattr(model, name):
            columns[name.rstrip("_")] = getattr(model, name)
    header = ["rater", *columns]
    rows = (
        [r, *(f"{columns[c][j]:.6g}" if c != "n_ratings" else columns[c][j] for c in columns)]
        for j, r in enumerate(ratings.rater_ids)
    )
    _write(rows, header, args.output)


def cmd_demo(args):
    from .datasets import load_bluebirds, load_dog, load_rte, load_web

    sets = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}
    # accuracy needs a class per item: leave out the real-valued predictions
    names = [n for n in MODELS if n not in ("mean", "median", "ordinal")]
    print("Accuracy on gold (time to fit), skcrowd", __version__)
    print(f"{'data':<10}" + "".join(f"{n:>22}" for n in names))
    for data_name, load in sets.items():
        data = load()
        known = ~np.isnan(data.gold)
        cells = []
        for name in names:
            model = MODELS[name]()
            if name == "irt3pl" and len(np.unique(data.ratings.label)) != 2:
                cells.append("binary only")
                continue
            start = perf_counter()
            labels = model.fit_predict(data.ratings)
            seconds = perf_counter() - start
            accuracy = np.mean(labels[known] == data.gold[known])
            cells.append(f"{accuracy:.4f} ({seconds:.2f}s)")
        print(f"{data_name:<10}" + "".join(f"{c:>22}" for c in cells), flush=True)


def build_parser():
    parser = argparse.ArgumentParser(prog="skcrowd", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"skcrowd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, help_text in (
        ("aggregate", cmd_aggregate, "infer the true label of each item"),
        ("raters", cmd_raters, "rater diagnostics table"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("ratings", help="long-form CSV, one rating per row")
        p.add_argument("--model", choices=sorted(MODELS), default="dawid-skene")
        p.add_argument("--item", default="item", help="item column (default: item)")
        p.add_argument("--rater", default="rater", help="rater column (default: rater)")
        p.add_argument("--label", default="label", help="label column (default: label)")
        p.add_argument("-o", "--output", default="-", help="output CSV (default: stdout)")
        p.set_defaults(func=func)
    p = sub.add_parser("demo", help="compare the models on shipped data sets")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    args.func(args)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
