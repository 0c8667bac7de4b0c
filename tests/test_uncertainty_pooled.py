"""PooledDawidSkene's posterior sampler (skcrowd._pooled, registered in
skcrowd.uncertainty): each step against numpy/scipy, the whole chain
against the posterior computed by enumeration, recovery of a simulated
crowd, gold conditioning and the estimator's posterior methods."""

import itertools

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import digamma, gammaln, logsumexp

from skcrowd import PooledDawidSkene, Ratings
from skcrowd._pooled import (_walk_population, concentration_log_prior,
                             dirichlet_log_draw, dirichlet_multinomial_logpmf, identified,
                             identifying_relabelling, population_log_target,
                             relabelling_log_ratio)
from skcrowd.datasets._generators import random_design
from skcrowd.uncertainty import effective_sample_size, interval, model_at, posterior_samples


# -- each step against numpy / scipy ---------------------------------------------------
def test_dirichlet_multinomial_matches_scipy():
    rng = np.random.default_rng(0)
    alpha = rng.gamma(0.7, 2.0, size=(6, 3)) + 1e-3
    counts = rng.integers(0, 9, size=(6, 3)).astype(float)
    expected = [stats.dirichlet_multinomial.logpmf(c, a, c.sum()) for c, a in zip(counts, alpha)]
    np.testing.assert_allclose(dirichlet_multinomial_logpmf(counts, alpha), expected,
                               rtol=1e-10)


def test_concentration_prior_is_the_stated_density():
    """½(1 + s)^(-3/2) is a density and 1/√(1 + s) is uniform under it."""
    density = lambda s: np.exp(concentration_log_prior(s))  # noqa: E731
    total, _ = integrate.quad(density, 0, np.inf)
    assert total == pytest.approx(1.0, abs=1e-8)
    for t in (0.3, 3.0, 99.0):
        mass, _ = integrate.quad(density, 0, t)
        assert mass == pytest.approx(1 - 1 / np.sqrt(1 + t), abs=1e-8)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_population_target_is_the_posterior_in_the_walk_coordinates(n_classes):
    """The Metropolis target of a population row is, up to a constant, the
    hyperprior of α (density p_s(s) Γ(K) / s^(K-1): mean uniform on the
    simplex, concentration p_s) times |det ∂α / ∂(log s, log-ratios)|
    (by finite differences) times the scipy Dirichlet-multinomial of every
    rater's counts."""
    rng = np.random.default_rng(1)
    K = n_classes
    counts = rng.integers(0, 7, size=(5, K)).astype(float)

    def alpha_of(coords):
        log_mean = np.append(coords[1:], 0.0)
        return np.exp(coords[0]) * np.exp(log_mean - logsumexp(log_mean))

    def reference(coords):
        alpha = alpha_of(coords)
        s = alpha.sum()
        step, jac = 1e-6, np.empty((K, K))
        for c in range(K):
            e = np.zeros(K)
            e[c] = step
            jac[:, c] = (alpha_of(coords + e) - alpha_of(coords - e)) / (2 * step)
        log_prior = np.log(0.5 * (1 + s) ** -1.5) + gammaln(K) - (K - 1) * np.log(s)
        loglik = sum(stats.dirichlet_multinomial.logpmf(c, alpha, c.sum()) for c in counts)
        return log_prior + np.log(abs(np.linalg.det(jac))) + loglik

    points = [rng.normal(0, 1.5, K) for _ in range(4)]
    got = [population_log_target(alpha_of(p), counts) for p in points]
    want = [reference(p) for p in points]
    np.testing.assert_allclose(np.diff(got), np.diff(want), rtol=1e-6, atol=1e-6)


def test_identified_is_the_largest_trace_over_relabellings():
    rng = np.random.default_rng(2)
    for K in (2, 3, 4):
        for _ in range(50):
            mean = rng.dirichlet(np.ones(K), size=K)
            best = max(np.trace(mean[list(p)]) for p in itertools.permutations(range(K)))
            assert identified(mean) == (np.trace(mean) >= best - 1e-12)
            order = identifying_relabelling(mean)
            assert sorted(order) == list(range(K))
            assert identified(mean[order])
            if K == 2:
                assert identified(mean) == (mean[0, 0] + mean[1, 1] >= 1)


def test_dirichlet_log_draw_matches_scipy():
    rng = np.random.RandomState(3)
    n = 200_000
    for alpha in (np.array([3.0, 1.5, 0.8]), np.array([0.02, 0.05, 0.3])):
        log_theta = dirichlet_log_draw(np.tile(alpha, (n, 1)), rng)
        assert np.all(np.isfinite(log_theta))
        theta = np.exp(log_theta)
        np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-12)
        se = np.sqrt(stats.dirichlet.var(alpha) / n)
        assert np.all(np.abs(theta.mean(axis=0) - stats.dirichlet.mean(alpha)) < 5 * se)
        # E[log θ_l] = ψ(α_l) - ψ(Σα): the small shapes' tails, where θ
        # itself underflows
        expected_log = digamma(alpha) - digamma(alpha.sum())
        se_log = log_theta.std(axis=0) / np.sqrt(n)
        assert np.all(np.abs(log_theta.mean(axis=0) - expected_log) < 5 * se_log)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_relabelling_ratio_matches_the_collapsed_likelihood(n_classes):
    """The ratio of renaming two classes in the items' draws equals
    log p(X, z' | α) - log p(X, z | α), each computed from its own counts
    with scipy's Dirichlet-multinomial (the raters' rows integrated out;
    the order of the ratings: the multinomial coefficient removed)."""
    rng = np.random.default_rng(3)
    K, J, n = n_classes, 4, 30
    item, rater = np.repeat(np.arange(n), 3), rng.integers(0, J, 3 * n)
    label = rng.integers(0, K, 3 * n)
    alpha = rng.gamma(1.0, 3.0, size=(K, K)) + 0.05
    z = rng.integers(0, K, n)

    def log_joint(z, alpha):
        counts = np.zeros((J, K, K))
        np.add.at(counts, (rater, z[item], label), 1.0)
        return sum(stats.dirichlet_multinomial.logpmf(c, alpha[k], c.sum())
                   - gammaln(c.sum() + 1) + gammaln(c + 1).sum()
                   for j in range(J) for k, c in enumerate(counts[j]))

    counts = np.zeros((J, K, K))
    np.add.at(counts, (rater, z[item], label), 1.0)
    order = np.arange(K)
    order[[0, K - 1]] = [K - 1, 0]
    assert relabelling_log_ratio(alpha, counts, order) == pytest.approx(
        log_joint(order[z], alpha) - log_joint(z, alpha), abs=1e-9)
    # the rows' concentrations renamed with the classes, the means kept
    concentration = alpha.sum(axis=1, keepdims=True)
    renamed = alpha / concentration * concentration[order]
    assert relabelling_log_ratio(alpha, counts, order, renamed) == pytest.approx(
        log_joint(order[z], renamed) - log_joint(z, alpha), abs=1e-9)


def _population_prior(rng, n_draws):
    """(α, π) from the sampler's hyperprior, two classes: means uniform,
    renamed so that m00 + m11 > 1; concentration 1/u² - 1."""
    mean = rng.dirichlet(np.ones(2), size=(n_draws, 2))
    swap = mean[:, 0, 0] + mean[:, 1, 1] < 1
    mean[swap] = mean[swap][:, ::-1]
    concentration = 1 / rng.uniform(0, 1, size=(n_draws, 2)) ** 2 - 1
    return concentration[..., None] * mean


def test_population_walk_samples_its_conditional():
    """The Metropolis moves of α given the classes, run long, match
    posterior means computed by importance sampling from the hyperprior
    (weights: scipy's Dirichlet-multinomial of the counts)."""
    rng = np.random.default_rng(4)
    counts = np.array([[[5, 1], [1, 3]], [[4, 0], [2, 2]], [[2, 2], [0, 6]]], dtype=float)
    prior = _population_prior(rng, 200_000)
    log_w = np.zeros(len(prior))
    for j, k in itertools.product(range(3), range(2)):
        log_w += stats.dirichlet_multinomial.logpmf(counts[j, k], prior[:, k],
                                                    counts[j, k].sum())
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    features = lambda a: np.column_stack([a[:, 0, 0] / a[:, 0].sum(axis=1),  # noqa: E731
                                          a[:, 1, 1] / a[:, 1].sum(axis=1),
                                          np.log(a.sum(axis=2))])
    reference = w @ features(prior)
    reference_se = np.sqrt(w**2 @ (features(prior) - reference) ** 2)
    chain_rng = np.random.RandomState(5)
    alpha, steps = np.array([[3.0, 1.0], [1.0, 2.0]]), np.full((2, 2), 1.0)
    accepted = np.zeros((2, 2))
    draws = []
    for _ in range(30_000):
        _walk_population(alpha, counts, steps, accepted, chain_rng)
        draws.append(alpha.copy())
    chain = features(np.array(draws)[1000:])
    se = chain.std(axis=0) / np.sqrt(effective_sample_size(chain))
    assert np.all(np.abs(chain.mean(axis=0) - reference) < 4 * np.hypot(se, reference_se))


# -- the whole chain against the posterior by enumeration ------------------------------
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("with_gold", [False, True])
def test_chain_matches_posterior_by_enumeration(with_gold):
    """On 6 items rated by 3 raters, the posterior means of the prevalence,
    the population's mean diagonal and a rater's confusion entry by the
    chain equal those by importance sampling from the priors with every
    assignment of the classes enumerated and the raters' rows integrated
    out (scipy's Dirichlet-multinomial)."""
    labels = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0], [1, 0, 1]])
    n_items, J = labels.shape
    item, rater = np.repeat(np.arange(n_items), J), np.tile(np.arange(J), n_items)
    ratings = Ratings(item, rater, labels.ravel(), item_ids=np.arange(n_items),
                      rater_ids=np.arange(J))
    y = {0: 1, 4: 0} if with_gold else None
    rng = np.random.default_rng(6)
    n_draws = 100_000
    alpha = _population_prior(rng, n_draws)
    pi = rng.dirichlet([2.0, 2.0], n_draws)
    log_terms, values = [], []
    for z in itertools.product(range(2), repeat=n_items):
        z = np.array(z)
        if with_gold and (z[0] != 1 or z[4] != 0):
            continue
        counts = np.zeros((J, 2, 2))
        np.add.at(counts, (rater, z[item], labels.ravel()), 1.0)
        # the likelihood of the ratings in order: DirMult without its
        # multinomial coefficient
        log_p = np.log(pi[:, z]).sum(axis=1)
        for j, k in itertools.product(range(J), range(2)):
            c = counts[j, k]
            log_p += (stats.dirichlet_multinomial.logpmf(c, alpha[:, k], c.sum())
                      - gammaln(c.sum() + 1) + gammaln(c + 1).sum())
        log_terms.append(log_p)
        # E[θ_0[0, 0] | α, z] = (α_00 + n_0[0, 0]) / (s_0 + N_0[0])
        values.append((alpha[:, 0, 0] + counts[0, 0, 0])
                      / (alpha[:, 0].sum(axis=1) + counts[0, 0].sum()))
    log_terms = np.array(log_terms)
    w = np.exp(log_terms - log_terms.max())
    w /= w.sum()
    mean_diag = alpha[:, [0, 1], [0, 1]] / alpha.sum(axis=2)
    reference = {"prevalence": np.sum(w.sum(axis=0) * pi[:, 1]),
                 "pop_00": np.sum(w.sum(axis=0) * mean_diag[:, 0]),
                 "pop_11": np.sum(w.sum(axis=0) * mean_diag[:, 1]),
                 "theta_000": np.sum(w * np.array(values))}
    model = PooledDawidSkene(classes=[0, 1]).fit(ratings, y)
    draws = posterior_samples(model, ratings, 6000, y=y, n_burnin=300, thin=2,
                              random_state=7)
    chain = {"prevalence": draws["class_prior_"][:, 1],
             "pop_00": draws["population_confusion_"][:, 0, 0],
             "pop_11": draws["population_confusion_"][:, 1, 1],
             "theta_000": draws["confusion_"][:, 0, 0, 0]}
    for name, values in chain.items():
        se = values.std() / np.sqrt(effective_sample_size(values))
        assert abs(values.mean() - reference[name]) < 4 * se + 2e-3, name


# -- recovery of a simulated crowd ---------------------------------------------------
def _crowd(seed, n_items=500, n_raters=30, per_item=4):
    rng = np.random.RandomState(seed)
    pi = np.array([0.3, 0.7])
    mean = np.array([[0.85, 0.15], [0.2, 0.8]])
    concentration = np.array([20.0, 20.0])
    theta = np.stack([[rng.dirichlet(concentration[k] * mean[k]) for k in range(2)]
                      for _ in range(n_raters)])
    z = rng.choice(2, n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, rng)
    label = (rng.random_sample(len(item)) > theta[rater, z[item], 0]).astype(int)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return ratings, z, pi, mean, concentration, theta


def test_recovers_simulated_crowd():
    ratings, z, pi, mean, concentration, theta = _crowd(8)
    model = PooledDawidSkene(classes=[0, 1]).fit(ratings)
    draws = model.posterior_samples(ratings, 300, random_state=9)
    low, high = interval(draws["class_prior_"][:, 1], 0.9)
    assert low <= pi[1] <= high
    low, high = interval(draws["population_confusion_"], 0.9)
    assert np.all((low <= mean) & (mean <= high))
    low, high = interval(np.log(draws["population_"].sum(axis=2)), 0.9)
    assert np.all((low <= np.log(concentration)) & (np.log(concentration) <= high))
    # the raters' rows: most of the 90% intervals hold the truth (each
    # rater has about 67 ratings)
    low, high = interval(draws["confusion_"], 0.9)
    inside = (low <= theta) & (theta <= high)
    assert inside[:, [0, 1], [0, 1]].mean() > 0.75
    # the labels drawn agree with the truth where the posterior is sure
    labels = model.sample_labels(ratings, 50, random_state=10)
    assert (labels == z).mean() > 0.85


# -- gold, the estimator's methods, the fit unchanged ----------------------------------
def test_gold_items_keep_their_class():
    ratings, z, *_ = _crowd(11, n_items=120, n_raters=10, per_item=3)
    known = np.arange(0, 120, 4)
    gold = z[known].copy()
    gold[:6] = 1 - gold[:6]   # a few against the ratings
    y = dict(zip(known.tolist(), gold.tolist()))
    model = PooledDawidSkene(classes=[0, 1]).fit(ratings, y)
    labels = model.sample_labels(ratings, 30, y=y, random_state=12)
    np.testing.assert_array_equal(labels[:, known], np.tile(gold, (30, 1)))
    proba = model.predict_proba_integrated(ratings, y=y, n_samples=30, random_state=12)
    np.testing.assert_array_equal(proba[known, gold], 1.0)
    draws = model.posterior_samples(ratings, 30, y=y, random_state=12)
    proba = model.predict_proba_integrated(ratings, y=y, samples=draws)
    np.testing.assert_array_equal(proba[known, gold], 1.0)
    # the rows given the gold differ from the rows without it
    free = PooledDawidSkene(classes=[0, 1]).fit(ratings)
    without = free.posterior_samples(ratings, 30, random_state=12)
    assert not np.allclose(draws["confusion_"].mean(axis=0),
                           without["confusion_"].mean(axis=0), atol=0.02)


def test_methods_shapes_and_model_at_a_draw():
    ratings, *_ = _crowd(13, n_items=80, n_raters=8, per_item=3)
    model = PooledDawidSkene(classes=[0, 1]).fit(ratings)
    draws = model.posterior_samples(ratings, 20, random_state=14)
    J = model.n_features_in_
    shapes = {"class_prior_": (20, 2), "confusion_": (20, J, 2, 2),
              "rater_accuracy_": (20, J), "confusion_posterior_": (20, J, 2, 2),
              "population_": (20, 2, 2), "population_confusion_": (20, 2, 2)}
    assert {k: v.shape for k, v in draws.items()} == shapes
    np.testing.assert_allclose(draws["confusion_"].sum(axis=3), 1.0, rtol=1e-12)
    assert all(identified(m) for m in draws["population_confusion_"])
    # the model at a draw predicts with the drawn rows and prevalence
    at = model_at(model, draws, 5)
    theta, pi = draws["confusion_"][5], draws["class_prior_"][5]
    data = model._encode(ratings, reset=False)
    log_post = np.tile(np.log(pi), (data.n_items, 1))
    np.add.at(log_post, data.item, np.log(theta[data.rater, :, data.label]))
    expected = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True))
    np.testing.assert_allclose(at.predict_proba(ratings), expected, rtol=1e-9)
    proba = model.predict_proba_integrated(ratings, n_samples=20, random_state=14)
    assert proba.shape == (80, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    labels = model.sample_labels(ratings, 7, random_state=14)
    assert labels.shape == (7, 80) and set(np.unique(labels)) <= {0, 1}
    table = model.rater_table(ratings, interval=0.9, samples=draws)
    assert len(table) == J
    for column in ("accuracy", "recall_0", "recall_1"):
        assert np.all(table[f"{column}_lower"] <= table[f"{column}_upper"])
    with pytest.raises(ValueError, match="n_samples"):
        model.posterior_samples(ratings, 0)


def test_sampling_leaves_the_fit_unchanged():
    ratings, *_ = _crowd(15, n_items=100, n_raters=10, per_item=3)
    model = PooledDawidSkene(classes=[0, 1]).fit(ratings)
    before = {k: np.array(v, copy=True) for k, v in vars(model).items()
              if k.endswith("_") and isinstance(v, np.ndarray)}
    model.posterior_samples(ratings, 10, random_state=16)
    model.sample_labels(ratings, 5, random_state=16)
    refit = PooledDawidSkene(classes=[0, 1]).fit(ratings)
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(model, name), value, err_msg=name)
        np.testing.assert_array_equal(getattr(refit, name), value, err_msg=name)


def test_fit_in_the_other_labelling_is_renamed_with_a_warning():
    ratings, *_ = _crowd(17, n_items=100, n_raters=10, per_item=3)
    model = PooledDawidSkene(classes=[0, 1]).fit(ratings)
    # the same fit with the true classes renamed: the likelihood is the
    # same, the hyperprior excludes it
    model.population_ = model.population_[::-1]
    model.population_confusion_ = model.population_confusion_[::-1]
    model.confusion_ = model.confusion_[:, ::-1]
    model.confusion_posterior_ = model.confusion_posterior_[:, ::-1]
    model.class_prior_ = model.class_prior_[::-1]
    with pytest.warns(UserWarning, match="relabelling"):
        draws = posterior_samples(model, ratings, 20, random_state=18)
    assert all(identified(m) for m in draws["population_confusion_"])
    # renamed back: the draws sit at the fit's own labelling
    swapped_back = draws["population_confusion_"].mean(axis=0)
    np.testing.assert_allclose(swapped_back, model.population_confusion_[::-1], atol=0.15)
