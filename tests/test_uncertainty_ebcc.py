"""EBCC's posterior sampler (skcrowd.uncertainty; Li, Rubinstein & Cohn
2019): each conditional against numpy and scipy, the item pass against
its numpy twin, recovery of simulated parameters, gold conditioning and
the estimator's posterior methods."""

import copy

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from skcrowd import EBCC, Ratings
from skcrowd._ebcc import _log_prior_ratio_of_swap, conditional_concentrations, log_dirichlet
from skcrowd._kernels import _ebcc as kernels
from skcrowd._kernels._config import kernel_path
from skcrowd.datasets._generators import random_design
from skcrowd.uncertainty import (interval, model_at, posterior_samples, predict_proba,
                                 rater_table, sample_labels)


def _rating_layout(rng, n_items=40, n_raters=5, n_classes=3, with_gold=False):
    lengths = rng.integers(0, 5, n_items)
    item_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    item = np.repeat(np.arange(n_items), lengths)
    rater = rng.integers(0, n_raters, item_ptr[-1])
    label = rng.integers(0, n_classes, item_ptr[-1])
    cell = (rater * n_classes + label).astype(np.int32)
    evidence = np.zeros((0, n_classes))
    if with_gold:
        evidence = np.zeros((n_items, n_classes))
        known = rng.random(n_items) < 0.3
        evidence[known] = -np.inf
        evidence[np.flatnonzero(known), rng.integers(0, n_classes, known.sum())] = 0.0
    return item_ptr, item, rater, label, cell, evidence


def _sweep(path, item_ptr, cell, log_tau, log_pi, evidence, log_v, uniforms):
    """Run the item pass on one side; returns its outputs."""
    n_items, (K, M) = len(item_ptr) - 1, log_pi.shape
    J = log_v.shape[0]
    log_table = EBCC()._kernel_table(log_v).reshape(J * K, K * M)
    pair, post = np.empty(n_items, np.int64), np.empty((n_items, K))
    counts, pair_counts = np.empty((J * K, K * M)), np.empty(K * M)
    kernel = kernels.gibbs_sweep.jit if path == "jit" else kernels.gibbs_sweep.numpy
    kernel(item_ptr, cell, (log_tau[:, None] + log_pi).ravel(), evidence, log_table, K,
           uniforms, pair, post, counts, pair_counts)
    return pair, post, counts, pair_counts


# -- the (class, subtype) conditional: the item pass ---------------------------------
@pytest.mark.parametrize("path", ["jit", "numpy"])
@pytest.mark.parametrize("with_gold", [False, True])
def test_item_pass_matches_the_model_written_out(path, with_gold):
    """p(z_i = k, g_i = m | τ, π, v) ∝ τ_k π_km Π_n v_{j_n k m}[l_n], drawn
    by inversion; the counts are those of the drawn pairs."""
    rng = np.random.default_rng(0)
    n_items, J, K, M = 50, 5, 3, 4
    item_ptr, item, rater, label, cell, evidence = _rating_layout(rng, n_items, J, K, with_gold)
    tau = rng.dirichlet(np.ones(K))
    pi = rng.dirichlet(np.ones(M), K)
    v = rng.dirichlet(np.ones(K), (J, K, M))  # [j, k, m, l]
    uniforms = rng.random(n_items)
    pair, post, counts, pair_counts = _sweep(path, item_ptr, cell, np.log(tau), np.log(pi),
                                             evidence, np.log(v), uniforms)
    log_joint = np.tile(np.log(tau)[:, None] + np.log(pi), (n_items, 1, 1))
    if with_gold:
        log_joint = log_joint + evidence[:, :, None]
    np.add.at(log_joint, item, np.log(v[rater, :, :, label]))
    joint = np.exp(log_joint - logsumexp(log_joint, axis=(1, 2), keepdims=True))
    np.testing.assert_allclose(post, joint.sum(axis=2), rtol=1e-10, atol=1e-300)
    flat = joint.reshape(n_items, K * M)
    expected = np.minimum((uniforms[:, None] > np.cumsum(flat, axis=1)).sum(axis=1), K * M - 1)
    np.testing.assert_array_equal(pair, expected)
    expected_counts = np.zeros((J * K, K * M))
    np.add.at(expected_counts, (cell, expected[item]), 1.0)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(pair_counts, np.bincount(expected, minlength=K * M))
    if with_gold:
        known = np.isfinite(evidence).sum(axis=1) == 1
        np.testing.assert_array_equal(pair[known] // M, evidence[known].argmax(axis=1))


def test_item_pass_jit_and_numpy_agree():
    rng = np.random.default_rng(1)
    n_items, J, K, M = 200, 7, 2, 10
    item_ptr, _, _, _, cell, evidence = _rating_layout(rng, n_items, J, K, with_gold=True)
    log_tau = np.log(rng.dirichlet(np.ones(K)))
    # subtype weights as small as the sampler's, -inf where one underflowed
    log_pi = log_dirichlet(np.full((K, M), 0.01), np.random.RandomState(0))
    log_pi[0, 0] = -np.inf
    log_v = np.log(rng.dirichlet(np.ones(K), (J, K, M)))
    uniforms = rng.random(n_items)
    jit = _sweep("jit", item_ptr, cell, log_tau, log_pi, evidence, log_v, uniforms)
    twin = _sweep("numpy", item_ptr, cell, log_tau, log_pi, evidence, log_v, uniforms)
    np.testing.assert_array_equal(jit[0], twin[0])
    np.testing.assert_allclose(jit[1], twin[1], rtol=1e-10, atol=1e-300)
    np.testing.assert_array_equal(jit[2], twin[2])
    np.testing.assert_array_equal(jit[3], twin[3])


def test_known_items_keep_their_class_and_draw_their_subtype():
    rng = np.random.default_rng(2)
    n_items, J, K, M = 30, 4, 2, 5
    item_ptr, _, _, _, cell, evidence = _rating_layout(rng, n_items, J, K, with_gold=True)
    known = np.flatnonzero(np.isfinite(evidence).sum(axis=1) == 1)
    log_tau = np.log([0.5, 0.5])
    log_pi = np.log(np.full((K, M), 1.0 / M))
    log_v = np.log(np.full((J, K, M, K), 1.0 / K))
    subtypes = set()
    for _ in range(20):
        pair, post, _, _ = _sweep("numpy", item_ptr, cell, log_tau, log_pi, evidence, log_v,
                                  rng.random(n_items))
        np.testing.assert_array_equal(pair[known] // M, evidence[known].argmax(axis=1))
        np.testing.assert_array_equal(post[known], (evidence[known] == 0).astype(float))
        subtypes.update((pair[known] % M).tolist())
    assert subtypes == set(range(M))


# -- the Dirichlet conditionals of τ, π and v ----------------------------------------
def test_conditional_concentrations_are_prior_plus_counts():
    """Given the pairs, α + items per class, a_π / M + items per (class,
    subtype) and β_k[l] + ratings l by rater j on items in (k, m), counted
    here from the pairs directly."""
    rng = np.random.default_rng(3)
    n_items, J, K, M = 60, 4, 3, 5
    item_ptr, item, rater, label, cell, _ = _rating_layout(rng, n_items, J, K)
    z, g = rng.integers(0, K, n_items), rng.integers(0, M, n_items)
    counts = np.zeros((J * K, K * M))
    np.add.at(counts, (cell, (z * M + g)[item]), 1.0)
    pair_counts = np.bincount(z * M + g, minlength=K * M).astype(float)
    alpha, beta = rng.uniform(0.5, 3, K), rng.uniform(0.5, 5, (K, K))
    tau_c, pi_c, v_c = conditional_concentrations(alpha, 0.02, beta, pair_counts, counts)
    np.testing.assert_array_equal(tau_c, alpha + np.bincount(z, minlength=K))
    expected_pi = np.full((K, M), 0.02)
    np.add.at(expected_pi, (z, g), 1.0)
    np.testing.assert_array_equal(pi_c, expected_pi)
    expected_v = np.broadcast_to(beta[None, :, None, :], (J, K, M, K)).copy()
    np.add.at(expected_v, (rater, z[item], g[item], label), 1.0)
    np.testing.assert_array_equal(v_c, expected_v)


@pytest.mark.parametrize("concentration", [[0.01] * 10, [4.0, 1.0], [0.5, 2.0, 3.0],
                                           [20.01, 0.01, 3.01]])
def test_log_dirichlet_draws_the_dirichlet(concentration):
    """Against scipy: the mean and variance of every entry, and each entry's
    marginal Beta(a_l, a_0 - a_l) by a Kolmogorov-Smirnov test."""
    a = np.asarray(concentration)
    n = 20000
    log_draws = log_dirichlet(np.tile(a, (n, 1)), np.random.RandomState(4))
    assert np.all(np.isfinite(log_draws))
    np.testing.assert_allclose(logsumexp(log_draws, axis=1), 0.0, atol=1e-12)
    draws = np.exp(log_draws)
    mean, var = stats.dirichlet.mean(a), stats.dirichlet.var(a)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=5 * np.sqrt(var / n).max())
    # the variance of a variance estimate: (μ4 - σ^4) / n, bounded via μ4 <= σ^2
    np.testing.assert_allclose(draws.var(axis=0), var, atol=5 * np.sqrt(var / n).max())
    for entry in range(len(a)):
        marginal = stats.beta(a[entry], a.sum() - a[entry])
        assert stats.kstest(draws[:, entry], marginal.cdf).pvalue > 1e-3


def test_class_swap_ratio_is_the_prior_ratio():
    """The swap's Metropolis ratio against scipy's Dirichlet log densities
    of τ and of every row v_jkm, the swapped state minus the current."""
    rng = np.random.default_rng(5)
    J, K, M = 3, 3, 4
    alpha, beta = np.array([1.5, 2.0, 0.7]), rng.uniform(0.5, 5, (K, K))
    tau = rng.dirichlet(np.ones(K))
    v = rng.dirichlet(np.ones(K), (J, K, M))
    ratio, perm = _log_prior_ratio_of_swap(np.log(tau), np.log(v), alpha, beta, 0, 2)
    np.testing.assert_array_equal(perm, [2, 1, 0])

    def log_prior(tau, v):
        return stats.dirichlet.logpdf(tau, alpha) + sum(
            stats.dirichlet.logpdf(v[j, k, m], beta[k])
            for j in range(J) for k in range(K) for m in range(M))

    np.testing.assert_allclose(ratio, log_prior(tau[perm], v[:, perm]) - log_prior(tau, v),
                               rtol=1e-10)


# -- the sampler on simulated crowds ---------------------------------------------------
def _ebcc_crowd(rng, n_items=500, n_raters=8, per_item=5):
    """A crowd from EBCC's model: class 1 has two subtypes, the second
    confused as class 0 by the first half of the raters (correlated
    errors)."""
    tau = np.array([0.35, 0.65])
    pi = np.array([[1.0, 0.0], [0.7, 0.3]])
    v = np.empty((n_raters, 2, 2, 2))
    accuracy = np.resize([0.9, 0.8, 0.85, 0.75], n_raters)
    v[:, 0, :, 0] = accuracy[:, None]
    v[:, 1, 0, 1] = accuracy
    v[:, 1, 1, 1] = np.where(np.arange(n_raters) < n_raters // 2, 0.2, accuracy)
    v[:, 0, :, 1] = 1 - v[:, 0, :, 0]
    v[:, 1, :, 0] = 1 - v[:, 1, :, 1]
    z = rng.choice(2, n_items, p=tau)
    g = np.array([rng.choice(2, p=pi[k]) for k in z])
    item, rater = random_design(n_items, n_raters, per_item, np.random.RandomState(0))
    label = (rng.random(len(item)) > v[rater, z[item], g[item], 0]).astype(int)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return ratings, z, tau, np.einsum("km,jkml->jkl", pi, v)


@pytest.fixture(scope="module")
def crowd():
    ratings, z, tau, confusion = _ebcc_crowd(np.random.default_rng(6))
    model = EBCC(prior_class=1.0, random_state=0).fit(ratings)
    return ratings, z, tau, confusion, model


def test_recovers_simulated_parameters(crowd):
    ratings, z, tau, confusion, model = crowd
    draws = posterior_samples(model, ratings, 300, random_state=0)
    low, high = interval(draws["class_prior_"][:, 1], 0.9)
    assert low < tau[1] < high
    # the subtype-marginal confusion of every rater: most inside their 90%
    # intervals (24 entries of 8 raters' items)
    low, high = interval(draws["confusion_"], 0.9)
    inside = (low <= confusion) & (confusion <= high)
    assert inside[:, [0, 1], [0, 1]].mean() >= 0.75
    # the draws spread: not a point mass at the fit
    assert draws["class_prior_"][:, 1].std() > 0.005
    # the integrated probabilities classify like the plug-in ones
    integrated = predict_proba(model, ratings, n_samples=100, random_state=0)
    assert np.mean(integrated.argmax(axis=1) == z) >= np.mean(
        model.predict_proba(ratings).argmax(axis=1) == z) - 0.02


def test_draws_are_consistent_and_reproducible(crowd):
    ratings, _, _, _, model = crowd
    draws = posterior_samples(model, ratings, 30, random_state=1)
    again = posterior_samples(model, ratings, 30, random_state=1)
    for key, value in draws.items():
        if value is not None:
            np.testing.assert_array_equal(value, again[key])
    np.testing.assert_allclose(draws["class_prior_"].sum(axis=1), 1.0)
    np.testing.assert_allclose(draws["subtype_prior_"].sum(axis=2), 1.0)
    np.testing.assert_allclose(draws["subtype_confusion_"].sum(axis=4), 1.0)
    np.testing.assert_allclose(
        draws["confusion_"],
        np.einsum("skm,sjkml->sjkl", draws["subtype_prior_"], draws["subtype_confusion_"]))
    np.testing.assert_allclose(
        draws["rater_accuracy_"],
        np.einsum("sjkk,sk->sj", draws["confusion_"], draws["class_prior_"]))


def test_model_at_a_draw_predicts_with_the_drawn_parameters(crowd):
    ratings, _, _, _, model = crowd
    draws = posterior_samples(model, ratings, 5, random_state=2)
    at = model_at(model, draws, 3)
    tau, pi = draws["class_prior_"][3], draws["subtype_prior_"][3]
    v = draws["subtype_confusion_"][3]
    long = ratings.to_long()
    item, rater, label = (long[c].to_numpy() for c in ("item", "rater", "label"))
    log_joint = np.tile(np.log(tau)[:, None] + np.log(pi), (ratings.shape[0], 1, 1))
    np.add.at(log_joint, item, np.log(v[rater, :, :, label]))
    expected = np.exp(logsumexp(log_joint, axis=2)
                      - logsumexp(log_joint, axis=(1, 2))[:, None])
    np.testing.assert_allclose(np.asarray(at.predict_proba(ratings)), expected, rtol=1e-9)
    # the model itself is not changed
    assert model.class_posterior_ is not None


def test_gold_conditioning(crowd):
    ratings, z, _, _, model = crowd
    long = ratings.to_long()
    item, rater, label = (long[c].to_numpy() for c in ("item", "rater", "label"))
    known = np.unique(item[rater == 0])[:60]
    # gold: the opposite of rater 0's labels
    gold = {i: 1 - label[(item == i) & (rater == 0)][0] for i in known}
    fitted = EBCC(prior_class=1.0, random_state=0).fit(ratings, y=gold)
    labels = fitted.sample_labels(ratings, 20, y=gold, random_state=0)
    np.testing.assert_array_equal(labels[:, known], np.tile([gold[i] for i in known], (20, 1)))
    proba = fitted.predict_proba_integrated(ratings, y=gold, n_samples=20, random_state=0)
    np.testing.assert_array_equal(proba[known, 1], [gold[i] for i in known])
    with_gold = fitted.posterior_samples(ratings, 100, y=gold, random_state=0)
    without = model.posterior_samples(ratings, 100, random_state=0)
    assert (with_gold["rater_accuracy_"][:, 0].mean()
            < without["rater_accuracy_"][:, 0].mean() - 0.1)
    with pytest.raises(ValueError):
        fitted.posterior_samples(ratings, 5, y={0: 7})


# -- the estimator's methods and fit results -------------------------------------------
def test_posterior_methods_and_shapes(crowd):
    ratings, _, _, _, model = crowd
    n_items, J = ratings.shape
    M = model.n_subtypes
    draws = model.posterior_samples(ratings, 20, random_state=0)
    assert draws["class_prior_"].shape == (20, 2)
    assert draws["subtype_prior_"].shape == (20, 2, M)
    assert draws["subtype_confusion_"].shape == (20, J, 2, M, 2)
    assert draws["confusion_"].shape == (20, J, 2, 2)
    assert draws["rater_accuracy_"].shape == (20, J)
    same = posterior_samples(model, ratings, 20, random_state=0)
    for key, value in draws.items():
        if value is not None:
            np.testing.assert_array_equal(value, same[key])
    proba = model.predict_proba_integrated(ratings, n_samples=20, random_state=0)
    assert proba.shape == (n_items, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba, predict_proba(model, ratings, n_samples=20,
                                                       random_state=0))
    labels = model.sample_labels(ratings, 10, random_state=1)
    assert labels.shape == (10, n_items)
    np.testing.assert_array_equal(labels, sample_labels(model, ratings, 10, random_state=1))
    table = model.rater_table(ratings, interval=0.9, samples=draws)
    assert table.equals(rater_table(model, ratings, 0.9, samples=draws))
    for c in model.rater_table().columns:
        if c != "n_ratings":
            assert np.all(table[f"{c}_lower"] <= table[f"{c}_upper"])
    with pytest.raises(ValueError, match="bootstrap"):
        model.posterior_samples(ratings, 5, method="bootstrap")
    with pytest.raises(ValueError, match="not fitted on|not seen"):
        model.posterior_samples(Ratings(item=[0, 0], rater=[99, 1], label=[0, 1]), 5)


def test_string_classes_and_three_classes():
    rng = np.random.default_rng(7)
    n_items, J, K = 120, 5, 3
    z = rng.integers(0, K, n_items)
    item, rater = random_design(n_items, J, 3, np.random.RandomState(1))
    right = rng.random(len(item)) < 0.8
    label = np.where(right, z[item], rng.integers(0, K, len(item)))
    names = np.array(["a", "b", "c"])
    ratings = Ratings(item, rater, names[label])
    model = EBCC(n_subtypes=3, random_state=0).fit(ratings)
    labels = model.sample_labels(ratings, 4, random_state=0)
    assert set(np.unique(labels)) <= set(names)
    table = model.rater_table(ratings, interval=0.5, n_samples=10, random_state=0)
    assert {"recall_a_lower", "recall_c_upper", "accuracy_lower"} <= set(table.columns)


def test_posterior_methods_leave_the_fit_unchanged(crowd):
    ratings, _, _, _, model = crowd
    before = copy.deepcopy(model.__dict__)
    proba = np.asarray(model.predict_proba(ratings))
    draws = model.posterior_samples(ratings, 10, random_state=0)
    model.predict_proba_integrated(ratings, samples=draws)
    model.sample_labels(ratings, 3, random_state=0)
    model.rater_table(ratings, interval=0.9, samples=draws)
    assert before.keys() == model.__dict__.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, model.__dict__[key])
    np.testing.assert_array_equal(np.asarray(model.predict_proba(ratings)), proba)


def test_sampler_prior_is_the_fits(crowd):
    """The sampler's α is the fit's: its Dirichlet posterior of τ minus the
    expected class counts of the fit's last local step."""
    ratings, _, _, _, _ = crowd
    for prior_class in (1.0, "empirical"):
        model = EBCC(prior_class=prior_class, random_state=0, tol=1e-12, max_iter=2000)
        model.fit(ratings)
        data = model._encode(ratings, reset=False)
        alpha = model._class_concentration(data)
        if prior_class == "empirical":
            votes = np.zeros((ratings.shape[0], 2))
            long = ratings.to_long()
            np.add.at(votes, long["item"].to_numpy(), np.eye(2)[long["label"].to_numpy()])
            shares = votes / votes.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(alpha, 1.0 + shares.sum(axis=0), rtol=1e-9)
        else:
            np.testing.assert_array_equal(alpha, [1.0, 1.0])
        # ν = α + Σ_i q(z_i) at the fit's last step, which stops at its
        # tolerance: predict's q differs from it by about 4e-5 in total
        # here (a wrong α, such as the one without its +1, is off by 1)
        expected = model.class_posterior_ - np.asarray(model.predict_proba(ratings)).sum(axis=0)
        np.testing.assert_allclose(alpha, expected, atol=1e-3)


def test_numpy_and_compiled_chains_agree(crowd):
    ratings, _, _, _, model = crowd
    with kernel_path("numpy"):
        twin = posterior_samples(model, ratings, 5, random_state=3, n_burnin=5)
    with kernel_path("jit"):
        jit = posterior_samples(model, ratings, 5, random_state=3, n_burnin=5)
    np.testing.assert_allclose(jit["class_prior_"], twin["class_prior_"], rtol=1e-9)
    np.testing.assert_allclose(jit["confusion_"], twin["confusion_"], rtol=1e-9)
