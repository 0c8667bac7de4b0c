"""The cost of the item-split check of cross-validation on long-form input.

A fit of a long-form DataFrame keeps a fingerprint of each item's ratings
(``skcrowd._splits.item_ratings``) and ``score`` compares X's items with it
(``check_items_not_split``).  This times both on simulated ratings beside
a converged DawidSkene fit of the same long-form DataFrame.

    python benchmarks/bench_split_check.py [--n-ratings 500000]
"""

import argparse
import os
import time

import numpy as np

from skcrowd import DawidSkene
from skcrowd._splits import check_items_not_split, item_ratings
from skcrowd.datasets import make_dawid_skene


def best_of(func, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-ratings", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n_items = args.n_ratings // 10
    df = make_dawid_skene(n_items, 200, 10, 5, random_state=0).ratings.to_long()
    model = DawidSkene()
    model.fit(df)  # compile, and the fingerprint of fit
    data = model._encode(df, reset=False)
    fit = best_of(lambda: model.fit(df), args.repeat)
    fingerprint = best_of(lambda: item_ratings(data), args.repeat)
    check = best_of(lambda: check_items_not_split(model, data), args.repeat)
    print(f"load average {os.getloadavg()[0]:.2f}; {len(df)} ratings, {n_items} items, "
          f"K=5; best of {args.repeat}")
    print(f"DawidSkene fit (long DataFrame, converged): {fit:.3f} s")
    print(f"fingerprint at fit: {fingerprint * 1e3:.1f} ms "
          f"({fingerprint / fit:.1%} of the fit)")
    print(f"check at score:     {check * 1e3:.1f} ms")
    assert np.isfinite(model.score(df))


if __name__ == "__main__":
    main()
