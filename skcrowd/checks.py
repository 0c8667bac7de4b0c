"""Posterior predictive checks for any fitted model with ``sample``.

Following Carpenter (2024, "Crowdsourcing with Difficulty", section
*Empirical Evaluations*), ratings are replicated on the observed design (the
same item/rater pairs) from the fitted model and two test statistics are
compared with the data:

- ``"rater"``: the number of positive ratings given by each rater (with more
  than two classes: the count of each non-first class per rater);
- ``"ratings"``: the histogram over items of the number of positive ratings
  of an item (0, 1, ..., the most ratings any item has; per non-first class
  with more than two classes).

For each component k of a statistic, p_k = P(sim_k < data_k) with ties
counted one half; the statistic's p-value is
``min(min_k p_k, 1 - max_k p_k)``: small when some component of the data is
in either tail of its replicates.

Replicates plug in the fitted rater parameters; the true class is drawn from
the class prior and item-level effects (where the model has them, e.g.
:class:`~skcrowd.IRT3PL`) from each item's posterior.  Rater uncertainty is
ignored, so the check is somewhat stricter than the paper's full-posterior
check.
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import CrowdEstimator, encode_for, sample_label_codes
from ._baselines import MajorityVote
from ._ratings import check_positive_int, encode_labels, to_ratings

__all__ = ["PredictiveCheck", "posterior_predictive_check", "check_statistics"]

STATISTICS = ("rater", "ratings")


@dataclass
class PredictiveCheck:
    """The result of :func:`posterior_predictive_check`.

    Attributes
    ----------
    p_values : dict
        Statistic name -> model-level p-value ``min(min_k p_k, 1 - max_k p_k)``.
    component_p : dict
        Statistic name -> p_k per component (ties count one half).
    observed : dict
        Statistic name -> the statistic on the data, shape (n_components,).
    simulated : dict
        Statistic name -> the replicates, shape (n_replicates, n_components).
    n_replicates : int

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.checks import posterior_predictive_check
    >>> from skcrowd.datasets import make_dawid_skene
    >>> data = make_dawid_skene(n_items=200, n_raters=5, random_state=0)
    >>> model = DawidSkene().fit(data.ratings)
    >>> check = posterior_predictive_check(model, data.ratings, n_replicates=50,
    ...                                    random_state=0)
    >>> check.simulated["rater"].shape  # 50 replicates of 5 raters' positives
    (50, 5)
    >>> bool(0 <= check.p_values["rater"] <= 0.5)
    True
    """

    p_values: dict = field(default_factory=dict)
    component_p: dict = field(default_factory=dict)
    observed: dict = field(default_factory=dict)
    simulated: dict = field(default_factory=dict)
    n_replicates: int = 0

    def __repr__(self):
        values = ", ".join(f"{k}={v:.3g}" for k, v in self.p_values.items())
        return f"PredictiveCheck({values}, n_replicates={self.n_replicates})"


def check_statistics(item, rater, codes, n_items, n_raters, n_classes, max_per_item):
    """The "rater" and "ratings" statistics of one set of label codes.

    Parameters
    ----------
    item, rater, codes : int arrays of shape (n_ratings,)
    n_items, n_raters, n_classes, max_per_item : int

    Returns
    -------
    stats : dict
        ``"rater"``: shape ``(n_raters * (n_classes - 1),)``, counts of class
        k >= 1 per rater (rater-major); ``"ratings"``: shape
        ``((n_classes - 1) * (max_per_item + 1),)``, for each class k >= 1 the
        number of items with 0, 1, ... ratings of class k.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.checks import check_statistics
    >>> item, rater = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    >>> codes = np.array([1, 1, 0, 1])  # item 0: two positives, item 1: one
    >>> stats = check_statistics(item, rater, codes, 2, 2, 2, 2)
    >>> stats["rater"], stats["ratings"]
    (array([1., 2.]), array([0., 1., 1.]))
    """
    K1 = max(n_classes - 1, 1)
    positive = codes >= 1
    key = codes[positive].astype(np.int64) - 1
    by_rater = np.bincount(rater[positive].astype(np.int64) * K1 + key,
                           minlength=n_raters * K1)
    per_item = np.bincount(item[positive].astype(np.int64) * K1 + key,
                           minlength=n_items * K1).reshape(n_items, K1)
    bins = max_per_item + 1
    hist = np.bincount((per_item + np.arange(K1) * bins).ravel(), minlength=K1 * bins)
    return {"rater": by_rater.astype(float), "ratings": hist.astype(float)}


def _read_ratings(X):
    """``X`` in any form the models accept, read as they read it (the data
    layer): a long-form DataFrame is ratings, not a matrix whose raters
    are called item, rater and label (which turned every item id into a
    label and gave p-values of another data set)."""
    return to_ratings(MajorityVote(), X, reset=True)[0]


def _tail_probabilities(simulated, observed):
    """p_k = P(sim < data) + P(sim == data) / 2 per component."""
    below = (simulated < observed).mean(axis=0)
    ties = (simulated == observed).mean(axis=0)
    return below + 0.5 * ties


def posterior_predictive_check(model, X, *, n_replicates=1000, random_state=None):
    """Posterior predictive check of a fitted model on ratings ``X``.

    Parameters
    ----------
    model : fitted estimator with ``sample``
        Any skcrowd model (``DawidSkene``, ``MajorityVote``, ``IRT3PL`` ...);
        other objects with ``sample(X, random_state)`` are replicated
        through that public method.
    X : array-like, sparse matrix, DataFrame or Ratings
        The ratings the model was fitted on (or any ratings on its raters),
        in any form the models accept (a long-form DataFrame is read as
        ratings, as ``fit`` reads it).
    n_replicates : int, default=1000
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    result : PredictiveCheck
        ``p_values["rater"]`` and ``p_values["ratings"]`` as in Carpenter's
        table, plus the observed and replicated statistics (for plots).

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.checks import posterior_predictive_check
    >>> from skcrowd.datasets import make_dawid_skene
    >>> data = make_dawid_skene(n_items=200, n_raters=5, random_state=0)
    >>> model = DawidSkene().fit(data.ratings)
    >>> check = posterior_predictive_check(model, data.ratings, n_replicates=200,
    ...                                    random_state=0)
    >>> sorted(check.p_values)
    ['rater', 'ratings']
    """
    if not hasattr(model, "sample"):
        raise TypeError(f"{type(model).__name__} has no sample method to replicate ratings.")
    n_replicates = check_positive_int(n_replicates, "n_replicates",
                                      "the number of replicated data sets")
    check_is_fitted(model)
    rng = check_random_state(random_state)

    if isinstance(model, CrowdEstimator):
        # Encode once and draw label codes directly: no re-encoding per replicate.
        data, model = encode_for(model, X)
        item, rater, codes = data.item, data.rater, data.label
        n_items, n_raters, n_classes = data.n_items, data.n_raters, data.n_classes

        def replicate():
            return sample_label_codes(model, data, rng)
    else:
        ratings = _read_ratings(X)
        classes = np.unique(ratings.label)
        item, rater = ratings._item, ratings._rater
        codes = encode_labels(ratings.label, classes)
        n_items, n_raters = ratings.shape
        n_classes = len(classes)

        def replicate():
            sim = _read_ratings(model.sample(X, random_state=rng))
            # the statistics compare rating for rating: a replicate on
            # another design (other shape, cells left missing) gave an
            # IndexError or, with no ratings at all, p-values of 0
            if not (sim.shape == ratings.shape and np.array_equal(sim._item, item)
                    and np.array_equal(sim._rater, rater)):
                raise ValueError(
                    f"{type(model).__name__}.sample(X) must return ratings on the design "
                    f"of X (the same items and raters, rating for rating); got "
                    f"{sim.n_ratings} ratings of {sim.shape[0]} items by {sim.shape[1]} "
                    f"raters for X's {len(item)} of {n_items} items by {n_raters} raters."
                )
            return encode_labels(sim.label, classes)

    if len(item) == 0:
        raise ValueError("X has no ratings: there is nothing to check.")
    max_per_item = int(np.bincount(item, minlength=n_items).max())
    args = (item, rater)
    sizes = (n_items, n_raters, n_classes, max_per_item)
    observed = check_statistics(*args, codes, *sizes)
    simulated = {name: np.empty((n_replicates, len(observed[name]))) for name in STATISTICS}
    for r in range(n_replicates):
        stats = check_statistics(*args, replicate(), *sizes)
        for name in STATISTICS:
            simulated[name][r] = stats[name]
    result = PredictiveCheck(n_replicates=n_replicates)
    for name in STATISTICS:
        p = _tail_probabilities(simulated[name], observed[name])
        result.component_p[name] = p
        result.p_values[name] = float(min(p.min(), 1.0 - p.max()))
        result.observed[name] = observed[name]
        result.simulated[name] = simulated[name]
    return result
