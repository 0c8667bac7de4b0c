"""
Known labels, a stream of batches, and which item to label next
===============================================================

Labelling projects often know the true label of some items (gold, control
or honeypot items), receive ratings in batches, and choose which item to
send out for one more rating.  Every model takes known labels as
``fit(X, y)``; DawidSkene, GLAD and MACE learn from a stream with
``partial_fit``; :mod:`skcrowd.active` ranks the items.  The user guide
page is :doc:`/gold`.
"""

# %%
# Known labels: ``fit(X, y)``
# ---------------------------
# ``y`` has one entry per item, missing (NaN) where the label is unknown.
# The known items keep their labels and inform the raters' parameters.
import numpy as np
from sklearn.model_selection import cross_val_score

from skcrowd import DawidSkene
from skcrowd.datasets import load_rte
from skcrowd.metrics import gold_accuracy_scorer

data = load_rte()
rng = np.random.default_rng(0)
known = rng.random(len(data.gold)) < 0.1            # 10% of the items
y = np.where(known, data.gold, np.nan)              # NaN: unknown
model = DawidSkene().fit(data.ratings, y)
labels = model.fit_predict(data.ratings, y)  # known items keep their label
unknown = np.isnan(y)
print(f"{int((~unknown).sum())} known items; accuracy on the others: "
      f"{np.mean(labels[unknown] == data.gold[unknown]):.4f}")

# %%
# Accuracy on held-out gold in cross-validation: each training fold is
# fitted with its own gold, and the test fold's items are predicted from
# their ratings alone.
scores = cross_val_score(DawidSkene(), data.ratings, data.gold, cv=5,
                         scoring=gold_accuracy_scorer)
print("held-out gold accuracy per fold:", scores.round(4))

# %%
# A stream of batches: ``partial_fit``
# ------------------------------------
# Stepwise EM: each batch of items gets one E-step, and its statistics are
# blended into the running ones.  Raters are matched by id.
stream = DawidSkene()
for start in range(0, len(data.ratings), 200):
    stream.partial_fit(data.ratings[np.arange(start, min(start + 200, len(data.ratings)))])
print(f"one pass in batches of 200: accuracy "
      f"{np.mean(stream.predict(data.ratings) == data.gold):.4f}")

# %%
# Which item to label next
# ------------------------
# The items whose posterior is least certain, and those where one more
# rating from a random rater is expected to teach the most.
from skcrowd.active import information_gain_ranking, uncertainty_ranking

print("most uncertain items:", uncertainty_ranking(model, data.ratings)[:5])
print("largest expected gain:", information_gain_ranking(model, data.ratings)[:5])
