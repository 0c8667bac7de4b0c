"""
Finding spammers and bad raters, model by model
===============================================

Every model measures the raters, each on its own scale.  Put on one scale,
"how far above a rater who ignores the item", each gives a *spam score*
that is 0 for a rater whose labels do not depend on the truth and 1 for a
perfect rater:

* :class:`~skcrowd.DawidSkene`: ``(K * mean recall - 1) / (K - 1)``, from
  the ``recall_<class>`` columns of ``rater_table()`` (a spammer's
  confusion rows are all alike, so its recalls sum to 1 whatever its bias;
  with two classes this is Youden's J, sensitivity + specificity - 1);
* :class:`~skcrowd.GLAD`: ``(K * sigmoid(ability) - 1) / (K - 1)``, the
  same for a rater right with probability σ(α) on an item of unit inverse
  difficulty (ability 0 is *not* chance when K > 2: chance is
  α = -log(K - 1));
* :class:`~skcrowd.MACE`: ``competence``, the probability that the rater
  knows the answer;
* :class:`~skcrowd.IRT3PL`: ``sensitivity + specificity - 1``;
* :class:`~skcrowd.OrdinalMixture`: ``reliability`` ε, the probability that
  a rating is genuine rather than spam.

We flag a rater whose score is below 0.2 (reliability below 0.5), and check
the flags against each rater's accuracy on the gold items, by the rater's
number of ratings.  The user guide's recipe (:ref:`bad_raters`) quotes
this page's output.
"""

# %%
# The scores
# ----------
import numpy as np
import pandas as pd
from scipy.special import expit

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, OrdinalMixture
from skcrowd.datasets import load_dog, load_rte, load_trec2010, load_web


def dawid_skene_score(table):
    recall = table.filter(like="recall_")
    k = recall.shape[1]
    return (k * recall.mean(axis=1) - 1) / (k - 1)


def glad_score(table, k):
    return (k * expit(table["ability"]) - 1) / (k - 1)


# %%
# Each rater's accuracy on the gold items
# ---------------------------------------
# The share of the rater's ratings of gold items that equal the gold label
# (for the graded sets, exact agreement with the gold grade).

def gold_accuracy(data):
    long = data.ratings.to_long()
    gold = pd.Series(data.gold, index=data.ratings.item_ids)
    long["gold"] = gold.reindex(long["item"]).to_numpy()
    long = long.dropna(subset=["gold"])
    return (long["label"].astype(float) == long["gold"]).groupby(long["rater"]).mean()


BANDS = [(1, 9), (10, 29), (30, 99), (100, np.inf)]


def flag_report(name, table, score, threshold, right):
    """One row per band of the raters' number of ratings."""
    rows = []
    for low, high in BANDS:
        band = table["n_ratings"].between(low, high)
        if not band.any():
            continue
        flagged = band & (score < threshold)
        rows.append({
            "ratings": f"{low}-{high:.0f}" if np.isfinite(high) else f"{low}+",
            "raters": int(band.sum()),
            "median score": round(float(score[band].median()), 3),
            "flagged": int(flagged.sum()),
            "gold acc. flagged": round(right.reindex(table.index[flagged]).mean(), 3),
            "gold acc. others": round(right.reindex(table.index[band & ~flagged]).mean(), 3),
        })
    print(f"\n{name}: {len(table)} raters, {int((score < threshold).sum())} flagged")
    print(pd.DataFrame(rows).to_string(index=False))


# %%
# Categorical models on RTE (2 classes), dog (4) and web (5)
# ----------------------------------------------------------
sets = {"rte": load_rte(), "dog": load_dog(), "web": load_web()}
for set_name, data in sets.items():
    right = gold_accuracy(data)
    k = len(np.unique(data.ratings.label))
    ds = DawidSkene().fit(data.ratings).rater_table()
    flag_report(f"DawidSkene on {set_name}", ds, dawid_skene_score(ds), 0.2, right)
    glad = GLAD().fit(data.ratings).rater_table()
    flag_report(f"GLAD on {set_name}", glad, glad_score(glad, k), 0.2, right)
    mace = MACE(random_state=0).fit(data.ratings).rater_table()
    flag_report(f"MACE on {set_name}", mace, mace["competence"], 0.2, right)

rte = sets["rte"]
irt = IRT3PL(random_state=0).fit(rte.ratings).rater_table()
flag_report("IRT3PL on rte", irt, irt["sensitivity"] + irt["specificity"] - 1, 0.2,
            gold_accuracy(rte))

# %%
# What a rater with few ratings gets
# ----------------------------------
# With few ratings a rater's score is mostly its prior's.  DawidSkene's
# default prior (one pseudo-answer right, half a pseudo-answer per wrong
# label, per true class) gives a rater with no ratings a recall of
# 2 / (K + 1) in every class: a score of (2K / (K + 1) - 1) / (K - 1).
for k in (2, 4, 5):
    print(f"K = {k}: DawidSkene's score of a rater with no ratings "
          f"{(2 * k / (k + 1) - 1) / (k - 1):.3f}")

# %%
# OrdinalMixture on TREC 2010: reliability
# ----------------------------------------
# ε_n is the mean, over the rater's ratings, of the posterior probability
# that each rating is genuine (Lakshminarayanan & Teh 2013, eq. 5): it is a
# maximum-likelihood estimate with no prior, so a rater with a handful of
# ratings that disagree with their items' consensus gets ε close to 0, as
# far as floating point goes.  That is expected of the model, not a bug:
# read ε together with ``n_ratings``.
trec = load_trec2010(preprocess="paper")
ordinal = OrdinalMixture(random_state=0).fit(trec.ratings)
table = ordinal.rater_table()
right = gold_accuracy(trec)
print(table.sort_values("reliability").head(5).to_string())
flag_report("OrdinalMixture on trec2010", table, table["reliability"], 0.5, right)

web = sets["web"]
web_table = OrdinalMixture(random_state=0).fit(web.ratings).rater_table()
flag_report("OrdinalMixture on web", web_table, web_table["reliability"], 0.5,
            gold_accuracy(web))
