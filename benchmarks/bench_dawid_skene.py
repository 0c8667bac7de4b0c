"""DawidSkene: skcrowd against crowd-kit in one run (times, ratios, accuracy).

Set up once (crowd-kit is heavy, so it lives in the optional ``bench``
extra, never in the test install)::

    pip install ".[bench]"
    python benchmarks/bench_dawid_skene.py            # everything
    python benchmarks/bench_dawid_skene.py --only synthetic,gold

Sections
--------
synthetic  100,000 items x 5 ratings, 100 raters, K=5, 50 EM iterations each
converged  the same data, default settings on both sides (each stops at its tol)
gold       accuracy on the real data sets with gold, defaults (crowd-kit n_iter=100)
scale      10M ratings, K=5, 50 iterations: time and peak memory (own process)
dataframe  1M ratings as a long pandas DataFrame of strings (task/worker/label),
           end to end from the frame: fit + predict on both sides, defaults
cli        the same ratings as a CSV file: ``skcrowd aggregate`` end to end (own
           process) and the file's reading alone
cold       fresh process, numba cache warm: import skcrowd + a small fit

Timings exclude building the inputs (crowd-kit's DataFrame, skcrowd's
Ratings); skcrowd is warmed up once so numba compilation is not timed (the
``cold`` section measures the cached start separately).
"""

import argparse
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import cold_start  # noqa: E402
from _crowdkit import crowdkit_available, crowdkit_dawid_skene, crowdkit_version  # noqa: E402
from _synthetic import make_ds_long  # noqa: E402

from skcrowd import DawidSkene, Ratings  # noqa: E402
from skcrowd.datasets import load_bluebirds, load_dog, load_rte, load_web  # noqa: E402


def _fit_skcrowd(ratings, timing=None, **params):
    model = DawidSkene(**params)
    cpu = time.process_time()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = model.fit_predict(ratings)
    seconds = time.perf_counter() - start
    if timing is not None:
        timing.update(wall=seconds, cpu=time.process_time() - cpu)
    return labels, seconds


def _warm_up():
    item, rater, label, _ = make_ds_long(200, 10, 3, 5, random_state=1)
    _fit_skcrowd(Ratings(item, rater, label), max_iter=2)


def synthetic(repeats=3):
    item, rater, label, truth = make_ds_long(100_000, 100, 5, 5, random_state=0)
    ratings = Ratings(item, rater, label)
    rows = []
    for name, n_jobs in (("skcrowd DawidSkene, 1 thread", 1), ("skcrowd DawidSkene, 2 threads", 2)):
        runs = []
        for _ in range(repeats):
            timing = {}
            labels, _ = _fit_skcrowd(ratings, timing=timing, max_iter=50, tol=0, n_jobs=n_jobs)
            runs.append(timing)
        best = min(runs, key=lambda t: t["wall"])
        rows.append((name, best["wall"], best["cpu"], np.mean(labels == truth)))
    if crowdkit_available():
        timing = {}
        ck_labels, _ = crowdkit_dawid_skene(item, rater, label, n_iter=50, timing=timing)
        rows.append(("crowd-kit DawidSkene", timing["wall"], timing["cpu"],
                     np.mean(ck_labels == truth)))
    print("\n## Synthetic: 100,000 items x 5 ratings, 100 raters, K=5, 50 iterations")
    print("| method | wall (s) | CPU (s) | accuracy |\n|---|---|---|---|")
    for name, wall, cpu, accuracy in rows:
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {accuracy:.4f} |")
    if crowdkit_available():
        ck = rows[-1]
        for name, wall, cpu, _ in rows[:-1]:
            print(f"- {name}: {ck[1] / wall:.1f}x faster in wall time, "
                  f"{ck[2] / cpu:.1f}x in CPU time")
        print(f"(skcrowd best of {repeats}; crowd-kit one run; CPU time is the figure "
              "to trust on a busy machine)")


def converged(repeats=3):
    """Default settings on both sides: each stops at its own tolerance."""
    item, rater, label, truth = make_ds_long(100_000, 100, 5, 5, random_state=0)
    ratings = Ratings(item, rater, label)
    rows = []
    for name, params in (("skcrowd DawidSkene (accelerated, default)", {}),
                         ("skcrowd DawidSkene (accelerate=False)", {"accelerate": False})):
        runs = []
        for _ in range(repeats):
            timing = {}
            model = DawidSkene(**params)
            start = time.perf_counter()
            labels = model.fit_predict(ratings)
            runs.append((time.perf_counter() - start, model.n_iter_, labels))
        wall, n_iter, labels = min(runs, key=lambda r: r[0])
        rows.append((name, wall, f"{n_iter} passes", np.mean(labels == truth)))
    if crowdkit_available():
        timing = {}
        ck_labels, _ = crowdkit_dawid_skene(item, rater, label, n_iter=100, full_iter=False,
                                            timing=timing)
        rows.append(("crowd-kit DawidSkene (defaults: n_iter=100, tol=1e-5)", timing["wall"],
                     "", np.mean(ck_labels == truth)))
    print("\n## Converged fits at default settings: 100,000 items x 5 ratings, 100 raters, K=5")
    print("| method | wall (s) | iterations | accuracy |\n|---|---|---|---|")
    for name, wall, n_iter, accuracy in rows:
        print(f"| {name} | {wall:.3f} | {n_iter} | {accuracy:.4f} |")
    if crowdkit_available():
        for name, wall, _, _ in rows[:-1]:
            print(f"- {name}: {rows[-1][1] / wall:.1f}x faster (wall)")
        print(f"(skcrowd best of {repeats}; crowd-kit one run)")


def gold():
    sets = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}
    print("\n## Accuracy on gold, default settings")
    print("| data | skcrowd | time (s) | crowd-kit | time (s) |\n|---|---|---|---|---|")
    for name, load in sets.items():
        data = load()
        known = ~np.isnan(data.gold)
        labels, seconds = _fit_skcrowd(data.ratings)
        cells = [f"{np.mean(labels[known] == data.gold[known]):.4f}", f"{seconds:.3f}"]
        if crowdkit_available():
            R = data.ratings
            ck, ck_seconds = crowdkit_dawid_skene(R._item, R._rater, R.label, n_iter=100,
                                                  full_iter=False)
            cells += [f"{np.mean(ck[known] == data.gold[known]):.4f}", f"{ck_seconds:.3f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")


SCALE_CODE = """
import resource, time, warnings, sys
sys.path.insert(0, {bench!r})
import numpy as np
from _synthetic import make_ds_long
from skcrowd import DawidSkene, Ratings
item, rater, label, truth = make_ds_long(2_000_000, 1000, 5, 5, random_state=0)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
ratings = Ratings(item, rater, label)
t1 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    labels = DawidSkene(max_iter=50, tol=0).fit_predict(ratings)
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{{t1 - t0:.2f}} {{t2 - t1:.2f}} {{peak / 2**20:.2f}} {{base / 2**20:.2f}} "
      f"{{np.mean(labels == truth):.4f}}")
"""


def scale():
    code = SCALE_CODE.format(bench=os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    build, fit, peak, base, accuracy = out
    print("\n## Scale: 10,000,000 ratings (2M items x 5, 1,000 raters), K=5, 50 iterations")
    print(f"- Ratings construction: {build} s; fit (50 iterations): {fit} s; "
          f"accuracy {accuracy}")
    print(f"- peak resident memory of the process: {peak} GB "
          f"({base} GB before building Ratings: the generated arrays)")


def dataframe(repeats=3):
    """What a pandas user runs: ``DawidSkene().fit(df)`` and ``predict(df)``
    on a long DataFrame whose ids and labels are strings (a platform's
    export), timed from the frame, encoding included; crowd-kit's
    ``fit_predict(df)`` on the same frame."""
    import pandas as pd

    item, rater, label, truth = make_ds_long(200_000, 1000, 5, 5, random_state=0)
    names = np.array(list("abcde"), dtype=object)
    df = pd.DataFrame({"task": np.char.add("t", item.astype(str)).astype(object),
                       "worker": np.char.add("w", rater.astype(str)).astype(object),
                       "label": names[label]})
    truth_names = names[truth]
    order = np.argsort(np.char.add("t", np.arange(len(truth)).astype(str)))
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        ratings = Ratings.from_long(df, "task", "worker", "label")
        encoded = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DawidSkene().fit(df)
            fitted = time.perf_counter()
            labels = model.predict(df)
        done = time.perf_counter()
        runs.append((done - encoded, encoded - start, fitted - encoded, done - fitted,
                     np.asarray(labels)))
    wall, encode, fit, predict, labels = min(runs, key=lambda r: r[0])
    accuracy = np.mean(labels == truth_names[order])  # items in sorted id order
    print(f"\n## A long DataFrame of strings: {len(df):,} ratings, 200,000 items, "
          "1,000 workers, K=5, defaults")
    print("| method | fit + predict (s) | accuracy |\n|---|---|---|")
    print(f"| skcrowd DawidSkene().fit(df), .predict(df) | {wall:.3f} | {accuracy:.4f} |")
    print(f"- skcrowd parts (best run): Ratings.from_long alone {encode:.3f} s, fit {fit:.3f} s "
          f"(encoding included; {model.n_iter_} passes), predict {predict:.3f} s; "
          f"{len(ratings.item_ids):,} items")
    if crowdkit_available():
        from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            ck = CrowdKitDawidSkene(n_iter=100).fit_predict(df)
            ck_wall = time.perf_counter() - start
        ck_accuracy = np.mean(ck.sort_index().to_numpy() == truth_names[order])
        print(f"| crowd-kit DawidSkene(n_iter=100).fit_predict(df) | {ck_wall:.3f} | "
              f"{ck_accuracy:.4f} |")
        print(f"- {ck_wall / wall:.1f}x faster (wall; skcrowd best of {repeats}, "
              "crowd-kit one run)")


def cli(repeats=3):
    """``skcrowd aggregate ratings.csv --model dawid-skene`` on the ``dataframe`` section's
    ratings written as a CSV file: the whole command in a fresh process
    (numba's cache warm) and, in this process, reading the file alone."""
    import tempfile

    from skcrowd import cli as skcrowd_cli

    item, rater, label, _ = make_ds_long(200_000, 1000, 5, 5, random_state=0)
    with tempfile.TemporaryDirectory() as folder:
        path, out = os.path.join(folder, "ratings.csv"), os.path.join(folder, "truth.csv")
        with open(path, "w") as f:
            f.write("item,rater,label\n")
            f.writelines(f"t{i},w{r},{'abcde'[k]}\n" for i, r, k in zip(item, rater, label))
        reads = []
        for _ in range(repeats):
            start = time.perf_counter()
            skcrowd_cli._read_ratings(path, "item", "rater", "label")
            reads.append(time.perf_counter() - start)
        commands = []
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "skcrowd.cli", "aggregate", path, "--model",
                            "dawid-skene", "-o", out],
                           check=True, capture_output=True)
            commands.append(time.perf_counter() - start)
    print(f"\n## skcrowd aggregate on a CSV file: {len(item):,} ratings, 200,000 items, "
          "1,000 workers, K=5, string ids and labels")
    print(f"- reading the file into Ratings: {min(reads):.2f} s (best of {repeats})")
    print(f"- the whole command in a fresh process (import, read, fit, predict, write): "
          f"{min(commands):.2f} s (best of {repeats})")


def cold():
    cold_start('skcrowd.DawidSkene().fit(R)', 'import + fit on RTE')


SECTIONS = {"synthetic": synthetic, "converged": converged, "gold": gold, "scale": scale,
            "dataframe": dataframe, "cli": cli, "cold": cold}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    args = parser.parse_args()
    print(f"crowd-kit: {crowdkit_version() if crowdkit_available() else 'not installed'}")
    _warm_up()
    for name in args.only.split(","):
        SECTIONS[name]()


if __name__ == "__main__":
    main()
