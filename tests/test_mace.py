"""MACE: kernel against numpy, monotone EM/VB, recovery, exact scores,
accuracy on real gold against crowd-kit."""

import itertools
import warnings

import numpy as np
import pytest
from scipy.special import betaln, digamma, gammaln, logsumexp
from scipy.stats import spearmanr
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

from skcrowd import MACE, MajorityVote, Ratings
from skcrowd._kernels import _mace as kernels
from skcrowd._ratings import RatingData
from skcrowd.datasets import (
    load_bluebirds,
    load_dog,
    load_rte,
    load_web,
    make_dawid_skene,
    make_mace,
)


@pytest.fixture(scope="module")
def simulated():
    return make_mace(8000, 50, 5, 3, spammer_fraction=0.2, random_state=0)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    n_items, n_raters, K = 40, 7, 4
    item = rng.integers(0, n_items, 160)
    rater = rng.integers(0, n_raters, 160)
    label = rng.integers(0, K, 160)
    R = Ratings(item, rater, label, item_ids=np.arange(n_items + 2),
                rater_ids=np.arange(n_raters))
    data = RatingData(R._item, R._rater, R.label.astype(np.int32), R._item_ptr, n_raters, K)
    return data, rng


def _label_probability(theta, xi):
    """P[j, l, k] = P(rater j says l | true class k) = θ_j [l = k] + (1 - θ_j) ξ_j[l]."""
    K = xi.shape[1]
    return theta[:, None, None] * np.eye(K) + ((1 - theta)[:, None] * xi)[:, :, None]


def _reference(data, prior, theta, xi):
    P = _label_probability(theta, xi)
    logp = np.tile(np.log(prior), (data.n_items, 1))
    np.add.at(logp, data.item, np.log(P[data.rater, data.label]))
    top = logp.max(axis=1, keepdims=True)
    loglik = top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))
    posterior = np.exp(logp - loglik[:, None])
    know = np.zeros((data.n_raters, data.n_classes))
    for n in range(data.n_ratings):
        j, l, i = data.rater[n], data.label[n], data.item[n]
        know[j, l] += posterior[i, l] * theta[j] / (theta[j] + (1 - theta[j]) * xi[j, l])
    return posterior, loglik, know


@pytest.mark.parametrize("n_chunks", [1, 3, 7])
def test_e_step_matches_numpy(small, n_chunks):
    data, rng = small
    J, K = data.n_raters, data.n_classes
    prior = rng.dirichlet(np.ones(K))
    theta = rng.uniform(0.05, 0.95, J)
    xi = rng.dirichlet(np.ones(K), size=J)
    params = {"log_prior": np.log(prior), "log_know": np.log(theta),
              "log_spam": np.log1p(-theta), "log_strategy": np.log(xi)}
    off, gain, share = MACE()._cell_tables(params)
    chunk_ptr = np.linspace(0, data.n_items, n_chunks + 1).astype(np.int64)
    post, ll = np.empty((data.n_items, K)), np.empty(data.n_items)
    know, klass = np.empty((n_chunks, J * K)), np.empty((n_chunks, K))
    kernels.e_step(data.item_ptr, data.label, data.cell, np.log(prior), np.zeros((0, K)),
                   off, gain, share,
                   chunk_ptr, post, ll, know, klass)
    ref_post, ref_ll, ref_know = _reference(data, prior, theta, xi)
    np.testing.assert_allclose(post, ref_post, rtol=1e-12, atol=1e-14)
    # atol: the reference rounds log Σ π of an item without ratings (0 here)
    np.testing.assert_allclose(ll, ref_ll, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(know.sum(axis=0).reshape(J, K), ref_know, rtol=1e-12)
    np.testing.assert_allclose(klass.sum(axis=0), ref_post.sum(axis=0), rtol=1e-12)
    # an item without ratings: the prior, log-likelihood 0
    np.testing.assert_allclose(post[-1], prior)
    assert ll[-1] == pytest.approx(0.0, abs=1e-15)


def test_e_step_with_a_perfect_rater_and_a_label_never_spammed(small):
    # θ = 1 in float (log(1 - θ) = -inf) and ξ_l = 0 made the tables' off
    # -inf and gain +inf, and the e-step divided by zero (a ZeroDivisionError
    # at predict after MACE(method="em", smoothing=1e-300)).
    data, rng = small
    J, K = data.n_raters, data.n_classes
    prior = np.full(K, 1 / K)
    theta = rng.uniform(0.05, 0.95, J)
    theta[0] = 1.0
    xi = rng.dirichlet(np.ones(K), size=J)
    xi[1] = [0.0, 0.5, 0.5, 0.0][:K]
    # items whose ratings a perfect rater contradicts have probability 0;
    # keep the items where every rating is possible
    with np.errstate(divide="ignore", invalid="ignore"):  # log 0, -inf - -inf
        params = {"log_prior": np.log(prior), "log_know": np.log(theta),
                  "log_spam": np.log1p(-theta), "log_strategy": np.log(xi)}
        ref_post, ref_ll, ref_know = _reference(data, prior, theta, xi)
    off, gain, share = MACE()._cell_tables(params)
    assert np.all(np.isfinite(off)) and np.all(np.isfinite(gain))
    chunk_ptr = np.array([0, data.n_items], dtype=np.int64)
    post, ll = np.empty((data.n_items, K)), np.empty(data.n_items)
    know, klass = np.empty((1, J * K)), np.empty((1, K))
    kernels.e_step(data.item_ptr, data.label, data.cell, np.log(prior), np.zeros((0, K)),
                   off, gain, share, chunk_ptr, post, ll, know, klass)
    possible = np.isfinite(ref_ll)
    assert possible.sum() > 10 and not possible.all()
    assert np.all(np.isfinite(post)) and np.all(np.isfinite(ll))
    np.testing.assert_allclose(post[possible], ref_post[possible], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(ll[possible], ref_ll[possible], rtol=1e-12, atol=1e-15)
    # an impossible item gets a log-likelihood below any possible one's
    assert ll[~possible].max() < -700


def test_start_counts_match_numpy(small):
    data, rng = small
    J, K = data.n_raters, data.n_classes
    posterior = rng.dirichlet(np.ones(K), size=data.n_items)
    know, count, klass = np.full(J * K, 7.0), np.full(J * K, 7.0), np.full(K, 7.0)
    kernels.start_counts(data.item_ptr, data.label, data.cell, posterior, 0.8, know, count,
                         klass)
    ref_know, ref_count = np.zeros((J, K)), np.zeros((J, K))
    for n in range(data.n_ratings):
        i, j, l = data.item[n], data.rater[n], data.label[n]
        ref_know[j, l] += 0.8 * posterior[i, l]
        ref_count[j, l] += 1
    np.testing.assert_allclose(know.reshape(J, K), ref_know, rtol=1e-13)
    np.testing.assert_array_equal(count.reshape(J, K), ref_count)
    np.testing.assert_allclose(klass, posterior.sum(axis=0), rtol=1e-13)


def test_digamma_matches_scipy():
    x = np.concatenate([np.geomspace(1e-3, 1e6, 400), [0.5, 1.0, 9.999, 10.0, 10.001]])
    ours = np.array([kernels.digamma(v) for v in x])
    np.testing.assert_allclose(ours, digamma(x), rtol=1e-13, atol=1e-13)


def _kl_beta(a, b, a0, b0):
    psi = digamma(a + b)
    return (betaln(a0, b0) - betaln(a, b) + (a - a0) * (digamma(a) - psi)
            + (b - b0) * (digamma(b) - psi))


def _kl_dirichlet(c, c0):
    K, total = c.shape[1], c.sum(axis=1)
    e_log = digamma(c) - digamma(total)[:, None]
    return (gammaln(total) - gammaln(c).sum(axis=1) - gammaln(K * c0) + K * gammaln(c0)
            + ((c - c0) * e_log).sum(axis=1))


@pytest.mark.parametrize("variational", [True, False])
def test_rater_update_matches_numpy(variational):
    rng = np.random.default_rng(1)
    J, K = 6, 3
    count = rng.integers(0, 50, J * K).astype(float)
    count[:K] = 0  # a rater without ratings
    know = np.zeros(J * K)
    know[:] = count * rng.uniform(0, 1, J * K)
    out = [np.empty(J), np.empty(J), np.empty((J, K)), np.empty(J), np.empty(J),
           np.empty((J, K)), np.empty(J * K), np.empty(J * K), np.empty(J * K)]
    a0, b0, c0, s = 0.5, 0.7, 10.0, 0.01
    term = kernels.rater_update(know, count, variational, a0, b0, c0, s, *out)
    log_know, log_spam, log_strategy, knowing, spamming, strategy = out[:6]
    tables = MACE()._cell_tables({"log_know": log_know, "log_spam": log_spam,
                                  "log_strategy": log_strategy})
    for made, expected in zip(out[6:], tables):
        np.testing.assert_array_equal(made, expected)
    known = know.reshape(J, K).sum(axis=1)
    spam = (count - know).reshape(J, K)
    if variational:
        a, b, c = known + a0, spam.sum(axis=1) + b0, spam + c0
        np.testing.assert_allclose(knowing, a)
        np.testing.assert_allclose(spamming, b)
        np.testing.assert_allclose(strategy, c)
        np.testing.assert_allclose(log_know, digamma(a) - digamma(a + b), rtol=1e-12)
        np.testing.assert_allclose(log_spam, digamma(b) - digamma(a + b), rtol=1e-12)
        np.testing.assert_allclose(
            log_strategy, digamma(c) - digamma(c.sum(axis=1, keepdims=True)), rtol=1e-12)
        expected = -np.sum(_kl_beta(a, b, a0, b0)) - np.sum(_kl_dirichlet(c, c0))
    else:
        theta = (known + s) / (count.reshape(J, K).sum(axis=1) + 2 * s)
        xi = (spam + s) / (spam.sum(axis=1, keepdims=True) + K * s)
        np.testing.assert_allclose(np.exp(log_know), theta, rtol=1e-12)
        np.testing.assert_allclose(np.exp(log_spam), 1 - theta, rtol=1e-12)
        np.testing.assert_allclose(np.exp(log_strategy), xi, rtol=1e-12)
        np.testing.assert_allclose(log_know[0], np.log(0.5))  # no ratings: θ = 1/2
        expected = s * (np.log(theta).sum() + np.log1p(-theta).sum() + np.log(xi).sum())
    assert term == pytest.approx(expected, rel=1e-11)


def test_serial_and_parallel_kernels_agree_exactly(simulated):
    R = simulated.ratings
    one = MACE(n_jobs=1, n_init=2, max_iter=20, random_state=0)
    two = MACE(n_jobs=2, n_init=2, max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one.fit(R), two.fit(R)
    np.testing.assert_array_equal(one.objective_history_, two.objective_history_)
    np.testing.assert_array_equal(one.rater_competence_, two.rater_competence_)
    np.testing.assert_array_equal(one.predict_proba(R), two.predict_proba(R))


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("method", ["vb", "em"])
@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
@pytest.mark.parametrize("init", ["majority", "random"])
def test_objective_never_decreases(simulated, method, class_prior, init, accelerate):
    model = MACE(method=method, class_prior=class_prior, init=init, tol=0, max_iter=40,
                 n_init=1, random_state=3, accelerate=accelerate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(simulated.ratings[:3000])
    history = model.objective_history_
    assert model.n_iter_ == 40
    # accelerated, the history holds the kept states (a rejected step is not one)
    assert len(history) == 41 if not accelerate else 1 < len(history) <= 41
    assert np.all(np.isfinite(history))
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
@pytest.mark.parametrize("init", ["majority", "random"])
def test_objective_never_decreases_with_a_learned_competence_prior(simulated, class_prior,
                                                                  init, accelerate):
    model = MACE(competence_prior="learn", class_prior=class_prior, init=init, tol=0,
                 max_iter=40, n_init=1, random_state=3, accelerate=accelerate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(simulated.ratings[:3000])
    history = model.objective_history_
    assert model.n_iter_ == 40
    assert np.all(np.isfinite(history))
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))
    # the prior moved from where it started
    assert not np.allclose(model.competence_prior_, [0.5, 0.5], rtol=0.1)


@pytest.mark.parametrize("kwargs", [{}, {"method": "em"}, {"competence_prior": "learn"}])
def test_warm_start_objective_starts_at_the_earlier_fit(simulated, kwargs):
    """A warm start's first objective is that of the parameters it carries
    (the earlier fit's own last one), not a cold start's parameter term, and
    the objective never decreases from it."""
    R = simulated.ratings[:3000]
    first = MACE(n_init=1, tol=1e-4, **kwargs).fit(R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = MACE(n_init=1, tol=0, max_iter=5, **kwargs).fit(R, init_params=first)
    history = again.objective_history_
    assert history[0] == pytest.approx(first.lower_bound_, rel=1e-12)
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))


def _competence_population(a, b, posterior, rate=0.01):
    """Σ_j E_q[log Beta(θ_j | a, b)] - rate (a + b) at the raters' Beta
    posteriors (what the learned prior maximizes), in scipy."""
    expected = digamma(posterior) - digamma(posterior.sum(axis=1, keepdims=True))
    return (-len(posterior) * betaln(a, b) + (a - 1) * expected[:, 0].sum()
            + (b - 1) * expected[:, 1].sum() - rate * (a + b))


def test_learned_competence_prior_is_the_population_of_the_raters(simulated):
    """At convergence the learned Beta prior is the maximum of the
    population objective at the fitted posteriors (scipy's optimizer), and
    the fit's objective is above that of the paper's fixed prior."""
    from scipy.optimize import minimize

    R = simulated.ratings[:4000]
    learned = MACE(competence_prior="learn", n_init=1, tol=1e-10, max_iter=1000).fit(R)
    posterior = learned.competence_posterior_
    best = minimize(lambda x: -_competence_population(*np.exp(x), posterior),
                    np.log([0.5, 0.5]), method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    np.testing.assert_allclose(learned.competence_prior_, np.exp(best.x), rtol=1e-4)
    fixed = MACE(n_init=1, tol=1e-10, max_iter=1000).fit(R)
    assert learned.lower_bound_ > fixed.lower_bound_ - 0.01 * 2 / len(R)
    np.testing.assert_array_equal(fixed.competence_prior_, [0.5, 0.5])


@pytest.mark.parametrize("competence_prior", ["learn", "two_stage"])
def test_learned_competence_prior_recovers_its_simulated_population(competence_prior):
    """Competence uniform on (0.3, 0.95), 40 raters with 500 ratings each:
    the learned Beta has the mean and concentration of the Beta fitted to
    the raters' true competences."""
    from skcrowd._population import maximize_population

    data = make_mace(4000, 40, 5, 3, spammer_fraction=0.0, random_state=4)
    model = MACE(competence_prior=competence_prior, n_init=1,
                 random_state=0).fit(data.ratings)
    theta = data.competence
    oracle = maximize_population(np.array([1.0, 1.0]),
                                 np.column_stack([np.log(theta), np.log1p(-theta)]), 1e-9)
    a, b = model.competence_prior_
    assert a / (a + b) == pytest.approx(oracle[0] / oracle.sum(), abs=0.05)
    assert 0.5 < (a + b) / oracle.sum() < 2.0, (model.competence_prior_, oracle)


def _sparse_binary(seed, n_items=1200, n_raters=700, per_item=3):
    """Raters with about five ratings each (activity falling as rank^-0.5),
    right with probability uniform on (0.55, 0.95)."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_items) < 0.6).astype(np.int64)
    activity = 1.0 / np.arange(1, n_raters + 1) ** 0.5
    activity /= activity.sum()
    accuracy = rng.uniform(0.55, 0.95, n_raters)
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False, p=activity)
                            for _ in range(n_items)])
    right = rng.random(item.size) < accuracy[rater]
    return Ratings(item, rater, np.where(right, truth[item], 1 - truth[item])), truth


def test_learned_competence_prior_with_few_ratings_per_rater():
    """With three ratings per item and about five per rater, the paper's
    Beta(0.5, 0.5) lets a rater with a few lucky ratings outweigh the
    others (up to 4 points below majority vote); the learned prior shrinks
    such raters to the crowd and stays within a point of majority vote."""
    learned, fixed = [], []
    for seed in range(3):
        R, truth = _sparse_binary(seed)
        vote = np.mean(MajorityVote().fit_predict(R) == truth)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            learned.append(np.mean(MACE(competence_prior="learn", n_init=1, tol=1e-5)
                                   .fit_predict(R) == truth))
            fixed.append(np.mean(MACE(n_init=1, tol=1e-5).fit_predict(R) == truth))
        assert learned[-1] >= vote - 0.01, (seed, learned[-1], vote)
    assert np.mean(learned) >= np.mean(fixed) + 0.01, (learned, fixed)


@pytest.mark.parametrize("competence_prior", ["learn", "two_stage"])
def test_learned_competence_prior_needs_variational_bayes(competence_prior):
    with pytest.raises(ValueError, match=f"competence_prior='{competence_prior}' needs "
                                         "method='vb'"):
        MACE(method="em", competence_prior=competence_prior).fit(TINY)
    with pytest.raises(ValueError, match="competence_prior"):
        MACE(competence_prior="pooled").fit(TINY)


def test_warm_start_and_partial_fit_carry_the_learned_prior(simulated):
    R = simulated.ratings[:3000]
    first = MACE(competence_prior="learn", n_init=1, tol=1e-8, max_iter=500).fit(R)
    again = MACE(competence_prior="learn", n_init=1, max_iter=1).fit(R, init_params=first)
    np.testing.assert_allclose(again.competence_prior_, first.competence_prior_, rtol=1e-3)
    stream = MACE(competence_prior="learn", classes=first.classes_)
    for start in range(0, 3000, 500):
        stream.partial_fit(simulated.ratings[start:start + 500])
    assert np.all(np.isfinite(stream.competence_prior_))
    assert not np.allclose(stream.competence_prior_, [0.5, 0.5], rtol=0.1)


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
def test_objective_never_decreases_with_a_two_stage_prior(simulated, class_prior,
                                                          accelerate):
    model = MACE(competence_prior="two_stage", class_prior=class_prior, tol=0, max_iter=30,
                 n_init=1, random_state=3, accelerate=accelerate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(simulated.ratings[:3000])
    history = model.objective_history_  # of the second stage
    assert model.n_iter_ == 60
    assert np.all(np.isfinite(history))
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))
    assert not np.allclose(model.competence_prior_, [0.5, 0.5], rtol=0.1)


def _beta_binomial(a, b, knowing, spamming, rate=0.01):
    """Σ_j log B(a + k_j, b + s_j) - log B(a, b) - rate (a + b), in scipy."""
    return np.sum(betaln(a + knowing, b + spamming) - betaln(a, b)) - rate * (a + b)


def test_two_stage_prior_is_the_beta_binomial_maximum_of_the_first_fit(simulated):
    """The two-stage prior maximizes the Beta-binomial likelihood of the
    raters' expected counts under the paper's prior (scipy's optimizer),
    and the second stage is the fixed-prior fit at that prior, started from
    the first."""
    from scipy.optimize import minimize

    R = simulated.ratings[:4000]
    kwargs = dict(n_init=1, tol=1e-10, max_iter=1000)
    first = MACE(**kwargs).fit(R)
    two = MACE(competence_prior="two_stage", **kwargs).fit(R)
    knowing, spamming = (first.competence_posterior_ - 0.5).T
    best = minimize(lambda x: -_beta_binomial(*np.exp(x), knowing, spamming),
                    np.log([0.5, 0.5]), method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    np.testing.assert_allclose(two.competence_prior_, np.exp(best.x), rtol=1e-4)
    a, b = two.competence_prior_
    second = MACE(prior_knowing=a, prior_spamming=b, **kwargs).fit(R, init_params=first)
    np.testing.assert_allclose(two.competence_posterior_, second.competence_posterior_,
                               rtol=1e-10)
    assert two.n_iter_ == first.n_iter_ + second.n_iter_


def test_beta_binomial_prior_recovers_a_beta():
    from skcrowd._population import beta_binomial_prior

    rng = np.random.default_rng(0)
    theta = rng.beta(2.0, 5.0, 3000)
    knowing = rng.binomial(30, theta).astype(np.float64)
    a, b = beta_binomial_prior(knowing, 30 - knowing, [0.5, 0.5], rate=0.0)
    assert a == pytest.approx(2.0, rel=0.1) and b == pytest.approx(5.0, rel=0.1)


@pytest.mark.parametrize("seed", range(4))
def test_beta_binomial_prior_is_the_maximum(seed):
    """Newton's method reaches scipy Nelder-Mead's maximum of the
    Beta-binomial objective, on fractional counts from crowds of 5 to 2000
    raters and concentrations 0.4 to 100."""
    from scipy.optimize import minimize

    from skcrowd._population import beta_binomial_prior

    rng = np.random.default_rng(seed)
    n_raters = int(rng.integers(5, 2000))
    theta = rng.beta(*rng.uniform(0.2, 50.0, 2), n_raters)
    n = rng.integers(1, 60, n_raters)
    knowing = rng.binomial(n, theta) + 0.3 * rng.random(n_raters)
    spamming = n - knowing + 0.3
    best = minimize(lambda x: -_beta_binomial(*np.exp(x), knowing, spamming),
                    np.log([0.5, 0.5]), method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
    ours = beta_binomial_prior(knowing, spamming, [0.5, 0.5], rate=0.01)
    assert _beta_binomial(*ours, knowing, spamming) >= -best.fun - 1e-8
    np.testing.assert_allclose(ours, np.exp(best.x), rtol=1e-4)


def test_beta_binomial_prior_at_its_bounds():
    from skcrowd._population import BETA_BINOMIAL_BOUNDS, beta_binomial_prior

    # no rater ever knew: a goes to its lower bound, b stays finite
    a, b = beta_binomial_prior(np.zeros(50), np.full(50, 20.0), [0.5, 0.5], rate=0.01)
    assert a == pytest.approx(BETA_BINOMIAL_BOUNDS[0]) and np.isfinite(b)
    # every rater alike: a large concentration, kept finite by the rate
    a, b = beta_binomial_prior(np.full(500, 700.0), np.full(500, 300.0), [0.5, 0.5], 0.01)
    assert a / (a + b) == pytest.approx(0.7, abs=1e-3) and a + b <= BETA_BINOMIAL_BOUNDS[1] * 2


def test_two_stage_prior_with_few_ratings_per_rater():
    """Three ratings per item, about five per rater: one step of empirical
    Bayes from the paper's prior shrinks the lucky raters part of the way,
    above the fixed prior on average but not up to majority vote (the
    fully pooled "learn" is there), and the prior stays spread: it does not
    take every rater to be alike."""
    two, fixed = [], []
    for seed in range(3):
        R, truth = _sparse_binary(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = MACE(competence_prior="two_stage", n_init=1, tol=1e-5).fit(R)
            two.append(np.mean(model.predict(R) == truth))
            fixed.append(np.mean(MACE(n_init=1, tol=1e-5).fit_predict(R) == truth))
        assert model.competence_prior_.sum() < 10, model.competence_prior_
    assert np.mean(two) >= np.mean(fixed) + 0.01, (two, fixed)


def test_warm_start_and_partial_fit_keep_the_two_stage_prior(simulated):
    R = simulated.ratings[:3000]
    first = MACE(competence_prior="two_stage", n_init=1, tol=1e-8, max_iter=500).fit(R)
    again = MACE(competence_prior="two_stage", n_init=1, max_iter=3).fit(
        R, init_params=first)
    np.testing.assert_array_equal(again.competence_prior_, first.competence_prior_)
    assert again.n_iter_ <= 3  # one stage
    stream = MACE(competence_prior="two_stage", classes=first.classes_)
    for start in range(0, 3000, 500):
        stream.partial_fit(simulated.ratings[start:start + 500])
    np.testing.assert_array_equal(stream.competence_prior_, [0.5, 0.5])


@pytest.mark.parametrize("method", ["vb", "em"])
def test_recovers_competence_and_finds_spammers(simulated, method):
    model = MACE(method=method, random_state=0).fit(simulated.ratings)
    rho = spearmanr(model.rater_competence_, simulated.competence).statistic
    assert rho > 0.9
    # 20% of the raters always spam: low competence flags them
    assert simulated.spammer.mean() == pytest.approx(0.2)
    assert roc_auc_score(simulated.spammer, -model.rater_competence_) > 0.95
    honest = ~simulated.spammer
    error = np.abs(model.spam_distribution_ - simulated.spam_distribution)
    assert error[simulated.spammer].mean() < 0.03  # spammers: many spam ratings
    assert np.abs(model.rater_competence_ - simulated.competence).mean() < 0.03
    assert error[honest].max() < 0.5
    accuracy = np.mean(model.predict(simulated.ratings) == simulated.true_labels)
    majority = np.mean(MajorityVote().fit_predict(simulated.ratings) == simulated.true_labels)
    assert accuracy > majority + 0.02


def test_learned_class_prior_recovers_prevalence():
    data = make_mace(6000, 40, 5, 3, class_prior=[0.6, 0.3, 0.1], random_state=2)
    model = MACE(class_prior="learn", random_state=0).fit(data.ratings)
    np.testing.assert_allclose(model.class_prior_, [0.6, 0.3, 0.1], atol=0.02)
    fixed = MACE(class_prior=[0.5, 0.3, 0.2], n_init=1).fit(data.ratings)
    np.testing.assert_array_equal(fixed.class_prior_, [0.5, 0.3, 0.2])
    uniform = MACE(class_prior="uniform", n_init=1).fit(data.ratings)
    np.testing.assert_allclose(uniform.class_prior_, np.full(3, 1 / 3))
    with pytest.raises(ValueError, match="class_prior"):
        MACE(class_prior=[0.5, 0.5]).fit(data.ratings[:100])


@pytest.mark.parametrize("method", ["vb", "em"])
def test_score_samples_is_the_exact_probability_of_the_ratings(method):
    data = make_mace(300, 3, 3, 3, spammer_fraction=0.0, random_state=1)
    model = MACE(method=method, n_init=2, random_state=0).fit(data.ratings)
    # Every possible rating vector of one item rated by the three raters:
    # the probabilities sum to one.
    patterns = np.array(list(itertools.product(range(3), repeat=3)), dtype=float)
    total = np.exp(model.score_samples(patterns)).sum()
    assert total == pytest.approx(1.0, rel=1e-12)
    # and each equals Σ_k π_k Π_j P(x_j | k) with the plugged-in parameters
    P = _label_probability(model.rater_competence_, model.spam_distribution_)
    x = patterns.astype(int)
    direct = (model.class_prior_ * P[0, x[:, 0]] * P[1, x[:, 1]] * P[2, x[:, 2]]).sum(axis=1)
    np.testing.assert_allclose(model.score_samples(patterns), np.log(direct), rtol=1e-12)
    assert model.score(patterns) == pytest.approx(np.mean(np.log(direct)))


@pytest.mark.parametrize("params", [{"method": "em", "smoothing": 1e-300},
                                    {"prior_knowing": 1e300}])
def test_competence_that_rounds_to_one_predicts_and_scores(params):
    # Both make some competence exactly 1.0 in float; predict and score
    # raised ZeroDivisionError from the e-step.
    ratings = load_rte().ratings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MACE(n_init=1, max_iter=30, random_state=0, **params).fit(ratings)
    assert np.any(model.rater_competence_ == 1.0)
    proba = model.predict_proba(ratings)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(np.isfinite(model.score_samples(ratings)))
    assert set(np.unique(model.predict(ratings))) <= set(model.classes_)


def test_vb_posteriors_and_point_estimates(simulated):
    model = MACE(n_init=1).fit(simulated.ratings[:2000])
    a, b = model.competence_posterior_.T
    np.testing.assert_allclose(model.rater_competence_, a / (a + b))
    np.testing.assert_allclose(model.spam_distribution_.sum(axis=1), 1.0)
    # prior + expected counts: a + b = n_j + 1, Σ ξ concentrations = spam + 10 K
    n_j = np.bincount(simulated.ratings[:2000]._rater, minlength=50)
    np.testing.assert_allclose(a + b, n_j + 1.0)
    em = MACE(method="em", n_init=1).fit(simulated.ratings[:2000])
    assert em.competence_posterior_ is None and em.spam_posterior_ is None


def test_fit_predict_equals_fit_then_predict(simulated):
    R = simulated.ratings[:4000]
    for method in ("vb", "em"):
        labels = MACE(method=method, random_state=0).fit_predict(R)
        model = MACE(method=method, random_state=0).fit(R)
        np.testing.assert_array_equal(labels, model.predict(R))


def test_restarts_keep_the_best_objective(simulated):
    # init_iter=None: every restart runs its max_iter, the best final is kept
    R = simulated.ratings[:3000]
    best = MACE(init="random", n_init=4, init_iter=None, random_state=1, max_iter=30, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best.fit(R)
    replay = MACE(init="random", n_init=4, random_state=1, max_iter=30, tol=0)
    rng = np.random.RandomState(1)
    data = replay._encode(R, reset=True)
    finals = [replay._run(data, replay._init_params(data, rng, r))[2][-1] for r in range(4)]
    assert len(set(np.round(finals, 9))) > 1
    assert best.lower_bound_ == pytest.approx(max(finals))


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("init_iter", [0, 2, 5])
def test_short_runs_continue_the_best_restart(simulated, init_iter, accelerate):
    # every restart runs init_iter passes; the best there goes on, from where
    # it stopped, to max_iter; the others stop
    R = simulated.ratings[:3000]
    kwargs = {"init": "random", "n_init": 4, "random_state": 1, "max_iter": 30, "tol": 0,
              "accelerate": accelerate}
    model = MACE(init_iter=init_iter, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(R)
    replay = MACE(init_iter=None, **kwargs)
    rng = np.random.RandomState(1)
    data = replay._encode(R, reset=True)
    short = [replay._run(data, replay._init_params(data, rng, r), max_iter=init_iter)
             for r in range(4)]
    scores = [run.history[-1] for run in short]
    chosen = int(np.argmax(scores))
    assert len(set(np.round(scores, 9))) > 1  # the choice is not a tie
    assert model._restart_n_iter == [30 if r == chosen else init_iter for r in range(4)]
    for r, run in enumerate(short):
        history = model._restart_histories[r]
        np.testing.assert_array_equal(history[:len(run.history)], run.history)
    # the kept fit is the continued restart: its history one monotone run
    history = model.objective_history_
    np.testing.assert_array_equal(history, model._restart_histories[chosen])
    assert model.n_iter_ == 30 and model.lower_bound_ == history[-1]
    assert model.lower_bound_ >= max(scores)
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))
    # the same as going on from the screened run by hand
    resumed = replay._run(data, None, resume=short[chosen])
    np.testing.assert_array_equal(resumed.history, history)


def test_short_runs_reach_the_optimum_of_full_restarts():
    # on 20% spammers, the screened fit ends where the best of ten full
    # restarts does (same labels, objective within the stopping tolerance)
    for seed in range(3):
        data = make_mace(1500, 30, 4, 3, spammer_fraction=0.2, random_state=seed)
        full = MACE(init_iter=None, random_state=seed).fit(data.ratings)
        short = MACE(random_state=seed).fit(data.ratings)
        assert sum(short._restart_n_iter) < sum(full._restart_n_iter) / 2
        assert short.lower_bound_ == pytest.approx(full.lower_bound_, abs=1e-4)
        assert np.mean(short.predict(data.ratings) == full.predict(data.ratings)) > 0.995


def test_sampled_ratings_follow_the_model():
    data = make_mace(20_000, 10, 4, 3, random_state=4)
    model = MACE(n_init=1, random_state=0).fit(data.ratings)
    sim = model.sample(data.ratings, random_state=0)
    np.testing.assert_array_equal(sim._item, data.ratings._item)
    np.testing.assert_array_equal(sim._rater, data.ratings._rater)
    # each rater's label frequencies: Σ_k π_k P(l | k)
    P = _label_probability(model.rater_competence_, model.spam_distribution_)
    expected = P @ model.class_prior_
    counts = np.zeros((10, 3))
    np.add.at(counts, (sim._rater, sim.label.astype(int)), 1)
    observed = counts / counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(observed, expected, atol=0.02)


# crowd-kit 1.4.2 MACE, defaults, accuracy on the same files
CROWDKIT_MACE = {"rte": 0.9237, "bluebirds": 0.7500, "dog": 0.8302, "web": 0.8266}
LOADERS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}


@pytest.mark.parametrize("name", sorted(CROWDKIT_MACE))
def test_accuracy_on_gold_not_below_crowdkit(name):
    data = LOADERS[name]()
    known = ~np.isnan(data.gold)
    labels = MACE().fit_predict(data.ratings)
    accuracy = np.mean(labels[known] == data.gold[known])
    assert accuracy >= CROWDKIT_MACE[name] - 0.005


@pytest.mark.parametrize("method", ["vb", "em"])
def test_fitted_coordinates_agree_with_the_log_weights(simulated, method):
    # A warm start carries the accelerated loop's coordinates (Beta /
    # Dirichlet parameters, EM: smoothed counts) beside the log weights the
    # local step reads: the first must give back the second.
    model = MACE(method=method, n_init=1, random_state=0).fit(simulated.ratings[:3000])
    fitted = model._fitted_params()
    J, K = fitted["strategy"].shape
    out = {name: np.empty(J) for name in ("log_know", "log_spam")}
    out["log_strategy"] = np.empty((J, K))
    tables = [np.empty(J * K) for _ in range(3)]
    kernels.rater_params(fitted["knowing"], fitted["spamming"], fitted["strategy"],
                         method == "vb", *model._priors(K, fitted["competence_prior"]),
                         out["log_know"], out["log_spam"], out["log_strategy"], *tables)
    for name, values in out.items():
        np.testing.assert_allclose(values, fitted[name], rtol=1e-12, atol=1e-12)
    if method == "em":  # the smoothed counts of the last M-step, not just their ratios
        counts = np.bincount(model._encode(simulated.ratings[:3000], reset=False).rater,
                             minlength=J)
        total = fitted["knowing"] + fitted["spamming"]
        np.testing.assert_allclose(total, counts + 2 * model._smoothing(K), rtol=1e-12)


# -- the monitored objective, computed independently ---------------------------
TINY = np.array([[0, 0, 1, np.nan], [1, 1, np.nan, 1], [0, 1, 1, 2], [2, 2, 2, 0],
                 [0, np.nan, 2, 0], [1, 0, 1, 1], [np.nan, 2, 2, 2]])


def _mace_objective(model, X):
    """Per item: EM, the log posterior Σ_i log Σ_k π_k Π_j P(x_ij | k) with
    P(l | k) = θ_j [l = k] + (1 - θ_j) ξ_j[l], plus the smoothing pseudo-counts'
    log prior s Σ_j (log θ_j + log(1 - θ_j) + Σ_l log ξ_jl); VB, the ELBO:
    the same sum with θ, 1 - θ, ξ replaced by exp E_q[log ·] (the optimal
    q(T, S) leaves the log normaliser), minus KL(q(θ) || Beta) and
    KL(q(ξ) || Dirichlet); both plus π's Dirichlet kernel when it is learned."""
    K = len(model.classes_)
    prior = model.class_prior_
    if model.method == "em":
        know = model.rater_competence_
        spam = (1 - know)[:, None] * model.spam_distribution_
    else:
        ab, c = model.competence_posterior_, model.spam_posterior_
        psi = digamma(ab.sum(axis=1))
        know = np.exp(digamma(ab[:, 0]) - psi)
        spam = (np.exp(digamma(ab[:, 1]) - psi)[:, None]
                * np.exp(digamma(c) - digamma(c.sum(axis=1, keepdims=True))))
    total = 0.0
    for row in X:
        rated = np.flatnonzero(~np.isnan(row))
        labels = np.searchsorted(model.classes_, row[rated])
        per_class = [np.sum(np.log(spam[rated, labels] + know[rated] * (labels == k)))
                     for k in range(K)]
        total += logsumexp(np.log(prior) + per_class)
    if model.method == "em":
        s = 0.01 / K
        theta, xi = model.rater_competence_, model.spam_distribution_
        total += s * np.sum(np.log(theta) + np.log(1 - theta) + np.log(xi).sum(axis=1))
    else:
        a0, b0 = model.competence_prior_
        if model.competence_prior == "fixed":
            assert (a0, b0) == (model.prior_knowing, model.prior_spamming)
        elif model.competence_prior == "learn":  # its hyperprior, rate 0.01 on a and b
            total -= 0.01 * (a0 + b0)
        total -= np.sum(_kl_beta(ab[:, 0], ab[:, 1], a0, b0))
        total -= np.sum(_kl_dirichlet(c, model.prior_strategy))
    if model.class_prior == "learn":
        total += model.prior_class * np.sum(np.log(prior))
    return total / len(X)


@pytest.mark.parametrize("method, competence_prior",
                         [("vb", "fixed"), ("em", "fixed"), ("vb", "learn"),
                          ("vb", "two_stage")])
@pytest.mark.parametrize("class_prior", ["uniform", "learn", [0.5, 0.3, 0.2]])
def test_objective_is_the_log_posterior_or_the_elbo(method, competence_prior, class_prior):
    """lower_bound_ (EM: log posterior; VB: ELBO, per item) against a plain
    numpy/scipy computation from the fitted θ, ξ, π (VB: their Beta and
    Dirichlet posteriors, and the learned prior on competence), with
    non-default priors, at convergence, at the start and after a few
    iterations."""
    kwargs = dict(method=method, class_prior=class_prior, prior_knowing=0.7,
                  prior_spamming=2.0, prior_strategy=3.0, prior_class=1.5, n_init=1,
                  competence_prior=competence_prior)
    model = MACE(tol=1e-12, max_iter=2000, **kwargs).fit(TINY)
    assert model.lower_bound_ == pytest.approx(_mace_objective(model, TINY), rel=1e-10)
    for max_iter in (0, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            early = MACE(max_iter=max_iter, tol=0, **kwargs).fit(TINY)
        assert early.lower_bound_ == pytest.approx(_mace_objective(early, TINY),
                                                   rel=1e-10), max_iter


def test_verbose_names_the_screened_restarts(simulated, capsys):
    R = simulated.ratings[:2000]
    model = MACE(init="random", n_init=3, init_iter=2, verbose=1, random_state=1).fit(R)
    lines = capsys.readouterr().out.splitlines()
    chosen = int(np.argmax([h[-1] for h in model._restart_histories]))
    for restart in range(3):
        ends = [line for line in lines
                if line.startswith(f"[MACE restart {restart + 1}/3]") and "objective" in line
                and "iteration" not in line.split("]")[1].split()[0]]
        if restart == chosen:
            assert "screened after 2 iterations" in ends[0] and "converged" in ends[-1]
        else:
            assert len(ends) == 1 and "screened after 2 iterations" in ends[0]


@pytest.mark.parametrize("fitted, then", [("em", "vb"), ("vb", "em")])
def test_method_set_after_fit_reads_the_fit(fitted, then):
    # After an EM fit, method="vb" made predict_proba and a warm refit read the
    # absent variational posteriors (AttributeError: 'NoneType' object has no
    # attribute 'T'); after a VB fit, method="em" changed predict_proba silently.
    X = make_dawid_skene(n_items=30, n_raters=5, ratings_per_item=3, n_classes=3,
                         random_state=0).ratings
    model = MACE(method=fitted, n_init=1).fit(X)
    proba = model.predict_proba(X)
    model.set_params(method=then)
    np.testing.assert_array_equal(model.predict_proba(X), proba)
    model.set_params(warm_start=True).fit(X)
    assert np.all(np.isfinite(model.predict_proba(X)))
    assert (model.competence_posterior_ is not None) == (then == "vb")
