"""
MACE: who knows the answer, and who spams
=========================================

:class:`skcrowd.MACE` (Hovy et al. 2013) models each rating as either
known (the true label) or spammed (a draw from the rater's own label
distribution).  Each rater's *competence* θ is the probability of knowing
the answer.  We fit it on simulated data with known spammers, then on the
web data set (five relevance grades, weak raters).
"""

# %%
# Simulated spammers
# ------------------
# 2,000 items, 50 raters, 5 ratings per item, 4 classes; a fifth of the
# raters spam (θ = 0).  Competence separates them from the others.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import roc_auc_score

from skcrowd import MACE, MajorityVote
from skcrowd.datasets import load_web, make_mace

sim = make_mace(2000, 50, 5, 4, spammer_fraction=0.2, random_state=0)
model = MACE(random_state=0).fit(sim.ratings)
competence = model.rater_competence_
print(f"spammers: {sim.spammer.sum()}; AUC of competence against them: "
      f"{roc_auc_score(~sim.spammer, competence):.3f}")
accuracy = np.mean(model.predict(sim.ratings) == sim.true_labels)
vote = np.mean(MajorityVote().fit_predict(sim.ratings) == sim.true_labels)
print(f"accuracy: MACE {accuracy:.4f}, majority vote {vote:.4f}")

# %%
# Web: five grades, weak raters
# -----------------------------
# ``rater_table`` lists each rater's competence and accuracy; the spam
# distribution ``spam_distribution_`` shows what a rater says when not
# knowing.  Raters with few ratings keep much of the prior, Beta(0.5, 0.5):
# read competence together with ``n_ratings``.
web = load_web()
web_model = MACE(random_state=0).fit(web.ratings)
table = web_model.rater_table()
busy = table[table["n_ratings"] >= 30].sort_values("competence")
print(busy.head().round(3).to_string())
worst = web_model.rater_ids_.tolist().index(busy.index[0])
print("the least competent busy rater's spam distribution:",
      web_model.spam_distribution_[worst].round(2))

fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
ax.scatter(table["n_ratings"], table["competence"], s=12)
ax.set(xscale="log", xlabel="ratings of the rater", ylabel="competence θ",
       title="web: MACE competence against the rater's workload")
plt.show()
