"""Simulator of the IRT3PL model, for any configuration of its lattice."""

from numbers import Real

import numpy as np
from scipy.special import expit
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval, validate_params

from .._ratings import Ratings
from ._generators import FRACTION, SIZES, random_design

__all__ = ["make_irt"]


@validate_params(
    {
        **SIZES,
        "tag": [str],
        "prevalence": FRACTION,
        "alpha_sens": ["array-like"],
        "alpha_spec": ["array-like"],
        "difficulty_scale": [Interval(Real, 0, None, closed="left")],
        "discrimination_scale": [Interval(Real, 0, None, closed="left")],
        "guessing_mean": [Real],
        "guessing_scale": [Interval(Real, 0, None, closed="left")],
        "rater_abilities": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def make_irt(
    n_items=1000,
    n_raters=10,
    ratings_per_item=5,
    *,
    tag="full",
    prevalence=0.3,
    alpha_sens=(0.5, 2.5),
    alpha_spec=(1.0, 3.0),
    difficulty_scale=1.0,
    discrimination_scale=0.25,
    guessing_mean=-1.5,
    guessing_scale=1.0,
    rater_abilities=None,
    random_state=None,
):
    """Ratings simulated from the IRT3PL model of a lattice tag.

    Rater log-odds sensitivities and specificities are uniform in the given
    ranges (both equal to the sensitivity under reduction D; shared by all
    raters under E); item effects follow the model's population:
    β ~ N(0, difficulty_scale²), log δ ~ N(0, discrimination_scale²),
    logit λ ~ N(guessing_mean, guessing_scale²), each switched off by its
    reduction (A: λ = 0, B: δ = 1, C: β = 0).

    Parameters
    ----------
    n_items, n_raters, ratings_per_item : int
    tag : str, default="full"
        The lattice model ("full", "a", "ab", ..., see :func:`skcrowd.lattice`).
    prevalence : float, default=0.3
    alpha_sens, alpha_spec : (float, float)
        Ranges of the log-odds abilities.
    difficulty_scale, discrimination_scale, guessing_mean, guessing_scale : float
    rater_abilities : array-like of shape (n_raters, 2), default=None
        Each rater's (α^sens, α^spec), used instead of drawing them from the
        ranges (for example evenly spread abilities, so that a study does not
        depend on where a handful of raters happened to land).
    random_state : int, RandomState instance or None

    Returns
    -------
    data : Bunch
        ``ratings`` (:class:`~skcrowd.Ratings`, labels 0/1), ``X`` (dense
        with NaN), ``true_labels``, ``alpha_sens``, ``alpha_spec``,
        ``sensitivity``, ``specificity`` (probability scale), ``difficulty``,
        ``discrimination``, ``guessing`` (per item), ``prevalence``, ``params``
        (the lattice flags).

    Examples
    --------
    >>> from skcrowd.datasets import make_irt
    >>> data = make_irt(n_items=300, n_raters=5, ratings_per_item=5, random_state=0)
    >>> data.ratings
    Ratings(n_items=300, n_raters=5, n_ratings=1500)
    >>> data.sensitivity.shape
    (5,)
    """
    from .._irt import _tag_params

    params = _tag_params(tag)
    rng = check_random_state(random_state)
    sens = rng.uniform(*alpha_sens, size=n_raters)
    spec = rng.uniform(*alpha_spec, size=n_raters)
    if rater_abilities is not None:
        given = np.asarray(rater_abilities, dtype=float)
        if given.shape != (n_raters, 2) or not np.isfinite(given).all():
            raise ValueError(
                f"rater_abilities must be finite with shape (n_raters, 2) = ({n_raters}, 2); "
                f"got shape {given.shape}."
            )
        sens, spec = given[:, 0].copy(), given[:, 1].copy()
        if np.any(sens + spec <= 0):
            raise ValueError("rater_abilities must keep every rater above the spam line "
                             "alpha_sens + alpha_spec > 0.")
    # Keep every rater above the spam line (the model's cooperative constraint).
    for _ in range(100):
        bad = sens + spec <= 0
        if not bad.any():
            break
        sens[bad] = rng.uniform(*alpha_sens, size=bad.sum())
        spec[bad] = rng.uniform(*alpha_spec, size=bad.sum())
    else:
        raise ValueError("alpha_sens and alpha_spec leave no room above the spam line "
                         "alpha_sens + alpha_spec > 0.")
    if not params["sens_spec"]:
        sens = np.abs(sens)
        spec = sens.copy()
    if not params["rater_effects"]:
        sens = np.full(n_raters, sens[0])
        spec = np.full(n_raters, spec[0])
    difficulty = (rng.normal(0, difficulty_scale, n_items) if params["difficulty"]
                  else np.zeros(n_items))
    discrimination = (np.exp(rng.normal(0, discrimination_scale, n_items))
                      if params["discrimination"] else np.ones(n_items))
    guessing = (expit(rng.normal(guessing_mean, guessing_scale, n_items))
                if params["guessing"] else np.zeros(n_items))
    true_labels = (rng.random(n_items) < prevalence).astype(np.int64)
    # random_design's sparse branch (ratings_per_item * 4 < n_raters) draws with
    # Generator.integers, which a RandomState lacks: derive a Generator there.
    design_rng = (np.random.default_rng(rng.randint(0, 2**31 - 1))
                  if ratings_per_item * 4 < n_raters else rng)
    item, rater = random_design(n_items, n_raters, ratings_per_item, design_rng)
    z = true_labels[item]
    ability = np.where(z == 1, sens[rater], spec[rater])
    p_correct = guessing[item] + (1 - guessing[item]) * expit(
        discrimination[item] * (ability - difficulty[item]))
    correct = rng.random(len(item)) < p_correct
    label = np.where(correct, z, 1 - z)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return Bunch(
        ratings=ratings,
        X=ratings.to_dense(),
        true_labels=true_labels,
        alpha_sens=sens,
        alpha_spec=spec,
        sensitivity=expit(sens),
        specificity=expit(spec),
        difficulty=difficulty,
        discrimination=discrimination,
        guessing=guessing,
        prevalence=prevalence,
        params=params,
    )
