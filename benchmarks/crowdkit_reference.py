"""Reference timings and accuracies of crowd-kit 1.4.2 (the baseline skcrowd is
compared with).

Run from the repository root inside the benchmark virtualenv::

    python benchmarks/crowdkit_reference.py            # everything
    python benchmarks/crowdkit_reference.py --only real
    python benchmarks/crowdkit_reference.py --only ds_synth --json out.json

Configurations (ids for ``--only``; several may be given, comma separated):

* ``ds_synth``   DawidSkene, make_ds_long(100_000 items, 100 raters, 5 ratings
                 per item, K=5, random_state=0), exactly 50 EM iterations.
* ``glad_synth`` GLAD, make_glad_long(10_000 items, 100 raters, 5 ratings per
                 item, K=2, random_state=0), exactly 50 EM iterations.
* ``glad_web``   GLAD on the web data set, exactly 50 EM iterations.
* ``real``       DawidSkene and GLAD with crowd-kit defaults (n_iter=100,
                 tol=1e-5, early stopping allowed) on rte, bluebirds, dog,
                 web; also MajorityVote and OneCoinDawidSkene (defaults).

"Exactly N iterations" = ``n_iter=N, tol=-inf``: crowd-kit breaks when
``new_loss - old_loss < tol``, so tol=0 would still stop on a plateau.
Times are wall-clock ("fit s") and process-CPU ("cpu s") seconds of
``model.fit(df)`` only (DataFrame built
beforehand; one tiny warm-up fit per method first).  Accuracy is against the
true labels (synthetic) or the gold file (real; items with gold only).

The long configurations take many minutes (GLAD is a pure-pandas loop with a
per-task Python softmax); run them in the background.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _crowdkit as ck  # noqa: E402
from _synthetic import make_ds_long, make_glad_long  # noqa: E402

DATA_DIR = os.environ.get(
    "SKCROWD_DATA",
    os.path.join(os.path.dirname(HERE), "..", "shared", "data"),
)

REAL = ("rte", "bluebirds", "dog", "web")

# Figures these runs are expected to reproduce (crowd-kit defaults, n_iter=100).
EXPECTED = {
    ("DawidSkene", "rte"): 0.9275,
    ("DawidSkene", "bluebirds"): 0.8889,
    ("DawidSkene", "dog"): 0.8426,
    ("DawidSkene", "web"): 0.8292,
    ("GLAD", "rte"): 0.9250,
    ("GLAD", "bluebirds"): 0.7222,
    ("GLAD", "dog"): 0.8340,
    ("GLAD", "web"): 0.8217,
}


def load_real(name, data_dir=None):
    """Long-form int arrays of a real data set + gold aligned with
    ``np.unique(item)`` (-1 where an item has no gold label).

    Items and raters are re-coded 0..n-1 (sorted original ids); labels keep
    their original integer values.
    """
    import pandas as pd

    d = os.path.join(data_dir or DATA_DIR, name)
    lab = pd.read_csv(os.path.join(d, f"{name}_labels.csv"))
    gold = pd.read_csv(os.path.join(d, f"{name}_gold.csv"))
    item_ids, item = np.unique(lab["item"].to_numpy(), return_inverse=True)
    _, rater = np.unique(lab["rater"].astype(str).to_numpy(), return_inverse=True)
    label = lab["label"].to_numpy().astype(np.int64)
    g = pd.Series(gold["label"].to_numpy(), index=gold["item"].to_numpy())
    g = g[~g.index.duplicated()]
    gold_aligned = g.reindex(item_ids).fillna(-1).to_numpy().astype(np.int64)
    return item.astype(np.int64), rater.astype(np.int64), label, gold_aligned


def accuracy(pred, truth):
    mask = truth >= 0
    return float(np.mean(pred[mask] == truth[mask]))


def warm_up():
    it, r, l, _ = make_ds_long(50, 5, 3, 2, random_state=1)
    for m in ck.METHODS:
        ck.run_crowdkit(m, it, r, l, n_iter=2)


def run_one(rows, config, dataset, method, item, rater, label, truth, n_iter, full_iter):
    timing = {}
    labels, secs, model = ck.run_crowdkit(
        method, item, rater, label, n_iter=n_iter, full_iter=full_iter,
        return_model=True, timing=timing,
    )
    iters = len(getattr(model, "loss_history_", []) or [])
    acc = accuracy(labels, truth)
    exp = EXPECTED.get((method, dataset)) if not full_iter else None
    row = {
        "config": config,
        "dataset": dataset,
        "method": method,
        "n_ratings": int(item.size),
        "n_items": int(np.unique(item).size),
        "n_iter": n_iter if method != "MajorityVote" else 0,
        "mode": ("fixed" if full_iter else "default") if method != "MajorityVote" else "-",
        "iters_run": iters,
        "seconds": secs,
        "cpu_seconds": timing["cpu"],
        "accuracy": acc,
        "expected": exp,
    }
    rows.append(row)
    _print_row(row)
    return row


HEADER = (
    f"{'config':<11} {'dataset':<14} {'method':<18} {'ratings':>9} {'items':>7} "
    f"{'mode':<8} {'iters':>5} {'fit s':>9} {'cpu s':>9} {'accuracy':>9} {'expected':>9}"
)


def _print_row(r):
    exp = "" if r["expected"] is None else f"{r['expected']:.4f}"
    flag = ""
    if r["expected"] is not None and abs(r["accuracy"] - r["expected"]) > 5e-5:
        flag = "  MISMATCH"
    print(
        f"{r['config']:<11} {r['dataset']:<14} {r['method']:<18} {r['n_ratings']:>9} "
        f"{r['n_items']:>7} {r['mode']:<8} {r['iters_run']:>5} {r['seconds']:>9.3f} {r['cpu_seconds']:>9.3f} "
        f"{r['accuracy']:>9.4f} {exp:>9}{flag}",
        flush=True,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="ds_synth,glad_synth,glad_web,real",
                    help="comma-separated subset of ds_synth,glad_synth,glad_web,real")
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}

    if not ck.crowdkit_available():
        sys.exit("crowd-kit is not importable; run with python")
    import pandas as pd
    import scipy

    print(f"crowd-kit {ck.crowdkit_version()}, pandas {pd.__version__}, numpy "
          f"{np.__version__}, scipy {scipy.__version__}, python "
          f"{platform.python_version()}, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    warm_up()
    print(HEADER)
    print("-" * len(HEADER), flush=True)
    rows = []

    if "ds_synth" in only:
        it, r, l, t = make_ds_long(100_000, 100, 5, 5, random_state=0)
        run_one(rows, "ds_synth", "synth_ds_100k", "MajorityVote", it, r, l, t, 0, True)
        run_one(rows, "ds_synth", "synth_ds_100k", "DawidSkene", it, r, l, t, 50, True)

    if "glad_synth" in only:
        it, r, l, t = make_glad_long(10_000, 100, 5, 2, random_state=0)
        run_one(rows, "glad_synth", "synth_glad_10k", "MajorityVote", it, r, l, t, 0, True)
        run_one(rows, "glad_synth", "synth_glad_10k", "GLAD", it, r, l, t, 50, True)

    if "glad_web" in only:
        it, r, l, g = load_real("web", args.data_dir)
        run_one(rows, "glad_web", "web", "GLAD", it, r, l, g, 50, True)

    if "real" in only:
        for name in REAL:
            it, r, l, g = load_real(name, args.data_dir)
            for method in ("MajorityVote", "DawidSkene", "OneCoinDawidSkene", "GLAD"):
                run_one(rows, "real", name, method, it, r, l, g, 100, False)

    print(f"load average at the end: {os.getloadavg()[0]:.2f} (wall times are only "
          f"meaningful if it stayed below the cpu count)")
    bad = [r for r in rows if r["expected"] is not None
           and abs(r["accuracy"] - r["expected"]) > 5e-5]
    if bad:
        print(f"\n{len(bad)} accuracy figure(s) differ from the expected reference.")
    elif any(r["expected"] is not None for r in rows):
        print("\nAll expected reference accuracies reproduced.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"crowdkit": ck.crowdkit_version(), "pandas": pd.__version__,
                       "numpy": np.__version__, "scipy": scipy.__version__,
                       "rows": rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
