"""
Coming from crowd-kit
=====================

crowd-kit's aggregators take a DataFrame with the columns ``task``,
``worker``, ``label`` and return results indexed by task.  skcrowd's
estimators take the same DataFrame unchanged and return results indexed by
the same ids; the names differ, and a fitted skcrowd model also predicts
new items.  The table of names is in the user guide (:doc:`/migrating`).
"""

# %%
# The same DataFrame in
# ---------------------
# RTE as crowd-kit's long form: one row per rating.
import numpy as np
import pandas as pd

from skcrowd import DawidSkene
from skcrowd.datasets import load_rte

data = load_rte()
df = data.ratings.to_long().rename(columns={"item": "task", "rater": "worker"})
print(df.head(3))

# %%
# skcrowd's answers, by crowd-kit's names
# ---------------------------------------
model = DawidSkene()
labels = model.fit_predict(df)          # crowd-kit: fit_predict(df) / labels_
proba = model.predict_proba(df)         # crowd-kit: probas_ (columns: the classes as strings)
prior = model.class_prior_              # crowd-kit: priors_
errors = model.confusion_               # crowd-kit: errors_, transposed (see the user guide)
skills = model.rater_table()            # crowd-kit: skills_ (OneCoinDawidSkene), per rater
print(labels.head(3))
print(proba.head(3))
print(skills.head(3))

# %%
# crowd-kit's ``errors_`` is a table indexed by (worker, observed label) with
# one column per true label; ``confusion_[j, k, l]`` is indexed (rater, true
# class, given label).  The same numbers in crowd-kit's layout:
rows = [(worker, given) for worker in model.rater_ids_ for given in model.classes_]
errors_like = pd.DataFrame(
    np.concatenate([model.confusion_[j].T for j in range(len(model.rater_ids_))]),
    index=pd.MultiIndex.from_tuples(rows, names=["worker", "label"]),
    columns=model.classes_)
print(errors_like.head(4).round(3))

# %%
# Beside crowd-kit, when it is installed
# --------------------------------------
# (``pip install ".[bench]"``; the documentation build may not have it.)
try:
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene
except ImportError:
    print("crowd-kit is not installed")
else:
    theirs = CrowdKitDawidSkene(n_iter=100).fit_predict(df)
    both = labels.to_frame("skcrowd").join(theirs.rename("crowd-kit"))
    print(f"labels agree on {np.mean(both['skcrowd'] == both['crowd-kit']):.4f} of the items")

# %%
# What crowd-kit does not do: new items
# -------------------------------------
# A fitted skcrowd model scores items it has not seen with the raters it
# has fitted (crowd-kit refits on the whole table).  A worker not seen in
# fit is an error that names the worker, or, with
# ``unknown_raters="prior"``, the average worker.
first = df["task"].isin(df["task"].unique()[:400])
fitted = DawidSkene(unknown_raters="prior").fit(df[first])
print(fitted.predict(df[~first]).head(3))
