"""Ratings simulated from the ordinal mixture model (OrdinalMixture)."""

from numbers import Real

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval, validate_params

from .._ratings import Ratings
from ._generators import SIZES, random_design

__all__ = ["make_ordinal"]


@validate_params({**SIZES, "true_std": [Interval(Real, 0, None, closed="left")]},
                 prefer_skip_nested_validation=True)
def make_ordinal(
    n_items=2000,
    n_raters=50,
    ratings_per_item=5,
    n_levels=5,
    *,
    spammer_fraction=0.2,
    n_groups=100,
    difficult_fraction=0.0,
    true_std=1.0,
    precision=(4.0, 1.0),
    reliability=(0.9, 1.0),
    difficulty=(2.0, 0.25),
    random_state=None,
):
    """Graded ratings simulated from the ordinal mixture model.

    The scale is the levels 1 to ``n_levels``, with thresholds half-way
    between levels.  Item m of group c(m) has a true value z_m ~ N(mean of the scale,
    ``true_std ** 2``).  Rater n has a precision τ_n ~ Gamma(shape, rate) =
    ``precision`` and a reliability ε_n: uniform in ``reliability`` for a
    real rater, 0 for a spammer (a ``spammer_fraction`` share of the raters).
    A rating is, with probability ε_n, x ~ N(z_m, 1/(τ_n δ_c)) thresholded
    into the scale (the outer bins open-ended, so every x gives a level);
    otherwise a uniform draw from the levels.  δ_c is ``difficulty[0]`` for
    an easy group and ``difficulty[1]`` for a difficult one (a
    ``difficult_fraction`` share of the groups).

    Parameters
    ----------
    n_items, n_raters, ratings_per_item, n_levels : int
    spammer_fraction : float, default=0.2
    n_groups : int, default=100
        Items are assigned to groups uniformly at random.
    difficult_fraction : float, default=0.0
    true_std : float, default=1.0
    precision : (float, float), default=(4.0, 1.0)
        Shape and rate of the gamma distribution of τ (mean 4: a real rater's
        latent noise has a standard deviation of about half a level).
    reliability : (float, float), default=(0.9, 1.0)
    difficulty : (float, float), default=(2.0, 0.25)
        δ of the easy and of the difficult groups (2 is the prior mean φ/η
        of OrdinalMixture's defaults).
    random_state : int, RandomState instance or None

    Returns
    -------
    data : Bunch
        ``ratings`` (:class:`~skcrowd.Ratings`, labels 1..n_levels), ``X``
        (dense ``(n_items, n_raters)`` with NaN), ``z`` (true values),
        ``groups`` (group of each item), ``rater_precision`` (τ),
        ``rater_reliability`` (ε), ``spammer`` (bool per rater),
        ``group_difficulty`` (δ per group), ``difficult`` (bool per group),
        ``thresholds``.

    Examples
    --------
    >>> from skcrowd.datasets import make_ordinal
    >>> data = make_ordinal(300, 20, 5, random_state=0)
    >>> data.ratings
    Ratings(n_items=300, n_raters=20, n_ratings=1500)
    >>> data.z.shape, data.rater_reliability.shape
    ((300,), (20,))
    """
    # a Generator seeded from random_state (random_design needs Generator.integers)
    rng = np.random.default_rng(check_random_state(random_state).randint(2**31 - 1))
    if n_levels < 2:
        raise ValueError(f"n_levels must be at least 2; got {n_levels}.")
    if not 0 <= spammer_fraction <= 1 or not 0 <= difficult_fraction <= 1:
        raise ValueError("spammer_fraction and difficult_fraction must be in [0, 1].")
    if n_groups < 1:
        raise ValueError(f"n_groups must be at least 1; got {n_groups}.")
    # Unchecked, a zero rate raised ZeroDivisionError, a zero or negative
    # difficulty gave infinite or NaN noise (every rating the top level),
    # and reliability=(1.5, 2) returned reliabilities above 1.
    for name, pair in (("precision", precision), ("difficulty", difficulty)):
        values = np.asarray(pair, dtype=np.float64)
        if values.shape != (2,) or not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f"{name} must be two finite positive numbers; got {pair!r}.")
    bounds = np.asarray(reliability, dtype=np.float64)
    if bounds.shape != (2,) or not 0 <= bounds[0] <= bounds[1] <= 1:
        raise ValueError(
            f"reliability must be (low, high) with 0 <= low <= high <= 1; got {reliability!r}."
        )
    levels = np.arange(1, n_levels + 1, dtype=np.float64)
    thresholds = np.arange(n_levels + 1) + 0.5
    z = rng.normal(levels.mean(), true_std, size=n_items)
    groups = rng.integers(0, n_groups, size=n_items)
    difficult = np.zeros(n_groups, dtype=bool)
    difficult[rng.permutation(n_groups)[: int(round(difficult_fraction * n_groups))]] = True
    delta = np.where(difficult, difficulty[1], difficulty[0])
    tau = rng.gamma(precision[0], 1.0 / precision[1], size=n_raters)
    spammer = np.zeros(n_raters, dtype=bool)
    spammer[rng.permutation(n_raters)[: int(round(spammer_fraction * n_raters))]] = True
    eps = np.where(spammer, 0.0, rng.uniform(*reliability, size=n_raters))

    item, rater = random_design(n_items, n_raters, ratings_per_item, rng)
    sd = 1.0 / np.sqrt(tau[rater] * delta[groups[item]])
    x = z[item] + sd * rng.normal(size=len(item))
    code = np.searchsorted(thresholds[1:-1], x, side="right")
    genuine = rng.random(len(item)) < eps[rater]
    code = np.where(genuine, code, rng.integers(0, n_levels, size=len(item)))
    labels = levels[code].astype(np.int64)

    X = np.full((n_items, n_raters), np.nan)
    X[item, rater] = labels
    ratings = Ratings(item, rater, labels, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return Bunch(
        ratings=ratings, X=X, z=z, groups=groups, rater_precision=tau,
        rater_reliability=eps, spammer=spammer, group_difficulty=delta,
        difficult=difficult, thresholds=thresholds,
    )
