"""GLAD: kernels against numpy references, the monotone objective, recovery
of simulated parameters, accuracy on real data, degenerate and bad input."""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, logsumexp
from scipy.stats import norm, spearmanr
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, MajorityVote, Ratings
from skcrowd.cli import main as cli_main
from skcrowd.datasets import (load_bluebirds, load_dog, load_rte, load_trec2010, load_web,
                              make_glad)
from skcrowd._kernels import _glad as kernels


# -- numpy references ----------------------------------------------------------
def ref_class_loglik(rater, label, alpha, b, n_classes):
    """log p(ratings | z = k, b) for every k, straight from the model."""
    t = alpha[rater] * np.exp(b)
    log_right = -np.logaddexp(0, -t)  # log σ(t), without cancellation
    log_wrong = -np.logaddexp(0, t) - np.log(n_classes - 1)  # log (1 - σ(t)) / (K - 1)
    return np.array([np.sum(np.where(label == k, log_right, log_wrong))
                     for k in range(n_classes)])


def ref_item_loglik(rater, label, alpha, log_prior, b):
    """log Σ_k π_k p(ratings | z = k, b)."""
    return logsumexp(log_prior + ref_class_loglik(rater, label, alpha, b, len(log_prior)))


def ref_item_objective(rater, label, alpha, log_prior, b, b_mean, b_precision):
    return ref_item_loglik(rater, label, alpha, log_prior, b) - 0.5 * b_precision * (b - b_mean) ** 2


def small_problem(seed, n_items=12, n_raters=5, n_classes=3):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, size=n_items)
    counts[0] = 0  # an item without ratings
    counts[1] = 1  # an item with one rating
    item_ptr = np.zeros(n_items + 1, dtype=np.int64)
    item_ptr[1:] = np.cumsum(counts)
    n = item_ptr[-1]
    rater = rng.integers(0, n_raters, size=n).astype(np.int32)
    label = rng.integers(0, n_classes, size=n).astype(np.int32)
    alpha = rng.normal(0.8, 1.2, size=n_raters)
    prior = rng.dirichlet(np.ones(n_classes))
    return item_ptr, rater, label, alpha, np.log(prior)


@pytest.fixture(scope="module")
def simulated():
    """20k items x 10 ratings from the model's own priors (the issue's size)."""
    data = make_glad(20_000, 100, 10, 2, random_state=0, dense=False)
    model = GLAD().fit(data.ratings)
    return data, model


@pytest.fixture(scope="module")
def bluebirds():
    return load_bluebirds()


# -- kernels -----------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 3, 10])
def test_item_objective_matches_numpy(n_classes):
    item_ptr, rater, label, alpha, log_prior = small_problem(1, n_classes=n_classes)
    K = n_classes
    scratch = [np.empty(K) for _ in range(3)]
    for i in range(len(item_ptr) - 1):
        start, stop = item_ptr[i], item_ptr[i + 1]
        r, lab = rater[start:stop], label[start:stop]
        counts = np.bincount(lab, minlength=K).astype(float)
        for b in (-1.5, 0.3, 2.0):
            value, grad, hess = kernels.item_objective(
                start, stop, rater, label, alpha, log_prior, b, np.log(K - 1.0),
                1.0, 0.7, scratch[0], counts, scratch[2], np.empty(len(rater)))
            f = lambda x: ref_item_objective(r, lab, alpha, log_prior, x, 1.0, 0.7)  # noqa: E731
            h = 1e-4
            assert value == pytest.approx(f(b), rel=1e-12, abs=1e-12)
            assert grad == pytest.approx((f(b + h) - f(b - h)) / (2 * h), rel=1e-6, abs=1e-7)
            assert hess == pytest.approx(
                (f(b + h) - 2 * f(b) + f(b - h)) / h**2, rel=1e-4, abs=1e-4)
            log_post = log_prior + ref_class_loglik(r, lab, alpha, b, K)
            np.testing.assert_allclose(scratch[2], np.exp(log_post - logsumexp(log_post)),
                                       rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_item_step_finds_map_b_and_posterior(n_classes):
    item_ptr, rater, label, alpha, log_prior = small_problem(2, n_classes=n_classes)
    n_items, n_raters = len(item_ptr) - 1, len(alpha)
    log_beta = np.zeros(n_items)
    beta = np.empty(n_items)
    posterior = np.empty((n_items, n_classes))
    loglik = np.empty(n_items)
    stats = np.empty((3, n_raters, 4))
    kernels.item_step(item_ptr, rater, label, alpha, log_prior, np.zeros((0, len(log_prior))), 1.0, 1.0, 0, 1e-10,
                      np.linspace(-5, 7, 17), log_beta, beta, posterior, loglik, stats,
                      np.empty(len(rater)))
    np.testing.assert_allclose(beta, np.exp(log_beta))
    for i in range(n_items):
        r, lab = rater[item_ptr[i]:item_ptr[i + 1]], label[item_ptr[i]:item_ptr[i + 1]]
        f = lambda x: ref_item_objective(r, lab, alpha, log_prior, x, 1.0, 1.0)  # noqa: E731
        grid = np.linspace(-4, 5, 181)
        # The MAP: stationary, and no grid point is better.
        assert (f(log_beta[i] + 1e-5) - f(log_beta[i] - 1e-5)) / 2e-5 == pytest.approx(0, abs=1e-6)
        assert f(log_beta[i]) >= max(f(x) for x in grid) - 1e-9
        assert loglik[i] == pytest.approx(ref_item_loglik(r, lab, alpha, log_prior, log_beta[i]))
        log_post = log_prior + ref_class_loglik(r, lab, alpha, log_beta[i], n_classes)
        np.testing.assert_allclose(posterior[i], np.exp(log_post - logsumexp(log_post)))
    assert loglik[0] == 0 and log_beta[0] == pytest.approx(1.0)  # no ratings: the prior
    np.testing.assert_allclose(posterior[0], np.exp(log_prior))

    # The fused rater statistics against a numpy reference.
    fused = np.column_stack([stats[:, :, :3].sum(axis=0), stats[:, :, 3].max(axis=0)])
    item = np.repeat(np.arange(n_items), np.diff(item_ptr)).astype(np.int32)
    s = expit(alpha[rater] * beta[item])
    c = posterior[item, label]
    ref = np.stack([
        np.bincount(rater, (c - s) * beta[item], minlength=n_raters),
        -np.bincount(rater, s * (1 - s) * beta[item] ** 2, minlength=n_raters),
        np.bincount(rater, beta[item] ** 2 / 4, minlength=n_raters),
        [beta[item][rater == j].max(initial=0.0) for j in range(n_raters)],
    ], axis=1)
    np.testing.assert_allclose(fused, ref, rtol=1e-12, atol=1e-12)


# Two items of TREC 2010 at GLAD's fitted abilities (K = 4, uniform π): each
# has two modes in b, and the better mode's grid maximum is the lower one.
_TWO_MODE_ITEMS = [
    ([-0.6372368654299246, -1.3181982163029378, -0.7598627480202942,
      -0.07542021178853947, -0.1991232275963118], [1, 3, 1, 3, 1]),
    ([-1.3181982163029378, -0.13151858189422075, -0.994432441450511,
      -0.2075012548515695, -0.2697687747172507], [3, 3, 3, 3, 3]),
]


@pytest.mark.parametrize("alpha, label", _TWO_MODE_ITEMS)
def test_item_search_ascends_from_both_grid_maxima(alpha, label):
    """The search ran its second ascent only when that grid maximum's
    value beat the first ascent's mode; here it does not, yet its mode is
    the better one, so predict ended in the poorer mode (b = 1.570 and
    1.809, where the MAP is 0.484 and -0.273) and disagreed with
    fit_predict on these items of TREC 2010."""
    alpha = np.asarray(alpha)
    label = np.asarray(label, dtype=np.int32)
    rater = np.arange(len(alpha), dtype=np.int32)
    log_prior = np.log(np.full(4, 0.25))
    item_ptr = np.array([0, len(label)], dtype=np.int64)
    log_beta = np.zeros(1)
    grid = 1.0 + 0.75 * np.arange(-8, 9)  # GLAD's: the prior mean ± 6 sd
    kernels.item_step(item_ptr, rater, label, alpha, log_prior, np.zeros((0, 4)), 1.0, 1.0, 0,
                      1e-9, grid, log_beta, np.empty(1), np.empty((1, 4)), np.empty(1),
                      np.empty((0, len(alpha), 4)), np.empty(len(label)))
    f = lambda x: ref_item_objective(rater, label, alpha, log_prior, x, 1.0, 1.0)  # noqa: E731
    fine = np.linspace(-5, 7, 4801)
    values = np.array([f(x) for x in fine])
    # two modes, the grid's better maximum leading to the poorer one
    assert np.sum((values[1:-1] > values[:-2]) & (values[1:-1] > values[2:])) == 2
    assert f(log_beta[0]) >= values.max() - 1e-9
    assert abs(log_beta[0] - fine[values.argmax()]) < 5e-3


def test_item_marginal_matches_adaptive_quadrature():
    item_ptr, rater, label, alpha, log_prior = small_problem(3, n_classes=3)
    n_items = len(item_ptr) - 1
    x, w = np.polynomial.hermite.hermgauss(60)
    nodes = 1.0 + np.sqrt(2.0) * x
    loglik = np.empty(n_items)
    node_post = np.empty((n_items, len(nodes)))
    kernels.item_marginal(item_ptr, rater, label, alpha, log_prior, nodes,
                          np.log(w / np.sqrt(np.pi)), loglik, node_post)
    for i in range(n_items):
        r, lab = rater[item_ptr[i]:item_ptr[i + 1]], label[item_ptr[i]:item_ptr[i + 1]]
        value, _ = integrate.quad(
            lambda b: np.exp(ref_item_loglik(r, lab, alpha, log_prior, b)) * norm.pdf(b, 1, 1),
            -12, 14, epsabs=0, epsrel=1e-11, limit=200)
        assert loglik[i] == pytest.approx(np.log(value), abs=1e-7)
    np.testing.assert_allclose(node_post.sum(axis=1), 1.0)
    assert loglik[0] == pytest.approx(0.0, abs=1e-12)


# -- the fit -----------------------------------------------------------------
@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_objective_never_decreases(n_classes, class_prior):
    data = make_glad(400, 15, 4, n_classes, spammer_fraction=0.2,
                     class_prior=np.arange(1, n_classes + 1) / np.arange(1, n_classes + 1).sum(),
                     random_state=n_classes)
    for init, seed in (("majority", 0), ("random", 1)):
        model = GLAD(class_prior=class_prior, init=init, random_state=seed, max_iter=300,
                     tol=0).fit(data.ratings)
        history = model.objective_history_
        assert model.n_iter_ == 300
        # a rejected extrapolation is not a kept state; the last entry is
        # the final item pass (the search over each b_i)
        assert len(history) <= 302
        assert np.all(np.isfinite(history))
        assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))


def test_objective_never_decreases_on_real_data(bluebirds):
    model = GLAD(max_iter=400, tol=0).fit(bluebirds.ratings)
    history = model.objective_history_
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))
    assert history[-1] > history[0]


def test_fit_predict_equals_fit_then_predict(bluebirds):
    model = GLAD(tol=1e-8, max_iter=2000)
    labels = model.fit_predict(bluebirds.ratings)
    assert model.converged_
    np.testing.assert_array_equal(labels, model.predict(bluebirds.ratings))
    fitted_b = -np.log(model.item_difficulty_)
    proba = model.predict_proba(bluebirds.ratings)
    refit = GLAD(tol=1e-8, max_iter=2000)
    np.testing.assert_allclose(refit.fit(bluebirds.ratings).predict_proba(bluebirds.ratings),
                               proba, rtol=0, atol=1e-12)
    # predict re-finds each item's MAP b from the prior mean.
    items = model._infer_items(model._encode(bluebirds.ratings, reset=False))
    np.testing.assert_allclose(items["log_beta"], fitted_b, atol=1e-3)


def test_recovers_simulated_parameters(simulated):
    data, model = simulated
    assert model.converged_
    assert spearmanr(model.rater_ability_, data.rater_ability)[0] > 0.99
    accuracy = np.mean(model.predict(data.ratings) == data.true_labels)
    majority = np.mean(MajorityVote().fit_predict(data.ratings) == data.true_labels)
    assert accuracy > 0.98 and accuracy > majority + 0.01
    # Difficulties: 10 ratings carry little information about one item, so
    # compare with the best possible estimate, the MAP b_i given the TRUE
    # abilities (both about 0.72 here, see doc/glad.rst).
    oracle = GLAD(max_iter=0).fit(data.ratings)
    oracle.rater_ability_ = data.rater_ability
    best = oracle._infer_items(oracle._encode(data.ratings, reset=False))["log_beta"]
    fitted = spearmanr(model.item_difficulty_, data.item_difficulty)[0]
    assert fitted > spearmanr(np.exp(-best), data.item_difficulty)[0] - 0.01
    assert fitted > 0.7


def test_recovers_difficulty_with_many_ratings_per_item():
    data = make_glad(1_000, 60, 50, 2, random_state=3, dense=False)
    model = GLAD(max_iter=150, tol=1e-4).fit(data.ratings)
    assert spearmanr(model.item_difficulty_, data.item_difficulty)[0] > 0.9
    assert spearmanr(model.rater_ability_, data.rater_ability)[0] > 0.9


# crowd-kit 1.4.2's GLAD on the same files (the issue's reference numbers)
CROWDKIT = {"rte": 0.9250, "bluebirds": 0.7222, "dog": 0.8340, "web": 0.8217}


@pytest.mark.parametrize(
    "name, loader",
    [("rte", load_rte), ("bluebirds", load_bluebirds), ("dog", load_dog), ("web", load_web)],
)
def test_accuracy_on_gold_not_below_crowdkit(name, loader):
    data = loader()
    labels = GLAD().fit_predict(data.ratings)
    known = ~np.isnan(data.gold)
    accuracy = np.mean(labels[known] == data.gold[known])
    assert accuracy >= CROWDKIT[name] - 0.005


def test_results_do_not_depend_on_n_jobs():
    data = make_glad(3_000, 30, 5, 3, random_state=4)
    one = GLAD(n_jobs=1, max_iter=30, tol=0).fit(data.ratings)
    two = GLAD(n_jobs=2, max_iter=30, tol=0).fit(data.ratings)
    np.testing.assert_array_equal(one.rater_ability_, two.rater_ability_)
    np.testing.assert_array_equal(one.item_difficulty_, two.item_difficulty_)
    np.testing.assert_array_equal(one.objective_history_, two.objective_history_)
    np.testing.assert_array_equal(one.score_samples(data.ratings), two.score_samples(data.ratings))


# -- score_samples, predict on new items, sample -----------------------------------------
def test_score_samples_integrates_b_over_its_prior():
    data = make_glad(50, 8, 3, 3, random_state=5)
    model = GLAD(max_iter=20).fit(data.X)
    scores = model.score_samples(data.X)
    for i in (0, 7, 31):
        rated = ~np.isnan(data.X[i])
        r = np.flatnonzero(rated)
        lab = np.searchsorted(model.classes_, data.X[i, rated])
        value, _ = integrate.quad(
            lambda b: np.exp(ref_item_loglik(r, lab, model.rater_ability_,
                                             np.log(model.class_prior_), b)) * norm.pdf(b, 1, 1),
            -12, 14, epsabs=0, epsrel=1e-11, limit=200)
        assert scores[i] == pytest.approx(np.log(value), abs=1e-6)
    assert model.score(data.X) == pytest.approx(scores.mean())


def test_new_items_use_fitted_abilities():
    data = make_glad(600, 10, 5, 2, random_state=6)
    model = GLAD().fit(data.X[:500])
    X_new = data.X[500:].copy()
    X_new[0] = np.nan  # an item nobody rated gets the class prior
    proba = model.predict_proba(X_new)
    np.testing.assert_allclose(proba[0], model.class_prior_)
    assert model.score_samples(X_new)[0] == 0.0
    assert np.mean(model.predict(X_new)[1:] == data.true_labels[501:]) > 0.9
    # A rater the model trusts outvotes two it distrusts.
    best, worst = np.argsort(model.rater_ability_)[[-1, 0]]
    second = np.argsort(model.rater_ability_)[1]
    X = np.full((1, 10), np.nan)
    X[0, best], X[0, worst], X[0, second] = 1, 0, 0
    assert model.rater_ability_[best] > model.rater_ability_[worst] + model.rater_ability_[second]
    assert model.predict(X)[0] == 1


def test_sample_keeps_the_design():
    data = make_glad(300, 12, 4, 3, random_state=7)
    model = GLAD().fit(data.ratings)
    simulated = model.sample(data.ratings, random_state=0)
    assert isinstance(simulated, Ratings)
    np.testing.assert_array_equal(simulated.item, data.ratings.item)
    np.testing.assert_array_equal(simulated.rater, data.ratings.rater)
    assert set(np.unique(simulated.label)) <= set(model.classes_)
    # Refitting the simulated ratings finds similar raters.
    refit = GLAD().fit(simulated)
    assert spearmanr(refit.rater_ability_, model.rater_ability_)[0] > 0.6


# -- degenerate data and bad input -----------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 10])
def test_degenerate_raters_and_items_give_finite_output(n_classes):
    data = make_glad(200, 12, 3, n_classes, random_state=8)
    X = data.X.copy()
    X[:, 0] = np.where(np.isnan(X[:, 0]), np.nan, 0)  # always the same label
    X[:, 1] = np.nan
    X[5, 1] = 1  # a rater seen once
    X[7] = np.nan
    X[7, 2] = 1  # an item with one rating
    X[9] = np.nan  # an item with none
    X_copy = X.copy()
    model = GLAD().fit(X)
    np.testing.assert_array_equal(X, X_copy)  # input untouched
    for values in (model.rater_ability_, model.item_difficulty_, model.class_prior_,
                   model.predict_proba(X), model.score_samples(X), model.objective_history_):
        assert np.all(np.isfinite(values))
    assert model.predict_proba(X).shape == (200, n_classes)
    np.testing.assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)
    assert model.item_difficulty_[9] == pytest.approx(np.exp(-1.0))
    assert np.all(np.diff(model.objective_history_) >= -1e-12 * np.abs(model.objective_history_[1:]))


def test_all_raters_agree_and_single_class():
    X = np.array([[1, 1, 1], [0, 0, np.nan], [1, np.nan, 1]], dtype=float)
    model = GLAD().fit(X)
    np.testing.assert_array_equal(model.predict(X), [1, 0, 1])
    assert np.all(np.isfinite(model.rater_ability_))
    with pytest.warns(UserWarning, match="only one class"):
        single = GLAD().fit(np.ones((4, 3)))
    np.testing.assert_allclose(single.predict_proba(np.ones((4, 3))), 1.0)
    assert np.all(np.isfinite(single.score_samples(np.ones((4, 3)))))


@pytest.mark.parametrize(
    "params",
    [
        {"alpha_prior_std": 1e-160},  # ZeroDivisionError (precision 1 / 0)
        {"alpha_prior_std": 1e160},  # OverflowError (std ** 2)
        {"alpha_prior_mean": 1e200},  # objective -inf, 500 iterations
        {"b_prior_std": 1e-160},  # did not converge
    ],
)
def test_prior_scales_beyond_float_range_are_refused(params):
    X = np.array([[0, 1], [1, 1], [0, np.nan]], dtype=float)
    with pytest.raises(ValueError, match=next(iter(params))):
        GLAD(**params).fit(X)
    bound = {"alpha_prior_std": 1e-100, "alpha_prior_mean": 1e100, "b_prior_std": 1e-100}
    name = next(iter(params))
    model = GLAD(**{name: bound[name]}).fit(X)  # the edge itself fits
    assert np.all(np.isfinite(model.score_samples(X)))


def test_bad_input_raises_clear_errors():
    X = np.array([[0, 1], [1, 1], [0, np.nan]], dtype=float)
    with pytest.raises(ValueError, match="class_prior"):
        GLAD(class_prior=[0.2, 0.2]).fit(X)
    with pytest.raises(ValueError, match="class_prior"):
        GLAD(class_prior="often").fit(X)
    with pytest.raises(ValueError, match="b_prior_std"):
        GLAD(b_prior_std=0).fit(X)
    with pytest.raises(ValueError, match="alpha_prior_mean"):
        GLAD(alpha_prior_mean=np.inf).fit(X)
    with pytest.raises(ValueError, match="b_prior_std"):
        GLAD(b_prior_std=np.inf).fit(X)
    with pytest.raises(ValueError, match="[Ii]nf"):
        GLAD().fit(np.array([[0, np.inf], [1, 1]]))
    with pytest.raises(ValueError, match="no ratings"):
        GLAD().fit(np.full((3, 2), np.nan))
    model = GLAD().fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but GLAD is expecting 2"):
        model.predict(np.array([[0, 1, 1]]))
    with pytest.raises(ValueError, match="Label 7 is not one of the classes"):
        model.predict(np.array([[0, 7]]))


def test_fixed_class_prior_is_kept():
    data = make_glad(300, 10, 4, 3, random_state=9)
    model = GLAD(class_prior=[0.5, 0.3, 0.2]).fit(data.ratings)
    np.testing.assert_allclose(model.class_prior_, [0.5, 0.3, 0.2])
    learned = GLAD(class_prior="learn").fit(data.ratings)
    assert np.all(learned.class_prior_ > 0) and learned.class_prior_.sum() == pytest.approx(1)


def test_cli_aggregate_with_glad(tmp_path, capsys):
    data = make_glad(60, 6, 3, 2, random_state=10)
    path = tmp_path / "ratings.csv"
    import pandas as pd

    pd.DataFrame(data.ratings.to_long()).to_csv(path, index=False)
    assert cli_main(["aggregate", str(path), "--model", "glad"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("item,label,probability")
    assert len(out) == 61


def test_make_glad_follows_the_model():
    data = make_glad(20_000, 40, 5, 3, spammer_fraction=0.2, random_state=11, dense=False)
    R = data.ratings
    assert R.shape == (20_000, 40) and R.n_ratings == 100_000
    assert "X" not in data
    # Distinct raters per item.
    pairs = R._item.astype(np.int64) * 40 + R._rater
    assert len(np.unique(pairs)) == R.n_ratings
    np.testing.assert_array_equal(data.rater_ability[data.spammer], 0.0)
    np.testing.assert_allclose(data.item_difficulty, np.exp(-data.log_beta))
    # The rate of correct labels matches σ(α β) in bins of that probability.
    item = np.repeat(np.arange(20_000), np.diff(R._item_ptr))
    p = expit(data.rater_ability[R._rater] * np.exp(data.log_beta[item]))
    correct = R.label == data.true_labels[item]
    bins = np.digitize(p, [0.2, 0.4, 0.6, 0.8, 0.95])
    for b in np.unique(bins):
        in_bin = bins == b
        if in_bin.sum() > 2000:
            assert correct[in_bin].mean() == pytest.approx(p[in_bin].mean(), abs=0.02)
    # Wrong labels are uniform over the other classes.
    wrong_offset = (R.label - data.true_labels[item])[~correct] % 3
    assert np.mean(wrong_offset == 1) == pytest.approx(0.5, abs=0.02)


# -- the monitored objective, computed independently ---------------------------
TINY = np.array([[0, 0, 1, np.nan], [1, 1, np.nan, 1], [0, 1, 1, 2], [2, 2, 2, 0],
                 [0, np.nan, 2, 0], [1, 0, 1, 1], [np.nan, 2, 2, 2]])


def _glad_log_posterior(model, X):
    """Mean over items of log Σ_k π_k Π_j p(x_ij | z = k, α_j, b_i) plus the
    log priors N(α_j), N(b_i) (and π's Dirichlet kernel when π is learned),
    straight from the model: P(right) = σ(α_j e^{b_i}), a wrong label
    (1 - σ) / (K - 1); b_i = -log item_difficulty_."""
    K = len(model.classes_)
    alpha, prior = model.rater_ability_, model.class_prior_
    b = -np.log(model.item_difficulty_)
    total = 0.0
    for i, row in enumerate(X):
        rated = np.flatnonzero(~np.isnan(row))
        labels = np.searchsorted(model.classes_, row[rated])
        p_right = expit(alpha[rated] * np.exp(b[i]))
        per_class = [np.sum(np.log(np.where(labels == k, p_right, (1 - p_right) / (K - 1))))
                     for k in range(K)]
        total += logsumexp(np.log(prior) + per_class)
    total += np.sum(norm.logpdf(alpha, model.alpha_prior_mean, model.alpha_prior_std))
    total += np.sum(norm.logpdf(b, model.b_prior_mean, model.b_prior_std))
    if model.class_prior == "learn":
        total += model.prior_class * np.sum(np.log(prior))
    return total / len(X)


@pytest.mark.parametrize("class_prior", ["uniform", "learn", [0.5, 0.3, 0.2]])
@pytest.mark.parametrize("accelerate", [True, False])
def test_objective_is_the_marginal_log_posterior(class_prior, accelerate):
    """lower_bound_ is the marginal log posterior per item at the fitted α,
    π and the items' b (item_difficulty_), priors included; at the start and
    after a few iterations too."""
    kwargs = dict(class_prior=class_prior, alpha_prior_mean=0.7, alpha_prior_std=1.3,
                  b_prior_mean=0.4, b_prior_std=0.8, prior_class=1.5, accelerate=accelerate)
    model = GLAD(tol=1e-10, max_iter=500, **kwargs).fit(TINY)
    assert model.converged_
    assert model.lower_bound_ == pytest.approx(_glad_log_posterior(model, TINY), rel=1e-10)
    for max_iter in (0, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            early = GLAD(max_iter=max_iter, tol=0, **kwargs).fit(TINY)
        assert early.lower_bound_ == pytest.approx(_glad_log_posterior(early, TINY),
                                                   rel=1e-10), max_iter
    # a prior term left out would show: the priors weigh in on this data
    assert abs(np.sum(norm.logpdf(model.rater_ability_, 0.7, 1.3))) / len(TINY) > 0.1


# -- fit_predict and predict find the same item mode -------------------------------------
def _glad_item_objective(model, X, i, b):
    """Item i's log posterior at each b (numpy), at the fitted abilities
    (the Gaussian prior's constant left out)."""
    b = np.atleast_1d(np.asarray(b, dtype=float))
    rated = np.flatnonzero(~np.isnan(X[i]))
    labels = np.searchsorted(model.classes_, X[i, rated])
    K = len(model.classes_)
    t = model.rater_ability_[rated][None, :] * np.exp(b)[:, None]
    right = -np.logaddexp(0, -t)
    wrong = -np.logaddexp(0, t) - np.log(K - 1)
    ll = np.stack([np.where(labels == k, right, wrong).sum(axis=1) for k in range(K)], axis=1)
    return (logsumexp(np.log(model.class_prior_) + ll, axis=1)
            - 0.5 * (b - model.b_prior_mean) ** 2 / model.b_prior_std ** 2)


def test_fit_predict_equals_fit_then_predict_on_two_modes():
    """Non-regression: fit_predict differed from fit().predict (an item with two modes in b)."""
    X = np.random.default_rng(22).integers(0, 6, (18, 8)).astype(float)
    labels = GLAD(random_state=0).fit_predict(X)
    model = GLAD(random_state=0).fit(X)
    np.testing.assert_array_equal(labels, model.predict(X))
    # Item 13 had two modes in b (one per class); the fit keeps the better.
    grid = np.linspace(-5, 7, 2401)
    b_fit = -np.log(model.item_difficulty_[13])
    assert _glad_item_objective(model, X, 13, b_fit)[0] >= _glad_item_objective(
        model, X, 13, grid).max() - 1e-9


def test_item_inference_is_the_global_map_in_both_paths():
    """Non-regression: fit_predict and predict ended at different modes of b.

    On random sets with K = 6 and 8 raters (where 4 of 40 differed):
    fit_predict equals predict, and every training item's b is the best
    point of a fine grid."""
    grid = np.linspace(-5, 7, 601)
    for seed in range(40):
        X = np.random.default_rng(seed).integers(0, 6, (18, 8)).astype(float)
        model = GLAD(random_state=0)
        labels = model.fit_predict(X)
        np.testing.assert_array_equal(labels, model.predict(X), err_msg=f"seed {seed}")
        items = model._infer_items(model._encode(X, reset=False))
        np.testing.assert_allclose(items["log_beta"], -np.log(model.item_difficulty_),
                                   atol=1e-4, err_msg=f"seed {seed}")
        for i in range(len(X)):
            best = _glad_item_objective(model, X, i, grid).max()
            assert _glad_item_objective(model, X, i, items["log_beta"][i])[0] >= best - 1e-7


def test_fit_predict_equals_predict_on_trec2010():
    """Non-regression: fit_predict and predict disagreed on 2 TREC items.

    On TREC 2010 the default GLAD's fit_predict and predict disagreed on
    2 of 20,232 items: predict's search skipped the ascent that reaches the
    item's better mode (tests/test_glad.py has the two items)."""
    ratings = load_trec2010().ratings
    model = GLAD()
    labels = model.fit_predict(ratings)
    np.testing.assert_array_equal(np.asarray(labels), np.asarray(model.predict(ratings)))


# -- scores for wide b priors and many quadrature nodes ----------------------------------
@pytest.fixture(scope="module")
def binary_X():
    return np.random.default_rng(0).integers(0, 2, (30, 5)).astype(float)


@pytest.mark.parametrize("b_prior_std", [30.0, 100.0])
def test_score_is_finite_for_a_wide_b_prior(binary_X, b_prior_std):
    """Non-regression: the score was NaN for a wide b prior."""
    model = GLAD(b_prior_std=b_prior_std).fit(binary_X)
    assert np.all(np.isfinite(model.score_samples(binary_X)))
    assert np.all(np.isfinite(model.predict_proba(binary_X)))
    assert np.all(np.isfinite(model.objective_history_))


def test_score_with_many_quadrature_nodes_matches_a_few(binary_X):
    """Non-regression: the score was -inf from ~400 quadrature nodes (NaN weights)."""
    few = GLAD(n_quadrature=60).fit(binary_X)
    for n in (300, 500, 2000):
        many = GLAD(n_quadrature=n).fit(binary_X)
        np.testing.assert_allclose(many.score_samples(binary_X), few.score_samples(binary_X),
                                   rtol=0, atol=1e-8)


def test_b_prior_std_beyond_100_is_a_clear_error(binary_X):
    """Non-regression: b_prior_std=1e3 gave a NaN fit instead of an error."""
    with pytest.raises(ValueError, match="b_prior_std"):
        GLAD(b_prior_std=1e3).fit(binary_X)


def test_score_for_a_wide_prior_converges_to_adaptive_quadrature(binary_X):
    """Non-regression: a wide prior's score was far from the integral.

    A wide prior needs many nodes (measured: error 0.024 with 200 nodes
    and b_prior_std=10, 2e-4 with 1000): the error shrinks as they grow."""
    def errors(n_quadrature):
        model = GLAD(b_prior_std=10.0, n_quadrature=n_quadrature).fit(binary_X)
        scores = model.score_samples(binary_X)
        out = []
        for i in (0, 1, 2):
            value, _ = integrate.quad(
                lambda b: np.exp(_glad_item_objective(model, binary_X, i, b)[0]
                                 + 0.5 * ((b - 1) / 10.0) ** 2) * stats.norm.pdf(b, 1, 10.0),
                -60, 60, points=[-5, 0, 5, 10], epsabs=0, epsrel=1e-10, limit=500)
            out.append(abs(scores[i] - np.log(value)))
        return np.max(out)

    coarse, fine = errors(200), errors(1000)
    assert fine < 1e-3 and fine < coarse / 10


def test_item_objective_is_finite_far_out_in_b():
    """Non-regression: exp(±b) overflowed in the item objective far out in b."""
    rater = np.array([0, 1, 2], dtype=np.int32)
    label = np.array([0, 1, 1], dtype=np.int32)
    alpha = np.array([0.0, 2.0, -3.0])
    for b in (-800.0, 50.0, 800.0, 1e5):
        value, gradient, hessian = kernels.item_objective(
            0, 3, rater, label, alpha, np.log([0.5, 0.5]), b, 0.0, 1.0, 1e-8,
            np.empty(2), np.array([1.0, 2.0]), np.empty(2), np.empty(3))
        assert np.isfinite(value) and np.isfinite(gradient) and np.isfinite(hessian)
