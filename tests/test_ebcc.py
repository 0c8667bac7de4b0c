"""EBCC (Li, Rubinstein & Cohn 2019): its kernels against plain numpy, the
two kernel paths, the ELBO, recovery of simulated parameters, restarts,
correlated raters, gold and bad input."""

import numpy as np
import pytest
from scipy.special import digamma, gammaln, logsumexp
from scipy.stats import dirichlet

from skcrowd import EBCC, DawidSkene, Ratings
from skcrowd._base import item_chunks
from skcrowd._kernels import _ebcc as kernels
from skcrowd._kernels._config import kernel_path
from skcrowd.datasets import load_rte


def simulate(tau, pi, v, n_items, ratings_per_item, rng):
    """Ratings from EBCC's generative model (Li et al. 2019):
    z ~ Cat(τ), g ~ Cat(π_z), each of ``ratings_per_item`` distinct raters
    labels from v[j, z, g]."""
    n_raters, n_classes, n_subtypes, _ = v.shape
    z = rng.choice(n_classes, size=n_items, p=tau)
    g = np.array([rng.choice(n_subtypes, p=pi[k]) for k in z])
    items, raters, labels = [], [], []
    for i in range(n_items):
        for j in rng.choice(n_raters, size=ratings_per_item, replace=False):
            items.append(i)
            raters.append(j)
            labels.append(rng.choice(n_classes, p=v[j, z[i], g[i]]))
    return Ratings(np.array(items), np.array(raters), np.array(labels)), z


def random_problem(rng, n_items=60, n_raters=7, n_classes=3, n_subtypes=2, gold=False):
    """Random encoded-like inputs of the e-step (sorted items, some items
    without ratings, repeated cells)."""
    per_item = rng.integers(0, 5, size=n_items)
    item_ptr = np.concatenate([[0], np.cumsum(per_item)]).astype(np.int64)
    n = int(item_ptr[-1])
    cell = rng.integers(0, n_raters * n_classes, size=n).astype(np.int32)
    width = n_classes * n_subtypes
    log_prior = np.log(rng.dirichlet(np.ones(width)))
    log_table = np.log(rng.random((n_raters * n_classes, width)))
    evidence = np.zeros((0, n_classes))
    if gold:
        evidence = np.zeros((n_items, n_classes))
        known = rng.random(n_items) < 0.3
        evidence[known] = -np.inf
        evidence[known, rng.integers(0, n_classes, size=known.sum())] = 0.0
    return item_ptr, cell, log_prior, evidence, log_table


def plain_e_step(item_ptr, cell, log_prior, evidence, log_table, n_classes):
    """The q(z, g) update item by item, in plain numpy."""
    n_items = item_ptr.shape[0] - 1
    width = log_prior.shape[0]
    q = np.empty((n_items, width))
    loglik = np.empty(n_items)
    counts = np.zeros_like(log_table)
    for i in range(n_items):
        row = log_prior.copy()
        if evidence.shape[0]:
            row += np.repeat(evidence[i], width // n_classes)
        cells = cell[item_ptr[i]:item_ptr[i + 1]]
        row += log_table[cells].sum(axis=0)
        loglik[i] = logsumexp(row)
        q[i] = np.exp(row - loglik[i])
        for r in cells:
            counts[r] += q[i]
    return q, loglik, counts


@pytest.mark.parametrize("gold", [False, True])
@pytest.mark.parametrize("side", ["numpy", "serial", "parallel"])
def test_e_step_matches_plain_numpy(side, gold):
    rng = np.random.default_rng(3)
    n_classes, width = 3, 3 * 2
    item_ptr, cell, log_prior, evidence, log_table = random_problem(rng, gold=gold)
    n_items = item_ptr.shape[0] - 1
    chunk_ptr = np.array([0, 17, 40, n_items], dtype=np.int64)
    posterior = np.empty((n_items, n_classes))
    loglik = np.empty(n_items)
    partial_counts = np.empty((3,) + log_table.shape)
    partial_joint = np.empty((3, width))
    kernel = {"numpy": kernels.e_step.numpy, "serial": kernels.e_step.serial,
              "parallel": kernels.e_step}[side]
    kernel(item_ptr, cell, log_prior, evidence, log_table, n_classes, chunk_ptr, posterior,
           loglik, partial_counts, partial_joint)
    q, expected_loglik, counts = plain_e_step(item_ptr, cell, log_prior, evidence, log_table,
                                              n_classes)
    np.testing.assert_allclose(loglik, expected_loglik, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(posterior, q.reshape(n_items, n_classes, -1).sum(axis=2),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(partial_counts.sum(axis=0), counts, rtol=1e-12, atol=1e-12)
    for c in range(3):
        np.testing.assert_allclose(partial_joint[c], q[chunk_ptr[c]:chunk_ptr[c + 1]].sum(axis=0),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("side", ["numpy", "jit"])
def test_joint_counts_match_plain_numpy(side):
    rng = np.random.default_rng(4)
    item_ptr, cell, *_ = random_problem(rng)
    joint = rng.random((item_ptr.shape[0] - 1, 6))
    counts = np.full((7 * 3, 6), np.nan)
    getattr(kernels.joint_counts, side)(item_ptr, cell, joint, counts)
    expected = np.zeros_like(counts)
    for i in range(joint.shape[0]):
        for n in range(item_ptr[i], item_ptr[i + 1]):
            expected[cell[n]] += joint[i]
    np.testing.assert_allclose(counts, expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("side", ["numpy", "jit"])
def test_dirichlet_terms_match_scipy(side):
    """E[log x] and KL(Dir(a) || Dir(b)) = -H(q) - E_q[log p], the entropy
    from scipy and E_q[log p] from E_q[log x]."""
    rng = np.random.default_rng(5)
    posterior = rng.gamma(2.0, size=(4, 3, 5)) + 0.05
    prior = rng.gamma(2.0, size=(4, 3, 5)) + 0.05
    expected_log = np.empty_like(posterior)
    kl = getattr(kernels.dirichlet_terms, side)(posterior, prior, expected_log)
    total_kl = 0.0
    for r in range(4):
        for c in range(5):
            a, b = posterior[r, :, c], prior[r, :, c]
            e = digamma(a) - digamma(a.sum())
            np.testing.assert_allclose(expected_log[r, :, c], e, rtol=1e-12, atol=1e-12)
            cross = gammaln(b.sum()) - gammaln(b).sum() + np.sum((b - 1) * e)
            total_kl += -dirichlet.entropy(a) - cross
    assert kl == pytest.approx(total_kl, rel=1e-10, abs=1e-10)


@pytest.fixture(scope="module")
def simulated():
    """Two classes, the first with two subtypes; on the second (40% of its
    items), half of the raters (a bloc: errors correlated given the true
    class) mostly say class 1, the others mostly class 0."""
    rng = np.random.default_rng(0)
    n_raters = 20
    fooled = np.arange(n_raters) < 10
    v = np.empty((n_raters, 2, 2, 2))
    v[:, 0, 0] = [0.85, 0.15]
    v[:, 0, 1] = np.where(fooled[:, None], [0.15, 0.85], [0.9, 0.1])
    v[:, 1, :] = [0.15, 0.85]
    tau = np.array([0.6, 0.4])
    pi = np.array([[0.6, 0.4], [0.5, 0.5]])
    ratings, truth = simulate(tau, pi, v, 1500, 8, rng)
    return ratings, truth, tau


def test_recovers_prevalence_and_labels(simulated):
    """With the model's own prior on τ; the empirical one (α = the vote
    shares) pulls the prevalence toward the majority vote's."""
    ratings, truth, tau = simulated
    model = EBCC(n_subtypes=2, prior_class=1.0, random_state=0).fit(ratings)
    np.testing.assert_allclose(model.class_prior_, tau, atol=0.04)
    assert np.mean(model.predict(ratings) == truth) > 0.95


def test_correlated_raters_beat_dawid_skene(simulated):
    """Where the bloc outvotes the others on the second subtype, Dawid–Skene
    (independent raters) calls the item class 1; EBCC learns the subtype
    and its bloc (Li et al. 2019, the model's point)."""
    ratings, truth, _ = simulated
    ds = np.mean(DawidSkene().fit(ratings).predict(ratings) == truth)
    for model in (EBCC(random_state=0), EBCC(n_init=3, random_state=1)):
        assert np.mean(model.fit(ratings).predict(ratings) == truth) > ds + 0.02


@pytest.mark.parametrize("gold", [False, True])
def test_elbo_never_decreases(simulated, gold):
    ratings, truth, _ = simulated
    y = np.where(np.arange(len(truth)) % 4 == 0, truth, np.nan) if gold else None
    model = EBCC(accelerate=False, tol=0, max_iter=60, random_state=1)
    with pytest.warns(Warning):  # did not converge (tol=0)
        model.fit(ratings, y)
    history = model.objective_history_
    assert len(history) == 61
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))


def test_elbo_is_the_kl_form(simulated):
    """The monitored objective equals the ELBO written out term by term
    (E log p(y, z, g | ·) + H(q(z, g)) - KL of the globals), with q(z, g)
    from a local step at the fitted posteriors."""
    ratings, _, _ = simulated
    model = EBCC(n_subtypes=3, random_state=0, max_iter=5, tol=0)
    with pytest.warns(Warning):
        model.fit(ratings)
    data = model._encode(ratings, reset=False)
    model._prepare(data)
    params = model._fitted_params()
    params = model._dirichlet(params["nu"], params["eta"], params["mu"])
    items, stats = model._local_step(data, params)
    width = params["log_prior"].shape[0]
    joint = np.zeros((data.n_items, width)) + params["log_prior"]
    np.add.at(joint, data.item, params["log_table"][data.cell])
    q = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    elbo = np.sum(q * joint) - np.sum(q * np.log(q)) + params["param_term"]
    assert model._objective(data, params, items, stats) == pytest.approx(elbo / data.n_items,
                                                                         rel=1e-10)


def test_both_kernel_paths_give_the_same_fit():
    rte = load_rte()
    gold = np.where(np.arange(len(rte.gold)) % 5 == 0, rte.gold, np.nan)
    fits = {}
    for path in ("numpy", "jit"):
        with kernel_path(path):
            model = EBCC(n_init=2, random_state=0).fit(rte.ratings, gold)
            fits[path] = model, model.predict_proba(rte.ratings), model.score_samples(rte.ratings)
    (a, proba_a, score_a), (b, proba_b, score_b) = fits["numpy"], fits["jit"]
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(proba_a, proba_b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(score_a, score_b, rtol=1e-10, atol=1e-10)
    for name in ("objective_history_", "class_posterior_", "rater_posterior_",
                 "subtype_posterior_"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-10)


def test_restarts_keep_the_highest_elbo(simulated):
    ratings, _, _ = simulated
    model = EBCC(n_init=3, random_state=0).fit(ratings)
    finals = [h[-1] for h in model._restart_histories]
    assert len(set(np.round(finals, 8))) > 1  # the starts differ
    assert model.lower_bound_ == max(finals)
    single = EBCC(n_init=1, random_state=0).fit(ratings)
    assert single.lower_bound_ == pytest.approx(finals[0], rel=1e-12)


def test_fit_predict_equals_fit_then_predict(simulated):
    ratings, _, _ = simulated
    model = EBCC(random_state=0)
    np.testing.assert_array_equal(model.fit_predict(ratings), model.predict(ratings))


def test_gold_items_are_clamped(simulated):
    ratings, truth, _ = simulated
    y = np.full(len(truth), np.nan)
    y[:50] = 1 - truth[:50]  # known labels win over the ratings
    labels = EBCC(random_state=0).fit_predict(ratings, y)
    np.testing.assert_array_equal(labels[:50], y[:50])


def test_score_samples_is_the_probability_of_the_ratings():
    """With one rater and one item, exp(score) over every label sums to 1."""
    X = np.array([[0, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]])
    model = EBCC(random_state=0).fit(X)
    grid = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
    assert np.exp(model.score_samples(grid)).sum() == pytest.approx(1.0, rel=1e-12)


def test_tables_and_unknown_raters():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3,
                       "label": ["y", "y", "n", "y", "n", "n"]})
    model = EBCC(random_state=0).fit(df)
    table = model.rater_table()
    assert table.columns.tolist() == ["n_ratings", "accuracy", "recall_n", "recall_y"]
    assert model.confusion_.shape == (2, 2, 2)
    np.testing.assert_allclose(model.confusion_.sum(axis=2), 1.0)
    new = pd.DataFrame({"item": [9], "rater": ["c"], "label": ["y"]})
    with pytest.raises(ValueError, match="c"):
        model.predict(new)
    model.set_params(unknown_raters="prior")
    proba = model.predict_proba(new)
    assert list(proba.index) == [9]
    assert proba.loc[9, "y"] > 0.5


@pytest.mark.parametrize("params, message", [
    ({"n_subtypes": 0}, "n_subtypes"),
    ({"prior_class": "flat"}, "prior_class"),
    ({"prior_class": -1.0}, "prior_class"),
    ({"prior_correct": 0.0}, "prior_correct"),
    ({"prior_subtype": -0.1}, "prior_subtype"),
])
def test_bad_parameters_are_value_errors(params, message):
    with pytest.raises(ValueError, match=message):
        EBCC(**params).fit(np.array([[0, 1], [1, 1]]))


def test_bad_fit_argument_names_fit():
    with pytest.raises(TypeError, match="fit"):
        EBCC().fit(np.array([[0, 1], [1, 1]]), groups=[0, 1])
