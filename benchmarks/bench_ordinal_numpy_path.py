"""OrdinalMixture on its numpy path against its compiled kernels.

Two parts:

* the size table: one process, the compiled kernels warm (compiled before
  timing); per simulated data set (``make_ordinal``, 200 raters, 5 ratings
  per item, 5 levels), CPU seconds of one ``n_init=1`` fit on each path
  (``kernel_path``), the fit's iterations, and the seconds per sweep; TREC
  2010 (as released) at ``n_init=1`` and at the default ``n_init``;
* the first fit: fresh processes with an empty numba cache that import
  skcrowd, load TREC 2010 (``skcrowd.datasets``) and fit OrdinalMixture,
  ``n_init=1`` and the default, for this checkout and, with ``--baseline``,
  another one (e.g. ``git worktree add ../skcrowd-before <commit>``); CPU seconds after ``import skcrowd``
  (loading, model imports and the fit), the whole process's CPU
  (``getrusage``, all threads), and which numba kernels were compiled.  Then
  the same process with that cache, now warm.

Usage::

    PYTHONPATH=. python benchmarks/bench_ordinal_numpy_path.py [--baseline ../skcrowd-before]
        [--sizes 10000,50000,100000,200000,400000] [--skip-sizes] [--skip-first-fit]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIRST_FIT = r"""
import json, sys, time
n_init = None if sys.argv[1] == "default" else int(sys.argv[1])
import skcrowd
c0 = time.process_time()
from skcrowd.datasets import load_trec2010
X = load_trec2010().ratings
c1 = time.process_time()
est = skcrowd.OrdinalMixture(random_state=0, **({} if n_init is None else {"n_init": n_init}))
est.fit(X)
c2 = time.process_time()
print(json.dumps({"load": c1 - c0, "fit": c2 - c1, "beyond_import": c2 - c0,
                  "n_init": est.n_init, "n_iter": int(est.n_iter_)}))
"""


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def first_fit(tree, n_init, cache):
    """One fresh process on the code in ``tree``; returns its figures."""
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FIRST_FIT, n_init], env=env, check=True,
                          capture_output=True, text=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["process_cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row["wall"] = wall
    row["compiled"] = sorted(p.name.split("-")[0] for p in Path(cache).rglob("*.nbi"))
    return row


def first_fit_table(baseline):
    print(f"\nfirst fit, fresh processes (load {loadavg()})")
    print(f"{'code':8s} {'n_init':>7s} {'cache':>6s} {'beyond import':>14s} {'fit':>6s} "
          f"{'process':>8s} {'wall':>6s}  compiled kernels")
    for n_init in ("1", "default"):
        trees = ((("baseline", baseline),) if baseline else ()) + (("this", ROOT),)
        for name, tree in trees:
            with tempfile.TemporaryDirectory() as cache:
                for state in ("empty", "warm"):
                    row = first_fit(tree, n_init, cache)
                    kernels = ", ".join(row["compiled"]) if state == "empty" else ""
                    print(f"{name:8s} {row['n_init']:>7d} {state:>6s} "
                          f"{row['beyond_import']:14.2f} {row['fit']:6.2f} "
                          f"{row['process_cpu']:8.2f} {row['wall']:6.1f}  {kernels}",
                          flush=True)
    print(f"(load {loadavg()})")


def timed_fit(X, path, **kwargs):
    from skcrowd import OrdinalMixture
    from skcrowd._kernels._config import kernel_path
    from sklearn.exceptions import ConvergenceWarning

    with kernel_path(path), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.process_time()
        model = OrdinalMixture(random_state=0, **kwargs).fit(X)
        return time.process_time() - start, model


def size_table(sizes):
    from skcrowd.datasets import load_trec2010, make_ordinal

    print(f"\nfit CPU s, numpy path against the compiled kernels (warm) (load {loadavg()})")
    print(f"{'data':28s} {'ratings x restarts':>18s} {'numpy':>7s} {'compiled':>9s} "
          f"{'ratio':>6s} {'n_iter':>7s} {'numpy ms/iter':>14s} {'compiled ms/iter':>17s}")
    small = make_ordinal(n_items=200, n_raters=20, random_state=0).ratings
    timed_fit(small, "jit", n_init=2)  # compile before timing
    rows = [(f"simulated, {n:,} ratings",
             make_ordinal(n_items=n // 5, n_raters=200, ratings_per_item=5, n_groups=10,
                          random_state=0).ratings, 1) for n in sizes]
    trec = load_trec2010().ratings
    rows += [("TREC 2010, n_init=1", trec, 1), ("TREC 2010, default n_init", trec, None)]
    for name, X, n_init in rows:
        kwargs = {} if n_init is None else {"n_init": n_init}
        numpy_s, a = timed_fit(X, "numpy", **kwargs)
        jit_s, b = timed_fit(X, "jit", **kwargs)
        iters = sum(len(h) - 1 for h in a._restart_histories)
        iters_jit = sum(len(h) - 1 for h in b._restart_histories)
        print(f"{name:28s} {X.n_ratings * a.n_init:18,d} {numpy_s:7.2f} {jit_s:9.2f} "
              f"{numpy_s / jit_s:6.2f} {a.n_iter_:7d} {1e3 * numpy_s / max(iters, 1):14.1f} "
              f"{1e3 * jit_s / max(iters_jit, 1):17.1f}", flush=True)
    print(f"(load {loadavg()})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", help="another checkout to compare the first fit with")
    parser.add_argument("--sizes", default="10000,50000,100000,200000,400000")
    parser.add_argument("--skip-sizes", action="store_true")
    parser.add_argument("--skip-first-fit", action="store_true")
    args = parser.parse_args()
    if not args.skip_first_fit:
        first_fit_table(Path(args.baseline) if args.baseline else None)
    if not args.skip_sizes:
        size_table([int(s) for s in args.sizes.split(",")])


if __name__ == "__main__":
    main()
