"""The Dask path against the in-memory fit, same data, same model, one run.

DawidSkene on 1M synthetic ratings (200,000 items x 5, 200 raters, K=3),
IRT3PL "ab" on caries and GLAD on 100k synthetic ratings: in memory, then on a LocalCluster of 2 single-thread
workers (threads in one process), with the frame in 8 partitions.  Reports
the fit times (the Dask time includes the one shuffle by item and the
encoding on the workers) and the largest parameter difference.

Run:
    PYTHONPATH=. python benchmarks/bench_dask.py
"""

import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, DawidSkene, IRT3PL
from skcrowd.datasets import load_caries, make_dawid_skene, make_glad

warnings.simplefilter("ignore", ConvergenceWarning)


def frame_of(ratings, npartitions):
    import dask.dataframe as dd

    return dd.from_pandas(pd.DataFrame({"item": ratings.item, "rater": ratings.rater,
                                        "label": ratings.label}), npartitions=npartitions)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main():
    from distributed import Client, LocalCluster

    cases = [
        ("DawidSkene, 1M ratings", DawidSkene,
         make_dawid_skene(n_items=200_000, n_raters=200, ratings_per_item=5, n_classes=3,
                          random_state=0).ratings, "confusion_"),
        ("IRT3PL ab, caries", lambda: IRT3PL.from_tag("ab", random_state=0),
         load_caries().ratings, "alpha_sens_"),
        ("GLAD, 100k ratings", GLAD,
         make_glad(n_items=20_000, n_raters=100, ratings_per_item=5, random_state=0).ratings,
         "rater_ability_"),
    ]
    for _, make, ratings, _ in cases:  # compile before the clocks start
        make().set_params(max_iter=2).fit(ratings)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster):
        for name, make, ratings, attribute in cases:
            in_memory, t_memory = timed(lambda: make().fit(ratings))
            frame = frame_of(ratings, 8)
            on_dask, t_dask = timed(lambda: make().fit(frame))
            diff = np.abs(getattr(on_dask, attribute) - getattr(in_memory, attribute)).max()
            print(f"{name}: in memory {t_memory:.2f} s ({in_memory.n_iter_} iterations), "
                  f"Dask {t_dask:.2f} s ({on_dask.n_iter_} iterations), "
                  f"max |difference| of {attribute} {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
