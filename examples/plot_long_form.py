"""
Long-form ratings in, tidy tables out
=====================================

Crowd ratings usually arrive as a table with one row per rating: who rated
what, and how.  Every skcrowd model takes such a pandas DataFrame directly
(columns ``item``, ``rater``, ``label``, or crowd-kit's ``task``,
``worker``, ``label``) and answers with tables indexed by the ids of the
input: one row per item (:meth:`~skcrowd.DawidSkene.item_table`) and one
row per rater (:meth:`~skcrowd.DawidSkene.rater_table`).
"""

# %%
# A long-form table
# -----------------
# The dog data set: image id, worker id, breed label (0..3), one row per
# rating.  The ids may be numbers or strings.
import matplotlib.pyplot as plt
import pandas as pd

from skcrowd import DawidSkene
from skcrowd.datasets import load_dog

dog = load_dog()
table = dog.ratings.to_long()
print(table.head())
print(f"{len(table)} ratings of {table['item'].nunique()} images "
      f"by {table['rater'].nunique()} workers")

# %%
# Fit on the DataFrame
# --------------------
# ``fit`` reads the three columns; ``predict`` answers with a Series indexed
# by item id, ``predict_proba`` with a DataFrame, one column per class.
model = DawidSkene().fit(table)
labels = model.predict(table)
print(labels.head())
print(model.predict_proba(table).head().round(4))

# %%
# One row per item
# ----------------
# ``item_table`` adds the number of ratings, the posterior probability of the
# label, the posterior entropy and the log likelihood of the item's ratings:
# the least certain items come first after sorting.
items = model.item_table(table)
print(items.sort_values("probability").head().round(4).to_string())

# %%
# One row per rater
# -----------------
# ``rater_table`` gives each worker's number of ratings, accuracy and, for
# Dawid–Skene, the recall of each class (the diagonal of its confusion
# matrix).  The least accurate workers with many ratings are the first to
# look at (the accuracy of a worker with one or two ratings is mostly the
# prior's, and sorting every worker would list those first).
raters = model.rater_table()
busy = raters[raters["n_ratings"] >= 20]
print(busy.sort_values("accuracy").head().round(3).to_string())

# %%
# The tables join back to the input
# ---------------------------------
# Both tables are keyed by the input's ids, so ordinary pandas joins answer
# questions such as "how often does each worker agree with the inferred
# breed?"
joined = table.join(items["label"].rename("inferred"), on="item")
raters["agreement"] = (joined["label"] == joined["inferred"]).groupby(joined["rater"]).mean()
gold = pd.Series(dog.gold, index=dog.ratings.item_ids).reindex(labels.index)
known = gold.notna()
print(f"accuracy on gold: {(labels[known] == gold[known]).mean():.4f}")

fig, ax = plt.subplots(figsize=(6, 4.5), constrained_layout=True)
ax.scatter(raters["agreement"], raters["accuracy"], s=4 + raters["n_ratings"] / 5,
           alpha=0.7)
ax.set(xlabel="agreement with the inferred breed", ylabel="model's rater accuracy",
       title="dog: one point per worker (size: ratings)")
plt.show()
