"""Time to first result: fresh processes, an empty numba cache, side by side
with crowd-kit.

Each row is one fresh Python process, timed from outside (CPU = user + sys
of the process and its threads, from ``getrusage``; wall) and from inside
(CPU seconds of the imports and data loading, and of the fit):

* skcrowd, empty cache: ``NUMBA_CACHE_DIR`` points at a new empty folder;
  the process imports skcrowd, loads the data set and fits the model
  (``fit_predict``); then a second process with that cache, now warm;
* crowd-kit: the process imports pandas and crowd-kit, reads the same
  ratings file and runs ``DawidSkene().fit_predict`` (crowd-kit has
  nothing to compile);
* ``import skcrowd`` against ``import sklearn``, fresh processes,
  alternated, medians of ``--repeat`` runs.

Usage::

    PYTHONPATH=. python benchmarks/bench_first_run.py [--models DawidSkene,GLAD] [--repeat 3]

Models: DawidSkene, MajorityVote, MACE, GLAD (RTE), OrdinalMixture
(``n_init=1``, TREC 2010), IRT3PL (RTE), AutoCrowd (RTE).  Then the
``--large-models`` (default DawidSkene and AutoCrowd) on 100,000 simulated
binary ratings (``make_dawid_skene(20_000, 100, 5, 2, random_state=0)``),
above the size where the models' kernels run on numpy.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RTE = ROOT / "skcrowd" / "datasets" / "data" / "rte_labels.csv.gz"

# imports skcrowd, loads the data of model sys.argv[1] (sys.argv[2] "large":
# 100,000 simulated ratings) into X and makes
# its estimator est (also used by profile_compile.py)
MAKE_MODEL = r"""
import skcrowd
from skcrowd.datasets import load_rte, load_trec2010
model = sys.argv[1]
if sys.argv[2:] == ["large"]:
    from skcrowd.datasets import make_dawid_skene
    X = make_dawid_skene(20_000, 100, 5, 2, random_state=0).ratings
elif model == "OrdinalMixture":
    X = load_trec2010().ratings
else:
    X = load_rte().ratings
if model == "OrdinalMixture":
    est = skcrowd.OrdinalMixture(n_init=1, random_state=0)
else:
    est = getattr(skcrowd, model)(**({} if model == "MajorityVote" else {"random_state": 0}))
"""

SKCROWD = r"""
import json, sys, time
c0 = time.process_time()
""" + MAKE_MODEL + r"""
c1 = time.process_time()
est.fit_predict(X)
c2 = time.process_time()
print(json.dumps({"import_load": c1 - c0, "fit": c2 - c1}))
"""

CROWDKIT = r"""
import json, sys, time
c0 = time.process_time()
import pandas as pd
from crowdkit.aggregation import DawidSkene, MajorityVote
df = pd.read_csv(sys.argv[2]).rename(columns={"item": "task", "rater": "worker"})
c1 = time.process_time()
{"DawidSkene": DawidSkene, "MajorityVote": MajorityVote}[sys.argv[1]]().fit_predict(df)
c2 = time.process_time()
print(json.dumps({"import_load": c1 - c0, "fit": c2 - c1}))
"""

MODELS = ["DawidSkene", "MajorityVote", "MACE", "GLAD", "OrdinalMixture", "IRT3PL", "AutoCrowd"]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def fresh(code, *args, env=None):
    """Run ``code`` in a fresh process: (CPU s, wall s, what it printed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                         capture_output=True, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = out.strip().splitlines()
    return cpu, wall, json.loads(lines[-1]) if lines else {}


def row(name, cpu, wall, inside):
    fit = inside.get("fit")
    extra = (f" {inside['import_load']:6.2f} | {fit:6.2f} |" if fit is not None
             else "      - |      - |")
    print(f"| {name:44s} | {cpu:6.2f} | {wall:6.2f} |{extra}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--large-models", default="DawidSkene,AutoCrowd")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_CACHE_DIR", None)

    print(f"load average at start: {loadavg()}")
    print(f"| {'fresh process':44s} | CPU s | wall s | import+load CPU | fit CPU |")
    print(f"|{'-' * 46}|-------|--------|------|------|")
    results = {}
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory() as cache:
            cache_env = dict(env, NUMBA_CACHE_DIR=cache)
            cold = fresh(SKCROWD, model, env=cache_env)
            warm = fresh(SKCROWD, model, env=cache_env)
        row(f"skcrowd {model}, empty cache", *cold)
        row(f"skcrowd {model}, warm cache", *warm)
        results[model] = cold
    for model in filter(None, args.large_models.split(",")):
        with tempfile.TemporaryDirectory() as cache:
            cache_env = dict(env, NUMBA_CACHE_DIR=cache)
            cold = fresh(SKCROWD, model, "large", env=cache_env)
            warm = fresh(SKCROWD, model, "large", env=cache_env)
        row(f"skcrowd {model} (100,000 ratings), empty cache", *cold)
        row(f"skcrowd {model} (100,000 ratings), warm cache", *warm)
    ck = {}
    for model in ("DawidSkene", "MajorityVote"):
        try:
            ck[model] = fresh(CROWDKIT, model, str(RTE), env=env)
        except subprocess.CalledProcessError as error:
            print(f"crowd-kit {model} failed: {error.stderr.strip().splitlines()[-1]}")
            continue
        row(f"crowd-kit {model} (RTE)", *ck[model])

    imports = {"skcrowd": [], "sklearn": []}
    for _ in range(args.repeat):
        for name in imports:
            imports[name].append(fresh(f"import {name}", env=env)[:2])
    for name, runs in imports.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        label = f"import {name} (median of {args.repeat})"
        print(f"| {label:44s} | {cpu:6.2f} | {wall:6.2f} |      - |      - |")
    print()
    if "DawidSkene" in results and "DawidSkene" in ck:
        ratio = results["DawidSkene"][0] / ck["DawidSkene"][0]
        print(f"DawidSkene on RTE, empty cache, whole process CPU: skcrowd "
              f"{results['DawidSkene'][0]:.2f} s / crowd-kit {ck['DawidSkene'][0]:.2f} s "
              f"= {ratio:.2f}x (target at most 1.5x)")
    for model, (cpu, wall, inside) in results.items():
        print(f"{model}: first fit {inside['fit']:.2f} s CPU beyond imports and loading "
              f"(target at most 3 s)")
    skc = statistics.median(r[0] for r in imports["skcrowd"])
    skl = statistics.median(r[0] for r in imports["sklearn"])
    print(f"import skcrowd - import sklearn: {skc - skl:+.2f} s CPU (target at most +0.2 s)")
    print(f"load average at end: {loadavg()}")


if __name__ == "__main__":
    main()
