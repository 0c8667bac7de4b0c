"""
Quick start: the true labels of RTE from 164 crowd workers
==========================================================

The RTE data set (Snow et al. 2008) has 800 sentence pairs, each labelled
"entailment or not" by 10 of 164 Mechanical Turk workers, and an expert's
label for every pair.  We infer the true label of each pair from the crowd
alone, with :class:`skcrowd.DawidSkene`, and check it against the experts.
"""

# %%
# Load the ratings
# ----------------
# ``load_rte`` reads the copy shipped inside the package (no download).
# ``ratings`` is a :class:`skcrowd.Ratings`, the long form: one
# (item, rater, label) triple per rating.  It behaves like a matrix of
# shape ``(n_items, n_raters)`` for scikit-learn.
import matplotlib.pyplot as plt
import numpy as np

from skcrowd import DawidSkene, MajorityVote
from skcrowd.datasets import load_rte
from skcrowd.plotting import plot_convergence, plot_item_uncertainty

data = load_rte()
print(data.ratings)

# %%
# Fit, predict, compare with the experts
# --------------------------------------
# Majority vote weighs every worker the same; Dawid–Skene learns a confusion
# matrix per worker and weighs each worker's labels by it.
model = DawidSkene().fit(data.ratings)
labels = model.predict(data.ratings)
majority = MajorityVote().fit_predict(data.ratings)
print(f"Dawid-Skene accuracy on the expert labels: {np.mean(labels == data.gold):.4f}")
print(f"majority vote:                             {np.mean(majority == data.gold):.4f}")

# %%
# What the model learned
# ----------------------
# ``predict_proba`` is the posterior over each item's true class;
# ``rater_accuracy_`` how often each worker is right;
# ``class_prior_`` the prevalence of each class.
proba = model.predict_proba(data.ratings)
print("posterior of the first three items:\n", proba[:3].round(3))
print("prevalence:", model.class_prior_.round(3))
best = np.argsort(model.rater_accuracy_)[::-1][:5]
print("five most accurate workers:", model.rater_ids_[best],
      model.rater_accuracy_[best].round(3))

# %%
# The same from a long DataFrame
# ------------------------------
# A crowd platform exports one row per rating.  Such a DataFrame (columns
# ``item``, ``rater``, ``label``, or crowd-kit's ``task``, ``worker``,
# ``label``) goes straight into every model, and the results come back
# indexed by your item and rater ids.  :class:`skcrowd.AutoCrowd`, the
# default, chooses among majority vote, Dawid-Skene (full and one-coin),
# MACE and, for two classes whose ratings show item difficulty, a model
# of it (IRT3PL without guessing and discrimination) by the held-out
# likelihood of the items' ratings, without gold (:doc:`/which_model`);
# on RTE it chooses the item-difficulty model (``model.selected_``).
# This is the README's quick start.
import pandas as pd

from skcrowd import AutoCrowd
from skcrowd.datasets import load_rte

data = load_rte()                    # 800 items, 164 raters, 8,000 ratings
df = data.ratings.to_long()          # columns item, rater, label
model = AutoCrowd().fit(df)
print(model.selected_)               # the model it chose
truth = model.predict(df)            # a Series indexed by item id
print(model.item_table(df).head(3))
# the raters to look at first:
print(model.rater_table().sort_values("accuracy").head(3))
gold = pd.Series(data.gold, index=data.ratings.item_ids, name="gold")
joined = gold.to_frame().join(truth)               # joined by item id
# accuracy on the expert labels:
print((joined["gold"] == joined["label"]).mean())

# %%
# How sure is the model, and did it converge?
# -------------------------------------------
# Most pairs are settled by their ten ratings (note the log scale); the few
# near 0.5 are the ones to send to an expert.  The EM objective (log posterior) rises at every
# iteration until it stops changing.
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
chosen = model.best_estimator_      # the fitted IRT3PL
plot_item_uncertainty(chosen, data.ratings, log=True, ax=axes[0])
plot_convergence(chosen, ax=axes[1])
plt.show()
