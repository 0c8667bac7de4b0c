"""The numpy twins of the kernels give every model the same fit as the
compiled kernels (to 1e-10), whichever path a call takes."""

import numpy as np
import pytest

from skcrowd import MACE, DawidSkene, MajorityVote, MeanRating, MedianRating
from skcrowd._kernels._config import kernel_path
from skcrowd.datasets import load_rte, load_web


@pytest.fixture(scope="module")
def rte():
    return load_rte()


@pytest.fixture(scope="module")
def web():
    return load_web()


def _fit_both(make, X, **fit_params):
    fits = {}
    for path in ("numpy", "jit"):
        with kernel_path(path):
            model = make().fit(X, **fit_params)
            fits[path] = (model, model.predict_proba(X))
    return fits["numpy"], fits["jit"]


def _assert_same(numpy_fit, jit_fit, attributes):
    (a, proba_a), (b, proba_b) = numpy_fit, jit_fit
    np.testing.assert_allclose(proba_a, proba_b, rtol=0, atol=1e-10)
    for name in attributes:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-10,
                                   err_msg=name)


@pytest.mark.parametrize("init", ["majority", "random"])
def test_dawid_skene_same_fit_on_both_paths(web, init):
    numpy_fit, jit_fit = _fit_both(lambda: DawidSkene(init=init, random_state=0), web.ratings)
    assert numpy_fit[0].n_iter_ == jit_fit[0].n_iter_
    _assert_same(numpy_fit, jit_fit, ["confusion_", "class_prior_", "objective_history_"])


def test_dawid_skene_with_gold_same_fit_on_both_paths(rte):
    gold = np.where(np.arange(len(rte.gold)) % 3 == 0, rte.gold, np.nan)
    numpy_fit, jit_fit = _fit_both(lambda: DawidSkene(random_state=0), rte.ratings, y=gold)
    _assert_same(numpy_fit, jit_fit, ["confusion_", "class_prior_", "objective_history_"])


@pytest.mark.parametrize("model", [MajorityVote, MeanRating, MedianRating])
def test_baselines_same_on_both_paths(web, model):
    numpy_fit, jit_fit = _fit_both(model, web.ratings)
    _assert_same(numpy_fit, jit_fit, [])
    with kernel_path("numpy"):
        a = numpy_fit[0].predict(web.ratings)
    with kernel_path("jit"):
        b = jit_fit[0].predict(web.ratings)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", ["vb", "em"])
def test_mace_same_fit_on_both_paths(web, method):
    numpy_fit, jit_fit = _fit_both(lambda: MACE(method=method, random_state=0), web.ratings)
    assert numpy_fit[0].n_iter_ == jit_fit[0].n_iter_
    _assert_same(numpy_fit, jit_fit, ["class_prior_", "rater_competence_",
                                      "spam_distribution_", "objective_history_"])


def test_mace_with_gold_same_fit_on_both_paths(rte):
    gold = np.where(np.arange(len(rte.gold)) % 3 == 0, rte.gold, np.nan)
    numpy_fit, jit_fit = _fit_both(lambda: MACE(random_state=0), rte.ratings, y=gold)
    _assert_same(numpy_fit, jit_fit, ["class_prior_", "rater_competence_",
                                      "objective_history_"])
