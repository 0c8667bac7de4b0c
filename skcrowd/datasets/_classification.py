"""Features with crowd ratings: for learning a classifier from a crowd
(Raykar et al. 2010), simulated and on a real feature set."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval, validate_params

from .._base import draw_categorical
from ._generators import FRACTION, SIZES, make_dawid_skene, random_design

__all__ = ["load_digits_crowd", "make_crowd_classification"]

_RATERS = {
    "n_raters": SIZES["n_raters"],
    "ratings_per_item": SIZES["ratings_per_item"],
    "accuracy": ["array-like"],
    "spammer_fraction": FRACTION,
    "random_state": ["random_state"],
}


def _crowd_ratings(true_labels, n_classes, n_raters, ratings_per_item, accuracy,
                   spammer_fraction, rng):
    """Ratings of the items of ``true_labels`` by Dawid–Skene raters, of which
    ``round(spammer_fraction * n_raters)`` are spammers; returns the
    ``(n_items, n_raters)`` matrix (NaN: not rated), the confusions and
    which raters spam."""
    # the raters of make_dawid_skene (accuracy uniform in the range, errors
    # Dirichlet(1)), with an exact number of spammers: rows all one random
    # distribution, whatever the truth
    confusion = make_dawid_skene(1, n_raters, 1, n_classes, accuracy=accuracy,
                                 random_state=int(rng.integers(2**31 - 1))).confusion
    spammer = np.zeros(n_raters, dtype=bool)
    spammer[rng.choice(n_raters, int(round(spammer_fraction * n_raters)), replace=False)] = True
    confusion[spammer] = rng.dirichlet(np.ones(n_classes), size=spammer.sum())[:, None, :]
    n_items = len(true_labels)
    item, rater = random_design(n_items, n_raters, ratings_per_item, rng)
    ratings = np.full((n_items, n_raters), np.nan)
    ratings[item, rater] = draw_categorical(confusion[rater, true_labels[item]], rng)
    return ratings, confusion, spammer


@validate_params(
    {
        "n_items": SIZES["n_items"],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "coef_scale": [Interval(Real, 0, None, closed="left")],
        **_RATERS,
    },
    prefer_skip_nested_validation=True,
)
def make_crowd_classification(n_items=1000, n_features=5, n_raters=10, ratings_per_item=5,
                              spammer_fraction=0.2, *, n_classes=2, coef_scale=1.0,
                              accuracy=(0.6, 0.95), random_state=None):
    """Features, crowd ratings and the true labels of a logistic model.

    The features are standard normal; each item's true class is drawn from
    a (multinomial) logistic model with known coefficients, so a logistic
    regression is well specified; raters are Dawid–Skene raters
    (:func:`make_dawid_skene`'s) of whom a fraction are spammers.

    Parameters
    ----------
    n_items, n_features : int, default=1000, 5
    n_raters, ratings_per_item : int, default=10, 5
        Each item is rated by ``ratings_per_item`` distinct raters.
    spammer_fraction : float, default=0.2
        ``round(spammer_fraction * n_raters)`` raters answer from one random
        distribution whatever the truth.
    n_classes : int, default=2
    coef_scale : float, default=1.0
        Standard deviation of the coefficients (larger: classes more
        separable).
    accuracy : (float, float), default=(0.6, 0.95)
        The other raters' accuracy is uniform in this range.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : Bunch
        ``features`` (n_items, n_features); ``ratings`` (n_items, n_raters),
        NaN where not rated, labels 0..K-1; ``true_labels`` (n_items,);
        ``coef`` and ``intercept``: the true coefficients in the form of
        :class:`~sklearn.linear_model.LogisticRegression`'s ``coef_`` and
        ``intercept_`` (binary: shape (1, n_features); else one row per
        class, centred over the classes); ``confusion`` (n_raters, K, K);
        ``spammer`` (bool per rater).

    Examples
    --------
    >>> from skcrowd.datasets import make_crowd_classification
    >>> data = make_crowd_classification(100, n_features=3, n_raters=5, random_state=0)
    >>> data.features.shape, data.ratings.shape, data.coef.shape
    ((100, 3), (100, 5), (1, 3))
    """
    rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    features = rng.standard_normal((n_items, n_features))
    # softmax over classes of features @ W.T + b; centred over the classes,
    # the parametrisation LogisticRegression reports
    weights = rng.normal(scale=coef_scale, size=(n_classes, n_features))
    bias = rng.normal(scale=0.5, size=n_classes)
    weights -= weights.mean(axis=0)
    bias -= bias.mean()
    logits = features @ weights.T + bias
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    true_labels = draw_categorical(proba, rng).astype(np.int64)
    ratings, confusion, spammer = _crowd_ratings(true_labels, n_classes, n_raters,
                                                 ratings_per_item, accuracy,
                                                 spammer_fraction, rng)
    if n_classes == 2:
        # P(class 1) = expit(x · (w1 - w0) + b1 - b0)
        coef, intercept = (weights[1] - weights[0])[None, :], np.array([bias[1] - bias[0]])
    else:
        coef, intercept = weights, bias
    return Bunch(features=features, ratings=ratings, true_labels=true_labels, coef=coef,
                 intercept=intercept, confusion=confusion, spammer=spammer)


@validate_params(_RATERS, prefer_skip_nested_validation=True)
def load_digits_crowd(n_raters=20, ratings_per_item=3, spammer_fraction=0.2, *,
                      accuracy=(0.5, 0.9), random_state=None):
    """scikit-learn's handwritten digits with simulated crowd raters.

    The 1,797 8x8 images of :func:`sklearn.datasets.load_digits` (shipped
    with scikit-learn: nothing is downloaded) as features, their true
    digits, and ratings of simulated Dawid–Skene raters and spammers, as
    the learning-from-crowds literature simulates annotators on a real
    feature set.

    Parameters
    ----------
    n_raters, ratings_per_item : int, default=20, 3
    spammer_fraction : float, default=0.2
        ``round(spammer_fraction * n_raters)`` raters answer from one random
        distribution whatever the digit.
    accuracy : (float, float), default=(0.5, 0.9)
        The other raters' accuracy is uniform in this range; their errors
        follow Dirichlet(1) weights over the other nine digits.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    data : Bunch
        ``features`` (1797, 64), pixel intensities 0..16; ``ratings``
        (1797, n_raters), NaN where not rated; ``true_labels`` (1797,);
        ``confusion`` (n_raters, 10, 10); ``spammer`` (bool per rater).

    Examples
    --------
    >>> from skcrowd.datasets import load_digits_crowd
    >>> data = load_digits_crowd(random_state=0)
    >>> data.features.shape, data.ratings.shape
    ((1797, 64), (1797, 20))
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    ratings, confusion, spammer = _crowd_ratings(digits.target, 10, n_raters,
                                                 ratings_per_item, accuracy,
                                                 spammer_fraction, rng)
    return Bunch(features=digits.data, ratings=ratings, true_labels=digits.target,
                 confusion=confusion, spammer=spammer)
