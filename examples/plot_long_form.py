"""
Long-form ratings in, tidy tables out
=====================================

Crowd ratings usually arrive as a table with one row per rating: who rated
what, and how.  This example reads such a table with pandas, fits
:class:`skcrowd.DawidSkene`, and writes the results back as tidy tables, one
row per item and one row per rater, keyed by the ids of the input.
"""

# %%
# A long-form table
# -----------------
# The dog data set as a pandas DataFrame: image id, worker id, breed label.
# Any table with those three columns works; the ids may be strings.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from skcrowd import DawidSkene, Ratings
from skcrowd.datasets import load_dog

dog = load_dog()
table = pd.DataFrame(dog.ratings.to_long()).rename(
    columns={"item": "image", "rater": "worker", "label": "breed"})
print(table.head())
print(f"{len(table)} ratings of {table.image.nunique()} images "
      f"by {table.worker.nunique()} workers")

# %%
# Ratings from the table
# ----------------------
# :meth:`Ratings.from_long` names the three columns.  The rows of the
# model's outputs follow ``ratings.item_ids``, the columns of
# ``predict_proba`` follow ``model.classes_``.
ratings = Ratings.from_long(table, item="image", rater="worker", label="breed")
model = DawidSkene().fit(ratings)

# %%
# One row per item
# ----------------
# The inferred label, its posterior probability, and the posterior of each
# class, indexed by the item id.
proba = model.predict_proba(ratings)
items = pd.DataFrame(proba, index=pd.Index(ratings.item_ids, name="image"),
                     columns=[f"p_{c}" for c in model.classes_])
items.insert(0, "probability", proba.max(axis=1))
items.insert(0, "breed", model.classes_[proba.argmax(axis=1)])
print(items.head().round(3).to_string())

# %%
# One row per rater
# -----------------
# Each worker's accuracy and number of ratings.  The least accurate workers
# with many ratings are the first to look at.
raters = pd.DataFrame({"accuracy": model.rater_accuracy_},
                      index=pd.Index(model.rater_ids_, name="worker"))
raters["ratings"] = table.groupby("worker").size().reindex(raters.index)
print(raters.sort_values("accuracy").head())

# %%
# The tables join back to the input
# ---------------------------------
# Because both tables are keyed by the input's ids, ordinary pandas joins
# answer questions such as "how often does each worker agree with the
# inferred breed?"
joined = table.join(items["breed"].rename("inferred"), on="image")
agreement = (joined.breed == joined.inferred).groupby(joined.worker).mean()
raters["agreement"] = agreement
known = ~np.isnan(dog.gold)
print(f"accuracy on gold: {np.mean(items.breed.to_numpy()[known] == dog.gold[known]):.4f}")

fig, ax = plt.subplots(figsize=(6, 4.5), constrained_layout=True)
ax.scatter(raters.agreement, raters.accuracy, s=4 + raters.ratings / 5, alpha=0.7)
ax.set(xlabel="agreement with the inferred breed", ylabel="model's rater accuracy",
       title="dog: one point per worker (size: ratings)")
plt.show()
