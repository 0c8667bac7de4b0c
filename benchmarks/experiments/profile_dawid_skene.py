"""Where a converged DawidSkene fit spends its CPU time, per fit stage.

100,000 items x 5 ratings (500k), 100 raters, K=5 (the data of
``bench_dawid_skene.py``), default settings, ``fit_predict`` on a prebuilt
``Ratings``: CPU milliseconds per fit in each stage (the model's local
steps, global updates, objective; input encoding; the start; the fitted
attributes), averaged over ``--repeats`` fits after one warm-up fit.

Run (compare two checkouts by switching PYTHONPATH):
    PYTHONPATH=. python benchmarks/experiments/profile_dawid_skene.py [--n-jobs 1]
"""

import argparse
import collections
import functools
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))  # benchmarks/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _synthetic import make_ds_long  # noqa: E402

from skcrowd import DawidSkene, Ratings  # noqa: E402
from skcrowd import _ratings  # noqa: E402
from skcrowd._loop import Squarem  # noqa: E402

STAGES = ("_encode", "_init_params", "_local_step", "_global_update", "_objective",
          "_set_fitted", "_predict_from_items")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    item, rater, label, _ = make_ds_long(100_000, 100, 5, 5, random_state=0)
    ratings = Ratings(item, rater, label)
    warnings.simplefilter("ignore")
    DawidSkene(n_jobs=args.n_jobs).fit_predict(ratings)  # compile / warm caches
    seconds, calls = collections.defaultdict(float), collections.Counter()

    def timed(owner, name):
        method = getattr(owner, name)

        @functools.wraps(method)
        def wrapper(*a, **k):
            start = time.process_time()
            try:
                return method(*a, **k)
            finally:
                seconds[name] += time.process_time() - start
                calls[name] += 1
        setattr(owner, name, wrapper)

    for name in STAGES:
        timed(DawidSkene, name)
    timed(Squarem, "extrapolate")  # the accelerator, a part of the fit loop
    for name in ("fit_classes", "encode_labels"):  # inside _encode
        timed(_ratings, name)
    start = time.process_time()
    for _ in range(args.repeats):
        model = DawidSkene(n_jobs=args.n_jobs)
        model.fit_predict(ratings)
    total = (time.process_time() - start) / args.repeats
    print(f"load average {os.getloadavg()[0]:.2f}; n_jobs {args.n_jobs}; "
          f"{model.n_iter_} iterations")
    print(f"CPU per fit: {total * 1e3:.1f} ms")
    print("| stage | CPU ms per fit | calls per fit |\n|---|---|---|")
    for name in sorted(seconds, key=seconds.get, reverse=True):
        print(f"| {name} | {seconds[name] / args.repeats * 1e3:.2f} | "
              f"{calls[name] / args.repeats:.0f} |")


if __name__ == "__main__":
    main()
