"""GLAD: skcrowd against crowd-kit in one run (times, ratios, accuracy).

Run with crowd-kit's environment (crowd-kit is never a dependency of
skcrowd)::

    PYTHONPATH=. python benchmarks/bench_glad.py
    PYTHONPATH=. python benchmarks/bench_glad.py --only synthetic,scale
    PYTHONPATH=. python3 benchmarks/bench_glad.py --no-crowdkit   # skcrowd only

Sections
--------
synthetic  10,000 items x 5 ratings, 100 raters, K=2, 50 EM iterations each
gold       accuracy on the real data sets with gold, defaults (crowd-kit:
           n_iter=100, tol=1e-5, its defaults), with fit times
variants   skcrowd only: accuracy on gold with a learned class prior
scale      1,000,000 ratings (200,000 items x 5, 100 raters), K=2,
           50 iterations: time and peak memory (own process)
cold       fresh process, numba cache warm: import skcrowd + a GLAD fit on RTE

Timings exclude building the inputs (crowd-kit's DataFrame, skcrowd's
Ratings); skcrowd is warmed up once so numba compilation is not timed.  Both
libraries see the same long-form arrays.  Besides wall time, skcrowd's CPU
time (all threads) is printed: on a shared machine it is the steadier number.
"""

import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import cold_start  # noqa: E402
from _crowdkit import crowdkit_available, crowdkit_glad, crowdkit_version  # noqa: E402
from _synthetic import make_glad_long  # noqa: E402

from skcrowd import GLAD, Ratings  # noqa: E402
from skcrowd.datasets import load_bluebirds, load_dog, load_rte, load_web  # noqa: E402


def _fit_skcrowd(ratings, **params):
    model = GLAD(**params)
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = model.fit_predict(ratings)
    return labels, time.perf_counter() - wall, time.process_time() - cpu, model


def _warm_up():
    item, rater, label, _ = make_glad_long(200, 10, 3, 2, random_state=1)
    _fit_skcrowd(Ratings(item, rater, label), max_iter=2)
    item, rater, label, _ = make_glad_long(200, 10, 3, 5, random_state=1)
    model = _fit_skcrowd(Ratings(item, rater, label), max_iter=2)[3]
    model.score_samples(Ratings(item, rater, label))


def synthetic(repeats=3):
    item, rater, label, truth = make_glad_long(10_000, 100, 5, 2, random_state=0)
    ratings = Ratings(item, rater, label)
    runs = [_fit_skcrowd(ratings, max_iter=50, tol=0) for _ in range(repeats)]
    best = min(runs, key=lambda r: r[1])
    sk_labels = best[0]
    rows = [("skcrowd GLAD", best[1], best[2], np.mean(sk_labels == truth))]
    if crowdkit_available():
        ck_labels, ck_seconds = crowdkit_glad(item, rater, label, n_iter=50)
        rows.append(("crowd-kit GLAD", ck_seconds, None, np.mean(ck_labels == truth)))
    print("\n## Synthetic: 10,000 items x 5 ratings, 100 raters, K=2, 50 iterations")
    print("| method | fit time (s) | CPU time (s) | accuracy |\n|---|---|---|---|")
    for name, seconds, cpu, accuracy in rows:
        cpu = "" if cpu is None else f"{cpu:.3f}"
        print(f"| {name} | {seconds:.3f} | {cpu} | {accuracy:.4f} |")
    if len(rows) == 2:
        print(f"\nspeed-up: {rows[1][1] / rows[0][1]:.0f}x "
              f"(skcrowd best of {repeats}, crowd-kit one run)")


def converged(repeats=3):
    """Default settings on both sides: each stops at its own tolerance."""
    item, rater, label, truth = make_glad_long(10_000, 100, 5, 2, random_state=0)
    ratings = Ratings(item, rater, label)
    rows = []
    for name, params in (("skcrowd GLAD (accelerated, default)", {}),
                         ("skcrowd GLAD (accelerate=False)", {"accelerate": False})):
        runs = [_fit_skcrowd(ratings, **params) for _ in range(repeats)]
        labels, wall, _, model = min(runs, key=lambda r: r[1])
        rows.append((name, wall, f"{model.n_iter_} passes", np.mean(labels == truth)))
    if crowdkit_available():
        ck_labels, ck_seconds = crowdkit_glad(item, rater, label, n_iter=100, full_iter=False)
        rows.append(("crowd-kit GLAD (defaults: n_iter=100, tol=1e-5)", ck_seconds, "",
                     np.mean(ck_labels == truth)))
    print("\n## Converged fits at default settings: 10,000 items x 5 ratings, 100 raters, K=2")
    print("| method | fit time (s) | iterations | accuracy |\n|---|---|---|---|")
    for name, seconds, n_iter, accuracy in rows:
        print(f"| {name} | {seconds:.3f} | {n_iter} | {accuracy:.4f} |")
    if crowdkit_available():
        for name, seconds, _, _ in rows[:-1]:
            print(f"- {name}: {rows[-1][1] / seconds:.0f}x faster")
        print(f"(skcrowd best of {repeats}; crowd-kit one run)")


def gold():
    sets = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}
    print("\n## Accuracy on gold, default settings")
    print("| data | skcrowd | iterations | time (s) | crowd-kit | time (s) | speed-up |\n"
          "|---|---|---|---|---|---|---|")
    for name, load in sets.items():
        data = load()
        known = ~np.isnan(data.gold)
        labels, seconds, _, model = _fit_skcrowd(data.ratings)
        cells = [f"{np.mean(labels[known] == data.gold[known]):.4f}", str(model.n_iter_),
                 f"{seconds:.3f}"]
        if crowdkit_available():
            R = data.ratings
            ck, ck_seconds = crowdkit_glad(R._item, R._rater, R.label, n_iter=100,
                                           full_iter=False)
            cells += [f"{np.mean(ck[known] == data.gold[known]):.4f}", f"{ck_seconds:.1f}",
                      f"{ck_seconds / seconds:.0f}x"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def variants():
    """Accuracy on gold of the class-prior choices (skcrowd only, fast)."""
    sets = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}
    settings = {
        'class_prior="uniform" (default)': {},
        'class_prior="learn"': {"class_prior": "learn"},
    }
    print("\n## Class prior: accuracy on gold (iterations to tol=1e-6)")
    print("| setting | " + " | ".join(sets) + " |\n|---|" + "---|" * len(sets))
    data = {name: load() for name, load in sets.items()}
    for label, params in settings.items():
        cells = []
        for d in data.values():
            known = ~np.isnan(d.gold)
            labels, _, _, model = _fit_skcrowd(d.ratings, **params)
            cells.append(f"{np.mean(labels[known] == d.gold[known]):.4f} ({model.n_iter_})")
        print(f"| {label} | " + " | ".join(cells) + " |")


SCALE_CODE = """
import resource, time, warnings, sys
sys.path.insert(0, {bench!r})
import numpy as np
from _synthetic import make_glad_long
from skcrowd import GLAD, Ratings
item, rater, label, truth = make_glad_long({n_items}, 100, {per_item}, 2, random_state=0)
GLAD(max_iter=2).fit(Ratings(item[:1000], rater[:1000], label[:1000]))  # load the jit cache
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
ratings = Ratings(item, rater, label)
t1, c1 = time.perf_counter(), time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    labels = GLAD(max_iter=50, tol=0).fit_predict(ratings)
t2, c2 = time.perf_counter(), time.process_time()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{{t1 - t0:.2f}} {{t2 - t1:.2f}} {{c2 - c1:.2f}} {{peak / 2**20:.2f}} {{base / 2**20:.2f}} "
      f"{{np.mean(labels == truth):.4f}}")
"""


def scale():
    print("\n## Scale: 1,000,000 ratings, 100 raters, K=2, 50 iterations")
    for n_items, per_item in ((200_000, 5), (100_000, 10)):
        code = SCALE_CODE.format(bench=os.path.dirname(os.path.abspath(__file__)),
                                 n_items=n_items, per_item=per_item)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        build, fit, cpu, peak, base, accuracy = out
        print(f"- {n_items:,} items x {per_item}: Ratings construction {build} s; "
              f"fit (50 iterations) {fit} s wall, {cpu} s CPU; accuracy {accuracy}; "
              f"peak resident memory {peak} GB ({base} GB before building Ratings)")


def cold():
    cold_start('skcrowd.GLAD().fit(R)', 'import + GLAD fit on RTE')


SECTIONS = {"synthetic": synthetic, "converged": converged, "gold": gold, "variants": variants, "scale": scale,
            "cold": cold}


def main():
    sys.stdout.reconfigure(line_buffering=True)  # progress shows in a redirected log
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--no-crowdkit", action="store_true",
                        help="skcrowd only (crowd-kit's GLAD takes minutes per fit)")
    args = parser.parse_args()
    if args.no_crowdkit:
        global crowdkit_available
        crowdkit_available = lambda: False  # noqa: E731
    ck = "skipped" if args.no_crowdkit else (
        crowdkit_version() if crowdkit_available() else "not installed")
    print(f"crowd-kit: {ck}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    _warm_up()
    for name in args.only.split(","):
        SECTIONS[name]()


if __name__ == "__main__":
    main()
