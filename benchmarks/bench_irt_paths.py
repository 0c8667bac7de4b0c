"""IRT3PL's two paths: its numpy twins against its compiled kernels.

Three tables, each row with CPU seconds (``time.process_time``, all
threads) beside wall seconds, and the load average when it ran:

* sizes: a default fit (``IRT3PL(random_state=0)``, fit + predict_proba)
  on simulated sets of growing size, on the numpy path and on the compiled
  path with its kernels already compiled and loaded (same process, after a
  warm-up fit), with the local step's work (pattern ratings x 2 x nodes),
  the measure that ``skcrowd._irt.NUMPY_MAX_WORK`` bounds;
* compile cost: a fresh process with an empty numba cache runs the default
  fit on caries on the compiled path, then a second process with that cache
  warm: their difference is what the numpy path saves a first fit;
* first fit: a fresh process with an empty numba cache imports skcrowd and
  fits IRT3PL (default) on RTE and on caries, with predict_proba and score,
  for this tree and for another (``--other``, e.g. a checkout made with
  ``git worktree add ../skcrowd-before <commit>``); the CPU beyond ``import skcrowd`` is the figure of
  doc/first_run.rst.

Usage::

    PYTHONPATH=. python benchmarks/bench_irt_paths.py [--other ../skcrowd-before] [--quick]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIRST_FIT = r"""
import json, sys, time
c0, w0 = time.process_time(), time.perf_counter()
import skcrowd
from skcrowd.datasets import load_caries, load_rte
c1, w1 = time.process_time(), time.perf_counter()
path = sys.argv[1]
if path != "default":
    from skcrowd._kernels._config import kernel_path
    forced = kernel_path(path)  # kept: its exit would restore the default
    forced.__enter__()
names = sys.argv[2].split(",")
for name in names:
    X = {"rte": load_rte, "caries": load_caries}[name]().ratings
    model = skcrowd.IRT3PL(random_state=0).fit(X)
    model.predict_proba(X)
    model.score(X)
c2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"import_cpu": c1 - c0, "import_wall": w1 - w0,
                  "fit_cpu": c2 - c1, "fit_wall": w2 - w1}))
"""


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def fresh(tree, path, names, cache):
    """One fresh process of ``FIRST_FIT`` on ``tree`` with numba cache ``cache``."""
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", FIRST_FIT, path, ",".join(names)], env=env,
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def size_table(sizes):
    import numpy as np

    from skcrowd import IRT3PL
    from skcrowd._irt import _patterns
    from skcrowd._kernels._config import kernel_path
    from skcrowd._ratings import encode
    from skcrowd.datasets import make_irt

    def timed(X, path):
        with kernel_path(path):
            c, w = time.process_time(), time.perf_counter()
            model = IRT3PL(random_state=0).fit(X)
            model.predict_proba(X)
            return time.process_time() - c, time.perf_counter() - w, model

    warm = make_irt(n_items=50, n_raters=5, ratings_per_item=3, random_state=0).ratings
    timed(warm, "jit")  # compile (or load) the kernels first
    print("\n## Sizes: default fit + predict_proba, numpy path vs compiled (warm)")
    print(f"load {loadavg()}")
    print("| items | raters | ratings | work (M) | numpy CPU | numpy wall | jit CPU | jit wall "
          "| CPU ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n_items, n_raters in sizes:
        X = make_irt(n_items=n_items, n_raters=n_raters, ratings_per_item=5,
                     random_state=1).ratings
        model = IRT3PL()
        data = encode(model, X, reset=True)
        work = len(_patterns(data)["rater"]) * 2 * len(model._grid()[1])
        cn, wn, a = timed(X, "numpy")
        cj, wj, b = timed(X, "jit")
        assert np.allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-10)
        print(f"| {n_items} | {n_raters} | {X.n_ratings} | {work / 1e6:.1f} | {cn:.2f} | "
              f"{wn:.2f} | {cj:.2f} | {wj:.2f} | {cn / cj:.1f} |")
    print(f"load {loadavg()}")


def compile_cost():
    print("\n## Compile cost: default fit on caries, compiled path, fresh processes")
    print(f"load {loadavg()}")
    with tempfile.TemporaryDirectory() as cache:
        empty = fresh(ROOT, "jit", ["caries"], cache)
        warm = fresh(ROOT, "jit", ["caries"], cache)
    numpy = fresh(ROOT, "numpy", ["caries"], tempfile.mkdtemp())
    for name, row in (("compiled, empty cache", empty), ("compiled, warm cache", warm),
                      ("numpy path, empty cache", numpy)):
        print(f"- {name}: fit CPU {row['fit_cpu']:.2f} s, wall {row['fit_wall']:.2f} s")
    print(f"- compile cost: {empty['fit_cpu'] - warm['fit_cpu']:.1f} s CPU; the compiled path "
          f"with a warm cache costs {warm['fit_cpu'] - numpy['fit_cpu']:+.2f} s CPU against "
          "the numpy path (loading its kernels included)")
    print(f"load {loadavg()}")


def first_fit(trees):
    print("\n## First fit: fresh process, empty numba cache, IRT3PL on RTE and caries "
          "(fit + predict_proba + score)")
    print(f"load {loadavg()}")
    print("| tree | import CPU | import wall | fits CPU | fits wall |")
    print("|---|---|---|---|---|")
    for label, tree in trees:
        with tempfile.TemporaryDirectory() as cache:
            row = fresh(tree, "default", ["rte", "caries"], cache)
        print(f"| {label} | {row['import_cpu']:.2f} | {row['import_wall']:.2f} | "
              f"{row['fit_cpu']:.2f} | {row['fit_wall']:.2f} |")
    print(f"load {loadavg()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", help="another source tree to compare the first fit with")
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    parser.add_argument("--first-fit-only", action="store_true", help="the last table only")
    args = parser.parse_args()
    sizes = [(200, 10), (800, 40), (1600, 80), (3200, 160), (6400, 320)]
    if not args.first_fit_only:
        size_table(sizes[:3] if args.quick else sizes)
        compile_cost()
    trees = [("this tree", ROOT)]
    if args.other:
        trees.append((args.other, Path(args.other)))
    first_fit(trees)


if __name__ == "__main__":
    main()
