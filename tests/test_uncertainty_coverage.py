"""Checks behind the samplers' coverage in simulation-based calibration.

OrdinalMixture's Gibbs sampler under-covered its rater parameters when
every rater had hundreds of ratings: each conditional was right, but the
chain drew the spam indicators and latent scores and then the parameters
given them, which moves a rater's (ε, τ) by a small fraction of its
posterior width per sweep.  The collapsed moves that fixed it are checked
here against a numpy reference of the exact posterior, and the default
chain's effective sample size is checked on such data.
"""

import numpy as np
import pytest
from scipy import stats

from skcrowd import OrdinalMixture, Ratings
from skcrowd.datasets import make_ordinal
from skcrowd._ordinal import _PRECISION_HYPERPRIOR, _ordinal_log_mass
from skcrowd.uncertainty import effective_sample_size, posterior_samples

#: open-ended outer bins on the scale 1..5
OPEN = np.array([-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf])


def _fit(ratings, y=None, **params):
    params = {"thresholds": OPEN, "prior_precision": 1.0, "n_init": 2, "random_state": 0,
              **params}
    return OrdinalMixture(**params).fit(ratings, y=y)


def test_log_mass_matches_scipy():
    """Each rating's probability with its spam indicator and latent score
    summed out: ε P(k | z, τ δ) + (1 - ε) π_k, P the normal mass in the bin."""
    rng = np.random.default_rng(0)
    n_ratings, n_items, n_raters = 50, 10, 3
    item = rng.integers(0, n_items, n_ratings)
    rater = rng.integers(0, n_raters, n_ratings)
    group = np.zeros(n_ratings, dtype=np.int64)
    label = rng.integers(0, 5, n_ratings)
    lo, hi = OPEN[:-1][label], OPEN[1:][label]
    z = rng.normal(3.0, 1.5, n_items)
    tau, delta = rng.gamma(2.0, 1.0, n_raters), np.array([1.7])
    eps = rng.random(n_raters)
    spam = np.array([0.1, 0.2, 0.3, 0.25, 0.15])[label]
    sd = 1.0 / np.sqrt(tau[rater] * delta[0])
    # the upper tail by the survival function, so that the difference keeps
    # its digits
    upper = lo + hi > 2 * z[item]
    genuine = np.where(upper,
                       stats.norm.sf(lo, loc=z[item], scale=sd)
                       - stats.norm.sf(hi, loc=z[item], scale=sd),
                       stats.norm.cdf(hi, loc=z[item], scale=sd)
                       - stats.norm.cdf(lo, loc=z[item], scale=sd))
    expected = np.log(eps[rater] * genuine + (1.0 - eps[rater]) * spam)
    got = _ordinal_log_mass(eps, tau, z, delta, item, rater, group, lo, hi, spam)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(
        _ordinal_log_mass(None, tau, z, delta, item, rater, group, lo, hi, spam),
        np.log(genuine), rtol=1e-10)


def _gold_design(n_items, n_raters):
    """Every rater rates every item; the items' true values are known (one
    per level, in turn), so the posterior is over (α, β, τ, δ, ε) alone."""
    level = np.arange(n_items) % 5
    item = np.repeat(np.arange(n_items), n_raters)
    rater = np.tile(np.arange(n_raters), n_items)
    return level, item, rater


def test_sampler_matches_importance_sampling_reference():
    """With every item's value known, the posterior of the raters'
    reliabilities ε_n and noise precisions τ_n δ is a low-dimensional
    integral: importance sampling from the prior (the hyperprior of α and β,
    τ_n ~ Gamma(α, β), δ ~ Gamma(φ, η), ε_n ~ U(0, 1)) weighted by the
    likelihood gives its means, which the chain must match within its Monte
    Carlo error."""
    rng = np.random.default_rng(1)
    n_items, n_raters = 30, 2
    level, item, rater = _gold_design(n_items, n_raters)
    true_eps, true_precision = np.array([0.9, 0.6]), np.array([4.0, 1.5])
    x = level[item] + 1.0 + rng.standard_normal(len(item)) / np.sqrt(true_precision[rater])
    label = np.searchsorted(OPEN[1:-1], x, side="right")
    spam = rng.random(len(item)) >= true_eps[rater]
    label[spam] = rng.integers(0, 5, int(spam.sum()))
    ratings = Ratings(item, rater, label + 1.0, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    y = level + 1.0
    model = _fit(ratings, y=y)
    draws = posterior_samples(model, ratings, 3000, y=y, thin=2, random_state=0)
    chain = {"eps": draws["rater_reliability_"],
             "log_precision": np.log(draws["rater_precision_"]
                                     * draws["group_difficulty_"][:, :1])}

    # the reference: the model's priors, as the sampler states them
    n_ref = 400_000
    (a_alpha, b_alpha), (a_beta, b_beta) = _PRECISION_HYPERPRIOR
    alpha = rng.gamma(a_alpha, 1.0 / b_alpha, n_ref)
    beta = rng.gamma(a_beta, 1.0 / b_beta, n_ref)  # the scale's step is 1
    tau = rng.gamma(alpha[:, None], 1.0 / beta[:, None], (n_ref, n_raters))
    delta = rng.gamma(model.difficulty_shape, 1.0 / model.difficulty_rate, n_ref)
    eps = rng.random((n_ref, n_raters))
    precision = tau * delta[:, None]
    log_w = np.zeros(n_ref)
    z = (level + 1.0)[item]
    lo, hi = OPEN[:-1][label], OPEN[1:][label]
    for r in range(len(item)):
        sd = 1.0 / np.sqrt(precision[:, rater[r]])
        genuine = stats.norm.cdf(hi[r], z[r], sd) - stats.norm.cdf(lo[r], z[r], sd)
        log_w += np.log(eps[:, rater[r]] * genuine + (1.0 - eps[:, rater[r]]) * 0.2)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    reference = {"eps": eps, "log_precision": np.log(precision)}
    is_ess = 1.0 / np.sum(w ** 2)
    assert is_ess > 2000  # the reference is precise enough to test against
    for name, values in reference.items():
        ref_mean = w @ values
        ref_sd = np.sqrt(w @ (values - ref_mean) ** 2)
        mc_error = np.sqrt(ref_sd ** 2 / effective_sample_size(chain[name])
                           + ref_sd ** 2 / is_ess)
        np.testing.assert_array_less(np.abs(chain[name].mean(axis=0) - ref_mean),
                                     4.0 * mc_error)
        # and the spread: the posterior sd within a fifth
        np.testing.assert_allclose(chain[name].std(axis=0), ref_sd, rtol=0.2)


@pytest.mark.parametrize("seed", [1, 3])
def test_default_chain_mixes_with_many_ratings_per_rater(seed):
    """Four raters with 300 ratings each, some of them spammy: the default
    chain (200 draws, thin 5) must be worth a fair share of independent
    draws of the raters' ε and τ δ.  Drawing the spam indicators and latent
    scores and then the parameters given them, alone, was worth 15-36
    draws (median over the raters) on these two data sets, and its
    intervals were too narrow; the collapsed moves give 79-124."""
    data = make_ordinal(300, 4, 4, spammer_fraction=0.0, n_groups=1,
                        reliability=(0.2, 0.9), random_state=seed)
    model = _fit(data.ratings)
    draws = posterior_samples(model, data.ratings, 200, random_state=seed)
    precision = draws["rater_precision_"] * draws["group_difficulty_"][:, :1]
    assert np.median(effective_sample_size(draws["rater_reliability_"])) > 60
    assert np.median(effective_sample_size(np.log(precision))) > 60
