"""The Gibbs sampler of OrdinalMixture's posterior (skcrowd.uncertainty)."""

import numpy as np
import pytest
from scipy import stats

from skcrowd import OrdinalMixture, Ratings
from skcrowd.datasets import make_ordinal
from skcrowd._ordinal import _bin_probability, _truncated_normal
from skcrowd.uncertainty import (interval, model_at, posterior_samples, predict_proba,
                                 prevalence_interval, rater_table, sample_labels)

#: open-ended outer bins, as make_ordinal simulates
OPEN = np.array([-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf])


def _fit(ratings, y=None, **params):
    params = {"thresholds": OPEN, "prior_precision": 1.0, "n_init": 2, "random_state": 0,
              **params}
    return OrdinalMixture(**params).fit(ratings, y=y)


# -- the building blocks against scipy ---------------------------------------------
@pytest.mark.parametrize("lo, hi", [(-0.3, 0.8), (-np.inf, -2.0), (1.0, np.inf),
                                    (6.0, 7.0), (-9.0, -8.0), (40.0, 41.0)])
def test_truncated_normal_matches_scipy(lo, hi):
    """Draws in a bin follow the standard normal truncated to it, also far
    in either tail (where 1 - Φ loses every digit without the flip)."""
    rng = np.random.default_rng(0)
    x = _truncated_normal(np.full(4000, lo), np.full(4000, hi), rng)
    assert np.all((x >= lo) & (x <= hi))
    if hi - lo < 50 and max(abs(lo), abs(hi)) < 30:
        assert stats.kstest(x, stats.truncnorm(lo, hi).cdf).pvalue > 1e-3


def test_bin_probability_keeps_digits_in_the_tails():
    lo = np.array([-0.3, 6.0, -9.0, 1.0, -np.inf])
    hi = np.array([0.8, 7.0, -8.0, np.inf, -2.0])
    expected = np.exp(stats.norm.logcdf(hi)) - np.exp(stats.norm.logcdf(lo))
    expected[1] = stats.norm.sf(6.0) - stats.norm.sf(7.0)
    np.testing.assert_allclose(_bin_probability(lo, hi), expected, rtol=1e-12)


# -- the sampler ---------------------------------------------------------------------
def test_sampler_recovers_simulated_parameters():
    """On ratings simulated from the model, the 90% intervals contain the
    true prevalence (share of items per level), each rater's identified
    precision τ_n δ and reliability ε_n at about their rate, and the
    posterior means track the truth."""
    data = make_ordinal(500, 12, 5, spammer_fraction=0.0, n_groups=1,
                        reliability=(0.6, 0.95), random_state=3)
    model = _fit(data.ratings)
    draws = posterior_samples(model, data.ratings, 200, random_state=0)
    precision = draws["rater_precision_"] * draws["group_difficulty_"][:, :1]
    true_precision = data.rater_precision * data.group_difficulty[0]
    low, high = interval(precision, 0.9)
    assert np.mean((low <= true_precision) & (true_precision <= high)) >= 0.75
    assert np.corrcoef(np.log(precision.mean(axis=0)), np.log(true_precision))[0, 1] > 0.7
    low, high = interval(draws["rater_reliability_"], 0.9)
    reliable = data.rater_reliability
    assert np.mean((low <= reliable) & (reliable <= high)) >= 0.75
    share = np.bincount(np.searchsorted(OPEN[1:-1], data.z, side="right"), minlength=5) / 500
    low, high = interval(draws["class_prior_"], 0.9)
    assert np.sum((low <= share) & (share <= high)) >= 4
    np.testing.assert_allclose(draws["class_prior_"].sum(axis=1), 1.0)
    # the type-II ML population collapses (every rater at one precision);
    # the draws of α keep the raters' spread
    assert np.quantile(draws["precision_shape_"], 0.95) < model.precision_shape_


def test_a_rater_without_ratings_is_drawn_from_the_priors():
    """A rater the fit knows but who rated nothing has its prior as
    posterior: ε ~ U(0, 1) and τ ~ Gamma(α, β) at the drawn population
    (whatever the fit's fallback values)."""
    data = make_ordinal(100, 6, 4, n_groups=1, random_state=9)
    long = data.ratings.to_long()
    ratings = Ratings(long["item"].to_numpy(), long["rater"].to_numpy(),
                      long["label"].to_numpy(), item_ids=np.arange(100),
                      rater_ids=np.arange(7))
    model = _fit(ratings)
    draws = posterior_samples(model, ratings, 400, random_state=0, thin=1)
    assert stats.kstest(draws["rater_reliability_"][:, 6], "uniform").pvalue > 1e-3
    pit = stats.gamma.cdf(draws["rater_precision_"][:, 6], draws["precision_shape_"],
                          scale=1.0 / draws["precision_rate_"])
    assert stats.kstest(pit, "uniform").pvalue > 1e-3
    # a rated rater's draws are not from the prior
    assert stats.kstest(draws["rater_reliability_"][:, 1], "uniform").pvalue < 1e-3


def test_integrated_probabilities_are_rao_blackwellised_draws():
    """The chain's item probabilities are proper distributions and agree
    with the labels it draws."""
    data = make_ordinal(200, 10, 4, n_groups=1, random_state=4)
    model = _fit(data.ratings)
    proba = predict_proba(model, data.ratings, n_samples=300, random_state=0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    labels = sample_labels(model, data.ratings, 300, random_state=0)
    freq = np.stack([(labels == k).mean(axis=0) for k in model.classes_], axis=1)
    # same chain (same seed): frequencies within binomial error of the means
    assert np.max(np.abs(freq - proba)) < 4 * np.sqrt(0.25 / 300)
    assert np.mean(np.abs(freq - proba)) < 0.03


def test_gold_holds_items_and_informs_raters():
    """Known items keep their level in every draw; gold that contradicts
    rater 0 lowers its drawn reliability."""
    data = make_ordinal(150, 8, 5, spammer_fraction=0.0, n_groups=1, random_state=5)
    long = data.ratings.to_long()
    first = long[long["rater"] == 0]
    known = first["item"].to_numpy()[:40]
    said = first["label"].to_numpy()[:40]
    gold = np.where(said >= 3, 1, 5)
    y = dict(zip(known.tolist(), gold.tolist()))
    model = _fit(data.ratings, y=y)
    labels = sample_labels(model, data.ratings, 40, y=y, random_state=0)
    np.testing.assert_array_equal(labels[:, known], np.broadcast_to(gold, (40, len(known))))
    proba = predict_proba(model, data.ratings, y=y, n_samples=40, random_state=0)
    np.testing.assert_allclose(proba[known], np.eye(5)[gold - 1])
    free = np.setdiff1d(np.arange(150), known)
    assert np.any(labels[:, free] != labels[:1, free])
    with_gold = posterior_samples(model, data.ratings, 100, y=y, random_state=0)
    without = posterior_samples(model, data.ratings, 100, random_state=0)
    # its ratings far from the known levels are drawn as spam
    assert (np.median(with_gold["rater_reliability_"][:, 0])
            < np.median(without["rater_reliability_"][:, 0]) - 0.3)


def test_per_item_difficulty_and_no_spam():
    data = make_ordinal(80, 6, 4, n_groups=1, random_state=6)
    model = _fit(data.ratings, difficulty="item", spam=False)
    draws = posterior_samples(model, data.ratings, 20, random_state=0)
    assert draws["group_difficulty_"].shape == (20, 80)
    np.testing.assert_array_equal(draws["rater_reliability_"], 1.0)
    assert np.all(draws["rater_precision_"] > 0)


def test_unsupported_variants_are_refused():
    data = make_ordinal(60, 5, 3, n_groups=1, random_state=7)
    gaussian = OrdinalMixture(link="gaussian", n_init=1).fit(data.ratings)
    with pytest.raises(ValueError, match="link='ordinal'"):
        posterior_samples(gaussian, data.ratings, 5)
    grouped = OrdinalMixture(difficulty="group", n_init=1).fit(data.ratings,
                                                                groups=data.groups)
    with pytest.raises(ValueError, match="difficulty='group'"):
        posterior_samples(grouped, data.ratings, 5)


# -- the estimator's methods ------------------------------------------------------
def test_posterior_methods_delegate():
    data = make_ordinal(120, 8, 4, n_groups=1, random_state=8)
    model = _fit(data.ratings)
    draws = model.posterior_samples(data.ratings, 20, random_state=0)
    same = posterior_samples(model, data.ratings, 20, method="gibbs", random_state=0)
    for key, value in draws.items():
        np.testing.assert_array_equal(value, same[key])
    np.testing.assert_array_equal(
        model.predict_proba_integrated(data.ratings, n_samples=20, random_state=0),
        predict_proba(model, data.ratings, n_samples=20, random_state=0))
    np.testing.assert_array_equal(model.sample_labels(data.ratings, 10, random_state=1),
                                  sample_labels(model, data.ratings, 10, random_state=1))
    table = model.rater_table(data.ratings, interval=0.8, samples=draws)
    assert table.equals(rater_table(model, data.ratings, 0.8, samples=draws))
    for c in ("precision", "reliability"):
        assert np.all(table[f"{c}_lower"] <= table[f"{c}_upper"])
    prevalence = prevalence_interval(model, data.ratings, samples=draws)
    assert np.all(prevalence["lower"] <= prevalence["upper"])
    np.testing.assert_allclose(prevalence["estimate"].sum(), 1.0)
    # a model at a draw scores with the drawn rater parameters
    at = model_at(model, draws, 3)
    np.testing.assert_array_equal(at.rater_precision_, draws["rater_precision_"][3])
    assert not np.allclose(at.predict_proba(data.ratings), model.predict_proba(data.ratings))
