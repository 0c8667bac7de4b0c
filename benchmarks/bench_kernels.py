"""Per-iteration cost of the E-step kernels, in ns per rating per iteration.

DawidSkene: 100,000 items x 5 ratings (500k ratings), 100 raters, K=5 (the
e_step kernel, fused with the expected confusion counts).  GLAD: 10,000
items x 5 ratings (50k ratings), 100 raters, K=2 (item_step: Newton on each
b_i, posterior, rater statistics), warm-started as in a fit iteration.  IRT3PL:
20,000 items x 8 ratings, 100 raters, the full model's 735-node grid
(pattern_posteriors).  Beside them, the floor of one E-step pass: a kernel
that reads each rating's cell once and adds its log-likelihood row into its
item's row (no normalisation, no counts).

Each kernel runs on one thread and on all of numba's threads, best of
``--repeats`` runs of ``--iterations`` calls; CPU time is the figure to
trust on a busy machine (wall time waits for the CPU).

Run (compare two checkouts in one session by switching PYTHONPATH):
    PYTHONPATH=. python benchmarks/bench_kernels.py
"""

import argparse
import os
import sys
import time
import warnings

import numba
import numpy as np
from numba import njit, prange

sys.path.insert(0, os.path.dirname(__file__))
from _synthetic import make_ds_long, make_glad_long  # noqa: E402

from skcrowd import GLAD, IRT3PL, DawidSkene, Ratings  # noqa: E402
from skcrowd.datasets import make_irt  # noqa: E402


@njit(nogil=True, parallel=True)
def _floor(item_ptr, cell, log_likelihood, rows):
    """Read every rating's cell once and add its row: the E-step's floor."""
    n_classes = log_likelihood.shape[1]
    for i in prange(item_ptr.shape[0] - 1):
        for k in range(n_classes):
            rows[i, k] = 0.0
        for n in range(item_ptr[i], item_ptr[i + 1]):
            r = cell[n]
            for k in range(n_classes):
                rows[i, k] += log_likelihood[r, k]


def _time(call, iterations, repeats):
    call()  # compile / warm the caches
    best_wall, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(iterations):
            call()
        best_wall = min(best_wall, (time.perf_counter() - wall) / iterations)
        best_cpu = min(best_cpu, (time.process_time() - cpu) / iterations)
    return best_wall, best_cpu


def _dawid_skene_case():
    item, rater, label, _ = make_ds_long(100_000, 100, 5, 5, random_state=0)
    ratings = Ratings(item, rater, label)
    model = DawidSkene(max_iter=5, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings)
    data = model._encode(ratings, reset=False)
    params = model._fitted_params()
    K = data.n_classes
    log_lik = np.ascontiguousarray(
        np.log(params["confusion"]).transpose(0, 2, 1).reshape(-1, K))
    rows = np.empty((data.n_items, K))
    return data, (lambda: model._local_step(data, params)), (
        lambda: _floor(data.item_ptr, data.cell, log_lik, rows))


def _glad_case():
    item, rater, label, _ = make_glad_long(10_000, 100, 5, 2, random_state=0)
    ratings = Ratings(item, rater, label)
    model = GLAD(max_iter=5, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings)
    data = model._encode(ratings, reset=False)
    # A fit iteration warm-starts every b_i from the previous one (one
    # Newton step each); a cold start (prediction) runs Newton to the end.
    params = model._fitted_params()
    items, _ = model._local_step(data, params)
    params = dict(params, log_beta=items["log_beta"])
    return data, lambda: model._local_step(data, params)  # it copies log_beta


def _irt_case():
    ratings = make_irt(n_items=20_000, n_raters=100, ratings_per_item=8, random_state=0).ratings
    model = IRT3PL(init="dawid_skene", n_init=1, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ratings)
    data = model._encode(ratings, reset=False)
    params = model._fitted_params()
    return data, lambda: model._local_step(data, params)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="dawid_skene,glad,irt")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; numba threads {numba.get_num_threads()}")
    print("| kernel | ratings | threads | wall ns/rating | CPU ns/rating |\n|---|---|---|---|---|")
    cases = []
    only = args.only.split(",")
    if "dawid_skene" in only:
        data, local, floor = _dawid_skene_case()
        cases += [("DawidSkene local step, K=5", data, local),
                  ("floor: read each cell once, K=5", data, floor)]
    if "glad" in only:
        data, local = _glad_case()
        cases.append(("GLAD local step, K=2", data, local))
    if "irt" in only:
        data, local = _irt_case()
        cases.append(("IRT3PL local step, 735 nodes", data, local))
    all_threads = numba.get_num_threads()
    for name, data, call in cases:
        for threads in sorted({1, all_threads}):
            numba.set_num_threads(threads)
            iterations = args.iterations if "IRT" not in name else max(1, args.iterations // 10)
            wall, cpu = _time(call, iterations, args.repeats)
            n = data.n_ratings
            print(f"| {name} | {n:,} | {threads} | {wall / n * 1e9:.1f} | {cpu / n * 1e9:.1f} |")
        numba.set_num_threads(all_threads)


if __name__ == "__main__":
    main()
