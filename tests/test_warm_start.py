"""Warm starts: warm_start=True and fit(X, init_params=earlier_model)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, OrdinalMixture, Ratings
from skcrowd.datasets import make_dawid_skene

RATER_PARAMS = {DawidSkene: "confusion_", GLAD: "rater_ability_", IRT3PL: "alpha_sens_",
                MACE: "spam_distribution_", OrdinalMixture: "rater_precision_"}


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


@pytest.mark.parametrize("cls", [DawidSkene, GLAD, IRT3PL, MACE, OrdinalMixture],
                         ids=lambda c: c.__name__)
def test_refit_from_fitted_state_converges_at_once(binary, cls):
    R = ratings_for(cls, binary)
    # a fixed random_state: the random restarts (OrdinalMixture, MACE) end
    # in different optima run to run otherwise (passes for random_state 0-11)
    model = cls(warm_start=True, random_state=0)
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


# -- "shrink toward there": DawidSkene's prior from an earlier fit ---------------
def _split_by_items(R, first_share, seed=0):
    """Two jobs with the same raters: the items split at random."""
    first = np.random.default_rng(seed).random(R.shape[0]) < first_share
    out = []
    for part in (first, ~first):
        keep = part[R.item]
        out.append(Ratings(R.item[keep], R.rater[keep], R.label[keep],
                           item_ids=R.item_ids[part], rater_ids=R.rater_ids))
    return out


@pytest.mark.parametrize("before", ["item", "group"])
def test_warm_start_after_a_fit_with_other_difficulty(before):
    # difficulty="item" or "group", then difficulty=None: the per-item or
    # per-group δ was carried into the one shared δ (IndexError: boolean index
    # did not match indexed array)
    from skcrowd.datasets import make_ordinal

    data = make_ordinal(n_items=30, n_raters=5, n_groups=3, random_state=0)
    model = OrdinalMixture(difficulty=before, n_init=1, max_iter=30, warm_start=True)
    model.fit(data.ratings, groups=data.groups)
    model.set_params(difficulty=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(data.ratings)
    assert np.all(np.isfinite(model.predict_proba(data.ratings)))
    assert model.group_difficulty_.shape == (1,)


@pytest.mark.parametrize("confusion", ["full", "one_coin"])
def test_prior_params_adds_the_earlier_counts_to_the_prior(confusion):
    """At the fixed point, the MAP confusion is the normalised sum of this
    fit's expected counts, the pseudo-counts and w x the earlier counts
    (matched by rater id, the raters in another column order)."""
    R = make_dawid_skene(n_items=600, n_raters=10, n_classes=3, ratings_per_item=3,
                         random_state=1).ratings
    job1, job2 = _split_by_items(R, 0.7)
    earlier = DawidSkene(confusion=confusion, tol=1e-12, max_iter=2000).fit(job1)
    w = 0.5
    model = DawidSkene(confusion=confusion, tol=1e-12, max_iter=2000)
    model.fit(shuffled_raters(job2, seed=3), prior_params=earlier, prior_weight=w)
    old = dict(zip(earlier.rater_ids_, earlier.confusion_counts_))
    prior = np.full((3, 3), 0.5) + 0.5 * np.eye(3)
    for j, r in enumerate(model.rater_ids_):
        rows = model.confusion_counts_[j] + w * old[r]
        if confusion == "full":
            rows = rows + prior
            expected = rows / rows.sum(axis=1, keepdims=True)
        else:
            right = np.trace(rows) + 1.0
            acc = right / (rows.sum() + 1.5)
            expected = np.full((3, 3), (1 - acc) / 2)
            np.fill_diagonal(expected, acc)
        np.testing.assert_allclose(model.confusion_[j], expected, atol=1e-6)


def test_prior_params_shrinks_toward_the_earlier_fit_and_weight_zero_is_a_cold_fit():
    R = make_dawid_skene(n_items=1500, n_raters=15, n_classes=2, ratings_per_item=3,
                         random_state=2).ratings
    job1, job2 = _split_by_items(R, 0.9)  # a small second job
    earlier = DawidSkene().fit(job1)
    cold = DawidSkene().fit(job2)
    shrunk = DawidSkene().fit(job2, prior_params=earlier)
    zero = DawidSkene().fit(job2, prior_params=earlier, prior_weight=0.0)
    np.testing.assert_allclose(zero.confusion_, cold.confusion_)
    gap_cold = np.abs(cold.confusion_ - earlier.confusion_).mean()
    gap_shrunk = np.abs(shrunk.confusion_ - earlier.confusion_).mean()
    assert gap_shrunk < 0.5 * gap_cold, (gap_shrunk, gap_cold)
    # the objective, now with the earlier counts in the prior, never decreases
    assert np.all(np.diff(shrunk.objective_history_) >= -1e-10)


def test_prior_params_errors():
    R = make_dawid_skene(n_items=100, n_raters=5, n_classes=2, random_state=0).ratings
    earlier = DawidSkene().fit(R)
    with pytest.raises(ValueError, match="prior_params must be a fitted DawidSkene"):
        DawidSkene().fit(R, prior_params=GLAD().fit(R))
    with pytest.raises(ValueError, match="prior_weight must be a finite number"):
        DawidSkene().fit(R, prior_params=earlier, prior_weight=-1.0)
    with pytest.raises(ValueError, match="needs the classes of the earlier fit"):
        DawidSkene().fit(np.array([[0, 1, 2], [2, 2, 1]], float), prior_params=earlier)
    streamed = DawidSkene().partial_fit(R)
    with pytest.raises(ValueError, match="confusion_counts_ are None"):
        DawidSkene().fit(R, prior_params=streamed)


@pytest.mark.parametrize("before, after", [
    ({"sens_spec": True}, {"sens_spec": False}),
    ({"sens_spec": False}, {"sens_spec": True}),
    ({"rater_effects": True, "sens_spec": False}, {"rater_effects": False, "sens_spec": False}),
], ids=["sens_spec-off", "sens_spec-on", "rater_effects-off"])
def test_irt_warm_start_after_a_fit_with_other_rater_parameters(binary, before, after):
    # sens_spec=True, then False: the two log-odds per rater were carried
    # into mode "one" (one accuracy α > 0, sens = spec), log of a negative α
    # gave RuntimeWarnings and NaN, and the refit stopped after one pass.
    model = IRT3PL(n_init=1, warm_start=True, **before).fit(binary)
    model.set_params(**after)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model.fit(binary)
    cold = IRT3PL(n_init=1, **after).fit(binary)
    assert model.n_iter_ > 1
    assert model.lower_bound_ == pytest.approx(cold.lower_bound_, rel=1e-4)
    np.testing.assert_array_equal(model.predict(binary), cold.predict(binary))
    if not model.sens_spec:
        np.testing.assert_array_equal(model.alpha_sens_, model.alpha_spec_)
