"""Posterior uncertainty (skcrowd.uncertainty): the samplers' kernel
against plain numpy, calibration by simulation, the paper's posterior
means on caries, the bootstrap, the derived tables and the input checks."""

import copy

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import NotFittedError

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, Ratings
from skcrowd._kernels import _uncertainty as kernels
from skcrowd.datasets import load_caries, make_dawid_skene
from skcrowd.datasets._generators import random_design
from skcrowd.uncertainty import (interval, model_at, posterior_samples, predict_proba,
                                 prevalence_interval, rater_table, sample_labels)


@pytest.fixture(scope="module")
def caries():
    return load_caries().ratings


@pytest.fixture(scope="module")
def caries_dawid_skene(caries):
    return DawidSkene().fit(caries)


@pytest.fixture(scope="module")
def small():
    return make_dawid_skene(n_items=150, n_raters=6, ratings_per_item=3, random_state=0).ratings


# -- the kernel ------------------------------------------------------------------
def test_pattern_cell_cdf_matches_numpy():
    rng = np.random.default_rng(0)
    n_groups, n_cells, lengths = 4, 10, np.array([3, 0, 2, 5])
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rater = rng.integers(0, n_groups, ptr[-1]).astype(np.int32)
    label = rng.integers(0, 2, ptr[-1]).astype(np.int32)
    log_prior = np.log(rng.dirichlet(np.ones(n_cells)))
    table = np.log(rng.uniform(0.05, 0.95, (n_groups, 2, n_cells)))
    for kernel in (kernels.pattern_cell_cdf, kernels.pattern_cell_cdf.serial):
        cdf = np.empty((len(lengths), n_cells))
        kernel(ptr, rater, label, log_prior, table, cdf)
        for p in range(len(lengths)):
            log_post = log_prior + sum(table[rater[n], label[n]] for n in range(ptr[p], ptr[p + 1]))
            expected = np.cumsum(np.exp(log_post - logsumexp(log_post)))
            np.testing.assert_allclose(cdf[p], expected, rtol=1e-12, atol=1e-14)


def test_dawid_skene_sweep_matches_numpy():
    rng = np.random.default_rng(1)
    n_items, n_raters, K = 30, 5, 3
    lengths = rng.integers(0, 4, n_items)
    item_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    item = np.repeat(np.arange(n_items), lengths)
    rater = rng.integers(0, n_raters, item_ptr[-1]).astype(np.int32)
    label = rng.integers(0, K, item_ptr[-1]).astype(np.int32)
    log_theta = np.log(rng.dirichlet(np.ones(K), size=(n_raters, K)))
    log_prior = np.log(rng.dirichlet(np.ones(K)))
    uniforms = rng.random(n_items)
    z, proba = np.empty(n_items, np.int64), np.empty((n_items, K))
    counts, class_counts = np.empty((n_raters, K, K)), np.empty(K)
    kernels.dawid_skene_sweep(item_ptr, rater, label, log_theta, log_prior, np.zeros((0, K)),
                              uniforms, z, proba, counts, class_counts)
    log_post = np.tile(log_prior, (n_items, 1))
    np.add.at(log_post, item, log_theta[rater, :, label])
    expected = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected, rtol=1e-12)
    expected_z = (uniforms[:, None] > np.cumsum(expected, axis=1)).sum(axis=1)
    np.testing.assert_array_equal(z, expected_z)
    expected_counts = np.zeros((n_raters, K, K))
    np.add.at(expected_counts, (rater, expected_z[item], label), 1.0)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(class_counts, np.bincount(expected_z, minlength=K))


def test_irt_log_table_is_the_rating_model():
    """The table the IRT3PL sampler reads, against the rating model written
    out in numpy: correct with probability λ + (1 - λ) σ(δ (α^z - β))."""
    from scipy.special import expit

    from skcrowd._irt import _irt_log_table

    model = IRT3PL(learn_item_prior=False)
    grid = ((np.array([[-1.0, 0.5, 0.0], [0.3, -0.2, 1.0]]), np.log([0.4, 0.6])))
    hyper = {"difficulty_scale": 1.3, "discrimination_scale": 0.4, "guessing_mean": -1.0,
             "guessing_scale": 0.8}
    sens, spec = np.array([1.5, -0.2]), np.array([0.5, 2.0])
    table = _irt_log_table(model, sens, spec, hyper, grid)
    nodes = grid[0]
    b, d = 1.3 * nodes[:, 0], np.exp(0.4 * nodes[:, 1])
    lam = expit(-1.0 + 0.8 * nodes[:, 2])
    for g in range(2):
        for z, alpha in ((0, spec[g]), (1, sens[g])):
            right = lam + (1 - lam) * expit(d * (alpha - b))
            np.testing.assert_allclose(table[g, z, z * 2:(z + 1) * 2], np.log(right))
            np.testing.assert_allclose(table[g, 1 - z, z * 2:(z + 1) * 2], np.log1p(-right))


# -- calibration by simulation -------------------------------------------------------
def test_dawid_skene_gibbs_covers_at_nominal_rates():
    """Simulation-based calibration (Talts et al. 2018), small: parameters
    from DawidSkene's own priors, ratings from its likelihood; the 50% and
    90% intervals must cover the truth at their rates.  The bounds are 3
    binomial standard errors counted in replications (the raters of one
    replication share its items, so they are not independent)."""
    rng = np.random.RandomState(1)
    reps, n_items, n_raters, per_item = 30, 80, 8, 3
    model = DawidSkene(classes=[0, 1])
    pseudo = model._pseudo_counts(2) + 1.0
    hits = {0.5: [], 0.9: []}
    prevalence_hits = {0.5: [], 0.9: []}
    for _ in range(reps):
        pi = rng.dirichlet([model.prior_class + 1.0] * 2)
        theta = np.stack([[rng.dirichlet(pseudo[k]) for k in range(2)] for _ in range(n_raters)])
        z = rng.choice(2, size=n_items, p=pi)
        item, rater = random_design(n_items, n_raters, per_item, rng)
        label = (rng.random_sample(len(item)) > theta[rater, z[item], 0]).astype(int)
        ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                          rater_ids=np.arange(n_raters))
        fitted = DawidSkene(classes=[0, 1]).fit(ratings)
        draws = posterior_samples(fitted, ratings, 60, random_state=rng)
        for level in hits:
            low, high = interval(draws["confusion_"], level)
            inside = (low <= theta) & (theta <= high)
            hits[level].append(inside[:, [0, 1], [0, 1]].ravel())
            low, high = interval(draws["class_prior_"][:, 1], level)
            prevalence_hits[level].append(low <= pi[1] <= high)
    for level in hits:
        bound = 3 * np.sqrt(level * (1 - level) / reps)
        assert abs(np.mean(np.concatenate(hits[level])) - level) < bound
        assert abs(np.mean(prevalence_hits[level]) - level) < bound


# -- the paper's posterior means -------------------------------------------------------
# Carpenter (item-difficulty paper), Stan posterior means of pi on caries
# (its repository's python/results-caries.csv, models abc and ad).
STAN_CARIES_PI = {"abc": 0.195715, "ad": 0.0469516}


@pytest.mark.parametrize("tag", sorted(STAN_CARIES_PI))
def test_irt_gibbs_matches_the_papers_posterior_mean(caries, tag):
    model = IRT3PL.from_tag(tag, learn_item_prior=False, random_state=0).fit(caries)
    draws = posterior_samples(model, caries, 300, random_state=0)
    prevalence = draws["class_prior_"][:, 1]
    low, high = interval(prevalence, 0.9)
    assert low < STAN_CARIES_PI[tag] < high
    # the posterior mean itself, to within a few Monte Carlo errors
    assert abs(prevalence.mean() - STAN_CARIES_PI[tag]) < 0.25 * (high - low)
    assert np.all(draws["alpha_sens_"] + draws["alpha_spec_"] > 0)
    np.testing.assert_allclose(draws["sensitivity_"], 1 / (1 + np.exp(-draws["alpha_sens_"])))


def test_irt_gibbs_learns_the_item_population(caries):
    model = IRT3PL.from_tag("ab", random_state=0).fit(caries)
    draws = posterior_samples(model, caries, 60, random_state=0, n_burnin=60)
    scale = draws["item_prior_"]["difficulty_scale"]
    assert scale.shape == (60,) and np.all(scale > 0)
    # the chain moves, and its draws keep the fitted scale within their range
    assert scale.std() > 0
    assert scale.min() < model.item_prior_["difficulty_scale"] * 1.5


# -- the bootstrap -------------------------------------------------------------------
@pytest.mark.parametrize("make", [GLAD, MACE, DawidSkene])
def test_bootstrap_draws_every_global_parameter(small, make):
    model = make(random_state=0).fit(small)
    before = copy.deepcopy(model.__dict__)
    draws = posterior_samples(model, small, 8, method="bootstrap", random_state=0)
    assert draws["class_prior_"].shape == (8, len(model.classes_))
    np.testing.assert_allclose(draws["class_prior_"].sum(axis=1), 1.0)
    for name, values in draws.items():
        assert values.shape[1:] == np.shape(getattr(model, name))
        assert np.all(np.isfinite(values))
    # the fitted model is not changed
    for name, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(model, name), value)


def test_gibbs_and_bootstrap_agree_with_many_ratings(caries, caries_dawid_skene):
    """On caries (3,869 ratings per rater) the bootstrap's spread is the
    posterior's: both 90% intervals of the prevalence nearly coincide."""
    gibbs = posterior_samples(caries_dawid_skene, caries, 200, random_state=0, thin=1)
    boot = posterior_samples(caries_dawid_skene, caries, 25, method="bootstrap", random_state=0)
    g = np.array(interval(gibbs["class_prior_"][:, 1], 0.9))
    b = np.array(interval(boot["class_prior_"][:, 1], 0.9))
    assert np.all(np.abs(g - b) < 0.3 * (g[1] - g[0]))


# -- tables, integrated probabilities and label draws ------------------------------------
def test_tables(caries, caries_dawid_skene):
    model = caries_dawid_skene
    draws = posterior_samples(model, caries, 100, random_state=0, thin=1)
    table = rater_table(model, caries, 0.9, samples=draws)
    plain = model.rater_table()
    for column in plain.columns.drop("n_ratings"):
        assert np.all(table[f"{column}_lower"] <= table[f"{column}_upper"])
        # the interval of a drawn table column is the interval of the draws
        if column.startswith("recall_"):
            k = list(model.classes_.astype(str)).index(column.split("_", 1)[1])
            low, high = interval(draws["confusion_"][:, :, k, k], 0.9)
            np.testing.assert_allclose(table[f"{column}_lower"], low)
            np.testing.assert_allclose(table[f"{column}_upper"], high)
    np.testing.assert_array_equal(table["n_ratings"], plain["n_ratings"])
    prevalence = prevalence_interval(model, caries, 0.5, samples=draws)
    assert np.all(prevalence["lower"] < prevalence["upper"])
    np.testing.assert_allclose(prevalence["estimate"], model.class_prior_)


def test_integrated_probabilities_and_label_draws(small):
    model = DawidSkene(random_state=0).fit(small)
    draws = posterior_samples(model, small, 40, random_state=0, thin=1)
    proba = predict_proba(model, small, samples=draws)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    expected = np.mean([model_at(model, draws, s).predict_proba(small) for s in range(40)], 0)
    np.testing.assert_allclose(proba, expected)
    # the chain's own average (Rao-Blackwellised) is a probability too
    chain = predict_proba(model, small, n_samples=40, random_state=0, thin=1)
    np.testing.assert_allclose(chain.sum(axis=1), 1.0)
    # labels drawn from the full posterior: their frequencies are the
    # integrated probabilities, within Monte Carlo error
    labels = sample_labels(model, small, 400, random_state=0, thin=1)
    assert labels.shape == (400, small.shape[0])
    assert set(np.unique(labels)) <= set(model.classes_)
    share = (labels == model.classes_[1]).mean(axis=0)
    integrated = predict_proba(model, small, n_samples=400, random_state=1, thin=1)[:, 1]
    assert np.max(np.abs(share - integrated)) < 0.15
    bootstrap_labels = sample_labels(model, small, samples=posterior_samples(
        model, small, 5, method="bootstrap", random_state=0), random_state=0)
    assert bootstrap_labels.shape == (5, small.shape[0])


def test_a_subclass_is_sampled_as_its_parent(small):
    # the sampler is found through the model's hooks, not its class name
    class Renamed(DawidSkene):
        pass

    draws = posterior_samples(Renamed().fit(small), small, 5, random_state=0)
    parent = posterior_samples(DawidSkene().fit(small), small, 5, random_state=0)
    assert set(draws) == set(parent)
    for name in draws:
        np.testing.assert_array_equal(draws[name], parent[name])


# -- bad input --------------------------------------------------------------------------
def test_bad_input(small):
    model = DawidSkene().fit(small)
    with pytest.raises(NotFittedError):
        posterior_samples(DawidSkene(), small)
    with pytest.raises(ValueError, match="available for"):
        posterior_samples(MajorityVote().fit(small), small)
    with pytest.raises(ValueError, match="n_samples"):
        posterior_samples(model, small, 0)
    with pytest.raises(ValueError, match="method"):
        posterior_samples(model, small, method="laplace")
    with pytest.raises(TypeError, match="unexpected"):
        predict_proba(model, small, n_sample=5)
    with pytest.raises(ValueError, match="level"):
        interval(np.zeros(5), 1.0)
    with pytest.raises(ValueError, match="at least one draw"):
        interval(np.zeros(0))
    dd = pytest.importorskip("dask.dataframe")
    with pytest.raises(ValueError, match="dask"):
        posterior_samples(model, dd.from_pandas(small.to_long(), npartitions=2), 5)
    other = Ratings(item=[0, 0], rater=[99, 1], label=[0, 1])
    with pytest.raises(ValueError, match="not fitted on|not seen"):
        posterior_samples(model, other, 5)
