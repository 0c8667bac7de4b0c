"""
Fitting on a Dask cluster
=========================

Every iterative model (:class:`~skcrowd.DawidSkene`, :class:`~skcrowd.GLAD`,
:class:`~skcrowd.IRT3PL`, :class:`~skcrowd.MACE`,
:class:`~skcrowd.OrdinalMixture`) also fits a dask DataFrame of ratings in
long form (columns ``item``, ``rater``, ``label``, or crowd-kit's ``task``,
``worker``, ``label``) on a running ``dask.distributed`` client
(``pip install "skcrowd[dask]"``).  The frame is shuffled by item once
(unless its partitions already hold whole items); every iteration each
worker runs the model's local step on its partitions and only the
statistics, summed on the workers, travel back.  The result is the in-memory
fit, up to the order of floating-point sums (see :doc:`/scaling`).

Here a small :class:`~distributed.LocalCluster` (two single-thread workers
in this process) fits the RTE ratings: on data this small Dask only adds
overhead; it is for ratings that do not fit one machine.
"""

# %%
# A cluster and a dask DataFrame of ratings
# -----------------------------------------
import logging

import dask.dataframe as dd
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from distributed import Client, LocalCluster

from skcrowd import DawidSkene
from skcrowd.datasets import load_rte

rte = load_rte()
frame = pd.DataFrame(rte.ratings.to_long())
ratings = dd.from_pandas(frame, npartitions=4)
print(frame.head())

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                       dashboard_address=":0", silence_logs=logging.ERROR)
client = Client(cluster)

# %%
# Fit on the cluster, compare with the in-memory fit
# --------------------------------------------------
on_dask = DawidSkene().fit(ratings)
in_memory = DawidSkene().fit(rte.ratings)
print(f"iterations: Dask {on_dask.n_iter_}, in memory {in_memory.n_iter_}")
print("largest difference in the confusion matrices: "
      f"{np.max(np.abs(on_dask.confusion_ - in_memory.confusion_)):.1e}")

# %%
# Item outputs stay on the cluster
# --------------------------------
# ``predict_proba`` of a dask DataFrame is a dask DataFrame indexed by item,
# one column per class; ``compute()`` brings it back.
proba = on_dask.predict_proba(ratings).compute().loc[rte.ratings.item_ids]
labels = on_dask.classes_[np.argmax(proba.to_numpy(), axis=1)]
print(proba.head())
print(f"accuracy on the expert labels: {np.mean(labels == rte.gold):.4f}")

# %%
# The same posteriors
# -------------------
# Every item's posterior from the cluster against the in-memory one.
memory_proba = in_memory.predict_proba(rte.ratings)[:, 1]
fig, ax = plt.subplots(figsize=(4.5, 4.5), constrained_layout=True)
ax.scatter(memory_proba, proba.to_numpy()[:, 1], s=6)
ax.set(xlabel="P(class 1), in memory", ylabel="P(class 1), on Dask",
       title=f"RTE, {len(memory_proba)} items")
plt.show()

client.close()
cluster.close()
