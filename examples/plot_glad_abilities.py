"""
GLAD: who to trust, and which items are hard
============================================

:class:`skcrowd.GLAD` gives every rater an ability α_j and every item an
inverse difficulty β_i; a rater is right with probability σ(α_j β_i).
We simulate ratings from the model with :func:`skcrowd.datasets.make_glad`,
fit it, and compare the fitted parameters with the true ones.  Then we look
at the abilities GLAD finds on the bluebirds data set.
"""

# %%
# Simulated ratings
# -----------------
# 5,000 items, 60 raters, 10 ratings per item, two classes; a tenth of the
# raters are spammers (α = 0).
import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import spearmanr

from skcrowd import GLAD, MajorityVote
from skcrowd.datasets import load_bluebirds, make_glad
from skcrowd.plotting import plot_rater_ranking

data = make_glad(5_000, 60, 10, 2, spammer_fraction=0.1, random_state=0)
model = GLAD().fit(data.ratings)
labels = model.predict(data.ratings)
print(f"GLAD accuracy {np.mean(labels == data.true_labels):.4f}, "
      f"majority vote {np.mean(MajorityVote().fit_predict(data.ratings) == data.true_labels):.4f}")

# %%
# Abilities are recovered well; difficulties less so, because ten ratings
# say little about one item (many items get all ten right and look alike).
ability_rho = spearmanr(model.rater_ability_, data.rater_ability)[0]
difficulty_rho = spearmanr(model.item_difficulty_, data.item_difficulty)[0]
fig, axes = plt.subplots(1, 2, figsize=(9, 4))
axes[0].scatter(data.rater_ability, model.rater_ability_, s=12)
axes[0].set(xlabel="true ability α", ylabel="fitted ability",
            title=f"raters (rank corr. {ability_rho:.3f})")
axes[1].scatter(data.log_beta, -np.log(model.item_difficulty_), s=2, alpha=0.3)
axes[1].set(xlabel="true log inverse difficulty b", ylabel="fitted b (MAP)",
            title=f"items (rank corr. {difficulty_rho:.3f})")
fig.tight_layout()

# %%
# Real raters: bluebirds
# ----------------------
# 39 raters labelled all 108 images.  Sorting them by ability shows a few
# raters that GLAD trusts much more than the rest.
birds = load_bluebirds()
birds_model = GLAD().fit(birds.ratings)
known = ~np.isnan(birds.gold)
labels = birds_model.predict(birds.ratings)
accuracy = np.mean(labels[known] == birds.gold[known])
print(f"bluebirds: accuracy on gold {accuracy:.4f} "
      f"after {birds_model.n_iter_} iterations")
fig2, ax = plt.subplots(figsize=(7, 6), constrained_layout=True)
plot_rater_ranking(birds_model, ax=ax)
ax.set_title("bluebirds: rater abilities, worst to best")
plt.show()
