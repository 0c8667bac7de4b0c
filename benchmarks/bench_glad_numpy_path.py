"""GLAD's numpy path against its compiled kernels: where the limit goes, and
what a first fit costs.

Two parts:

* by size: simulated GLAD data (``make_glad``, 100 raters, 10 ratings per
  item, K = 2) at a range of sizes; CPU seconds (all threads) of
  ``GLAD().fit(X)`` + ``predict_proba(X)`` + ``score(X)`` in this process on
  the numpy path and on the compiled path with its kernels compiled
  (medians of ``--repeat``); then, in fresh processes on the compiled path,
  the same work with an empty numba cache (compiling) and with that cache
  warm (loading the kernels from disk), less the warm in-process figure:
  the compile and the load cost;
* first fit: a fresh process with an empty numba cache imports skcrowd,
  loads RTE and runs ``GLAD().fit``, ``predict``, ``predict_proba`` and
  ``score``: its CPU seconds beyond ``import skcrowd`` and the skcrowd
  kernels it compiled, for this tree and, with ``--baseline DIR``, for
  another checkout (e.g. main).

Usage::

    PYTHONPATH=. python benchmarks/bench_glad_numpy_path.py [--baseline ../main]
        [--sizes 2000,5000,10000,20000,40000,80000] [--repeat 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the work timed at every size (X, est made by the caller)
WORK = """
est.fit(X)
est.predict_proba(X)
est.score(X)
"""

# a fresh process: CPU beyond import skcrowd of making the data and WORK on
# the path argv[2], and the skcrowd kernels it compiled
FRESH = r"""
import contextlib, json, sys, time, warnings
warnings.simplefilter("ignore")
import skcrowd
c0 = time.process_time()
from skcrowd import GLAD
from skcrowd._kernels._config import kernel_path
size = int(sys.argv[1])
if size == 0:
    from skcrowd.datasets import load_rte
    X = load_rte().ratings
else:
    from skcrowd.datasets import make_glad
    X = make_glad(size // 10, 100, 10, 2, random_state=0, dense=False).ratings
est = GLAD()
with kernel_path(sys.argv[2]) if sys.argv[2] != "default" else contextlib.nullcontext():
    c1 = time.process_time()
    est.fit(X)
    est.predict(X)
    est.predict_proba(X)
    est.score(X)
c2 = time.process_time()
compiled = []
for name, module in list(sys.modules.items()):
    if not name.startswith("skcrowd._kernels"):
        continue
    for value in vars(module).values():
        for part in (value, getattr(value, "jit", None), getattr(value, "serial", None),
                     getattr(getattr(value, "jit", None), "serial", None)):
            if getattr(part, "signatures", None) and part.py_func.__name__ not in compiled:
                compiled.append(part.py_func.__name__)
print(json.dumps({"beyond_import": c2 - c0, "work": c2 - c1, "compiled": sorted(compiled)}))
"""


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def fresh(tree, size, path, cache):
    """One fresh process on the skcrowd in ``tree``: (its figures, wall s)."""
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=cache,
               PYTHONDONTWRITEBYTECODE="1")
    start = time.perf_counter()
    # run in the cache folder: ``python -c`` imports from its working
    # directory first, which must not shadow ``tree``
    out = subprocess.run([sys.executable, "-c", FRESH, str(size), path], env=env, cwd=cache,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]), time.perf_counter() - start


def in_process(X, path, repeat):
    """Median CPU s of WORK on ``path`` (compiled kernels already loaded)."""
    from skcrowd import GLAD
    from skcrowd._kernels._config import kernel_path

    times = []
    for _ in range(repeat):
        est = GLAD()
        with kernel_path(path), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.process_time()
            exec(WORK, {"est": est, "X": X})
            times.append(time.process_time() - start)
    return statistics.median(times)


def by_size(sizes, repeat):
    from skcrowd.datasets import make_glad

    print(f"load average at start: {loadavg()}")
    print("| ratings | numpy CPU s | compiled (warm) CPU s | compile CPU s "
          "| cache load CPU s |")
    print("|---|---|---|---|---|")
    for size in sizes:
        X = make_glad(size // 10, 100, 10, 2, random_state=0, dense=False).ratings
        in_process(X, "jit", 1)  # compile (or load) this size's variant first
        jit = in_process(X, "jit", repeat)
        numpy = in_process(X, "numpy", repeat)
        with tempfile.TemporaryDirectory() as cache:
            cold = fresh(ROOT, size, "jit", cache)[0]["work"]
            warm = fresh(ROOT, size, "jit", cache)[0]["work"]
        print(f"| {size:,} | {numpy:.3f} | {jit:.3f} | {cold - jit:.2f} | {warm - jit:.2f} |",
              flush=True)
    print(f"load average at end: {loadavg()}")


def first_fit(trees):
    print(f"\nload average at start: {loadavg()}")
    print("| tree | CPU s beyond import skcrowd | wall s | skcrowd kernels compiled |")
    print("|---|---|---|---|")
    for label, tree in trees:
        with tempfile.TemporaryDirectory() as cache:
            figures, wall = fresh(tree, 0, "default", cache)
        names = ", ".join(figures["compiled"]) or "none"
        print(f"| {label} | {figures['beyond_import']:.2f} | {wall:.2f} | {names} |",
              flush=True)
    print(f"load average at end: {loadavg()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000,5000,10000,20000,40000,80000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", default=None,
                        help="another checkout of skcrowd (e.g. main) for the first fit")
    parser.add_argument("--only", choices=["sizes", "first"], default=None)
    args = parser.parse_args()
    if args.only != "first":
        by_size([int(s) for s in args.sizes.split(",")], args.repeat)
    if args.only != "sizes":
        trees = [("this tree", ROOT)]
        if args.baseline:
            trees.insert(0, (f"baseline ({args.baseline})", Path(args.baseline).resolve()))
        first_fit(trees)


if __name__ == "__main__":
    main()
