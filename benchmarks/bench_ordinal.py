"""OrdinalMixture: speed on TREC 2010 and per VB iteration at 1M ratings,
side by side with crowd-kit on the same data (crowd-kit has no ordinal
model, so its categorical aggregators are the comparison).

Run (crowd-kit lives in its own venv, never in the test install)::

    PYTHONPATH=. python benchmarks/bench_ordinal.py
    PYTHONPATH=. python3 benchmarks/bench_ordinal.py --only iteration

Sections
--------
trec       TREC 2010 (paper preprocessing, 91,783 ratings) with the paper's
           defaults (10 restarts, <= 1000 iterations, tol 0.1; ``--difficulty``
           picks the variants, default None): wall time,
           process CPU time, iterations, and MSE / correlation / NDCG; the
           same for crowd-kit's MajorityVote and DawidSkene (if installed).
sweep      one local step (the item sweep) on TREC 2010, at the state after
           100 iterations of the first restart: best process CPU time of
           several, serial and parallel kernels, and ns per rating.
iteration  one VB iteration (local sweep + global update + lower bound) on
           1,000,000 synthetic ratings from ``make_ordinal``: best and median
           of several, wall and CPU time.

skcrowd is warmed up first, so numba compilation is not timed.  On a
machine shared with other jobs, wall times are inflated by waiting for a
core; the CPU times (``time.process_time``) show the work done.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _crowdkit import crowdkit_available, crowdkit_version, run_crowdkit  # noqa: E402

from skcrowd import OrdinalMixture  # noqa: E402
from skcrowd.datasets import load_trec2010, make_ordinal  # noqa: E402
from skcrowd.metrics import ordinal_scores  # noqa: E402


def _warm_up():
    d = make_ordinal(300, 10, 3, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for difficulty in (None, "item"):
            OrdinalMixture(difficulty=difficulty, n_init=2, max_iter=3).fit(d.ratings)
            OrdinalMixture(difficulty=difficulty, n_init=1, max_iter=3).fit(d.ratings)


def _row(name, seconds, cpu, scores, extra=""):
    return (f"| {name} | {seconds:.1f} | {cpu:.1f} | {scores['mse']:.4f} | "
            f"{scores['correlation']:.4f} | {scores['ndcg']:.4f} | {extra} |")


def trec(difficulties=(None,)):
    data = load_trec2010(preprocess="paper")
    r = data.ratings
    print("\n## TREC 2010, paper preprocessing "
          f"({r.n_ratings:,} ratings, {r.shape[1]} raters, {r.shape[0]:,} items)\n")
    print("| method | wall s | CPU s | MSE | correlation | NDCG | notes |")
    print("|---|---|---|---|---|---|---|")
    for difficulty in difficulties:
        model = OrdinalMixture(difficulty=difficulty, random_state=0)
        wall, cpu = time.perf_counter(), time.process_time()
        z = model.fit_predict(r, groups=data.groups)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        iters = [len(h) - 1 for h in model._restart_histories]
        print(_row(f"skcrowd OrdinalMixture(difficulty={difficulty!r})", wall, cpu,
                   ordinal_scores(data.gold, z, data.groups),
                   f"10 restarts, {sum(iters)} iterations in all"), flush=True)
    if not crowdkit_available():
        print("\ncrowd-kit not installed: its rows are skipped")
        return
    item_codes = np.repeat(np.arange(r.shape[0]), np.diff(r._item_ptr))
    for method, kwargs in (("MajorityVote", {}), ("DawidSkene", {"n_iter": 100,
                                                                 "full_iter": False})):
        cpu = time.process_time()
        labels, seconds = run_crowdkit(method, item_codes, r._rater, r.label, **kwargs)
        cpu = time.process_time() - cpu
        print(_row(f"crowd-kit {crowdkit_version()} {method}", seconds, cpu,
                   ordinal_scores(data.gold, labels.astype(float), data.groups),
                   "categorical (no ordinal model in crowd-kit)"), flush=True)


def sweep(repeats=15):
    data = load_trec2010(preprocess="paper")
    model = OrdinalMixture(random_state=0)
    encoded = model._encode(data.ratings, reset=True)
    problem = model._prepare(encoded)
    params = dict(model._init_params(problem, np.random.RandomState(0), 0), parallel=False)
    _, stats = model._local_step(problem, params)
    for _ in range(100):
        params = model._global_update(problem, params, stats)
        _, stats = model._local_step(problem, params)
    n = encoded.n_ratings
    print(f"\n## One item sweep on TREC 2010 ({n:,} ratings), after 100 iterations\n")
    print("| kernels | best CPU ms | ns per rating |")
    print("|---|---|---|")
    for parallel in (False, True):
        cpus = []
        for _ in range(repeats):
            cpu = time.process_time()
            model._local_step(problem, dict(params, parallel=parallel))
            cpus.append(time.process_time() - cpu)
        name = "parallel (CPU of both threads)" if parallel else "serial"
        print(f"| {name} | {1e3 * min(cpus):.2f} | {1e9 * min(cpus) / n:.0f} |", flush=True)


def iteration(repeats=7):
    d = make_ordinal(n_items=200_000, n_raters=2000, ratings_per_item=5, random_state=0)
    model = OrdinalMixture(random_state=0)
    data = model._encode(d.ratings, reset=True)
    problem = model._prepare(data)
    params = model._init_params(problem, np.random.RandomState(0), 0)
    items, stats = model._local_step(problem, params)
    for _ in range(3):  # move away from the start
        params = model._global_update(problem, params, stats)
        items, stats = model._local_step(problem, params)
    print(f"\n## One VB iteration, {data.n_ratings:,} synthetic ratings "
          f"({data.n_items:,} items, {data.n_raters} raters)\n")
    print("| kernels | best wall ms | median wall ms | best CPU ms |")
    print("|---|---|---|---|")
    for parallel in (True, False):
        params["parallel"] = parallel
        walls, cpus = [], []
        for _ in range(repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            new = model._global_update(problem, params, stats)
            new_items, _ = model._local_step(problem, new)
            model._objective(problem, new, new_items, new_items)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        name = "parallel (2 threads)" if parallel else "serial (as in threaded restarts)"
        print(f"| {name} | {1e3 * min(walls):.0f} | {1e3 * np.median(walls):.0f} | "
              f"{1e3 * min(cpus):.0f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="trec,sweep,iteration")
    parser.add_argument("--difficulty", default="None",
                        help="OrdinalMixture variants on TREC, e.g. None,group,item")
    args = parser.parse_args()
    sections = args.only.split(",")
    difficulties = [None if d == "None" else d for d in args.difficulty.split(",")]
    print(f"load average at start: {os.getloadavg()}")
    _warm_up()
    if "trec" in sections:
        trec(difficulties)
    if "sweep" in sections:
        sweep()
    if "iteration" in sections:
        iteration()
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
