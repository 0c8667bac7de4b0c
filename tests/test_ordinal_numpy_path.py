"""OrdinalMixture's numpy twins: each against its compiled kernel on random
inputs, whole fits on both paths (to 1e-10), the bound never falling on the
numpy path, and the choice of path by ratings x restarts."""

import warnings

import numpy as np
import pytest
from scipy.special import digamma
from sklearn.exceptions import ConvergenceWarning

from skcrowd import OrdinalMixture
from skcrowd._kernels import _ordinal as kernels
from skcrowd._kernels._config import kernel_path
from skcrowd._ordinal import _tau_terms
from skcrowd.datasets import load_trec2010, load_web, make_ordinal


@pytest.fixture(scope="module")
def small():
    return make_ordinal(n_items=150, n_raters=12, ratings_per_item=4, n_levels=4,
                        n_groups=6, spammer_fraction=0.25, random_state=3)


@pytest.fixture(scope="module")
def trec_part():
    """The first 3,000 items of TREC 2010 (as the paper preprocesses it)."""
    data = load_trec2010(preprocess="paper")
    return data.ratings[np.arange(3000)], data.groups[:3000]


@pytest.fixture(scope="module")
def web():
    return load_web()


# -- each twin against its kernel --------------------------------------------------
def _random_problem(small, difficulty, link="ordinal", spam=True, precision=1.0, seed=0):
    model = OrdinalMixture(difficulty=difficulty, link=link, spam=spam)
    data = model._encode(small.ratings, reset=True)
    problem = model._prepare(data, groups=small.groups if difficulty == "group" else None)
    rng = np.random.default_rng(seed)
    J, M = data.n_raters, data.n_items
    C = M if difficulty == "item" else problem.n_groups
    params = {
        "tau_shape": precision * rng.uniform(1, 5, J), "tau_rate": rng.uniform(0.5, 3, J),
        "eps": rng.uniform(0.3, 0.99, J), "delta_shape": rng.uniform(5, 15, C),
        "delta_rate": rng.uniform(2, 8, C), "mu": rng.normal(2.5, 1.5, M),
        "lam": rng.uniform(0.5, 5, M), "parallel": False,
    }
    if not spam:
        params["eps"] = np.ones(J)
    params["eps_c"] = 1 - params["eps"]
    return model, problem, params


def _sweep_on(path, model, problem, params, max_sweeps, tol, ratings=True):
    with kernel_path(path):
        problem.numpy = kernels.use_numpy_path(problem.data.n_ratings)
        assert problem.numpy == (path == "numpy")
        return model._sweep(problem, params, max_sweeps, tol, ratings)


@pytest.mark.parametrize("difficulty", [None, "group", "item"])
@pytest.mark.parametrize("link, spam, precision", [
    ("ordinal", True, 1.0),
    ("ordinal", True, 400.0),   # bins far in the tails: the scalar/log-space side
    ("ordinal", False, 1.0),
    ("gaussian", True, 1.0),
])
@pytest.mark.parametrize("max_sweeps, tol", [(1, 0.0), (50, 1e-6), (1000, 1e-10)])
def test_item_sweep_twin_matches_the_kernel(small, difficulty, link, spam, precision,
                                             max_sweeps, tol):
    model, problem, params = _random_problem(small, difficulty, link, spam, precision)
    # a few known items (gold) and an item without ratings take their own branches
    problem.known = problem.known.copy()
    problem.known[::7] = problem.value[np.arange(problem.n_items)[::7] % len(problem.value)]
    ours = _sweep_on("numpy", model, problem, params, max_sweeps, tol)
    theirs = _sweep_on("jit", model, problem, params, max_sweeps, tol)
    assert set(ours) == set(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-10, atol=1e-10,
                                   err_msg=key)
    # the fit loop's lean sweep gives the same items and sums
    lean = _sweep_on("numpy", model, problem, params, 1, 0.0, ratings=False)
    full = _sweep_on("numpy", model, problem, params, 1, 0.0)
    for key in lean:
        np.testing.assert_array_equal(lean[key], full[key], err_msg=key)


def test_item_sweep_twin_with_unrated_items():
    # items 3 and 7 have no ratings: q(z) is the prior, or the known value
    rng = np.random.default_rng(1)
    n_items, n_raters = 12, 5
    item = np.repeat([i for i in range(n_items) if i not in (3, 7)], 3)
    rater = rng.integers(0, n_raters, item.shape[0])
    counts = np.bincount(item, minlength=n_items)
    item_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    label = rng.integers(0, 3, item.shape[0]).astype(np.int32)
    rater = rater.astype(np.int32)
    scale = np.array([[0.5, 1.5, 2.5], [1.5, 2.5, 3.5], [1.0, 2.0, 3.0],
                      np.log(np.full(3, 1 / 3))])
    raters = np.empty((n_raters, 6))
    shape, rate = rng.uniform(1, 4, n_raters), rng.uniform(0.5, 2, n_raters)
    eps = rng.uniform(0.4, 0.95, n_raters)
    kernels.rater_table(raters, shape, rate, digamma(shape), np.log(rate), eps, 1 - eps)
    groups = np.array([[2.0, digamma(4.0) - np.log(2.0)]])
    hyper = np.array([10.0, 5.0, 2.0, 0.5])
    results = []
    for sweep in (kernels.item_sweep_numpy, kernels.item_sweep_serial):
        items = np.empty((6, n_items))
        known = np.full(n_items, np.nan)
        known[[0, 7]] = [1.0, 3.0]
        kernels.start_items(items, rng.normal(2, 1, n_items) * 0 + 2.2,
                            np.full(n_items, 1.5), known)
        out = np.empty((item.shape[0], 5))
        acc = np.empty((1, n_raters, 4))
        sweep(item_ptr, rater, label, np.zeros(n_items, np.int32), scale, raters, groups,
              items, out, hyper, True, True, False, 1, 0.0,
              np.array([0, n_items], np.int64), acc, True)
        results.append((items[:3], out, acc))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert results[0][0][0, 3] == 2.0 and results[0][0][0, 7] == 3.0


def test_truncnorm_twin_matches_the_kernel():
    rng = np.random.default_rng(2)
    lo = np.concatenate([rng.normal(0, 3, 2000), rng.uniform(-60, 60, 2000)])
    hi = lo + rng.exponential(1.0, 4000)
    # open-ended bins, far tails on either side, a bin 1e50 deviations out
    lo = np.concatenate([lo, [-np.inf, -np.inf, -1e5, 35.0, -45.0, -8.0, -3e50, 1e50]])
    hi = np.concatenate([hi, [np.inf, 1.0, -1e5 + 0.5, np.inf, -45.0 + 1e-3, 8.0, -1e50,
                              3e50]])
    log_z, mean, var = kernels.truncnorm_std_numpy(lo, hi)
    ref = np.array([kernels.truncnorm_std(a, b)[:3] for a, b in zip(lo, hi)])
    np.testing.assert_allclose(log_z, ref[:, 0], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(mean, ref[:, 1], rtol=1e-10, atol=1e-12)
    # the variance in a tail, 1 + a φ(a)/Z - b φ(b)/Z - mean², cancels terms
    # near x² whose densities carry the relative error of exp(-x²/2 - log Z):
    # about x² ulps from x²/2, and |log Z| ulps from log Z (each side's
    # erfc within an ulp or two of the other's)
    x = np.where(np.isfinite(lo), np.abs(lo), 0.0) + np.where(np.isfinite(hi), np.abs(hi), 0.0)
    x = np.minimum(x, 1e3)  # (beyond, both clip to Popoviciu's bound or 0)
    ulps = 1e-15 * x**2 * (x**2 + 100.0 * np.abs(ref[:, 0]))
    assert np.all(np.abs(var - ref[:, 2]) <= 1e-12 + ulps)
    assert np.all(np.isfinite(log_z) & np.isfinite(mean) & np.isfinite(var))


def test_rater_table_and_start_items_twins_match_the_kernels():
    rng = np.random.default_rng(3)
    shape, rate = rng.uniform(0.5, 50, 40), rng.uniform(0.01, 10, 40)
    eps = rng.uniform(0, 1, 40)
    eps[:3] = [0.0, 1.0, 0.5]
    tables = []
    for twin in (kernels.rater_table_numpy, kernels.rater_table):
        raters = np.empty((40, 6))
        twin(raters, shape, rate, digamma(shape), np.log(rate), eps, 1 - eps)
        tables.append(raters)
    np.testing.assert_array_equal(tables[0], tables[1])
    assert tables[0][0, kernels.RATER_LOG_EPS] == -np.inf
    assert tables[0][1, kernels.RATER_LOG_1MEPS] == -np.inf
    mu, lam, known = rng.normal(size=9), rng.uniform(1, 2, 9), np.where(
        rng.random(9) < 0.5, np.nan, 1.0)
    items = [np.zeros((6, 9)), np.zeros((6, 9))]
    kernels.start_items_numpy(items[0], mu, lam, known)
    kernels.start_items(items[1], mu, lam, known)
    np.testing.assert_array_equal(items[0], items[1])


def test_group_sums_twin_matches_the_kernel(small):
    model, problem, params = _random_problem(small, "group")
    state = _sweep_on("jit", model, problem, params, 1, 0.0)
    data = problem.data
    tau = np.random.default_rng(4).uniform(0.5, 3, data.n_raters)
    sums = []
    for twin in (kernels.group_sums_numpy, kernels.group_sums):
        genuine, error = np.empty(problem.n_groups), np.empty(problem.n_groups)
        twin(problem.group_ptr, problem.group_items, data.item_ptr, data.rater, state["out"],
             tau, genuine, error)
        sums.append((genuine, error))
    # the same sums in the same order
    np.testing.assert_array_equal(sums[0][0], sums[1][0])
    np.testing.assert_array_equal(sums[0][1], sums[1][1])


# -- whole fits on both paths ------------------------------------------------------
def _fit_both(make, X, **fit_params):
    fits = {}
    for path in ("numpy", "jit"):
        with kernel_path(path), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X, **fit_params)
            fits[path] = (model, model.predict_proba(X, groups=fit_params.get("groups")))
    return fits["numpy"], fits["jit"]


_ATTRIBUTES = ["rater_precision_", "rater_reliability_", "precision_shape_",
               "precision_rate_", "group_difficulty_", "item_mean_", "item_std_",
               "class_prior_", "objective_history_"]


def _assert_same(numpy_fit, jit_fit):
    (a, proba_a), (b, proba_b) = numpy_fit, jit_fit
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(proba_a, proba_b, rtol=0, atol=1e-10)
    for name in _ATTRIBUTES:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10,
                                   atol=1e-10, err_msg=name)


@pytest.mark.parametrize("kwargs", [
    {},
    {"difficulty": "group"},
    {"difficulty": "item"},
    {"link": "gaussian", "max_iter": 40},
    {"spam": False},
    {"n_init": 3, "max_iter": 60},
    {"thresholds": [-np.inf, 1.5, 2.5, np.inf]},  # open-ended outer bins
])
def test_same_fit_on_both_paths_trec(trec_part, kwargs):
    ratings, groups = trec_part
    kwargs = {"n_init": 1, "random_state": 0, **kwargs}
    _assert_same(*_fit_both(lambda: OrdinalMixture(**kwargs), ratings, groups=groups))


@pytest.mark.parametrize("kwargs", [{"n_init": 2}, {"n_init": 1, "accelerate": True}])
def test_same_fit_on_both_paths_web(web, kwargs):
    _assert_same(*_fit_both(lambda: OrdinalMixture(random_state=0, **kwargs), web.ratings))


@pytest.mark.parametrize("difficulty", [None, "item"])
def test_same_fit_on_both_paths_with_gold(small, difficulty):
    gold = np.where(np.arange(len(small.z)) % 3 == 0, np.round(small.z), np.nan)
    gold = np.clip(gold, 1, 4)
    _assert_same(*_fit_both(lambda: OrdinalMixture(n_init=1, random_state=0,
                                                   difficulty=difficulty),
                            small.ratings, y=gold))


def test_same_warm_start_on_both_paths(trec_part):
    ratings, _ = trec_part
    fits = []
    for path in ("numpy", "jit"):
        with kernel_path(path):
            model = OrdinalMixture(n_init=1, max_iter=15, random_state=0, warm_start=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(ratings)
                model.set_params(max_iter=200).fit(ratings)
            fits.append((model, model.predict_proba(ratings)))
    _assert_same(*fits)


def test_same_scores_on_both_paths(small):
    with kernel_path("numpy"):
        model = OrdinalMixture(n_init=1, random_state=0).fit(small.ratings)
        ours = model.predict_proba(small.ratings)
        mean = model.transform(small.ratings)
    with kernel_path("jit"):
        np.testing.assert_allclose(model.predict_proba(small.ratings), ours, atol=1e-10)
        np.testing.assert_allclose(model.transform(small.ratings), mean, atol=1e-10)


@pytest.mark.parametrize("kwargs", [{}, {"difficulty": "item"}, {"difficulty": "group"},
                                    {"link": "gaussian"}])
def test_objective_never_decreases_on_the_numpy_path(trec_part, kwargs):
    ratings, groups = trec_part
    with kernel_path("numpy"):
        model = OrdinalMixture(n_init=1, random_state=1, max_iter=300, **kwargs).fit(
            ratings, groups=groups)
    history = model.objective_history_
    assert np.all(np.isfinite(history)) and len(history) > 5
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))


@pytest.mark.parametrize("difficulty", [None, "item"])
def test_extreme_difficulty_prior_same_on_both_paths(small, difficulty):
    # beyond what float64 resolves: the same clear error on either path
    for path in ("numpy", "jit"):
        with kernel_path(path), pytest.raises(ValueError, match="prior mean of the difficulty"):
            OrdinalMixture(n_init=1, max_iter=5, difficulty=difficulty,
                           difficulty_shape=1e300, difficulty_rate=1e-300).fit(small.ratings)
    # extreme but resolved: finite on the numpy path (log Φ in the far tail
    # rounded as in the kernel, the moments clipped as there)
    for shape, rate in ((1e200, 1e100), (1e-30, 1e-6), (1e26, 1e50)):
        numpy_fit, jit_fit = _fit_both(
            lambda: OrdinalMixture(n_init=1, max_iter=5, difficulty=difficulty,
                                   difficulty_shape=shape, difficulty_rate=rate),
            small.ratings)
        for model, proba in (numpy_fit, jit_fit):
            assert np.all(np.isfinite(proba))
            assert np.all(np.isfinite(model.objective_history_))
        if shape < 1e100:
            # (at E δ = 1e100 a rating's E[(x - z)²] is the rounding of
            # x̄ - μ, 1e-31: the fits then agree in F's first pass only)
            np.testing.assert_allclose(numpy_fit[1], jit_fit[1], rtol=0, atol=1e-10)
        np.testing.assert_allclose(numpy_fit[0].objective_history_[0],
                                   jit_fit[0].objective_history_[0], rtol=1e-10)


# -- which path a fit takes ----------------------------------------------------------
def test_the_path_counts_ratings_times_restarts():
    limit = kernels.NUMPY_MAX_WORK
    assert kernels.use_numpy_path(limit - 1)
    assert not kernels.use_numpy_path(limit)
    assert kernels.use_numpy_path(limit // 4 - 1, 4)
    assert not kernels.use_numpy_path(limit // 4, 4)
    with kernel_path("numpy"):
        assert kernels.use_numpy_path(10 * limit, 10)
    with kernel_path("jit"):
        assert not kernels.use_numpy_path(1)


def test_a_fit_runs_every_restart_on_one_path(small, monkeypatch):
    n = small.ratings.n_ratings
    calls = []
    for name in ("item_sweep_numpy", "item_sweep_parallel", "item_sweep_serial"):
        kernel = getattr(kernels, name)
        monkeypatch.setattr(kernels, name,
                            lambda *a, _k=kernel, _n=name: calls.append(_n) or _k(*a))
    monkeypatch.setattr(kernels, "NUMPY_MAX_WORK", 3 * n + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        OrdinalMixture(n_init=3, random_state=0, max_iter=5).fit(small.ratings)
        assert set(calls) == {"item_sweep_numpy"}
        calls.clear()
        model = OrdinalMixture(n_init=4, random_state=0, max_iter=5).fit(small.ratings)
    assert "item_sweep_numpy" not in calls  # the fit and its final item pass
    calls.clear()
    model.predict(small.ratings)  # one pass: below the limit
    assert set(calls) == {"item_sweep_numpy"}
