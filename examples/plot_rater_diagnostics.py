"""
Rater diagnostics: confusion matrices, sensitivity and specificity, spammers
============================================================================

A truth-inference model measures the raters as well as the items.  Here we
look at three views of the raters that :class:`skcrowd.DawidSkene` learns:
the full confusion matrix of each rater on a four-class task, sensitivity
against specificity on a binary task, and the detection of spammers, raters
whose labels do not depend on the truth.
"""

# %%
# Confusion matrices on the dog data set
# --------------------------------------
# 807 dog images, four breeds, 109 workers.  ``confusion_[j, k, l]`` is the
# probability that worker ``j`` says ``l`` about a dog of breed ``k``.  We
# draw the workers with the most ratings: rows that are all alike mean a
# worker who ignores the image.
import matplotlib.pyplot as plt
import numpy as np

from skcrowd import DawidSkene, MajorityVote
from skcrowd.datasets import load_dog, load_rte, make_dawid_skene
from skcrowd.plotting import (plot_confusion_matrices, plot_rater_ranking,
                              plot_sensitivity_specificity)

dog = load_dog()
dog_model = DawidSkene().fit(dog.ratings)
counts = np.bincount(np.searchsorted(dog_model.rater_ids_, dog.ratings.rater),
                     minlength=dog_model.n_features_in_)
busiest = np.argsort(counts)[::-1][:8]
print("ratings of the busiest workers:", counts[busiest])
plot_confusion_matrices(dog_model, raters=busiest, ncols=4)
plt.show()

# %%
# Sensitivity against specificity on RTE
# --------------------------------------
# With two classes each confusion matrix is two numbers.  The dashed line is
# sensitivity + specificity = 1: a rater on it gives the same label
# distribution whatever the truth (a spammer, however biased), a rater below
# it is adversarial.  Most RTE workers are well above it; a few sit on it.
rte = load_rte()
rte_model = DawidSkene().fit(rte.ratings)
plot_sensitivity_specificity(rte_model)
plt.show()

# %%
# Finding spammers
# ----------------
# On simulated data we know who the spammers are.  Each of the 50 raters is a
# spammer with probability 0.2 (12 of them in this draw) and answers at random;
# Youden's J = sensitivity + specificity - 1 (the height above the
# spam line) separates them from the real raters.
sim = make_dawid_skene(2000, 50, 5, 2, spammer_fraction=0.2, random_state=0)
sim_model = DawidSkene().fit(sim.ratings)
youden = sim_model.confusion_[:, 1, 1] + sim_model.confusion_[:, 0, 0] - 1
flagged = youden < 0.2
print(f"true spammers: {sim.spammer.sum()}, flagged (J < 0.2): {flagged.sum()}, "
      f"of which true spammers: {np.sum(flagged & sim.spammer)}")
accuracy = np.mean(sim_model.predict(sim.ratings) == sim.true_labels)
vote = np.mean(MajorityVote().fit_predict(sim.ratings) == sim.true_labels)
print(f"accuracy: Dawid-Skene {accuracy:.4f}, majority vote {vote:.4f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
plot_sensitivity_specificity(sim_model, ax=axes[0])
axes[0].scatter(sim_model.confusion_[sim.spammer, 0, 0],
                sim_model.confusion_[sim.spammer, 1, 1], marker="x", c="k", s=40,
                label="true spammer")
axes[0].legend(loc="lower left", fontsize=8)
plot_rater_ranking(sim_model, attribute="rater_accuracy_", top=10, ax=axes[1])
axes[1].set_title("the 10 worst and the 10 best raters")
plt.show()
