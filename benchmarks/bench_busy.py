"""Fits at the default number of threads against ``n_jobs=1`` while another
process keeps one core busy.

Starts ``python -c "while True: pass"`` beside itself (``--no-busy``: not),
then in one process times, back to back, the default fit and the
``n_jobs=1`` fit of each model, ``--repeat`` pairs each (the first pair of
each model warms the kernels and is dropped):

* DawidSkene, converged, 500,000 ratings (100,000 items x 5, 100 raters),
  K = 5, simulated as in bench_dawid_skene.py;
* GLAD, converged, 50,000 ratings (10,000 items x 5, 100 raters), K = 2;
* OrdinalMixture on TREC 2010 (``--ordinal``, slow: seconds per fit).

Prints each model's median wall seconds for both settings, their ratio, and
crowd-kit's time on the same data in the same condition (``--crowdkit``),
with the load average before and after.

Usage::

    PYTHONPATH=. python benchmarks/bench_busy.py [--repeat 5] [--ordinal] [--crowdkit]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _synthetic import make_ds_long, make_glad_long  # noqa: E402

from skcrowd import GLAD, DawidSkene, OrdinalMixture, Ratings  # noqa: E402
from skcrowd.datasets import load_trec2010  # noqa: E402


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def timed(make, X):
    start = time.perf_counter()
    make().fit(X)
    return time.perf_counter() - start


def pairs(name, make, X, repeat):
    default, single = [], []
    for r in range(repeat + 1):
        d, s = timed(lambda: make(None), X), timed(lambda: make(1), X)
        if r:  # the first pair loads or compiles the kernels
            default.append(d)
            single.append(s)
    d, s = statistics.median(default), statistics.median(single)
    print(f"| {name:32s} | {d:9.3f} | {s:9.3f} | {d / s:5.2f} |", flush=True)
    return d, s


def crowdkit_time(method, long):
    """crowd-kit's fit at its defaults (its own tol), wall seconds."""
    from _crowdkit import run_crowdkit

    item, rater, label, _ = long
    return run_crowdkit(method, item, rater, label, full_iter=False)[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-busy", action="store_true")
    parser.add_argument("--ordinal", action="store_true")
    parser.add_argument("--crowdkit", action="store_true")
    args = parser.parse_args()

    ds_long = make_ds_long(100_000, 100, 5, 5, random_state=0)
    glad_long = make_glad_long(10_000, 100, 5, 2, random_state=0)
    ds, glad = Ratings(*ds_long[:3]), Ratings(*glad_long[:3])
    busy = None
    if not args.no_busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(1.0)
    try:
        print(f"load average before: {loadavg()}  (busy process: {busy is not None})")
        print(f"| {'fit':32s} | {'default s':>9s} | {'n_jobs=1':>9s} | ratio |")
        rows = {
            "DawidSkene 500k ratings K=5": pairs(
                "DawidSkene 500k ratings K=5",
                lambda n: DawidSkene(n_jobs=n, random_state=0), ds, args.repeat),
            "GLAD 50k ratings": pairs(
                "GLAD 50k ratings", lambda n: GLAD(n_jobs=n, random_state=0), glad, args.repeat),
        }
        if args.ordinal:
            trec = load_trec2010().ratings
            rows["OrdinalMixture TREC"] = pairs(
                "OrdinalMixture TREC", lambda n: OrdinalMixture(n_jobs=n, random_state=0),
                trec, max(1, args.repeat // 3))
        if args.crowdkit:
            for name, method, long in (("DawidSkene 500k ratings K=5", "DawidSkene", ds_long),
                                       ("GLAD 50k ratings", "GLAD", glad_long)):
                ck = crowdkit_time(method, long)
                d, s = rows[name]
                print(f"crowd-kit {name}: {ck:.2f} s; skcrowd default {ck / d:.1f}x faster, "
                      f"n_jobs=1 {ck / s:.1f}x faster", flush=True)
        print(f"load average after: {loadavg()}")
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
