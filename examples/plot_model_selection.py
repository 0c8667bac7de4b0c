"""
Choosing a model: Pipeline and GridSearchCV across model families
=================================================================

Every skcrowd model's ``score(X)`` is the mean log marginal likelihood of an
item's ratings with the rater parameters fixed: the probability of the same
observed data under every model.  So one cross-validated
:class:`~sklearn.model_selection.GridSearchCV` can compare hyperparameters
*and* model families, splitting by item (each item's ratings stay together).

We search Dawid–Skene (full confusion matrices or one accuracy per rater),
GLAD and two IRT models on the bluebirds data set, then check
the ranking against the gold labels: the model that best predicts held-out
ratings is not always the most accurate.
"""

# %%
# One pipeline, one grid over models
# ----------------------------------
# A model is the last step of a :class:`~sklearn.pipeline.Pipeline`; the
# grid swaps the step itself.  ``KFold`` splits the items.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from skcrowd import GLAD, IRT3PL, DawidSkene
from skcrowd.datasets import load_bluebirds

warnings.simplefilter("ignore", ConvergenceWarning)
birds = load_bluebirds()  # 108 images, 39 raters, each labels every image
pipe = Pipeline([("model", DawidSkene())])
grid = [
    {"model": [DawidSkene()], "model__confusion": ["full", "one_coin"]},
    {"model": [GLAD()]},
    {"model": [IRT3PL.from_tag("abc", random_state=0),
               IRT3PL.from_tag("ab", random_state=0)]},
]
start = time.perf_counter()
search = GridSearchCV(pipe, grid, cv=KFold(5, shuffle=True, random_state=0))
search.fit(birds.ratings)
print(f"{len(search.cv_results_['params'])} candidates x 5 folds in "
      f"{time.perf_counter() - start:.1f} s; best: {search.best_params_['model']}")

# %%
# Held-out likelihood against accuracy on gold
# --------------------------------------------
# Refit every candidate on all items and compare its predictions with the
# gold labels.


def describe(params):
    model = params["model"]
    extra = {k.split("__")[1]: v for k, v in params.items() if k != "model"}
    if isinstance(model, IRT3PL):
        return f"IRT3PL {model.tag}"
    return type(model).__name__ + "".join(f" {k}={v}" for k, v in extra.items())


rows = []
for params, mean, std in zip(search.cv_results_["params"],
                             search.cv_results_["mean_test_score"],
                             search.cv_results_["std_test_score"]):
    model = clone(pipe).set_params(**params).fit(birds.ratings)
    accuracy = np.mean(model.predict(birds.ratings) == birds.gold)
    rows.append((describe(params), mean, std, accuracy))
rows.sort(key=lambda row: -row[1])
print(f"{'model':40s} {'held-out loglik':>16s} {'accuracy':>9s}")
for name, mean, std, accuracy in rows:
    print(f"{name:40s} {mean:9.3f} ± {std:5.3f} {accuracy:9.4f}")

by_fit, by_accuracy = rows[0][0], max(rows, key=lambda row: row[3])[0]
print(f"best held-out likelihood: {by_fit}; most accurate on gold: {by_accuracy}")

# %%
# The picture, and the limits of the likelihood
# ---------------------------------------------
# Higher held-out likelihood means the model describes the raters' labels
# better.  It does not promise better labels: the likelihood counts every
# rating, gold accuracy only the argmax of each item, and two models that
# fit differently can give the same labels (Dawid–Skene and IRT3PL ``abc``
# are the same model).  The candidates' likelihoods also differ by less
# than their fold-to-fold spread.  Use the likelihood to reject models that
# misfit, and gold labels, where there are some, to choose among the rest.
fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
for name, mean, std, accuracy in rows:
    ax.errorbar(mean, accuracy, xerr=std, fmt="o", capsize=3)
    ax.annotate(name, (mean, accuracy), fontsize=7, xytext=(4, 4),
                textcoords="offset points")
ax.set(xlabel="5-fold held-out log likelihood per item", ylabel="accuracy on gold",
       title="bluebirds: fit against accuracy")
plt.show()
