"""Learning a classifier from crowd ratings: the four strategies, and the cost.

    python benchmarks/bench_classifier.py                   # everything
    python benchmarks/bench_classifier.py --only strategies --seeds 20
    python benchmarks/bench_classifier.py --only cost --n-items 100000

Sections
--------
strategies  Simulated data where logistic regression is well specified
            (``make_crowd_classification``: 5 standard normal features, a
            known coefficient vector, raters of accuracy 0.6-0.95 of whom
            20% are spammers, 5 ratings per item), for 5, 10 and 20 raters:
            LogisticRegression trained on (1) majority labels, (2) labels
            sampled from DawidSkene's posteriors, (3) DawidSkene's posteriors
            as weights, (4) the joint EM of CrowdClassifier (Raykar et al.
            2010).  Per strategy over seeds, mean and standard error of: the
            accuracy and log loss on held-out items (against their true
            labels), the
            relative error ||w - w_true|| / ||w_true|| of the coefficients
            (intercept included), and for (3) and (4) the largest error of
            a rater confusion entry.
cost        One CrowdClassifier fit on n items (default 100,000, 10 raters,
            5 ratings each): its EM iterations, wall and CPU time, against
            the cost model "iterations x one classifier fit + the crowd
            model's own cost" (one classifier fit on the replicated training
            set, timed alone; the crowd model's fit, and the passes of its
            E-step and M-step per iteration).
"""

import argparse
import functools
import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from skcrowd import CrowdClassifier, DawidSkene, MajorityVote, training_set
from skcrowd._classifier import _RATER_M_STEPS
from skcrowd.datasets import make_crowd_classification

STRATEGIES = ("majority label", "sampled label", "posterior weights", "joint EM")


def coefficients(clf):
    return np.concatenate([clf.coef_.ravel(), clf.intercept_])


def one_seed(seed, n_raters, n_train, n_test):
    data = make_crowd_classification(n_train + n_test, n_features=5, n_raters=n_raters,
                                     ratings_per_item=5, spammer_fraction=0.2,
                                     random_state=seed)
    X, R = data.features[:n_train], data.ratings[:n_train]
    X_test, y_test = data.features[n_train:], data.true_labels[n_train:]
    truth = np.concatenate([data.coef.ravel(), data.intercept])
    crowd = DawidSkene().fit(R)
    fitted = {
        "majority label": LogisticRegression().fit(
            *training_set(MajorityVote().fit(R), X, R, strategy="label")),
        "sampled label": LogisticRegression().fit(
            *training_set(crowd, X, R, strategy="sample", random_state=seed)),
        "posterior weights": LogisticRegression().fit(*training_set(crowd, X, R)),
    }
    joint = CrowdClassifier(LogisticRegression(), DawidSkene()).fit(X, R)
    fitted["joint EM"] = joint.estimator_
    row = {}
    for name, clf in fitted.items():
        row[name, "accuracy"] = np.mean(clf.predict(X_test) == y_test)
        row[name, "log loss"] = log_loss(y_test, clf.predict_proba(X_test))
        row[name, "coef"] = np.linalg.norm(coefficients(clf) - truth) / np.linalg.norm(truth)
    row["posterior weights", "confusion"] = np.abs(crowd.confusion_ - data.confusion).max()
    row["joint EM", "confusion"] = np.abs(joint.crowd_model_.confusion_ - data.confusion).max()
    row["joint EM", "n_iter"] = joint.n_iter_
    return row


def strategies(seeds, n_train, n_test):
    print(f"## The four strategies: {n_train} training items, {n_test} held out, "
          f"5 ratings per item, 20% spammers, {seeds} seeds (mean ± standard error)")
    for n_raters in (5, 10, 20):
        rows = [one_seed(seed, n_raters, n_train, n_test) for seed in range(seeds)]
        print(f"\n### {n_raters} raters\n")
        print("| strategy | test accuracy | test log loss | coefficient error "
              "| max confusion error |")
        print("|---|---|---|---|---|")
        for name in STRATEGIES:
            cells = []
            for what in ("accuracy", "log loss", "coef", "confusion"):
                values = [r[name, what] for r in rows if (name, what) in r]
                if not values:
                    cells.append("-")
                    continue
                se = np.std(values, ddof=1) / np.sqrt(len(values))
                cells.append(f"{np.mean(values):.4f} ± {se:.4f}")
            print(f"| {name} | " + " | ".join(cells) + " |")
        # paired differences: the claim is an ordering on the same data
        for what in ("accuracy", "log loss"):
            for better, worse in (("joint EM", "posterior weights"),
                                  ("posterior weights", "sampled label"),
                                  ("sampled label", "majority label"),
                                  ("posterior weights", "majority label")):
                diff = [r[better, what] - r[worse, what] for r in rows]
                se = np.std(diff, ddof=1) / np.sqrt(len(diff))
                wins = sum(d > 0 for d in diff)
                ties = sum(d == 0 for d in diff)
                print(f"- {what}, {better} - {worse}: {np.mean(diff):+.4f} ± {se:.4f} "
                      f"(higher in {wins}, equal in {ties} of {len(diff)} seeds)")
        iters = [r["joint EM", "n_iter"] for r in rows]
        print(f"- joint EM iterations: median {np.median(iters):.0f}, max {max(iters)}")


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


#: (wall, CPU) seconds spent in the inner models' calls, by kind
SPENT = {}


def _timing(kind, method):
    @functools.wraps(method)  # the signature too: fit's sample_weight is checked
    def timed_method(self, *args, **kwargs):
        result, wall, cpu = timed(lambda: method(self, *args, **kwargs))
        walls, cpus = SPENT.get(kind, (0.0, 0.0))
        SPENT[kind] = (walls + wall, cpus + cpu)
        return result
    return timed_method


class TimedLogisticRegression(LogisticRegression):
    """LogisticRegression whose fits are timed (the same model)."""

    fit = _timing("classifier fit", LogisticRegression.fit)


class TimedDawidSkene(DawidSkene):
    """DawidSkene whose fit and per-item reads are timed (the same model)."""

    fit = _timing("crowd fit (the start)", DawidSkene.fit)
    predict_proba = _timing("crowd E-step reads", DawidSkene.predict_proba)
    score_samples = _timing("crowd E-step reads", DawidSkene.score_samples)


# the joint fit's rater M-step for this class: DawidSkene's, timed
_RATER_M_STEPS[TimedDawidSkene] = _timing("crowd M-steps", _RATER_M_STEPS[DawidSkene])


def cost(n_items, repeats):
    print(f"\n## Cost: {n_items} items, 10 raters, 5 ratings per item, 20% spammers")
    print(f"load before: {open('/proc/loadavg').read().split()[:3]}")
    data = make_crowd_classification(n_items, n_features=5, n_raters=10, ratings_per_item=5,
                                     spammer_fraction=0.2, random_state=0)
    X, R = data.features, data.ratings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # numba compiles (or loads) the kernels of this size first
        CrowdClassifier(max_iter=2).fit(X, R)
    runs = []
    for _ in range(repeats):
        SPENT.clear()
        clf, wall, cpu = timed(lambda: CrowdClassifier(TimedLogisticRegression(),
                                                       TimedDawidSkene()).fit(X, R))
        runs.append((wall, cpu, dict(SPENT), clf.n_iter_, clf.converged_))
    wall, cpu, spent, n_iter, converged = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
    print(f"(the median of {repeats} fits by wall time; every fit: "
          f"{[f'{r[0]:.2f} s wall / {r[1]:.2f} s CPU' for r in runs]})")
    print(f"- CrowdClassifier().fit: {n_iter} iterations (converged: {converged}), "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU")
    inner_wall = inner_cpu = 0.0
    for kind, (w, c) in spent.items():
        print(f"  - {kind}: {w:.2f} s wall, {c:.2f} s CPU ({c / cpu:.0%} of the CPU)")
        inner_wall, inner_cpu = inner_wall + w, inner_cpu + c
    print(f"  - the rest (replicating the rows, the classifier's predict_proba, the "
          f"posteriors, aligning the ratings): {wall - inner_wall:.2f} s wall, "
          f"{cpu - inner_cpu:.2f} s CPU ({(cpu - inner_cpu) / cpu:.0%})")
    fits = spent["classifier fit"]
    print(f"- per iteration, one classifier fit: {fits[0] / n_iter:.3f} s wall, "
          f"{fits[1] / n_iter:.3f} s CPU")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("strategies", "cost"))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--n-items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"# CrowdClassifier benchmark (pid {os.getpid()})")
    if args.only in (None, "strategies"):
        strategies(args.seeds, args.n_train, args.n_test)
    if args.only in (None, "cost"):
        cost(args.n_items, args.repeats)


if __name__ == "__main__":
    main()
