"""Scale benchmark: DawidSkene (K=5) and OrdinalMixture on tens of millions
of synthetic ratings, on a LocalCluster of worker processes and in memory,
same data, same machine.

The ratings are generated per partition of 500,000 ratings (5 ratings per
item, 2,000 raters; each partition's items are its own, so the frame needs
no shuffle), on the workers for the Dask fit and in the process for the
in-memory fit.  Each (size, model, path) runs in its own process, so that
the peak memory (``ru_maxrss``) of the client and of each worker is that
run's.  Both paths run a fixed number of iterations (``tol=0``);

- in memory, seconds per iteration = (time of ``max_iter=k`` minus time of
  ``max_iter=0``) / k, all cores (numba threads);
- on Dask, each iteration's wall time on the client, split into the
  workers' compute (summed task time / workers), the client's send
  (scatter of the parameters), the rest of the wait for the tasks and the
  tree reduction (scheduling, reduction tasks, imbalance) and the receive
  of the reduced statistics; the median over the iterations after the
  first local step.  Setup = encoding the partitions on
  the workers and checking that every item sits in one partition.

Run (the full run takes several minutes and up to ~8 GB):
    PYTHONPATH=. python benchmarks/bench_dask.py                  # 10M and 50M
    PYTHONPATH=. python benchmarks/bench_dask.py --millions 1     # a quick check
    PYTHONPATH=. python benchmarks/bench_dask.py --millions 10 --models OrdinalMixture \
        --workers 4 --iterations 3

Flags: ``--millions`` sizes (millions of ratings, several allowed; a
multiple of 0.5), ``--models`` (DawidSkene, OrdinalMixture), ``--workers``
(worker processes of 1 thread, default 2), ``--iterations`` (fixed
iterations per fit; default 4 for DawidSkene, 2 for OrdinalMixture),
``--paths`` (``memory``, ``dask`` or both, the default).  With ``--paths
dask`` the script times the Dask path of whichever skcrowd is imported, so
that two versions compare back to back on the same data:

    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_dask.py --paths dask

Each Dask line also gives every iteration's wall time and its overhead (wall
time minus the compute per worker: sending, scheduling, waiting, the
reduction, receiving).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

PER_PARTITION = 500_000
RATINGS_PER_ITEM = 5
N_RATERS = 2000
N_WORKERS = 2
SEED = 0
ITERATIONS = {"DawidSkene": 4, "OrdinalMixture": 2}


def rater_parameters(model):
    rng = np.random.default_rng(SEED)
    if model == "DawidSkene":
        return rng.uniform(0.4, 0.95, N_RATERS)  # accuracy; errors uniform
    precision = rng.gamma(4.0, 1.0, N_RATERS)
    spammer = rng.random(N_RATERS) < 0.2
    return precision, spammer


def make_partition(index, model):
    """One partition: items ``index * n + [0, n)``, their ratings as a frame."""
    import pandas as pd

    rng = np.random.default_rng([SEED, index])
    n_items = PER_PARTITION // RATINGS_PER_ITEM
    item = np.repeat(np.arange(index * n_items, (index + 1) * n_items, dtype=np.int64),
                     RATINGS_PER_ITEM)
    rater = rng.integers(0, N_RATERS, size=len(item))
    if model == "DawidSkene":
        K = 5
        truth = rng.integers(0, K, size=n_items)[item - index * n_items]
        accuracy = rater_parameters(model)[rater]
        wrong = (truth + rng.integers(1, K, size=len(item))) % K
        label = np.where(rng.random(len(item)) < accuracy, truth, wrong)
    else:
        precision, spammer = rater_parameters(model)
        z = rng.normal(3.0, 1.0, size=n_items)[item - index * n_items]
        x = z + rng.normal(size=len(item)) / np.sqrt(precision[rater])
        label = np.clip(np.rint(x), 1, 5)
        spam = spammer[rater]
        label[spam] = rng.integers(1, 6, size=int(spam.sum()))
    return pd.DataFrame({"item": item, "rater": rater, "label": label.astype(np.int64)})


def estimator(model, max_iter):
    from skcrowd import DawidSkene, OrdinalMixture

    if model == "DawidSkene":
        return DawidSkene(max_iter=max_iter, tol=0.0)
    return OrdinalMixture(n_init=1, max_iter=max_iter, tol=0.0, random_state=0)


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_memory(model, n_partitions):
    import pandas as pd

    from skcrowd import Ratings

    frame = pd.concat([make_partition(i, model) for i in range(n_partitions)],
                      ignore_index=True)
    ratings = Ratings(frame["item"].to_numpy(), frame["rater"].to_numpy(),
                      frame["label"].to_numpy())
    del frame
    estimator(model, 1).fit(_ratings(make_partition(0, model)))  # load the compiled kernels
    k = ITERATIONS[model]
    times = {}
    for max_iter in (0, k):
        start = time.perf_counter()
        estimator(model, max_iter).fit(ratings)
        times[max_iter] = time.perf_counter() - start
    return {"per_iteration": (times[k] - times[0]) / k, "fit_k": times[k],
            "client_peak_mb": peak_mb()}


def run_dask(model, n_partitions):
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=N_WORKERS, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        frame = dd.from_map(make_partition, range(n_partitions), model=model)
        client.run(lambda: estimator(model, 1).fit(make_partition(0, model).pipe(_ratings)))
        k = ITERATIONS[model]
        start = time.perf_counter()
        fitted = estimator(model, k).fit(frame)
        total = time.perf_counter() - start
        steps = fitted._dask_iterations
        walls = sum(s["wall"] for s in steps)
        later = steps[1:]
        split = {key: float(np.median([s[key] for s in later]))
                 for key in ("wall", "compute", "send", "tasks", "receive")}
        split["compute_per_worker"] = split["compute"] / N_WORKERS
        split["compute_per_partition"] = split["compute"] / n_partitions
        # waiting for the tasks beyond the workers' compute: scheduling,
        # the reduction tasks, imbalance
        split["other"] = split["tasks"] - split["compute_per_worker"]
        split["overhead"] = split["wall"] - split["compute_per_worker"]
        workers = client.run(peak_mb)
    return {"per_iteration": split["wall"], "split": split, "setup": total - walls,
            "walls": [s["wall"] for s in steps],
            "overheads": [s["wall"] - s["compute"] / N_WORKERS for s in steps],
            "fit_k": total, "client_peak_mb": peak_mb(),
            "worker_peak_mb": sorted(workers.values())}


def _ratings(frame):
    from skcrowd import Ratings

    return Ratings(frame["item"].to_numpy(), frame["rater"].to_numpy(),
                   frame["label"].to_numpy())


def child(args):
    global N_WORKERS
    warnings.simplefilter("ignore")
    N_WORKERS = args.workers
    if args.iterations:
        ITERATIONS[args.model] = args.iterations
    n_partitions = int(args.millions * 1_000_000) // PER_PARTITION
    run = run_dask if args.path == "dask" else run_memory
    print(json.dumps(run(args.model, n_partitions)))


def _seconds(values):
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--millions", type=float, nargs="*", default=[10, 50])
    parser.add_argument("--models", nargs="*", default=["DawidSkene", "OrdinalMixture"])
    parser.add_argument("--workers", type=int, default=N_WORKERS)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--paths", nargs="*", choices=["memory", "dask"],
                        default=["memory", "dask"])
    parser.add_argument("--path", choices=["dask", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.path:
        args.millions = args.millions[0]
        return child(args)
    print(f"uptime: {os.popen('uptime').read().strip()}", flush=True)
    print(f"{args.workers} worker processes x 1 thread; partitions of {PER_PARTITION:,} "
          f"ratings; {N_RATERS} raters, {RATINGS_PER_ITEM} ratings per item", flush=True)
    for millions in args.millions:
        for model in args.models:
            results = {}
            for path in args.paths:
                out = subprocess.run(
                    [sys.executable, __file__, "--path", path, "--model", model,
                     "--millions", str(millions), "--workers", str(args.workers)]
                    + (["--iterations", str(args.iterations)] if args.iterations else []),
                    capture_output=True, text=True, check=True)
                results[path] = json.loads(out.stdout.strip().splitlines()[-1])
            memory, dask = results.get("memory"), results.get("dask")
            line = f"{model}, {millions:g}M ratings:"
            if memory:
                line += (f" in memory {memory['per_iteration']:.2f} s per iteration (client "
                         f"peak {memory['client_peak_mb']:.0f} MB);")
            if dask:
                split = dask["split"]
                line += (f" Dask {dask['per_iteration']:.2f} s per iteration = compute "
                         f"{split['compute_per_worker']:.2f} s per worker "
                         f"({split['compute_per_partition'] * 1000:.0f} ms per partition) + send "
                         f"{split['send'] * 1000:.1f} ms + receive {split['receive'] * 1000:.1f} ms "
                         f"+ scheduling/waiting {split['other']:.2f} s (overhead "
                         f"{split['overhead']:.3f} s); setup {dask['setup']:.1f} s; "
                         f"peak memory: client {dask['client_peak_mb']:.0f} MB, workers "
                         f"{', '.join(f'{m:.0f}' for m in dask['worker_peak_mb'])} MB; "
                         f"each iteration's wall {_seconds(dask['walls'])} s, overhead "
                         f"{_seconds(dask['overheads'])} s")
            if memory and dask:
                line += f"; ratio Dask / memory {dask['per_iteration'] / memory['per_iteration']:.2f}"
            print(line, flush=True)
    print(f"uptime: {os.popen('uptime').read().strip()}", flush=True)


if __name__ == "__main__":
    main()
