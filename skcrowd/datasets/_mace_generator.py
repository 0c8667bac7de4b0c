"""Simulator of the MACE model (raters who know the answer or spam)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, validate_params

from .._base import draw_categorical
from .._ratings import Ratings
from ._generators import FRACTION, SIZES, generator_and_prior, random_design

__all__ = ["make_mace"]


@validate_params(
    {
        **SIZES,
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "competence": [tuple],
        "spammer_fraction": FRACTION,
        "spam_concentration": [Interval(Real, 0, None, closed="neither")],
        "class_prior": ["array-like", None],
        "dense": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_mace(
    n_items=1000,
    n_raters=20,
    ratings_per_item=5,
    n_classes=2,
    *,
    competence=(0.3, 0.95),
    spammer_fraction=0.2,
    spam_concentration=1.0,
    class_prior=None,
    dense=True,
    random_state=None,
):
    """Ratings simulated from the MACE model (Hovy et al. 2013).

    The true class of each item is T_i ~ Cat(π).  Rater j has a competence
    θ_j, uniform in ``competence`` (a spammer has θ_j = 0), and a spamming
    distribution ξ_j ~ Dirichlet(``spam_concentration``); each of
    ``ratings_per_item`` distinct raters drawn uniformly gives T_i with
    probability θ_j, else a label drawn from ξ_j.

    Parameters
    ----------
    n_items, n_raters, ratings_per_item, n_classes : int
    competence : (float, float), default=(0.3, 0.95)
        Range of the competence of the raters who are not spammers.
    spammer_fraction : float, default=0.2
        Fraction of the raters (rounded) who always spam.
    spam_concentration : float, default=1.0
        Dirichlet concentration of every ξ_j (small: spammers favour one label).
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
        ``dense``), ``true_labels`` (n_items,), ``competence`` (θ,
        n_raters), ``spam_distribution`` (ξ, n_raters x K), ``class_prior``
        (K,), ``spammer`` (bool per rater).

    Examples
    --------
    >>> from skcrowd.datasets import make_mace
    >>> data = make_mace(n_items=100, n_raters=10, random_state=0)
    >>> data.ratings.shape, int(data.spammer.sum())
    ((100, 10), 2)
    """
    low, high = (float(v) for v in competence)
    if not 0 <= low <= high <= 1:
        raise ValueError(f"competence must be (low, high) with 0 <= low <= high <= 1; "
                         f"got {competence!r}.")
    rng, prior = generator_and_prior(random_state, class_prior, n_classes)
    K = n_classes
    theta = rng.uniform(low, high, size=n_raters)
    spammer = np.zeros(n_raters, dtype=bool)
    spammer[rng.permutation(n_raters)[: int(round(spammer_fraction * n_raters))]] = True
    theta[spammer] = 0.0
    xi = rng.dirichlet(np.full(K, float(spam_concentration)), size=n_raters)
    true_labels = rng.choice(K, size=n_items, p=prior)
    item, rater = random_design(n_items, n_raters, ratings_per_item, rng)
    knew = rng.random(len(item)) < theta[rater]
    label = np.where(knew, true_labels[item], draw_categorical(xi[rater], rng))
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    out = Bunch(
        ratings=ratings,
        true_labels=true_labels,
        competence=theta,
        spam_distribution=xi,
        class_prior=prior,
        spammer=spammer,
    )
    if dense:
        out.X = ratings.to_dense()
    return out
