"""Accuracy of DawidSkene for a grid of Dirichlet priors, on the shipped
gold sets and on simulated data with 2 to 10 classes and few ratings per
rater per class.

Run from the repository root::

    python benchmarks/experiments/dawid_skene_prior_scan.py                  # both
    python benchmarks/experiments/dawid_skene_prior_scan.py --only gold
    python benchmarks/experiments/dawid_skene_prior_scan.py --only synthetic --seeds 5
    python benchmarks/experiments/dawid_skene_prior_scan.py --only pooled --seeds 3
    python benchmarks/experiments/dawid_skene_prior_scan.py --only hierarchical --seeds 3
    python benchmarks/experiments/dawid_skene_prior_scan.py --only centred --seeds 3
    python benchmarks/experiments/dawid_skene_prior_scan.py --only centred --seeds 3 --classes 8,10 \
        --kinds "marginal s=fit b=0 hard"
    python benchmarks/experiments/dawid_skene_prior_scan.py --only mace-centred --seeds 3 --classes 8,10
    python benchmarks/experiments/dawid_skene_prior_scan.py --only mace --seeds 3   # skcrowd's MACE
    python benchmarks/experiments/dawid_skene_prior_scan.py --only raters   # raters' accuracy on gold
    python benchmarks/experiments/dawid_skene_prior_scan.py --only evidence   # grid prior by the bound
    python benchmarks/experiments/dawid_skene_prior_scan.py --only cv --seeds 3   # grid prior by held-out likelihood

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

``centred`` tries a third prototype, not in the package: rater j's
confusion rows ~ Dirichlet(1 + s m_j), m_j the one-coin row of the rater's
own accuracy a_j ~ Beta(1 + b, 1 + b), s pseudo-answers per row at every
K; a_j by the joint MAP ("map") or by type-II ML per rater ("marginal"),
s fixed or fitted ("s=fit"), on expected or on hard counts ("hard").  It
is measured on the shipped sets and on two simulated designs: raters 0.4
to 0.9 right, and a weak crowd (chance to chance + 0.5, 30% spammers).

``mace-centred`` tries a fourth prototype, not in the package: variational
Dawid-Skene (q(theta) Dirichlet, E[log theta] in the E-step) whose rows are
drawn from Dirichlet(s m_jk), m_jk = a_j e_k + (1 - a_j) xi_j the rater's
own MACE row (knows the answer with probability a_j, else answers from
xi_j), (a_j, xi_j) and optionally s fitted by the evidence lower bound.

``cv`` chooses among the split priors of ``skcrowd.dawid_skene_prior_grid``
by 5-fold held-out likelihood (GridSearchCV, items as samples) and reports
the refitted choice's accuracy, on the shipped sets (three fold seeds) and
on both simulated designs.
"""

import argparse
import itertools
import warnings
from time import perf_counter

import numpy as np
from scipy.special import digamma, gammaln, polygamma

from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from skcrowd import MACE, DawidSkene, MajorityVote, dawid_skene_prior_grid
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


def agreement(labels, truth):
    """Share of the items with a known truth (not NaN) whose label is it."""
    known = ~np.isnan(truth) if truth.dtype.kind == "f" else np.ones(len(truth), bool)
    return float(np.mean(labels[known] == truth[known]))


def accuracy(model, ratings, truth):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = model.fit_predict(ratings)
    return agreement(labels, truth)


def grid_accuracies(data, n_classes):
    """Accuracy of every prior of :data:`GRID` on a simulated set."""
    return [accuracy(model_for(prior, n_classes), data.ratings, data.true_labels)
            for prior in GRID]


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


def gold_row(data, kind, make_model):
    """Accuracy of ``make_model(kind, K)`` on each shipped set, and the
    model fitted to the last one (web)."""
    cells = []
    for d in data.values():
        model = make_model(kind, len(np.unique(d.ratings.label)))
        cells.append(accuracy(model, d.ratings, d.gold))
    return cells, model


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
        cells, model = gold_row(data, kind, hierarchical_model)
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
            grid[seed] = grid_accuracies(d, K)
        mean, best = scores.mean(axis=0), grid.mean(axis=0)
        top = int(np.argmax(best))
        gaps = " / ".join(f"{100 * (m - best[top]):+.1f}" for m in mean[-2:])
        print(f"| {K} | {per_item} | {mv.mean():.4f} | {best[top]:.4f} {name(GRID[top])} | "
              + " | ".join(f"{a:.4f}" for a in mean) + f" | {gaps} | "
              f"{np.median(concentration):.0f} |", flush=True)


def _bisect(derivative, shape, steps=60):
    """Root in (0, 1) of a decreasing derivative, elementwise (bisection on
    every rater at once; the concave objective's maximiser)."""
    lo, hi = np.full(shape, 1e-9), np.full(shape, 1 - 1e-9)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        up = derivative(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return 0.5 * (lo + hi)


def _centre_rows(centre, K, errors=None):
    """m_j: each rater's prior mean row, a_j on the diagonal and 1 - a_j
    spread over the wrong labels as ``errors[k]`` (zero diagonal, rows
    summing to one; default evenly, 1 / (K - 1) each), as [rater, true,
    given]."""
    if errors is None:
        errors = (1 - np.eye(K)) / (K - 1)
    rows = (1 - centre)[:, None, None] * errors[None]
    idx = np.arange(K)
    rows[:, idx, idx] = centre[:, None]
    return rows


class RaterCentredDawidSkene(DawidSkene):
    """Prototype: rater j's confusion rows ~ Dirichlet(1 + s m_j), m_j its
    one-coin row of accuracy a_j ~ Beta(1 + b, 1 + b); s pseudo-answers per
    row whatever K.

    ``centre_fit="map"``: joint MAP in (theta, a, pi), coordinate ascent
    (theta closed form given a; a the 1-D concave maximiser given theta);
    the objective includes the Dirichlet normalisers, and is recorded so
    that the scan can check that it never decreases.  ``"marginal"``: a_j
    by type-II ML per rater, the Polya likelihood of the rater's expected
    counts with theta integrated out (parametric EB; theta the posterior
    mean (c + s m) / (n + s), no joint objective).
    """

    def __init__(self, *, strength=4.0, centre_prior=1.0, centre_fit="map", errors="uniform",
                 strength_steps=3, fit_counts="soft", max_iter=200, tol=1e-6):
        super().__init__(prior_correct=0.0, prior_wrong=0.0, max_iter=max_iter, tol=tol,
                         accelerate=False)
        self.strength = strength
        self.centre_prior = centre_prior
        self.centre_fit = centre_fit
        self.errors = errors
        self.strength_steps = strength_steps
        self.fit_counts = fit_counts

    def get_params(self, deep=True):
        return {"strength": self.strength, "centre_prior": self.centre_prior,
                "centre_fit": self.centre_fit, "errors": self.errors,
                "strength_steps": self.strength_steps, "fit_counts": self.fit_counts,
                "max_iter": self.max_iter, "tol": self.tol}

    def _local_step(self, data, params):
        items, stats = super()._local_step(data, params)
        if self.fit_counts == "hard":
            K = data.n_classes
            best = np.argmax(items["proba"], axis=1)[data.item]
            cells = (np.asarray(data.rater) * K + best) * K + np.asarray(data.label)
            stats["hard_counts"] = np.bincount(cells, minlength=data.n_raters * K * K).reshape(
                data.n_raters, K, K).astype(float)
        return items, stats

    def _errors(self, counts, K):
        """How each row's wrong mass is spread: evenly, or as the crowd's
        pooled wrong answers (``errors="pooled"``, empirical Bayes in the
        shape of the errors only)."""
        if self.errors == "uniform":
            return (1 - np.eye(K)) / (K - 1)
        pooled = counts.sum(axis=0) + 1.0 / K
        np.fill_diagonal(pooled, 0.0)
        return pooled / pooled.sum(axis=1, keepdims=True)

    def _centre_step(self, counts, confusion, K, errors, s=None):
        s = self.strength if s is None else s
        b = self.centre_prior
        off_diagonal = 1 - np.eye(K)
        if self.centre_fit == "map":
            log_theta = np.log(confusion)
            gap = (np.trace(log_theta, axis1=1, axis2=2)
                   - np.sum(errors * log_theta, axis=(1, 2)))  # Σ_k

            def derivative(a):
                on = digamma(s * a + 1)
                off = digamma(s * (1 - a)[:, None, None] * errors + 1)
                return (s * gap - s * (K * on - np.sum(errors * off, axis=(1, 2)))
                        + b / a - b / (1 - a))
        else:
            diag_counts = np.diagonal(counts, axis1=1, axis2=2)  # [rater, k]
            safe = np.where(off_diagonal > 0, errors, 1.0)

            def derivative(a):
                on = s * a[:, None]
                off = s * (1 - a)[:, None, None] * safe
                d_on = np.sum(digamma(diag_counts + on) - digamma(on), axis=1)
                d_off = np.sum(off_diagonal * errors * (digamma(counts + off) - digamma(off)),
                               axis=(1, 2))
                return s * d_on - s * d_off + b / a - b / (1 - a)
        return _bisect(derivative, counts.shape[0])

    def _global_update(self, data, params, stats):
        K = data.n_classes
        s = self.strength
        counts = stats["confusion_counts"]
        errors = self._errors(counts, K)
        if params is None:  # the start: one-coin accuracy of the start's counts
            correct = np.trace(counts, axis1=1, axis2=2)
            centre = (correct + 1) / (counts.sum(axis=(1, 2)) + 2)
        else:
            centre = params["centre"]
        if self.strength == "fit":
            s = params["strength"] if params is not None else 4.0
            # "hard": the type-II steps see the counts of each item's most
            # probable class (as dispersed as counts of known labels), the
            # rows still the soft counts
            fitted = stats.get("hard_counts", counts) if self.fit_counts == "hard" else counts
            for _ in range(self.strength_steps):
                centre = self._centre_step(fitted, None, K, errors, s)
                s = self._strength_step(fitted, centre, K, errors)
            rows = counts + s * _centre_rows(centre, K, errors)
            confusion = rows / rows.sum(axis=2, keepdims=True)
        elif self.centre_fit == "map":
            rows = counts + s * _centre_rows(centre, K, errors)
            confusion = rows / rows.sum(axis=2, keepdims=True)
            centre = self._centre_step(counts, confusion, K, errors)
        else:
            centre = self._centre_step(counts, None, K, errors)
            rows = counts + s * _centre_rows(centre, K, errors)
            confusion = rows / rows.sum(axis=2, keepdims=True)
        prior = stats["class_counts"] + self.prior_class
        return {"class_prior": prior / prior.sum(), "confusion": confusion, "centre": centre,
                "errors": errors, "strength": s}

    def _strength_step(self, counts, centre, K, errors):
        """Type-II ML of the one strength s of all raters' rows: the Polya
        likelihood of every row's expected counts at the rater's mean m_j,
        with the hyperprior p(s) = (1 + s)^-2 (proper, the same at every
        K); bisection on the derivative in log s."""
        mean = _centre_rows(centre, K, errors)
        n = counts.sum(axis=2)
        rated = n > 0
        lo, hi = np.log(0.05), np.log(1e4)
        for _ in range(50):
            s = np.exp(0.5 * (lo + hi))
            cells = np.where(mean > 0, mean * (digamma(counts + s * mean)
                                                - digamma(np.maximum(s * mean, 1e-300))), 0.0)
            slope = np.sum(np.where(rated, digamma(s) - digamma(n + s) + cells.sum(axis=2),
                                    0.0)) - 2 / (1 + s)
            lo, hi = (0.5 * (lo + hi), hi) if slope > 0 else (lo, 0.5 * (lo + hi))
        return float(np.exp(0.5 * (lo + hi)))

    def _log_prior(self, params, data):
        K, s, b = data.n_classes, params["strength"], self.centre_prior
        a = params["centre"]
        alpha = 1 + s * _centre_rows(a, K, params["errors"])
        value = np.sum((alpha - 1) * np.log(params["confusion"]))
        value += np.sum(gammaln(s + K) - gammaln(alpha).sum(axis=2))
        value += np.sum(b * np.log(a) + b * np.log1p(-a))
        return value + self.prior_class * np.sum(np.log(params["class_prior"]))

    def _set_fitted(self, data, params, items):
        super()._set_fitted(data, params, items)
        self.centre_ = params["centre"]
        self.strength_ = params["strength"]


CENTRED = ["default", "split (1, 0.5)", "split (4, 1)", "map s=4 b=1", "marginal s=2 b=0",
           "marginal s=4 b=0", "marginal s=8 b=0", "marginal s=4 b=1", "marginal s=fit b=0",
           "marginal s=fit b=1"]


def centred_model(kind, n_classes):
    """``"<fit> s=<strength> b=<Beta pseudo-count>"``: the rater-centred
    prototype; otherwise a fixed prior (:func:`pooled_model`)."""
    if kind.startswith(("map", "marginal")):
        fit, s, b, *counts = kind.split()
        strength = s[2:] if s == "s=fit" else float(s[2:])
        return RaterCentredDawidSkene(strength=strength, centre_prior=float(b[2:]),
                                      centre_fit=fit, fit_counts=(counts or ["soft"])[0])
    return pooled_model(kind, n_classes)


def _weak_crowd(K, per_item, seed):
    """The second design: web-like raters, accuracy uniform from chance to
    chance + 0.5 and 30% spammers."""
    return make_dawid_skene(1000, 60, per_item, K, accuracy=(1 / K, min(1 / K + 0.5, 0.95)),
                            spammer_fraction=0.3, random_state=seed)


def centred(seeds, classes=(2, 3, 5, 8, 10), kinds=None):
    kinds = CENTRED if kinds is None else CENTRED[:3] + kinds
    data = gold_table("Rater-centred prior (prototype): shipped gold sets", "prior")
    for kind in kinds:
        cells, model = gold_row(data, kind, centred_model)
        note = ""
        if kind.startswith(("map", "marginal")):  # web's fitted centres, the monotone check
            history = np.asarray(model.objective_history_)
            drop = float(np.min(np.diff(history))) if len(history) > 1 else 0.0
            quartiles = np.round(np.quantile(model.centre_, [.25, .5, .75]), 2)
            note = (f"  (web: a_j quartiles {quartiles}, s = {model.strength_:.1f}, "
                    f"largest objective decrease {min(drop, 0):.1e})")
        print(f"| {kind} | " + " | ".join(f"{a:.4f}" for a in cells) + f" |{note}", flush=True)
    designs = (("rater accuracy uniform in (0.4, 0.9)",
                lambda K, r, seed: make_dawid_skene(1000, 60, r, K, accuracy=(0.4, 0.9),
                                                    random_state=seed)),
               ("weak crowd: accuracy uniform in (1/K, 1/K + 0.5), 30% spammers", _weak_crowd))
    for title, design in designs:
        print(f"\n## Rater-centred prior (prototype): synthetic, 1000 items, 60 raters, {title}, "
              f"mean over {seeds} seeds; last column: gaps of the centred priors to the best "
              "of the grid (points)")
        print("| K | ratings/item | majority vote | best of grid | " + " | ".join(kinds)
              + " | gaps |")
        print("|---|---|---|---|" + "---|" * (len(kinds) + 1))
        for K, per_item in itertools.product(classes, (2, 3)):
            scores = np.zeros((seeds, len(kinds)))
            grid = np.zeros((seeds, len(GRID)))
            mv = np.zeros(seeds)
            for seed in range(seeds):
                d = design(K, per_item, seed)
                mv[seed] = accuracy(MajorityVote(), d.ratings, d.true_labels)
                for g, kind in enumerate(kinds):
                    scores[seed, g] = accuracy(centred_model(kind, K), d.ratings,
                                               d.true_labels)
                grid[seed] = grid_accuracies(d, K)
            mean, best = scores.mean(axis=0), grid.mean(axis=0)
            top = int(np.argmax(best))
            gaps = " / ".join(f"{100 * (m - best[top]):+.1f}" for m in mean[3:])
            print(f"| {K} | {per_item} | {mv.mean():.4f} | {best[top]:.4f} {name(GRID[top])} | "
                  + " | ".join(f"{a:.4f}" for a in mean) + f" | {gaps} |", flush=True)


# -- the fourth prototype: variational DS shrunk toward each rater's MACE row --------
def _mace_rows(w, K):
    """m[j, k, l] = w[j, 0] [k = l] + w[j, 1 + l]: w = (a_j, (1 - a_j) xi_j), a
    point of the (K + 1)-simplex, so the rows are linear in w."""
    m = np.repeat(w[:, None, 1:], K, axis=1)
    m[:, np.arange(K), np.arange(K)] += w[:, :1]
    return m


def _mace_centre_value(w, log_theta, s):
    """Each rater's E_q log Dirichlet(theta | s m) up to terms free of w."""
    m = _mace_rows(w, log_theta.shape[1])
    return np.sum(s * m * log_theta - gammaln(s * m), axis=(1, 2))


def _mace_centre_step(w, log_theta, s, steps=5):
    """Ascend every rater's centre objective, concave in w (-log Gamma of a
    linear function plus a linear term), by Newton steps on the simplex
    (the KKT system of sum(w) = 1), each halved until the objective does
    not fall and kept inside w > 0 (w_0 = a_j may reach 0: a spammer)."""
    J, K = w.shape[0], log_theta.shape[1]
    value = _mace_centre_value(w, log_theta, s)
    for _ in range(steps):
        m = _mace_rows(w, K)
        grad_m = s * (log_theta - digamma(s * m))
        curv_m = -s * s * polygamma(1, s * m)
        grad = np.concatenate([np.trace(grad_m, axis1=1, axis2=2)[:, None],
                               grad_m.sum(axis=1)], axis=1)
        on = np.diagonal(curv_m, axis1=1, axis2=2)
        kkt = np.zeros((J, K + 2, K + 2))
        kkt[:, 0, 0] = on.sum(axis=1)
        kkt[:, 0, 1:K + 1] = kkt[:, 1:K + 1, 0] = on
        kkt[:, np.arange(1, K + 1), np.arange(1, K + 1)] = curv_m.sum(axis=1)
        kkt[:, :K + 1, :K + 1] -= 1e-9 * np.eye(K + 1)
        kkt[:, :K + 1, K + 1] = kkt[:, K + 1, :K + 1] = 1.0
        rhs = np.concatenate([-grad, np.zeros((J, 1))], axis=1)
        step = np.linalg.solve(kkt, rhs[..., None])[:, :K + 1, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(step < 0, -w / step, np.inf).min(axis=1)
        t = np.minimum(1.0, 0.95 * room)
        for _ in range(30):
            trial = w + t[:, None] * step
            trial[:, 0] = np.maximum(trial[:, 0], 0.0)
            trial[:, 1:] = np.maximum(trial[:, 1:], 1e-12)
            trial /= trial.sum(axis=1, keepdims=True)
            trial_value = _mace_centre_value(trial, log_theta, s)
            better = trial_value >= value
            w = np.where(better[:, None], trial, w)
            value = np.where(better, trial_value, value)
            if better.all():
                break
            t = np.where(better, 0.0, 0.5 * t)
    return w


def _mace_strength_step(w, log_theta):
    """The one strength s of every row, maximising sum_jk E_q log
    Dirichlet(theta_jk | s m_jk) - 2 log(1 + s) (the hyperprior of the
    rater-centred prototype) by golden-section search in log s."""
    J, K = w.shape[0], log_theta.shape[1]
    m = _mace_rows(w, K)

    def value(log_s):
        s = np.exp(log_s)
        return (J * K * gammaln(s) + np.sum(s * m * log_theta - gammaln(s * m))
                - 2 * np.log1p(s))

    lo, hi = np.log(0.05), np.log(1e5)
    for _ in range(60):
        a, b = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        lo, hi = (a, hi) if value(a) < value(b) else (lo, b)
    return float(np.exp(0.5 * (lo + hi)))


def mace_centred_fit(ratings, strength=8.0, tol=1e-6, max_iter=500, prior_class=1.0):
    """Variational DS, rows ~ Dirichlet(s m_j) with m_j the rater's MACE row;
    ``strength="fit"`` fits s too.  Coordinate ascent on the evidence lower
    bound (q(z), pi, then three rounds of q(theta) and the centres), from
    the majority vote's shares.  Returns the item posteriors, the classes,
    the centres w, s and the bound of every iteration (per item)."""
    _, item = np.unique(np.asarray(ratings.item), return_inverse=True)
    _, rater = np.unique(np.asarray(ratings.rater), return_inverse=True)
    classes, label = np.unique(np.asarray(ratings.label), return_inverse=True)
    N, J, K = item.max() + 1, rater.max() + 1, len(classes)
    q = np.bincount(item * K + label, minlength=N * K).reshape(N, K).astype(float)
    q /= q.sum(axis=1, keepdims=True)
    w = np.concatenate([np.full((J, 1), 0.5), np.full((J, K), 0.5 / K)], axis=1)
    fit_s = strength == "fit"
    s = 4.0 if fit_s else float(strength)
    history = []
    for _ in range(max_iter):
        counts = sum(np.bincount((rater * K + k) * K + label, weights=q[item, k],
                                 minlength=J * K * K) for k in range(K)).reshape(J, K, K)
        pi = q.sum(axis=0) + prior_class
        pi /= pi.sum()
        for _ in range(3):
            post = s * _mace_rows(w, K) + counts
            log_theta = digamma(post) - digamma(post.sum(axis=2, keepdims=True))
            w = _mace_centre_step(w, log_theta, s)
            if fit_s:
                s = _mace_strength_step(w, log_theta)
        alpha = s * _mace_rows(w, K)
        post = alpha + counts
        log_theta = digamma(post) - digamma(post.sum(axis=2, keepdims=True))
        kl = np.sum(gammaln(post.sum(2)) - gammaln(post).sum(2) - gammaln(alpha.sum(2))
                    + gammaln(alpha).sum(2) + np.sum((post - alpha) * log_theta, axis=2))
        joint = np.log(pi) + np.stack([np.bincount(item, weights=log_theta[rater, k, label],
                                                   minlength=N) for k in range(K)], axis=1)
        entropy = -np.sum(q * np.log(np.where(q > 0, q, 1.0)))
        bound = (np.sum(q * joint) + entropy - kl + prior_class * np.sum(np.log(pi))
                 - (2 * np.log1p(s) if fit_s else 0.0))
        history.append(bound / N)
        q = np.exp(joint - joint.max(axis=1, keepdims=True))
        q /= q.sum(axis=1, keepdims=True)
        if len(history) > 1 and abs(history[-1] - history[-2]) < tol:
            break
    return q, classes, w, s, np.array(history)


def _mace_centred_accuracy(ratings, truth, strength, tol):
    q, classes, w, s, history = mace_centred_fit(ratings, strength, tol)
    return agreement(classes[np.argmax(q, axis=1)], np.asarray(truth)), s, history


MACE_CENTRED = (6.0, 8.0, 12.0, "fit")


def mace_centred(seeds, classes=(8, 10), strengths=MACE_CENTRED, tol=1e-7,
                 designs=("first", "weak")):
    """The shipped sets (accuracy, s, iterations, the bound's largest fall)
    and the simulated ``designs`` at ``classes`` against the (c, w) grid."""
    if "gold" in designs or designs == ("first", "weak"):
        _mace_centred_gold(strengths, tol)
    for title, design in _DESIGNS:
        if title.split()[0] in designs:
            _mace_centred_synthetic(seeds, classes, strengths, title, design)


def _mace_centred_gold(strengths, tol):
    data = gold_table("MACE-centred variational prior (prototype): shipped gold sets",
                      "prior")
    cells = [accuracy(DawidSkene(), d.ratings, d.gold) for d in data.values()]
    print("| default | " + " | ".join(f"{a:.4f}" for a in cells) + " |")
    for strength in strengths:
        cells = []
        for d in data.values():
            acc, s, history = _mace_centred_accuracy(d.ratings, d.gold, strength, tol)
            fall = min(0.0, float(np.min(np.diff(history)))) if len(history) > 1 else 0.0
            cells.append(f"{acc:.4f} (s {s:.1f}, {len(history)} it., fall {fall:.0e})")
        print(f"| s={strength} | " + " | ".join(cells) + " |", flush=True)


_DESIGNS = (("first design: rater accuracy uniform in (0.4, 0.9)",
             lambda K, r, seed: make_dawid_skene(1000, 60, r, K, accuracy=(0.4, 0.9),
                                                 random_state=seed)),
            ("weak crowd: accuracy uniform in (1/K, 1/K + 0.5), 30% spammers", _weak_crowd))


def _mace_centred_synthetic(seeds, classes, strengths, title, design):
    print(f"\n## MACE-centred prior (prototype): synthetic, 1000 items, 60 raters, {title}, "
          f"mean over {seeds} seeds; accuracy (gap to the best of the grid, points)")
    print("| K | ratings/item | majority vote | best of grid | default | "
          + " | ".join(f"s={s}" for s in strengths) + " | median fitted s |")
    print("|---|---|---|---|---|" + "---|" * (len(strengths) + 1))
    for K, per_item in itertools.product(classes, (2, 3)):
        scores = np.zeros((seeds, len(strengths)))
        grid = np.zeros((seeds, len(GRID)))
        mv = np.zeros(seeds)
        fitted = []
        for seed in range(seeds):
            d = design(K, per_item, seed)
            mv[seed] = accuracy(MajorityVote(), d.ratings, d.true_labels)
            for g, strength in enumerate(strengths):
                scores[seed, g], s, _ = _mace_centred_accuracy(d.ratings, d.true_labels,
                                                               strength, 1e-6)
                if strength == "fit":
                    fitted.append(s)
            grid[seed] = grid_accuracies(d, K)
        mean, best = scores.mean(axis=0), grid.mean(axis=0)
        top = int(np.argmax(best))
        print(f"| {K} | {per_item} | {mv.mean():.4f} | {best[top]:.4f} {name(GRID[top])} | "
              f"{best[-1]:.4f} | "
              + " | ".join(f"{a:.4f} ({100 * (a - best[top]):+.1f})" for a in mean)
              + f" | {np.median(fitted) if fitted else float('nan'):.0f} |", flush=True)



def mace_on_designs(seeds, classes=(8, 10)):
    """skcrowd's MACE at its defaults (``random_state=0``) on both simulated
    designs, against the best prior of the (c, w) grid."""
    for title, design in _DESIGNS:
        print(f"\n## MACE on the synthetic {title}, mean over {seeds} seeds")
        print("| K | ratings/item | best of grid | MACE (gap, points) |")
        print("|---|---|---|---|")
        for K, per_item in itertools.product(classes, (2, 3)):
            mace = np.zeros(seeds)
            grid = np.zeros((seeds, len(GRID)))
            for seed in range(seeds):
                d = design(K, per_item, seed)
                mace[seed] = accuracy(MACE(random_state=0), d.ratings, d.true_labels)
                grid[seed] = grid_accuracies(d, K)
            best = grid.mean(axis=0)
            top = int(np.argmax(best))
            print(f"| {K} | {per_item} | {best[top]:.4f} {name(GRID[top])} | "
                  f"{mace.mean():.4f} ({100 * (mace.mean() - best[top]):+.1f}) |", flush=True)

def _log_beta(alpha):
    return gammaln(alpha).sum(axis=-1) - gammaln(alpha.sum(axis=-1))


def variational_bound(model, ratings, correct, per_cell):
    """The evidence lower bound of a fitted DawidSkene with q(theta) the
    Dirichlet posterior given its q(z): with that q(theta) the expected log
    likelihood minus KL(q(theta) || p(theta)) is, row by row,
    log B(alpha + n) - log B(alpha) of the expected counts n (alpha - 1 the
    pseudo-counts), so the bound is
    sum_ik q_ik log pi_k + H(q) + sum_jk [log B(alpha_k + n_jk) - log B(alpha_k)]."""
    q = np.asarray(model.predict_proba(ratings))
    K = q.shape[1]
    alpha = np.full((K, K), per_cell + 1.0)
    np.fill_diagonal(alpha, correct + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(q > 0, q * np.log(q), 0.0))
        log_prior = np.where(q.sum(axis=0) > 0, np.log(model.class_prior_), 0.0)
    counts = model.confusion_counts_
    return float(np.sum(q * log_prior) + entropy
                 + np.sum(_log_beta(alpha[None] + counts) - _log_beta(alpha)[None]))


def evidence():
    """Empirical Bayes over the grid: fit every (c, w) prior and keep the
    one whose fit has the highest evidence lower bound."""
    data = gold_table("Prior of the grid chosen by the evidence lower bound: shipped sets",
                      "prior")
    picked, default, best, spearman = [], [], [], []
    for d in data.values():
        K = len(np.unique(d.ratings.label))
        rows = []
        for prior in GRID:
            c, w = prior
            per_cell = 0.5 if w == LEGACY else w / max(K - 1, 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = DawidSkene(prior_correct=c, prior_wrong=per_cell).fit(d.ratings)
            rows.append((prior, variational_bound(model, d.ratings, c, per_cell),
                         agreement(np.asarray(model.predict(d.ratings)), d.gold)))
        top = max(rows, key=lambda r: r[1])
        picked.append(f"{top[2]:.4f} {name(top[0])}")
        default.append(f"{rows[-1][2]:.4f}")
        best.append(f"{max(r[2] for r in rows):.4f}")
        bounds, accuracies = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
        ranks = [np.argsort(np.argsort(v)) for v in (bounds, accuracies)]
        spearman.append(f"{np.corrcoef(*ranks)[0, 1]:+.2f}")
    print("| default | " + " | ".join(default) + " |")
    print("| best of grid | " + " | ".join(best) + " |")
    print("| chosen by the bound | " + " | ".join(picked) + " |")
    print("| rank correlation, bound vs accuracy | " + " | ".join(spearman) + " |")


def cv_pick(ratings, truth, n_classes, fold_seed, with_mace=False):
    """The prior of :func:`skcrowd.dawid_skene_prior_grid` (its default
    grid) with the highest 5-fold held-out log likelihood (``score``: items
    as samples), refitted on all items: its (c, w) and its accuracy.  With
    ``with_mace`` the search also has ``MACE(random_state=0)`` as a
    candidate, one pipeline step swapped by the grid (doc/model_selection.rst),
    and the choice is ``"MACE"`` when it wins."""
    grid = dawid_skene_prior_grid(n_classes)
    estimator = DawidSkene()
    if with_mace:
        grid = [{"model": [DawidSkene(**{k: v[0] for k, v in g.items()})]} for g in grid]
        grid.append({"model": [MACE(random_state=0)]})
        estimator = Pipeline([("model", DawidSkene())])
    search = GridSearchCV(estimator, grid, cv=KFold(5, shuffle=True, random_state=fold_seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(ratings)
        labels = np.asarray(search.best_estimator_.predict(ratings))
    best = search.best_params_
    if with_mace:
        if isinstance(best["model"], MACE):
            return "MACE", agreement(labels, truth)
        best = best["model"].get_params()
    prior = (best["prior_correct"], round(best["prior_wrong"] * (n_classes - 1), 6))
    return prior, agreement(labels, truth)


def _choice(prior):
    return prior if isinstance(prior, str) else name(prior)


def cross_validated(seeds, classes=(2, 5, 8, 10)):
    """The prior chosen by held-out likelihood (GridSearchCV over
    ``dawid_skene_prior_grid``, 5 folds, fold seeds 0 .. seeds - 1) on the
    shipped sets and on the first simulated design, against the default and
    the best prior of this script's :data:`GRID`."""
    data = gold_table("Prior of the grid chosen by 5-fold held-out likelihood "
                      f"(GridSearchCV), fold seeds 0-{seeds - 1}: shipped sets", "prior")
    rows = {"default": [], "best of grid": []}
    rows.update({f"chosen, fold seed {s}": [] for s in range(seeds)})
    rows["chosen with MACE a candidate, fold seed 0"] = []
    rows["seconds: default fit / search"] = []
    for d in data.values():
        K = len(np.unique(d.ratings.label))
        accuracies = [accuracy(model_for(p, K), d.ratings, d.gold) for p in GRID]
        rows["default"].append(f"{accuracies[-1]:.4f}")
        rows["best of grid"].append(f"{max(accuracies):.4f}")
        times = []  # of each search, the first (fold seed 0) reported
        for s in range(seeds):
            start = perf_counter()
            prior, acc = cv_pick(d.ratings, d.gold, K, s)
            times.append(perf_counter() - start)
            rows[f"chosen, fold seed {s}"].append(f"{acc:.4f} {name(prior)}")
        prior, acc = cv_pick(d.ratings, d.gold, K, 0, with_mace=True)
        rows["chosen with MACE a candidate, fold seed 0"].append(f"{acc:.4f} {_choice(prior)}")
        start = perf_counter()
        accuracy(DawidSkene(), d.ratings, d.gold)
        rows["seconds: default fit / search"].append(
            f"{perf_counter() - start:.3f} / {times[0]:.2f}")
    for label, cells in rows.items():
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    designs = {
        "rater accuracy uniform in (0.4, 0.9)": lambda K, per_item, seed: make_dawid_skene(
            1000, 60, per_item, K, accuracy=(0.4, 0.9), random_state=seed),
        "the weak crowd (chance to chance + 0.5, 30% spammers)": _weak_crowd,
    }
    for title, design in designs.items():
        print(f"\n## Simulated, {title}; 1,000 items, 60 raters, mean over data seeds "
              f"0-{seeds - 1}, fold seed 0")
        print("| K | ratings/item | majority vote | best of grid | default | chosen by CV | "
              "priors chosen | chosen with MACE a candidate | choices |")
        print("|---|---|---|---|---|---|---|---|---|")
        for K, per_item in itertools.product(classes, (2, 3)):
            mv, grid, chosen, picks = np.zeros(seeds), np.zeros((seeds, len(GRID))), \
                np.zeros(seeds), []
            joint, joint_picks = np.zeros(seeds), []
            for seed in range(seeds):
                d = design(K, per_item, seed)
                mv[seed] = accuracy(MajorityVote(), d.ratings, d.true_labels)
                grid[seed] = grid_accuracies(d, K)
                prior, chosen[seed] = cv_pick(d.ratings, d.true_labels, K, 0)
                picks.append(name(prior))
                prior, joint[seed] = cv_pick(d.ratings, d.true_labels, K, 0, with_mace=True)
                joint_picks.append(_choice(prior))
            mean = grid.mean(axis=0)
            top = int(np.argmax(mean))
            print(f"| {K} | {per_item} | {mv.mean():.4f} | {mean[top]:.4f} {name(GRID[top])} | "
                  f"{mean[-1]:.4f} | {chosen.mean():.4f} "
                  f"({100 * (chosen.mean() - mean[top]):+.1f}) | {', '.join(picks)} | "
                  f"{joint.mean():.4f} ({100 * (joint.mean() - mean[top]):+.1f}) | "
                  f"{', '.join(joint_picks)} |", flush=True)


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
    parser.add_argument("--classes", default=None,
                        help="K of the synthetic sets (--only centred: 2,3,5,8,10; mace-centred: 8,10)")
    parser.add_argument("--kinds", default=None,
                        help="rater-centred priors to try (--only centred), comma-separated, "
                             "e.g. 'marginal s=fit b=0 hard'")
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
    if "centred" in only:
        kinds = args.kinds.split(",") if args.kinds else None
        centred(args.seeds, tuple(int(k) for k in (args.classes or "2,3,5,8,10").split(",")),
                kinds)
    if "mace-centred" in only:
        mace_centred(args.seeds, tuple(int(k) for k in (args.classes or "8,10").split(",")))
    if "mace" in only:
        mace_on_designs(args.seeds, tuple(int(k) for k in (args.classes or "8,10").split(",")))
    if "raters" in only:
        raters()
    if "evidence" in only:
        evidence()
    if "cv" in only:
        cross_validated(args.seeds)


if __name__ == "__main__":
    main()
