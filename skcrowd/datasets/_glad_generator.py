"""Simulator of the GLAD model (rater ability times item difficulty)."""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, validate_params

from .._ratings import Ratings
from ._generators import FRACTION, SIZES, generator_and_prior, random_design

__all__ = ["make_glad"]


@validate_params(
    {
        **SIZES,
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "alpha_mean": [Real],
        "alpha_std": [Interval(Real, 0, None, closed="left")],
        "b_mean": [Real],
        "b_std": [Interval(Real, 0, None, closed="left")],
        "spammer_fraction": FRACTION,
        "class_prior": ["array-like", None],
        "dense": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_glad(
    n_items=1000,
    n_raters=20,
    ratings_per_item=5,
    n_classes=2,
    *,
    alpha_mean=1.0,
    alpha_std=1.0,
    b_mean=1.0,
    b_std=1.0,
    spammer_fraction=0.0,
    class_prior=None,
    dense=True,
    random_state=None,
):
    """Ratings simulated from the GLAD model (multi-class form).

    Rater ability α_j ~ N(``alpha_mean``, ``alpha_std ** 2``) (a spammer has
    α_j = 0: right with probability 1/2 whatever the item, which for K = 2
    is a coin flip), item log inverse difficulty
    b_i ~ N(``b_mean``, ``b_std ** 2``), β_i = exp(b_i); true class z_i ~ Cat(π);
    each of ``ratings_per_item`` distinct raters drawn uniformly gives z_i
    with probability σ(α_j β_i), else a label uniform over the other
    ``n_classes - 1`` classes.  The defaults are the model's priors.

    Parameters
    ----------
    n_items, n_raters, ratings_per_item, n_classes : int
    alpha_mean, alpha_std, b_mean, b_std : float
    spammer_fraction : float, default=0.0
        Expected fraction of raters with α_j = 0.
    class_prior : array-like of shape (n_classes,), default=None
        Default: uniform.
    dense : bool, default=True
        Also return ``X``, the ratings as a dense ``(n_items, n_raters)``
        matrix with NaN (set False for large designs).
    random_state : int, RandomState instance or None

    Returns
    -------
    data : Bunch
        ``ratings`` (:class:`~skcrowd.Ratings`, labels 0..K-1), ``X`` (if
        ``dense``), ``true_labels`` (n_items,), ``rater_ability`` (α,
        n_raters), ``log_beta`` (b, n_items), ``item_difficulty``
        (1/β, n_items), ``class_prior`` (K,), ``spammer`` (bool per rater).

    Examples
    --------
    >>> from skcrowd.datasets import make_glad
    >>> data = make_glad(n_items=100, n_raters=10, random_state=0)
    >>> data.ratings.shape
    (100, 10)
    """
    rng, prior = generator_and_prior(random_state, class_prior, n_classes)
    K = n_classes
    alpha = rng.normal(alpha_mean, alpha_std, size=n_raters)
    spammer = rng.random(n_raters) < spammer_fraction
    alpha[spammer] = 0.0
    log_beta = rng.normal(b_mean, b_std, size=n_items)
    true_labels = rng.choice(K, size=n_items, p=prior)
    item, rater = random_design(n_items, n_raters, ratings_per_item, rng)
    p_correct = expit(alpha[rater] * np.exp(log_beta[item]))
    truth = true_labels[item]
    correct = rng.random(len(item)) < p_correct
    wrong = (truth + rng.integers(1, K, size=len(item))) % K
    label = np.where(correct, truth, wrong)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    out = Bunch(
        ratings=ratings,
        true_labels=true_labels,
        rater_ability=alpha,
        log_beta=log_beta,
        item_difficulty=np.exp(-log_beta),
        class_prior=prior,
        spammer=spammer,
    )
    if dense:
        out.X = ratings.to_dense()
    return out
