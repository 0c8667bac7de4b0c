"""partial_fit (stepwise EM) against the batch fit: one pass over a
simulated 100,000-item set, 200 raters, 5 ratings per item, K = 4, batches
of 1,000 items (each batch lists only its own raters, so raters arrive as
the stream goes and are matched by id).

Usage::

    PYTHONPATH=. python benchmarks/bench_stream.py
"""

import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, MACE, DawidSkene, Ratings
from skcrowd.datasets import make_dawid_skene, make_glad

N, J, K, BATCH = 100_000, 200, 4, 1000


def one_pass(model, R):
    for start in range(0, len(R), BATCH):
        part = R[np.arange(start, min(start + BATCH, len(R)))]
        model.partial_fit(Ratings(part.item, part.rater, part.label, item_ids=part.item_ids))
    return model


def aligned(model, R, values):
    pos = {r: j for j, r in enumerate(model.rater_ids_)}
    return values[[pos[r] for r in R.rater_ids]]


def main():
    print(f"# bench_stream.py: {N} items, {J} raters, K={K}, batches of {BATCH}; "
          f"load {os.getloadavg()[0]:.2f}")
    ds = make_dawid_skene(n_items=N, n_raters=J, n_classes=K, ratings_per_item=5, random_state=0)
    gl = make_glad(n_items=N, n_raters=J, n_classes=K, ratings_per_item=5, dense=False,
                   random_state=0)
    print("\n| model | batch accuracy | one-pass accuracy | parameter | batch vs truth "
          "(mean / max abs) | one pass vs truth | one pass vs batch | batch s | one pass s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cls, sim, name, truth_param in (
            (DawidSkene, ds, "confusion_", ds.confusion),
            (MACE, ds, "rater_competence_", None),
            (GLAD, gl, "rater_ability_", gl.rater_ability)):
        R = sim.ratings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t = time.perf_counter()
            batch = cls().fit(R)
            tb = time.perf_counter() - t
            t = time.perf_counter()
            online = one_pass(cls(classes=np.arange(K)), R)
            to = time.perf_counter() - t
        acc_b = np.mean(batch.predict(R) == sim.true_labels)
        acc_o = np.mean(online.predict(R) == sim.true_labels)
        pb, po = getattr(batch, name), aligned(online, R, getattr(online, name))

        def err(a, b):
            return "-" if b is None else f"{np.abs(a - b).mean():.4f} / {np.abs(a - b).max():.4f}"
        print(f"| {cls.__name__} | {acc_b:.4f} | {acc_o:.4f} | {name} | {err(pb, truth_param)} | "
              f"{err(po, truth_param)} | {err(po, pb)} | {tb:.1f} | {to:.1f} |", flush=True)


if __name__ == "__main__":
    main()
