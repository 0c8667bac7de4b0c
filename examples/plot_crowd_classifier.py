"""
Training a classifier from crowd ratings: four strategies
=========================================================

Most crowd labels are collected to train a model.  Carpenter's
item-difficulty paper ranks the ways to do it: training on the crowd
model's posterior probabilities beats training on labels sampled from
them, which beats training on the majority (or "best") label, and "an
even better approach is to jointly train a classifier and analyze rating
data" (Raykar et al. 2010, "Learning from Crowds").  Here are the four,
each one line with :func:`skcrowd.training_set` and
:class:`skcrowd.CrowdClassifier`, on simulated data where logistic
regression is the true model and on scikit-learn's handwritten digits with
simulated raters.
"""

# %%
# Simulated: features from a known logistic model
# ------------------------------------------------
# :func:`~skcrowd.datasets.make_crowd_classification` draws 5 standard
# normal features per item and the item's class from a logistic model with
# known coefficients; 10 raters (2 of them spammers) label each item 5
# times.  We train on 2,000 items and test on 10,000 others against their
# true classes.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skcrowd import CrowdClassifier, DawidSkene, MajorityVote, training_set
from skcrowd.datasets import load_digits_crowd, make_crowd_classification

data = make_crowd_classification(12_000, n_features=5, n_raters=10, ratings_per_item=5,
                                 spammer_fraction=0.2, random_state=0)
X, R = data.features[:2000], data.ratings[:2000]
X_test, y_test = data.features[2000:], data.true_labels[2000:]

crowd = DawidSkene().fit(R)
majority = MajorityVote().fit(R)
strategies = {
    "majority label": LogisticRegression().fit(
        *training_set(majority, X, R, strategy="label")),
    "sampled label": LogisticRegression().fit(
        *training_set(crowd, X, R, strategy="sample", random_state=0)),
    "posterior weights": LogisticRegression().fit(*training_set(crowd, X, R)),
    "joint EM": CrowdClassifier(LogisticRegression(), DawidSkene()).fit(X, R),
}

# %%
# ``training_set`` returns ``(X_train, y_train, sample_weight)``: the rows
# of ``X`` with one label each ("label", "sample"), or each row once per
# class weighted by its posterior ("weights").  The coefficients tell the
# strategies apart more than the accuracy does: noisy labels shrink a
# logistic regression's coefficients toward 0 (the classifier learns that
# labels are uncertain even far from the boundary), which moves
# probabilities far more than the decision boundary.
truth = np.concatenate([data.coef.ravel(), data.intercept])


def coefficients(model):
    model = getattr(model, "estimator_", model)
    return np.concatenate([model.coef_.ravel(), model.intercept_])


simulated = {}
for name, model in strategies.items():
    error = np.linalg.norm(coefficients(model) - truth) / np.linalg.norm(truth)
    accuracy = model.score(X_test, y_test)
    simulated[name] = error, accuracy
    print(f"{name:18s} coefficient error {error:.3f}   held-out accuracy {accuracy:.4f}")

joint = strategies["joint EM"]
print(f"joint EM: {joint.n_iter_} iterations; largest confusion error "
      f"{np.abs(joint.crowd_model_.confusion_ - data.confusion).max():.3f} "
      f"(Dawid-Skene alone: {np.abs(crowd.confusion_ - data.confusion).max():.3f})")

# %%
# Digits with simulated raters
# ----------------------------
# :func:`~skcrowd.datasets.load_digits_crowd`: the 1,797 8x8 images of
# scikit-learn's digits (no download), each labelled by 3 of 20 simulated
# raters of accuracy 0.5-0.9, 4 of them spammers.  The features go through
# a ``StandardScaler`` first: CrowdClassifier is a pipeline step like any
# classifier, with the ratings as ``y``.  Its ``tol=1e-4`` (in the mean
# log likelihood per item) stops after 10 iterations instead of 20 at the
# default, with the same held-out accuracy.
digits = load_digits_crowd(random_state=0)
order = np.random.default_rng(0).permutation(len(digits.features))
train, test = order[:1200], order[1200:]
Xd, Rd = digits.features[train], digits.ratings[train]
Xd_test, yd_test = digits.features[test], digits.true_labels[test]


def classifier():
    return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=500))


crowd_d = DawidSkene().fit(Rd)


def weighted_fit(strategy, model):
    X_train, y_train, weight = training_set(model, Xd, Rd, strategy=strategy,
                                            random_state=0)
    return classifier().fit(X_train, y_train, logisticregression__sample_weight=weight)


digit_models = {
    "majority label": weighted_fit("label", MajorityVote().fit(Rd)),
    "sampled label": weighted_fit("sample", crowd_d),
    "posterior weights": weighted_fit("weights", crowd_d),
    "joint EM": make_pipeline(
        StandardScaler(), CrowdClassifier(LogisticRegression(C=0.1, max_iter=500), tol=1e-4)
    ).fit(Xd, Rd),
}
digit_accuracy = {name: m.score(Xd_test, yd_test) for name, m in digit_models.items()}
for name, accuracy in digit_accuracy.items():
    print(f"digits, {name:18s} held-out accuracy {accuracy:.4f}")
print(f"Dawid-Skene's own labels of the training digits: "
      f"{np.mean(crowd_d.predict(Rd) == digits.true_labels[train]):.4f}; majority vote: "
      f"{np.mean(MajorityVote().fit(Rd).predict(Rd) == digits.true_labels[train]):.4f}")

# %%
# The comparison
# --------------
# One data set each, one seed: the benchmark script
# ``benchmarks/bench_classifier.py`` repeats the simulation over seeds with
# standard errors (:ref:`crowd_classifier`).
names = list(strategies)
fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), layout="constrained")
axes[0].barh(names, [simulated[n][0] for n in names], color="tab:blue")
axes[0].set_xlabel("relative coefficient error")
axes[0].set_title("simulated: coefficients")
axes[1].barh(names, [simulated[n][1] for n in names], color="tab:green")
axes[1].set_xlim(min(v[1] for v in simulated.values()) - 0.02, 1)
axes[1].set_xlabel("held-out accuracy")
axes[1].set_title("simulated: accuracy")
axes[2].barh(names, [digit_accuracy[n] for n in names], color="tab:orange")
axes[2].set_xlim(min(digit_accuracy.values()) - 0.05, 1)
axes[2].set_xlabel("held-out accuracy")
axes[2].set_title("digits, simulated raters")
for ax in axes[1:]:
    ax.set_yticklabels([])
plt.show()
