"""Accuracy of DawidSkene for a grid of Dirichlet priors, on the shipped
gold sets and on simulated data with 2 to 10 classes and few ratings per
rater per class.

Run from the repository root::

    python benchmarks/dawid_skene_prior_scan.py                  # both
    python benchmarks/dawid_skene_prior_scan.py --only gold
    python benchmarks/dawid_skene_prior_scan.py --only synthetic --seeds 5
    python benchmarks/dawid_skene_prior_scan.py --only pooled --seeds 3
    python benchmarks/dawid_skene_prior_scan.py --only hierarchical --seeds 3
    python benchmarks/dawid_skene_prior_scan.py --only raters   # raters' accuracy on gold

A prior is (c, w): ``prior_correct`` = c pseudo-answers on the diagonal of
each confusion row and ``prior_wrong`` = w pseudo-answers in all, split
evenly over the K - 1 wrong labels (w / (K - 1) per cell).  "per cell 0.5"
is the default, 0.5 on every wrong cell (0.5 (K - 1) in all, so its pull
toward wrong answers grows with K).  For ``confusion="one_coin"`` w is the
Beta pseudo-count of wrong answers, a total already.

``pooled`` tries a prototype that is not in the package: every rater's
confusion row k gets s pseudo-answers spread as the pooled (all raters)
expected confusion row k of the current iteration, s fixed whatever K
(empirical Bayes in the prior's mean, plain EM on accuracy only: the
pooled mean is not the exact maximiser of a joint objective).

``hierarchical`` tries a second prototype, not in the package: every
rater's confusion row k ~ Dirichlet(alpha_k), with alpha_k = s_k m_k (mean
AND concentration, per true class) estimated by type-II maximum
likelihood: the Polya (Dirichlet-multinomial) likelihood of each rater's
expected counts, the rater's confusion integrated out, maximised by
Minka's (2000) fixed point, with the hyperprior p(alpha_k) proportional to
s_k^-(K + 1/2) (Gelman et al., BDA 5.3: (a + b)^-5/2 for a beta-binomial,
flat on the mean; its mode in alpha).  Two E-steps: "plug-in" uses the
posterior mean (c + alpha) / (n + s) of each row (parametric empirical
Bayes; no joint objective that this EM provably ascends), "variational"
uses E[log theta] = psi(c + alpha) - psi(n + s): the exact coordinate
ascent of the evidence lower bound with q(theta) Dirichlet (its alpha-step
is then the same Polya fit).
"""

import argparse
import itertools
import warnings

import numpy as np
from scipy.special import digamma

from skcrowd import DawidSkene, MajorityVote
from skcrowd.datasets import (
    load_bluebirds,
    load_dog,
    load_rte,
    load_web,
    make_dawid_skene,
)

SETS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}
CORRECT = (0.0, 0.5, 1.0, 2.0, 4.0)
WRONG = (0.0, 0.1, 0.5, 1.0, 2.0)
LEGACY = "per cell 0.5"
GRID = [(c, w) for c, w in itertools.product(CORRECT, WRONG)] + [(1.0, LEGACY)]


def accuracy(model, ratings, truth):
    known = ~np.isnan(truth) if truth.dtype.kind == "f" else np.ones(len(truth), bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = model.fit_predict(ratings)
    return float(np.mean(labels[known] == truth[known]))


def model_for(prior, n_classes, confusion="full"):
    """DawidSkene with the prior (c, w): ``prior_wrong`` is a per-cell count
    for the full model and a total for one_coin."""
    c, w = prior
    if w == LEGACY:
        return DawidSkene(prior_correct=c, prior_wrong=0.5, confusion=confusion)
    per_cell = w / max(n_classes - 1, 1) if confusion == "full" else w
    return DawidSkene(prior_correct=c, prior_wrong=per_cell, confusion=confusion)


def name(prior):
    return f"({prior[0]:g}, {prior[1]})" if prior[1] == LEGACY else f"({prior[0]:g}, {prior[1]:g})"


def gold_table(title, first_column):
    """The shipped sets, the table's header and its majority-vote row."""
    data = {n: load() for n, load in SETS.items()}
    print(f"\n## {title}")
    print(f"| {first_column} | " + " | ".join(data) + " |")
    print("|---|" + "---|" * len(data))
    mv = [accuracy(MajorityVote(), d.ratings, d.gold) for d in data.values()]
    print("| majority vote | " + " | ".join(f"{a:.4f}" for a in mv) + " |")
    return data


def gold():
    data = gold_table("Shipped gold sets: accuracy", "prior (c, w)")
    for confusion in ("full", "one_coin"):
        for prior in GRID:
            if confusion == "one_coin" and prior[1] == LEGACY:
                continue
            cells = [accuracy(model_for(prior, len(np.unique(d.ratings.label)), confusion),
                              d.ratings, d.gold) for d in data.values()]
            tag = "" if confusion == "full" else " one_coin"
            print(f"| {name(prior)}{tag} | " + " | ".join(f"{a:.4f}" for a in cells) + " |",
                  flush=True)


def synthetic(seeds, accuracy_range, n_items=1000, n_raters=60):
    print(f"\n## Synthetic: {n_items} items, {n_raters} raters, rater accuracy uniform in "
          f"{accuracy_range}, mean over {seeds} seeds; gap to the best prior of the grid "
          "(points)")
    for confusion in ("full", "one_coin"):
        grid = [p for p in GRID if not (confusion == "one_coin" and p[1] == LEGACY)]
        print(f"\n### confusion={confusion!r}")
        print("| K | ratings/item | majority vote | best (c, w) | best | "
              + " | ".join(name(p) for p in grid) + " |")
        print("|---|---|---|---|---|" + "---|" * len(grid))
        for K, per_item in itertools.product((2, 3, 5, 8, 10), (2, 3)):
            scores = np.zeros((seeds, len(grid)))
            mv = np.zeros(seeds)
            for seed in range(seeds):
                d = make_dawid_skene(n_items, n_raters, per_item, K, accuracy=accuracy_range,
                                     random_state=seed)
                mv[seed] = accuracy(MajorityVote(), d.ratings, d.true_labels)
                for g, prior in enumerate(grid):
                    scores[seed, g] = accuracy(model_for(prior, K, confusion), d.ratings,
                                               d.true_labels)
            mean = scores.mean(axis=0)
            best = int(np.argmax(mean))
            gaps = " | ".join(f"{100 * (m - mean[best]):+.1f}" for m in mean)
            print(f"| {K} | {per_item} | {mv.mean():.4f} | {name(grid[best])} | "
                  f"{mean[best]:.4f} | {gaps} |", flush=True)


class PooledPriorDawidSkene(DawidSkene):
    """Prototype: confusion row k of every rater shrunk toward the pooled
    row k with ``strength`` pseudo-answers in all."""

    def __init__(self, *, strength=5.0, max_iter=200, tol=1e-6):
        super().__init__(prior_correct=0.0, prior_wrong=0.0, max_iter=max_iter, tol=tol,
                         accelerate=False)
        self.strength = strength

    def get_params(self, deep=True):
        return {"strength": self.strength, "max_iter": self.max_iter, "tol": self.tol}

    def _global_update(self, data, params, stats):
        K = data.n_classes
        counts = stats["confusion_counts"]
        pooled = counts.sum(axis=0) + 1.0 / K
        mean = pooled / pooled.sum(axis=1, keepdims=True)
        rows = counts + self.strength * mean[None]
        prior = stats["class_counts"] + self.prior_class
        return {"class_prior": prior / prior.sum(),
                "confusion": rows / rows.sum(axis=2, keepdims=True)}


POOLED = ["default", "split (1, 0.5)", "split (4, 1)"] + [f"pooled s={s:g}"
                                                          for s in (1, 2, 5, 10)]


def pooled_model(kind, n_classes):
    if kind == "default":
        return DawidSkene()
    if kind.startswith("split"):
        c, w = (1.0, 0.5) if kind == "split (1, 0.5)" else (4.0, 1.0)
        return DawidSkene(prior_correct=c, prior_wrong=w / (n_classes - 1))
    return PooledPriorDawidSkene(strength=float(kind.split("=")[1]))


def pooled(seeds):
    data = gold_table("Pooled-mean prior (prototype): shipped gold sets", "prior")
    for kind in POOLED:
        cells = [accuracy(pooled_model(kind, len(np.unique(d.ratings.label))), d.ratings,
                          d.gold) for d in data.values()]
        print(f"| {kind} | " + " | ".join(f"{a:.4f}" for a in cells) + " |", flush=True)
    for accuracy_range in ((0.4, 0.9), (0.6, 0.95)):
        print(f"\n## Pooled-mean prior (prototype): synthetic, 1000 items, 60 raters, rater "
              f"accuracy uniform in {accuracy_range}, mean over {seeds} seeds")
        print("| K | ratings/item | majority vote | " + " | ".join(POOLED) + " |")
        print("|---|---|---|" + "---|" * len(POOLED))
        for K, per_item in itertools.product((2, 3, 5, 8, 10), (2, 3)):
            scores = np.zeros((seeds, len(POOLED)))
            mv = np.zeros(seeds)
            for seed in range(seeds):
                d = make_dawid_skene(1000, 60, per_item, K, accuracy=accuracy_range,
                                     random_state=seed)
                mv[seed] = accuracy(MajorityVote(), d.ratings, d.true_labels)
                for g, kind in enumerate(POOLED):
                    scores[seed, g] = accuracy(pooled_model(kind, K), d.ratings,
                                               d.true_labels)
            print(f"| {K} | {per_item} | {mv.mean():.4f} | "
                  + " | ".join(f"{a:.4f}" for a in scores.mean(axis=0)) + " |", flush=True)


class HierarchicalPriorDawidSkene(DawidSkene):
    """Prototype: confusion rows k ~ Dirichlet(alpha_k), alpha_k fitted by
    type-II maximum likelihood (see the module docstring)."""

    def __init__(self, *, e_step="plug-in", max_iter=200, tol=1e-6, fixed_point_steps=20):
        super().__init__(prior_correct=0.0, prior_wrong=0.0, max_iter=max_iter, tol=tol,
                         accelerate=False)
        self.e_step = e_step
        self.fixed_point_steps = fixed_point_steps

    def get_params(self, deep=True):
        return {"e_step": self.e_step, "max_iter": self.max_iter, "tol": self.tol,
                "fixed_point_steps": self.fixed_point_steps}

    def _init_params(self, data, rng, restart):
        self.alpha_ = None  # every restart fits alpha afresh
        return super()._init_params(data, rng, restart)

    def _global_update(self, data, params, stats):
        K = data.n_classes
        counts = stats["confusion_counts"]  # [rater, true, given]
        alpha = getattr(self, "alpha_", None)
        if alpha is None:  # the fixed point starts from the old default, as alpha
            alpha = np.full((K, K), 1.5)
            np.fill_diagonal(alpha, 2.0)
        n = counts.sum(axis=2)
        for _ in range(self.fixed_point_steps):
            # Minka's (2000) fixed point for the Polya likelihood of every
            # rater's row k (raters without ratings of class k add 0), with
            # the hyperprior's -(K + 1/2) log s_k in the denominator's bound
            s = alpha.sum(axis=1)
            gain = np.sum(digamma(counts + alpha) - digamma(alpha), axis=0)
            cost = np.sum(digamma(n + s) - digamma(s), axis=0) + (K + 0.5) / s
            alpha = np.maximum(alpha * gain / cost[:, None], 1e-10)
        self.alpha_ = alpha
        rows = counts + alpha
        if self.e_step == "plug-in":
            confusion = rows / rows.sum(axis=2, keepdims=True)
        else:  # the E-step's log_likelihood is log of this: E[log theta]
            confusion = np.exp(digamma(rows) - digamma(rows.sum(axis=2, keepdims=True)))
        prior = stats["class_counts"] + self.prior_class
        return {"class_prior": prior / prior.sum(), "confusion": confusion}


HIERARCHICAL = ["default", "split (1, 0.5)", "split (4, 1)", "EB plug-in", "EB variational"]


def hierarchical_model(kind, n_classes):
    if kind.startswith("EB"):
        return HierarchicalPriorDawidSkene(e_step=kind.split()[1])
    return pooled_model(kind, n_classes)


def hierarchical(seeds):
    data = gold_table("Hierarchical prior (prototype): shipped gold sets", "prior")
    for kind in HIERARCHICAL:
        cells = []
        for d in data.values():
            model = hierarchical_model(kind, len(np.unique(d.ratings.label)))
            cells.append(accuracy(model, d.ratings, d.gold))
        print(f"| {kind} | " + " | ".join(f"{a:.4f}" for a in cells) + " |", flush=True)
        if kind.startswith("EB"):  # the fitted population rows of the last set (web)
            alpha = model.alpha_
            print(f"  web: s_k = {np.round(alpha.sum(axis=1), 1)}, diagonal of m_k = "
                  f"{np.round(np.diag(alpha) / alpha.sum(axis=1), 2)}")
    print(f"\n## Hierarchical prior (prototype): synthetic, 1000 items, 60 raters, rater "
          f"accuracy uniform in (0.4, 0.9), mean over {seeds} seeds")
    print("| K | ratings/item | majority vote | best of grid | " + " | ".join(HIERARCHICAL)
          + " | gaps of EB to best (points) | median s_k of EB plug-in |")
    print("|---|---|---|---|" + "---|" * (len(HIERARCHICAL) + 2))
    for K, per_item in itertools.product((2, 3, 5, 8, 10), (2, 3)):
        scores = np.zeros((seeds, len(HIERARCHICAL)))
        grid = np.zeros((seeds, len(GRID)))
        mv = np.zeros(seeds)
        concentration = []  # the EB plug-in fit's s_k, all classes and seeds
        for seed in range(seeds):
            d = make_dawid_skene(1000, 60, per_item, K, accuracy=(0.4, 0.9), random_state=seed)
            mv[seed] = accuracy(MajorityVote(), d.ratings, d.true_labels)
            for g, kind in enumerate(HIERARCHICAL):
                model = hierarchical_model(kind, K)
                scores[seed, g] = accuracy(model, d.ratings, d.true_labels)
                if kind == "EB plug-in":
                    concentration.extend(model.alpha_.sum(axis=1))
            for g, prior in enumerate(GRID):
                grid[seed, g] = accuracy(model_for(prior, K), d.ratings, d.true_labels)
        mean, best = scores.mean(axis=0), grid.mean(axis=0)
        top = int(np.argmax(best))
        gaps = " / ".join(f"{100 * (m - best[top]):+.1f}" for m in mean[-2:])
        print(f"| {K} | {per_item} | {mv.mean():.4f} | {best[top]:.4f} {name(GRID[top])} | "
              + " | ".join(f"{a:.4f}" for a in mean) + f" | {gaps} | "
              f"{np.median(concentration):.0f} |", flush=True)


def raters():
    """Each shipped set's raters against gold, grouped by how many of their
    ratings have gold: why a prior that trusts raters suits some sets and
    not others."""
    print("\n## Raters' accuracy on the gold items")
    print("| set | gold ratings per rater | raters | ratings | mean accuracy | "
          "raters below 0.3 |")
    print("|---|---|---|---|---|---|")
    for set_name, load in SETS.items():
        d = load()
        r = d.ratings
        item = np.searchsorted(r.item_ids, r.item)
        assert np.array_equal(r.item_ids[item], r.item)
        truth = np.asarray(d.gold, dtype=float)[item]
        known = ~np.isnan(truth)
        _, rater = np.unique(r.rater[known], return_inverse=True)
        right = np.asarray(r.label)[known] == truth[known]
        n = np.bincount(rater)
        acc = np.bincount(rater, weights=right) / n
        top = np.sort(np.bincount(rater))[-10:].sum() / n.sum()
        for lo, hi in ((1, 10), (10, 30), (30, 100), (100, None)):
            group = (n >= lo) & (n < (hi or np.inf))
            if group.any():
                print(f"| {set_name} | {lo}-{hi - 1 if hi else ''} | {group.sum()} | "
                      f"{n[group].sum()} | {acc[group].mean():.3f} | "
                      f"{np.mean(acc[group] < 0.3):.2f} |")
        print(f"| {set_name} | (the 10 busiest raters: {top:.0%} of the gold ratings) | | | | |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="gold,synthetic")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    if "gold" in only:
        gold()
    if "synthetic" in only:
        for accuracy_range in ((0.4, 0.9), (0.6, 0.95)):
            synthetic(args.seeds, accuracy_range)
    if "pooled" in only:
        pooled(args.seeds)
    if "hierarchical" in only:
        hierarchical(args.seeds)
    if "raters" in only:
        raters()


if __name__ == "__main__":
    main()
