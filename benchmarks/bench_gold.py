"""Partial gold on the shipped data sets with gold: accuracy on the items
whose gold is *not* given, against the share of items given as gold.

For each data set (rte, bluebirds, dog, web), model and fraction f of gold
(0, 1, 5, 10, 20 %), ``--seeds`` random draws of the gold items; every model
is fitted with ``fit(X, y)`` (y = the drawn items' gold, NaN elsewhere) at
its defaults and scored on the other items (those with gold in the data
set).  Also reported, at 10 %: whether every clamped item kept its known
label, and the Spearman correlation between each model's per-rater quality
parameter and the raters' accuracy on the whole gold (raters with at least 5
gold-labelled ratings), without and with the 10 % gold.

Usage::

    PYTHONPATH=. python benchmarks/bench_gold.py [--seeds 5] [--fractions 0 0.01 ...]
"""

import argparse
import os
import time
import warnings

import numpy as np
from scipy.stats import spearmanr
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, MeanRating, OrdinalMixture
from skcrowd.datasets import load_bluebirds, load_dog, load_rte, load_web

DATASETS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}


def models_for(name):
    models = {"MajorityVote": MajorityVote, "DawidSkene": DawidSkene, "GLAD": GLAD, "MACE": MACE}
    if name in ("rte", "bluebirds"):
        models["IRT3PL"] = IRT3PL
    if name == "web":  # a graded 1..5 scale: accuracy of the rounded value
        models["MeanRating"] = MeanRating
        models["OrdinalMixture"] = OrdinalMixture
    return models


def rater_quality(model):
    """The model's per-rater quality parameter (higher = better)."""
    if isinstance(model, DawidSkene):
        return model.rater_accuracy_
    if isinstance(model, GLAD):
        return model.rater_ability_
    if isinstance(model, MACE):
        return model.rater_competence_
    if isinstance(model, IRT3PL):
        return 0.5 * (model.alpha_sens_ + model.alpha_spec_)
    if isinstance(model, OrdinalMixture):
        return model.rater_precision_ * model.rater_reliability_
    return None


def labels_of(model, values):
    """Point labels: the nearest level for the models that predict values."""
    if isinstance(model, (MeanRating, OrdinalMixture)):
        classes = model.classes_.astype(float)
        return classes[np.abs(values[:, None] - classes[None, :]).argmin(axis=1)]
    return values


def rater_gold_accuracy(ratings, gold, min_count=5):
    truth = gold[ratings._item]
    rated = ~np.isnan(truth)
    J = ratings.shape[1]
    n = np.bincount(ratings._rater[rated], minlength=J)
    right = np.bincount(ratings._rater[rated],
                        weights=ratings.label[rated].astype(float) == truth[rated], minlength=J)
    keep = n >= min_count
    return np.where(keep, right / np.maximum(n, 1), np.nan), keep


def fit(cls, X, y):
    model = cls()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels = labels_of(model, model.fit_predict(X, y))
    return model, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0, 0.01, 0.05, 0.1, 0.2])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--models", nargs="+", default=None)
    args = parser.parse_args()
    print(f"# bench_gold.py: {args.seeds} draws of the gold items per fraction; "
          f"load {os.getloadavg()[0]:.2f}")
    table, ranks = {}, {}
    for name in args.datasets:
        data = DATASETS[name]()
        X, gold = data.ratings, data.gold
        has_gold = ~np.isnan(gold)
        quality, keep = rater_gold_accuracy(X, gold)
        for mname, cls in models_for(name).items():
            if args.models and mname not in args.models:
                continue
            start = time.perf_counter()
            model, base_labels = fit(cls, X, None)
            base_q = rater_quality(model)
            for f in args.fractions:
                accs, changes, exact, corr = [], [], True, []
                for seed in range(args.seeds):
                    rng = np.random.default_rng(seed)
                    given = has_gold & (rng.random(len(gold)) < f)
                    held = has_gold & ~given
                    if f == 0:
                        labels = base_labels
                    else:
                        model, labels = fit(cls, X, np.where(given, gold, np.nan))
                        exact &= bool(np.all(labels[given] == gold[given]))
                        q = rater_quality(model)
                        if q is not None and abs(f - 0.1) < 1e-9:
                            corr.append(spearmanr(q[keep], quality[keep])[0])
                    accs.append(np.mean(labels[held] == gold[held]))
                    # against the fit without gold on the same items
                    changes.append(accs[-1] - np.mean(base_labels[held] == gold[held]))
                table[name, mname, f] = (np.mean(accs), np.mean(changes), exact)
                if corr:
                    base_corr = (np.nan if base_q is None
                                 else spearmanr(base_q[keep], quality[keep])[0])
                    ranks[name, mname] = (base_corr, np.mean(corr))
            print(f"- {name} {mname}: {time.perf_counter() - start:.1f} s", flush=True)

    fr = args.fractions
    print("\n## Accuracy on the items whose gold is not given (mean over draws)\n")
    print("| data set | model | " + " | ".join(f"{100 * f:g}% gold" for f in fr)
          + " | clamped exact |")
    print("|---|---|" + "---|" * len(fr) + "---|")
    for (name, mname) in dict.fromkeys((k[0], k[1]) for k in table):
        cells = [f"{table[name, mname, f][0]:.4f}" for f in fr]
        exact = all(table[name, mname, f][2] for f in fr)
        print(f"| {name} | {mname} | " + " | ".join(cells) + f" | {'yes' if exact else 'NO'} |")
    print("\n## Change against the fit without gold, on the same items (points)\n")
    print("| data set | model | " + " | ".join(f"{100 * f:g}% gold" for f in fr) + " |")
    print("|---|---|" + "---|" * len(fr))
    for (name, mname) in dict.fromkeys((k[0], k[1]) for k in table):
        cells = [f"{100 * table[name, mname, f][1]:+.2f}" for f in fr]
        print(f"| {name} | {mname} | " + " | ".join(cells) + " |")
    if 0.1 in fr:
        gains = [table[k[0], k[1], 0.1][1] for k in dict.fromkeys((k[0], k[1]) for k in table)]
        print(f"\n10% gold vs none: mean change {100 * np.mean(gains):+.2f} points, "
              f"smallest {100 * np.min(gains):+.2f}, largest {100 * np.max(gains):+.2f}")
    if ranks:
        print("\n## Spearman correlation of the rater parameter with the raters' accuracy "
              "on gold (raters with >= 5 gold ratings)\n")
        print("| data set | model | no gold | 10% gold |")
        print("|---|---|---|---|")
        for (name, mname), (a, b) in ranks.items():
            print(f"| {name} | {mname} | {a:.3f} | {b:.3f} |")


if __name__ == "__main__":
    main()
