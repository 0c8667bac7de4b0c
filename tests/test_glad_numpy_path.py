"""GLAD's numpy twins: the same fit as its compiled kernels (to 1e-10),
each twin the same numbers as its kernel, and a small first fit that
compiles none of GLAD's kernels."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skcrowd import GLAD, Ratings
from skcrowd._kernels import _glad as kernels
from skcrowd._kernels._config import kernel_path
from skcrowd.datasets import (load_bluebirds, load_caries, load_dog, load_rte, load_web,
                              make_glad)

ROOT = Path(__file__).resolve().parents[1]
TOL = 1e-10
LOADERS = [load_rte, load_bluebirds, load_dog, load_web, load_caries]


def _fit_both(make, fit):
    """``fit(model)`` on each path; returns {path: (model, proba, score)}."""
    out = {}
    for path in ("numpy", "jit"):
        with kernel_path(path):
            model, X = fit(make())
            out[path] = (model, model.predict_proba(X), model.score(X))
    return out


def _assert_same(fits, names=("rater_ability_", "class_prior_", "objective_history_",
                               "item_difficulty_")):
    (a, proba_a, score_a), (b, proba_b, score_b) = fits["numpy"], fits["jit"]
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(proba_a, proba_b, rtol=0, atol=TOL)
    np.testing.assert_allclose(score_a, score_b, rtol=TOL, atol=TOL)
    for name in names:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=TOL, atol=TOL,
                                   err_msg=name)


# -- whole fits -----------------------------------------------------------------
@pytest.mark.parametrize("loader", LOADERS, ids=lambda f: f.__name__)
def test_shipped_sets_below_the_limit_fit_the_same_on_both_paths(loader):
    X = loader().ratings
    assert len(X.rater) < kernels.NUMPY_MAX_RATINGS
    fits = _fit_both(GLAD, lambda model: (model.fit(X), X))
    _assert_same(fits)
    # and predict on the default path takes the numpy side
    assert kernels.item_step.pick(len(X.rater)) is kernels.item_step.numpy


@pytest.mark.parametrize("params", [
    dict(n_classes=3, spammer_fraction=0.2),
    dict(n_classes=5, b_std=2.0),
    dict(n_classes=2, alpha_mean=-0.5),  # adversarial raters: several modes per item
])
@pytest.mark.parametrize("model_params", [
    dict(),
    dict(class_prior="learn", init="random", n_init=2, random_state=3),
    dict(accelerate=False, b_prior_std=3.0),
])
def test_synthetic_data_fits_the_same_on_both_paths(params, model_params):
    X = make_glad(300, 12, 5, random_state=1, dense=False, **params).ratings
    fits = _fit_both(lambda: GLAD(**model_params), lambda model: (model.fit(X), X))
    _assert_same(fits)


def test_gold_fits_the_same_on_both_paths():
    data = load_rte()
    gold = np.where(np.arange(len(data.gold)) % 3 == 0, data.gold, np.nan)
    fits = _fit_both(lambda: GLAD(class_prior="learn"),
                     lambda model: (model.fit(data.ratings, y=gold), data.ratings))
    _assert_same(fits)


def test_warm_start_fits_the_same_on_both_paths():
    X = load_dog().ratings
    first, second = X[np.arange(400)], X[np.arange(300, len(X))]

    def fit(model):
        model.fit(first)
        return model.fit(second), second

    _assert_same(_fit_both(lambda: GLAD(warm_start=True), fit))


def test_partial_fit_the_same_on_both_paths():
    X = make_glad(1_200, 30, 4, 3, random_state=2, dense=False).ratings

    def fit(model):
        for start in range(0, len(X), 300):
            part = X[np.arange(start, start + 300)]
            model.partial_fit(Ratings(part.item, part.rater, part.label,
                                      item_ids=part.item_ids))
        return model, X

    # stepwise EM keeps no item difficulties and no objective history
    _assert_same(_fit_both(lambda: GLAD(classes=[0, 1, 2]), fit),
                 names=("rater_ability_", "class_prior_"))


@pytest.mark.parametrize("class_prior", ["uniform", "learn"])
def test_objective_never_decreases_on_the_numpy_path(class_prior):
    X = make_glad(300, 15, 4, 3, spammer_fraction=0.2, random_state=5).ratings
    with kernel_path("numpy"):
        model = GLAD(class_prior=class_prior, max_iter=150, tol=0).fit(X)
    history = np.asarray(model.objective_history_)
    assert model.n_iter_ == 150
    assert np.all(np.isfinite(history))
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))
    assert history[-1] > history[0]


# -- each twin against its kernel -----------------------------------------------
def _problem(seed, n_classes, n_items=40, n_raters=9, long_item=False):
    """Random items: one without ratings, one with one rating and, with
    ``long_item``, one with 1,300 (its softplus sum spans three products of
    512 factors)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 8, size=n_items)
    counts[0], counts[1] = 0, 1
    if long_item:
        counts[2] = 1_300
    item_ptr = np.zeros(n_items + 1, dtype=np.int64)
    item_ptr[1:] = np.cumsum(counts)
    n = int(item_ptr[-1])
    rater = rng.integers(0, n_raters, size=n).astype(np.int32)
    label = rng.integers(0, n_classes, size=n).astype(np.int32)
    alpha = rng.normal(0.5, 1.5, size=n_raters)
    log_prior = np.log(rng.dirichlet(np.ones(n_classes)))
    return item_ptr, rater, label, alpha, log_prior


def _evidence(seed, n_items, n_classes):
    """Gold on about a third of the items: 0 for its class, -inf elsewhere."""
    rng = np.random.default_rng(seed)
    evidence = np.zeros((n_items, n_classes))
    for i in np.flatnonzero(rng.random(n_items) < 0.3):
        evidence[i] = -np.inf
        evidence[i, rng.integers(n_classes)] = 0.0
    return evidence


def _item_problem(item_ptr, rater, label, alpha, log_prior, evidence, b_mean=1.0,
                  b_precision=0.7, step_tol=1e-9):
    return kernels._ItemProblem(item_ptr, rater, label, alpha, log_prior, evidence, b_mean,
                                b_precision, step_tol)


@pytest.mark.parametrize("n_classes", [1, 2, 3, 10])
def test_item_objective_twin_matches_its_kernel(n_classes):
    item_ptr, rater, label, alpha, log_prior = _problem(n_classes, n_classes, long_item=True)
    n_items = len(item_ptr) - 1
    evidence = _evidence(n_classes, n_items, n_classes)
    problem = _item_problem(item_ptr, rater, label, alpha, log_prior, evidence)
    for b in (-3.0, 0.4, 2.5, 40.0):
        value, gradient, hessian, weights, sigma = problem.objective(
            problem.all, np.full(n_items, b))
        for i in range(n_items):
            start, stop = item_ptr[i], item_ptr[i + 1]
            out_weights, out_sigma = np.empty(n_classes), np.zeros(len(rater))
            expected = kernels.item_objective(
                start, stop, rater, label, alpha, problem.prior[i], b, problem.log_km1, 1.0,
                0.7, np.empty(n_classes), problem.counts[i], out_weights, out_sigma)
            np.testing.assert_allclose([value[i], gradient[i], hessian[i]], expected,
                                       rtol=TOL, atol=TOL)
            np.testing.assert_allclose(weights[i], out_weights, rtol=TOL, atol=TOL)
            if n_classes > 1:
                np.testing.assert_allclose(sigma[start:stop], out_sigma[start:stop],
                                           rtol=TOL, atol=TOL)


@pytest.mark.parametrize("n_classes", [2, 3, 10])
@pytest.mark.parametrize("max_steps", [1, 100])
def test_fit_item_twin_matches_its_kernel(n_classes, max_steps):
    item_ptr, rater, label, alpha, log_prior = _problem(7 + n_classes, n_classes,
                                                        long_item=True)
    n_items = len(item_ptr) - 1
    problem = _item_problem(item_ptr, rater, label, alpha, log_prior,
                            np.zeros((0, n_classes)))
    start_b = np.random.default_rng(n_classes).normal(1.0, 2.0, size=n_items)
    b, value = problem.fit(problem.all, start_b, max_steps)
    for i in range(n_items):
        expected = kernels.fit_item(
            item_ptr[i], item_ptr[i + 1], rater, label, alpha, problem.prior[i], start_b[i],
            problem.log_km1, 1.0, 0.7, max_steps, 1e-9, np.empty(n_classes),
            problem.counts[i].copy(), np.empty(n_classes), np.empty(len(rater)))
        np.testing.assert_allclose([b[i], value[i]], expected, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("n_classes", [1, 2, 4])
def test_grid_maxima_twin_matches_its_kernel(n_classes):
    item_ptr, rater, label, alpha, log_prior = _problem(20 + n_classes, n_classes,
                                                        n_items=300)
    # abilities of both signs and a wide prior: items with two modes
    alpha = np.random.default_rng(4).normal(0.0, 2.0, size=len(alpha))
    n_items = len(item_ptr) - 1
    problem = _item_problem(item_ptr, rater, label, alpha, log_prior,
                            _evidence(1, n_items, n_classes), b_precision=0.05)
    grid = 1.0 + 0.75 * np.arange(-8, 9)
    first, second = problem.grid_maxima(grid)
    n_grid = len(grid)
    for i in range(n_items):
        expected = kernels.grid_maxima(
            item_ptr[i], item_ptr[i + 1], rater, label, alpha, problem.prior[i],
            problem.log_km1, 1.0, 0.05, grid, np.exp(grid), problem.counts[i],
            np.empty((n_grid, n_classes)), np.empty(n_grid))
        assert (first[i], second[i]) == expected
    assert np.all(first >= 0)
    if n_classes > 1:
        assert np.any(second >= 0)  # the test sees items with two maxima


def test_add_rater_terms_twin_matches_its_kernel():
    item_ptr, rater, label, alpha, log_prior = _problem(3, 3, n_items=60)
    n_items, n_raters = len(item_ptr) - 1, len(alpha)
    rng = np.random.default_rng(4)
    beta = np.exp(rng.normal(1.0, 1.0, size=n_items))
    weights = rng.dirichlet(np.ones(3), size=n_items)
    sigma = rng.random(len(rater))
    block = np.repeat(np.arange(4), n_items // 4)
    out = np.zeros((4, n_raters, 4))
    kernels.add_rater_terms_numpy(kernels._Rows(item_ptr, np.arange(n_items)), rater, label,
                                  beta, weights, sigma, block, out)
    expected = np.zeros((4, n_raters, 4))
    for i in range(n_items):
        kernels.add_rater_terms(item_ptr[i], item_ptr[i + 1], rater, label, beta[i],
                                weights[i], sigma, expected[block[i]])
    np.testing.assert_allclose(out, expected, rtol=TOL, atol=TOL)


def _item_step(side, item_ptr, rater, label, alpha, log_prior, evidence, max_steps, grid,
               log_beta, n_blocks):
    n_items, n_classes = len(item_ptr) - 1, len(log_prior)
    out = dict(log_beta=log_beta.copy(), beta=np.empty(n_items),
               posterior=np.empty((n_items, n_classes)), loglik=np.empty(n_items),
               rater_stats=np.full((n_blocks, len(alpha), 4), np.nan))
    side(item_ptr, rater, label, alpha, log_prior, evidence, 1.0, 0.7, max_steps, 1e-9,
         grid, out["log_beta"], out["beta"], out["posterior"], out["loglik"],
         out["rater_stats"], np.empty(len(rater)))
    return out


@pytest.mark.parametrize("n_classes", [1, 2, 3])
@pytest.mark.parametrize("max_steps, search, gold", [(1, False, False), (1, True, True),
                                                     (0, True, False), (1, True, False)])
def test_item_step_twin_matches_its_kernel(n_classes, max_steps, search, gold):
    item_ptr, rater, label, alpha, log_prior = _problem(30 + n_classes, n_classes,
                                                        n_items=90, long_item=True)
    n_items = len(item_ptr) - 1
    evidence = (_evidence(2, n_items, n_classes) if gold else np.zeros((0, n_classes)))
    grid = 1.0 + 0.75 * np.arange(-8, 9) if search else np.empty(0)
    log_beta = np.random.default_rng(5).normal(1.0, 1.0, size=n_items)
    for n_blocks in (0, 7):
        args = (item_ptr, rater, label, alpha, log_prior, evidence, max_steps, grid,
                log_beta, n_blocks)
        twin = _item_step(kernels.item_step.numpy, *args)
        kernel = _item_step(kernels.item_step.jit.serial, *args)
        for name in twin:
            np.testing.assert_allclose(twin[name], kernel[name], rtol=TOL, atol=TOL,
                                       err_msg=name)


@pytest.mark.parametrize("n_items", [0, 3])
def test_item_step_twin_matches_its_kernel_without_ratings(n_items):
    # a Dask partition can hold items without ratings, or no items at all
    item_ptr = np.zeros(n_items + 1, dtype=np.int64)
    rater = label = np.empty(0, dtype=np.int32)
    alpha, log_prior = np.array([0.5, 1.5]), np.log([0.3, 0.7])
    for max_steps, grid in ((1, np.empty(0)), (0, 1.0 + 0.75 * np.arange(-8, 9))):
        args = (item_ptr, rater, label, alpha, log_prior, np.zeros((0, 2)), max_steps, grid,
                np.ones(n_items), 2)
        twin = _item_step(kernels.item_step.numpy, *args)
        kernel = _item_step(kernels.item_step.jit.serial, *args)
        for name in twin:
            np.testing.assert_array_equal(twin[name], kernel[name], err_msg=name)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_item_marginal_twin_matches_its_kernel(n_classes):
    item_ptr, rater, label, alpha, log_prior = _problem(40 + n_classes, n_classes,
                                                        long_item=True)
    n_items = len(item_ptr) - 1
    x, w = np.polynomial.hermite.hermgauss(30)
    nodes, log_weights = 1.0 + np.sqrt(2.0) * x, np.log(w) - 0.5 * np.log(np.pi)
    out = {}
    for side in ("numpy", "jit"):
        loglik, node_posterior = np.empty(n_items), np.empty((n_items, len(nodes)))
        kernel = getattr(kernels.item_marginal, side)
        (kernel if side == "numpy" else kernel.serial)(
            item_ptr, rater, label, alpha, log_prior, nodes, log_weights, loglik,
            node_posterior)
        out[side] = loglik, node_posterior
    for a, b in zip(out["numpy"], out["jit"]):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


# -- the first fit compiles nothing of GLAD's -------------------------------------
FIRST_FIT = r"""
import json, sys
from skcrowd import GLAD
from skcrowd.datasets import make_glad
from skcrowd._kernels import _glad
X = make_glad(300, 12, 5, 3, random_state=0, dense=False).ratings
model = GLAD().fit(X)
model.predict(X), model.predict_proba(X), model.score(X)
compiled = []
for value in vars(_glad).values():
    for part in (value, getattr(value, "jit", None),
                 getattr(getattr(value, "jit", None), "serial", None)):
        if getattr(part, "signatures", None):
            compiled.append(part.py_func.__name__)
print(json.dumps(compiled))
"""


def test_a_small_first_fit_compiles_no_glad_kernel(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", FIRST_FIT], env=env, cwd=tmp_path,
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
    # nothing was written to the (empty) cache either
    cache = tmp_path / "cache"
    assert not cache.exists() or not any(p.suffix == ".nbc" for p in cache.rglob("*"))
