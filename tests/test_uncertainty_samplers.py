"""The posterior samplers of MACE and GLAD, gold conditioning of every
sampler and the estimators' posterior methods (skcrowd.uncertainty)."""

import numpy as np
import pytest
from scipy.special import expit, logsumexp

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, Ratings
from skcrowd._kernels import _uncertainty as kernels
from skcrowd.datasets._generators import random_design
from skcrowd.uncertainty import (effective_sample_size, interval, model_at, posterior_samples,
                                 predict_proba, rater_table, sample_labels)


def _design(rng, n_items=30, n_raters=5, n_classes=3, with_gold=False):
    lengths = rng.integers(0, 5, n_items)
    item_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    item = np.repeat(np.arange(n_items), lengths)
    rater = rng.integers(0, n_raters, item_ptr[-1]).astype(np.int32)
    label = rng.integers(0, n_classes, item_ptr[-1]).astype(np.int32)
    evidence = np.zeros((0, n_classes))
    if with_gold:
        evidence = np.zeros((n_items, n_classes))
        known = rng.random(n_items) < 0.3
        evidence[known] = -np.inf
        evidence[np.flatnonzero(known), rng.integers(0, n_classes, known.sum())] = 0.0
    return item_ptr, item, rater, label, evidence


def _drawn_by_inversion(expected, uniforms):
    return np.minimum((uniforms[:, None] > np.cumsum(expected, axis=1)).sum(axis=1),
                      expected.shape[1] - 1)


# -- kernels against numpy ---------------------------------------------------------
@pytest.mark.parametrize("with_gold", [False, True])
def test_mace_sweep_matches_numpy(with_gold):
    rng = np.random.default_rng(2)
    n_items, J, K = 40, 6, 3
    item_ptr, item, rater, label, evidence = _design(rng, n_items, J, K, with_gold)
    theta = rng.uniform(0.05, 0.95, J)
    xi = rng.dirichlet(np.ones(K), J)
    log_prior = np.log(rng.dirichlet(np.ones(K)))
    uniforms = rng.random(n_items)
    z, proba = np.empty(n_items, np.int64), np.empty((n_items, K))
    hits, class_counts = np.empty((J, K)), np.empty(K)
    spam = (1 - theta)[:, None] * xi
    kernels.mace_sweep(item_ptr, rater, label, np.log(spam), np.log(theta[:, None] + spam),
                       log_prior, evidence, uniforms, z, proba, hits, class_counts)
    # p(label | class k) = θ 1[label = k] + (1 - θ) ξ_label, the spam summed out
    p_label = spam[rater][:, None, :] + theta[rater][:, None, None] * np.eye(K)[None]
    log_post = np.tile(log_prior, (n_items, 1)) + (evidence if with_gold else 0.0)
    np.add.at(log_post, item, np.log(p_label[np.arange(len(item)), :, label]))
    expected = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected, rtol=1e-10, atol=1e-300)
    expected_z = _drawn_by_inversion(expected, uniforms)
    np.testing.assert_array_equal(z, expected_z)
    expected_hits = np.zeros((J, K))
    right = label == expected_z[item]
    np.add.at(expected_hits, (rater[right], label[right]), 1.0)
    np.testing.assert_array_equal(hits, expected_hits)
    np.testing.assert_array_equal(class_counts, np.bincount(expected_z, minlength=K))
    if with_gold:
        known = np.isfinite(evidence).sum(axis=1) == 1
        np.testing.assert_array_equal(z[known], evidence[known].argmax(axis=1))


def test_dawid_skene_sweep_clamps_gold():
    rng = np.random.default_rng(3)
    n_items, J, K = 40, 5, 3
    item_ptr, item, rater, label, evidence = _design(rng, n_items, J, K, with_gold=True)
    log_theta = np.log(rng.dirichlet(np.ones(K), size=(J, K)))
    log_prior = np.log(rng.dirichlet(np.ones(K)))
    uniforms = rng.random(n_items)
    z, proba = np.empty(n_items, np.int64), np.empty((n_items, K))
    counts, class_counts = np.empty((J, K, K)), np.empty(K)
    kernels.dawid_skene_sweep(item_ptr, rater, label, log_theta, log_prior, evidence, uniforms,
                              z, proba, counts, class_counts)
    log_post = np.tile(log_prior, (n_items, 1)) + evidence
    np.add.at(log_post, item, log_theta[rater, :, label])
    expected = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected, rtol=1e-10, atol=1e-300)
    np.testing.assert_array_equal(z, _drawn_by_inversion(expected, uniforms))


def test_glad_kernels_match_numpy():
    """The item table S[i, k] = log p(ratings of i | z_i = k) and the
    raters' log likelihood given the classes, against GLAD's rating model
    written out in numpy (Whitehill et al. 2009, multi-class)."""
    rng = np.random.default_rng(4)
    n_items, J, K = 25, 4, 3
    item_ptr, item, rater, label, _ = _design(rng, n_items, J, K)
    alpha, b = rng.normal(1, 3, J), rng.normal(0, 1.5, n_items)
    z = rng.integers(0, K, n_items)
    t = alpha[rater] * np.exp(b[item])
    # log σ(±t), without the overflow of log(1 - σ(t)) at large t
    log_right, log_wrong = -np.logaddexp(0, -t), -np.logaddexp(0, t)
    log_label = np.where(label[:, None] == np.arange(K), log_right[:, None],
                         (log_wrong - np.log(K - 1))[:, None])
    expected = np.zeros((n_items, K))
    np.add.at(expected, item, log_label)
    S = np.empty((n_items, K))
    kernels.glad_class_loglik(item_ptr, rater, label, alpha, b, np.log(K - 1), S)
    np.testing.assert_allclose(S, expected, rtol=1e-10, atol=1e-10)
    right = label == z[item]
    expected_raters = np.bincount(rater, np.where(right, log_right, log_wrong), minlength=J)
    out = np.empty(J)
    kernels.glad_rater_loglik(item.astype(np.int32), rater, label, z, alpha, np.exp(b), out)
    np.testing.assert_allclose(out, expected_raters, rtol=1e-10, atol=1e-10)


# -- the samplers recover simulated parameters ---------------------------------------
def _mace_data(rng, n_items=400, n_raters=5, per_item=4):
    pi = np.array([0.35, 0.65])
    theta = np.resize([0.9, 0.7, 0.5, 0.3, 0.8], n_raters)
    xi = np.column_stack([np.full(n_raters, 0.3), np.full(n_raters, 0.7)])
    z = rng.choice(2, n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, np.random.RandomState(0))
    knew = rng.random(len(item)) < theta[rater]
    label = np.where(knew, z[item], (rng.random(len(item)) < xi[rater, 1]).astype(int))
    return Ratings(item, rater, label), z, pi, theta


def _glad_data(rng, n_items=400, n_raters=5, per_item=4):
    pi = np.array([0.4, 0.6])
    alpha = np.resize([2.0, 1.0, 0.3, 1.5, -0.5], n_raters)
    b = rng.normal(1.0, 0.5, n_items)
    z = rng.choice(2, n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, np.random.RandomState(0))
    right = rng.random(len(item)) < expit(alpha[rater] * np.exp(b[item]))
    label = np.where(right, z[item], 1 - z[item])
    return Ratings(item, rater, label), z, pi, alpha


def test_mace_sampler_recovers_simulated_parameters():
    ratings, _, pi, theta = _mace_data(np.random.default_rng(5))
    model = MACE(random_state=0).fit(ratings)
    draws = posterior_samples(model, ratings, 300, random_state=0)
    low, high = interval(draws["rater_competence_"], 0.99)
    assert np.all((low <= theta) & (theta <= high))
    assert np.all(high - low < 0.4)  # informative: 320 ratings per rater
    low, high = interval(draws["class_prior_"][:, 1], 0.99)
    assert low <= pi[1] <= high
    assert np.all(effective_sample_size(draws["rater_competence_"]) > 30)


def test_glad_sampler_recovers_simulated_parameters():
    ratings, _, pi, alpha = _glad_data(np.random.default_rng(6))
    model = GLAD(class_prior="learn").fit(ratings)
    draws = posterior_samples(model, ratings, 300, random_state=0)
    low, high = interval(draws["rater_ability_"], 0.99)
    assert np.all((low <= alpha) & (alpha <= high))
    # the adversarial rater is told apart from the guessing one
    assert high[4] < 0 < low[2]
    low, high = interval(draws["class_prior_"][:, 1], 0.99)
    assert low <= pi[1] <= high
    assert np.all(effective_sample_size(draws["rater_ability_"]) > 30)


def _from_mace_prior(rng, n_items, n_raters, per_item):
    """MACE's own priors (Hovy et al. 2013): θ ~ Beta(1/2, 1/2), ξ ~
    Dirichlet(10, 10), π ~ Dirichlet(2, 2)."""
    pi = rng.dirichlet([2.0, 2.0])
    theta, xi1 = rng.beta(0.5, 0.5, n_raters), rng.beta(10.0, 10.0, n_raters)
    z = rng.choice(2, n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, np.random.RandomState(0))
    knew = rng.random(len(item)) < theta[rater]
    label = np.where(knew, z[item], (rng.random(len(item)) < xi1[rater]).astype(int))
    return Ratings(item, rater, label, item_ids=np.arange(n_items)), z


def _from_glad_prior(rng, n_items, n_raters, per_item):
    """GLAD's own priors (Whitehill et al. 2009): α ~ N(1, 1), b ~ N(1, 1),
    π ~ Dirichlet(2, 2)."""
    pi = rng.dirichlet([2.0, 2.0])
    alpha, b = rng.normal(1, 1, n_raters), rng.normal(1, 1, n_items)
    z = rng.choice(2, n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, np.random.RandomState(0))
    right = rng.random(len(item)) < expit(alpha[rater] * np.exp(b[item]))
    label = np.where(right, z[item], 1 - z[item])
    return Ratings(item, rater, label, item_ids=np.arange(n_items)), z


@pytest.mark.parametrize("make, simulate", [
    (lambda: MACE(classes=[0, 1], random_state=0), _from_mace_prior),
    (lambda: GLAD(classes=[0, 1], class_prior="learn"), _from_glad_prior)],
    ids=["MACE", "GLAD"])
def test_integrated_probabilities_beat_plug_in_with_sparse_raters(make, simulate):
    """Twenty raters with nine ratings each, parameters from the model's
    prior: the plug-in probabilities are over-confident; averaged over the
    draws they score the true labels better (log loss), pooled over a few
    data sets."""
    rng = np.random.default_rng(7)
    plug, integrated = [], []
    for _ in range(6):
        ratings, z = simulate(rng, 60, 20, 3)
        model = make().fit(ratings)
        for proba, out in ((model.predict_proba(ratings), plug),
                           (predict_proba(model, ratings, n_samples=100, random_state=0),
                            integrated)):
            out.append(-np.log(np.clip(proba[np.arange(len(z)), z], 1e-12, 1)))
    assert np.mean(np.concatenate(integrated)) < np.mean(np.concatenate(plug))


def test_mace_draws_score_with_drawn_parameters():
    """A model at a Gibbs draw predicts with the drawn θ and ξ (not with the
    fit's variational weights, which the draw does not set)."""
    ratings, _, _, _ = _mace_data(np.random.default_rng(8), n_items=60)
    model = MACE(random_state=0).fit(ratings)
    draws = posterior_samples(model, ratings, 5, random_state=0)
    at = model_at(model, draws, 2)
    assert at.competence_posterior_ is None and model.competence_posterior_ is not None
    np.testing.assert_array_equal(at.rater_competence_, draws["rater_competence_"][2])
    assert not np.allclose(at.predict_proba(ratings), model.predict_proba(ratings))


# -- gold labels ---------------------------------------------------------------------
GOLD_MODELS = [
    lambda: DawidSkene(),
    lambda: MACE(random_state=0),
    lambda: GLAD(class_prior="learn"),
    lambda: IRT3PL(learn_item_prior=False, random_state=0),
]


@pytest.mark.parametrize("make", GOLD_MODELS, ids=["DawidSkene", "MACE", "GLAD", "IRT3PL"])
def test_samplers_condition_on_gold(make):
    """Known items keep their class in every drawn label set and in the
    integrated probabilities; the other items do not."""
    ratings, z, _, _ = _glad_data(np.random.default_rng(9), n_items=80)
    known = np.arange(0, 80, 4)
    # the opposite of what the truth would be for half the gold items, so
    # the ratings alone would not give them their gold class
    gold = z[known].copy()
    gold[::2] = 1 - gold[::2]
    y = dict(zip(known.tolist(), gold.tolist()))
    model = make().fit(ratings, y=y)
    labels = sample_labels(model, ratings, 30, y=y, random_state=0)
    np.testing.assert_array_equal(labels[:, known], np.broadcast_to(gold, (30, len(known))))
    proba = predict_proba(model, ratings, y=y, n_samples=30, random_state=0)
    np.testing.assert_array_equal(proba[known], np.eye(2)[gold])
    free = np.setdiff1d(np.arange(80), known)
    assert np.any(labels[:, free] != labels[:1, free])
    # without y, the same chain lets the flipped gold items follow their ratings
    unclamped = sample_labels(model, ratings, 30, random_state=0)
    assert np.any(unclamped[:, known] != gold)


def test_draws_given_or_bootstrapped_keep_gold():
    """Label sets and probabilities from given draws or from the bootstrap
    also hold the known items at their class."""
    ratings, z, _, _ = _glad_data(np.random.default_rng(14), n_items=40)
    known = np.arange(0, 40, 5)
    gold = 1 - z[known]
    y = dict(zip(known.tolist(), gold.tolist()))
    model = MACE(random_state=0).fit(ratings, y=y)
    draws = posterior_samples(model, ratings, 10, y=y, random_state=0)
    labels = model.sample_labels(ratings, samples=draws, y=y, random_state=0)
    np.testing.assert_array_equal(labels[:, known], np.broadcast_to(gold, (10, len(known))))
    proba = model.predict_proba_integrated(ratings, samples=draws, y=y)
    np.testing.assert_array_equal(proba[known], np.eye(2)[gold])
    boot = predict_proba(model, ratings, y=y, n_samples=3, method="bootstrap", random_state=0)
    np.testing.assert_array_equal(boot[known], np.eye(2)[gold])


def test_gold_moves_the_posterior():
    """Gold items inform the rater parameters: a rater who disagrees with
    every known label is drawn as less able than without the gold."""
    ratings, z, _, _ = _glad_data(np.random.default_rng(10), n_items=120)
    rater = ratings.to_long()["rater"].to_numpy()
    item = ratings.to_long()["item"].to_numpy()
    label = ratings.to_long()["label"].to_numpy()
    known = np.unique(item[rater == 0])[:40]
    # gold: the opposite of rater 0's labels
    first = {i: 1 - label[(item == i) & (rater == 0)][0] for i in known}
    model = DawidSkene().fit(ratings, y=first)
    with_gold = posterior_samples(model, ratings, 100, y=first, random_state=0)
    without = posterior_samples(model, ratings, 100, random_state=0)
    assert (with_gold["rater_accuracy_"][:, 0].mean()
            < without["rater_accuracy_"][:, 0].mean() - 0.1)


def test_gold_y_is_checked():
    ratings, _, _, _ = _glad_data(np.random.default_rng(11), n_items=40)
    model = DawidSkene().fit(ratings)
    with pytest.raises(ValueError):
        posterior_samples(model, ratings, 5, y={0: 7})


# -- the estimators' methods -------------------------------------------------------
@pytest.mark.parametrize("make", GOLD_MODELS, ids=["DawidSkene", "MACE", "GLAD", "IRT3PL"])
def test_posterior_methods_delegate(make):
    ratings, _, _, _ = _glad_data(np.random.default_rng(12), n_items=60)
    model = make().fit(ratings)
    draws = model.posterior_samples(ratings, 20, random_state=0)
    same = posterior_samples(model, ratings, 20, random_state=0)
    for key, value in draws.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, same[key])
    np.testing.assert_array_equal(
        model.predict_proba_integrated(ratings, n_samples=20, random_state=0),
        predict_proba(model, ratings, n_samples=20, random_state=0))
    np.testing.assert_array_equal(model.sample_labels(ratings, 10, random_state=1),
                                  sample_labels(model, ratings, 10, random_state=1))
    table = model.rater_table(ratings, interval=0.8, samples=draws)
    expected = rater_table(model, ratings, 0.8, samples=draws)
    assert table.equals(expected)
    plain = model.rater_table()
    assert not any(c.endswith("_lower") for c in plain.columns)
    for c in plain.columns:
        if c != "n_ratings":
            assert np.all(table[f"{c}_lower"] <= table[f"{c}_upper"])


def test_rater_table_interval_input_checks():
    ratings, _, _, _ = _glad_data(np.random.default_rng(13), n_items=40)
    model = MACE(random_state=0).fit(ratings)
    with pytest.raises(ValueError, match="needs the ratings"):
        model.rater_table(interval=0.9)
    with pytest.raises(ValueError, match="only with interval"):
        model.rater_table(ratings)
    with pytest.raises(ValueError, match="level"):
        model.rater_table(ratings, interval=1.5, n_samples=5)
