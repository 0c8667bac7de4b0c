"""MACE: skcrowd against crowd-kit 1.4.2 in one run (times, ratios, accuracy).

    pip install ".[bench]"
    python benchmarks/bench_mace.py                 # everything
    python benchmarks/bench_mace.py --only gold     # the shipped sets only
    python benchmarks/bench_mace.py --only passes   # plain vs accelerated passes
    python benchmarks/bench_mace.py --only pooling  # the learned competence prior

Sections
--------
gold       the shipped data sets with gold: defaults on both sides (skcrowd:
           VB, 10 restarts screened for 5 iterations each, the best one
           continued to convergence (<= 200 iterations, tol 1e-6); crowd-kit:
           VB, 10 restarts x 50 iterations); skcrowd also with every restart
           run to convergence (init_iter=None), without acceleration and EM
synthetic  1M ratings simulated from MACE (200,000 items x 5, 200 raters,
           K=4, 20% spammers): defaults on both sides (skcrowd also without
           acceleration and with every restart run to convergence), and one
           restart of exactly 50 plain iterations on both sides
passes     (not run by default; no crowd-kit) MACE at its defaults (10
           screened restarts, random_state=0), accelerate=False against
           True at the default tol and at tol=1e-12, every shipped set:
           passes over the data of all restarts, and how close the two
           optima are (the goal: at most half the plain passes)
pooling    (not run by default; no crowd-kit) the learned priors on competence
           (competence_prior="learn" and "two_stage") on crowds drawn with
           competence Beta(2, 2), spam distributions Dirichlet(10), two
           classes, 2000 items x 5 ratings: 50 raters (200 ratings each) and
           500 raters (20 each); the learned Betas against the Beta fitted to
           the raters' true competences, and the labels of the learned
           priors, the paper's fixed Beta(0.5, 0.5) and majority vote

Timings are fits only (inputs built beforehand), wall and process CPU;
skcrowd is warmed up (numba compiled) first.  crowd-kit's restarts all start
from the same point (it seeds each restart with ``random_state``), so its 10
restarts cost 10 fits and give the result of one.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _crowdkit import crowdkit_available, crowdkit_version, make_frame  # noqa: E402

from skcrowd import MACE, MajorityVote, Ratings  # noqa: E402
from skcrowd._population import maximize_population  # noqa: E402
from skcrowd.datasets import (  # noqa: E402
    load_bluebirds,
    load_dog,
    load_rte,
    load_web,
    make_mace,
)

SETS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}


def timed(fit):
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fit()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def skcrowd_labels(ratings, **params):
    model = MACE(random_state=0, **params)
    labels, wall, cpu = timed(lambda: model.fit_predict(ratings))
    return labels, wall, cpu, model


def crowdkit_labels(ratings, **params):
    """crowd-kit MACE (defaults unless given); labels aligned with ratings.item_ids."""
    from crowdkit.aggregation import MACE as CrowdKitMACE

    frame = make_frame(ratings._item, ratings._rater, ratings.label)
    model = CrowdKitMACE(**params)
    _, wall, cpu = timed(lambda: model.fit(frame))
    labels = model.labels_.reindex(np.arange(len(ratings.item_ids))).to_numpy()
    return labels.astype(np.float64), wall, cpu


def print_rows(rows):
    print("| data | method | accuracy | wall (s) | CPU (s) | passes over the data |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.4f} | {r[3]:.3f} | {r[4]:.3f} | {r[5]} |")


def ratio_line(name, ours, theirs):
    print(f"- {name}: crowd-kit / skcrowd wall = {theirs[3] / ours[3]:.0f}x, "
          f"CPU = {theirs[4] / ours[4]:.0f}x; accuracy {ours[2]:.4f} vs {theirs[2]:.4f}")


def gold():
    rows = []
    for name, load in SETS.items():
        data = load()
        known = ~np.isnan(data.gold)
        truth = data.gold[known]
        mv = np.mean(MajorityVote().fit_predict(data.ratings)[known] == truth)
        rows.append((name, "majority vote", mv, 0.0, 0.0, "-"))
        labels, wall, cpu, model = skcrowd_labels(data.ratings)
        ours = (name, "skcrowd MACE", np.mean(labels[known] == truth), wall, cpu,
                passes(model))
        rows.append(ours)
        labels, wall, cpu, model = skcrowd_labels(data.ratings, init_iter=None)
        rows.append((name, "skcrowd MACE, init_iter=None", np.mean(labels[known] == truth),
                     wall, cpu, passes(model)))
        labels, wall, cpu, model = skcrowd_labels(data.ratings, accelerate=False)
        rows.append((name, "skcrowd MACE, accelerate=False", np.mean(labels[known] == truth),
                     wall, cpu, passes(model)))
        labels, wall, cpu, model = skcrowd_labels(data.ratings, competence_prior="learn")
        rows.append((name, "skcrowd MACE, competence_prior='learn'",
                     np.mean(labels[known] == truth), wall, cpu, passes(model)))
        labels, wall, cpu, model = skcrowd_labels(data.ratings, competence_prior="two_stage")
        rows.append((name, "skcrowd MACE, competence_prior='two_stage'",
                     np.mean(labels[known] == truth), wall, cpu, passes(model)))
        labels, wall, cpu, model = skcrowd_labels(data.ratings, method="em")
        rows.append((name, "skcrowd MACE em", np.mean(labels[known] == truth), wall, cpu,
                     passes(model)))
        if crowdkit_available():
            labels, wall, cpu = crowdkit_labels(data.ratings)
            theirs = (name, "crowd-kit MACE", np.mean(labels[known] == truth), wall, cpu,
                      "10 x 50")
            rows.append(theirs)
            ratio_line(name, ours, theirs)
    print("\n## Shipped gold sets, defaults")
    print_rows(rows)


def synthetic():
    data = make_mace(200_000, 200, 5, 4, spammer_fraction=0.2, dense=False, random_state=0)
    ratings, truth = data.ratings, data.true_labels
    rows = []
    mv = np.mean(MajorityVote().fit_predict(ratings) == truth)
    rows.append(("1M", "majority vote", mv, 0.0, 0.0, "-"))
    spread = []
    for label, params in (("skcrowd MACE, defaults", {}),
                          ("skcrowd MACE, defaults, accelerate=False", {"accelerate": False}),
                          ("skcrowd MACE, init_iter=None", {"init_iter": None}),
                          ("skcrowd MACE, 1 x 50 iterations",
                           {"max_iter": 50, "tol": 0, "n_init": 1, "accelerate": False})):
        labels, wall, cpu, model = skcrowd_labels(ratings, **params)
        rows.append(("1M", label, np.mean(labels == truth), wall, cpu, passes(model)))
        finals = np.array([history[-1] for history in model._restart_histories])
        spread.append(f"- {label}: the restarts' last objectives (per item; a screened "
                      f"restart's at its last iteration) span {finals.max() - finals.min():.2e}; "
                      f"best restart {finals.argmax() + 1}")
    ours, same_budget = rows[1], rows[4]
    if crowdkit_available():
        labels, wall, cpu = crowdkit_labels(ratings)
        theirs = ("1M", "crowd-kit MACE, defaults (10 x 50)", np.mean(labels == truth), wall,
                  cpu, "10 x 50")
        rows.append(theirs)
        labels, wall, cpu = crowdkit_labels(ratings, n_restarts=1)
        theirs_one = ("1M", "crowd-kit MACE, 1 x 50", np.mean(labels == truth), wall, cpu,
                      "1 x 50")
        rows.append(theirs_one)
    print(f"\n## Synthetic: {ratings.n_ratings:,} ratings, 200,000 items x 5, 200 raters, "
          "K=4, 20% spammers")
    print_rows(rows)
    print("\n".join(spread))
    if crowdkit_available():
        ratio_line("1M, defaults both sides", ours, theirs)
        ratio_line("1M, same budget (1 x 50, plain)", same_budget, theirs_one)


def passes(model):
    """Passes over the data of the kept restart (which, of how many) and of
    every restart (each restart's first pass, at its start, included)."""
    n = model._restart_n_iter
    finals = [history[-1] for history in model._restart_histories]
    return (f"{model.n_iter_} (restart {int(np.argmax(finals)) + 1} of {len(n)}; "
            f"{sum(n) + len(n)} in all)")


def passes_section():
    """Plain against accelerated passes of MACE's default fit (all ten
    restarts, each restart's first pass included), and the distance between
    the two fits' optima."""
    from skcrowd.datasets import load_caries, load_trec2010

    sets = {"bluebirds": load_bluebirds, "caries": load_caries, "dog": load_dog,
            "rte": load_rte, "trec2010": load_trec2010, "web": load_web}
    print("\n## MACE defaults (10 screened restarts): passes of all restarts, plain vs "
          "accelerated\n")
    print("| data | tol | plain | accelerated | ratio | rel. objective | param diff "
          "| same labels |")
    print("|---|---|---|---|---|---|---|---|")
    for name, load in sets.items():
        ratings = load().ratings
        for tol in (1e-6, 1e-12):
            plain, fast = (MACE(random_state=0, tol=tol, max_iter=20000, accelerate=a)
                           .fit(ratings) for a in (False, True))
            n_plain, n_fast = (sum(m._restart_n_iter) + len(m._restart_n_iter)
                               for m in (plain, fast))
            rel = abs(fast.lower_bound_ - plain.lower_bound_) / abs(plain.lower_bound_)
            diff = max(np.max(np.abs(getattr(fast, a) - getattr(plain, a)))
                       for a in ("rater_competence_", "spam_distribution_", "class_prior_"))
            same = np.array_equal(fast.predict(ratings), plain.predict(ratings))
            print(f"| {name} | {tol:g} | {n_plain} | {n_fast} | {n_fast / n_plain:.3f} "
                  f"| {rel:.1e} | {diff:.1e} | {'yes' if same else 'no'} |", flush=True)


def beta_competence_crowd(n_raters, seed, n_items=2000, per_item=5, n_classes=2):
    """MACE's model with θ_j ~ Beta(2, 2) and ξ_j ~ Dirichlet(10)."""
    rng = np.random.default_rng(seed)
    theta = rng.beta(2.0, 2.0, n_raters)
    xi = rng.dirichlet(np.full(n_classes, 10.0), n_raters)
    truth = rng.integers(0, n_classes, n_items)
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False)
                            for _ in range(n_items)])
    spam = (rng.random((item.size, 1)) > xi[rater].cumsum(axis=1)).sum(axis=1)
    label = np.where(rng.random(item.size) < theta[rater], truth[item], spam)
    return Ratings(item, rater, label), truth, theta


def pooling_section():
    print("\n## The learned prior on competence, crowds with θ ~ Beta(2, 2)")
    print("| raters | ratings per rater | learned Beta | two-stage Beta | "
          "Beta of the true θ | learned | two-stage | fixed Beta(0.5, 0.5) | majority vote |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n_raters in (50, 500):
        for seed in range(2):
            R, truth, theta = beta_competence_crowd(n_raters, seed)
            learned, _, _, model = skcrowd_labels(R, competence_prior="learn")
            two, _, _, two_model = skcrowd_labels(R, competence_prior="two_stage")
            fixed = skcrowd_labels(R)[0]
            oracle = maximize_population(np.ones(2), np.column_stack(
                [np.log(theta), np.log1p(-theta)]), 1e-9)
            a, b = model.competence_prior_
            a2, b2 = two_model.competence_prior_
            print(f"| {n_raters} | {R.n_ratings // n_raters} | ({a:.2f}, {b:.2f}) | "
                  f"({a2:.2f}, {b2:.2f}) | ({oracle[0]:.2f}, {oracle[1]:.2f}) | "
                  f"{np.mean(learned == truth):.4f} | {np.mean(two == truth):.4f} | "
                  f"{np.mean(fixed == truth):.4f} | "
                  f"{np.mean(MajorityVote().fit_predict(R) == truth):.4f} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="gold,synthetic")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    print(f"crowd-kit {crowdkit_version()}; load average {os.getloadavg()[0]:.2f} at start")
    small = make_mace(200, 10, 3, 3, random_state=1).ratings
    # 100,000 ratings: the parallel kernels, which large data runs
    large = make_mace(25_000, 50, 4, 3, random_state=1).ratings
    for method in ("vb", "em"):  # compile the kernels (extrapolation's too)
        for ratings in (small, large):
            skcrowd_labels(ratings, max_iter=20, method=method)
    if "gold" in only:
        gold()
    if "synthetic" in only:
        synthetic()
    if "passes" in only:
        passes_section()
    if "pooling" in only:
        pooling_section()
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
