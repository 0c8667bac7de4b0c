"""AutoCrowd's candidates on one shared encoding, their fits and held-out
scores, with short warm-started fold fits: the same numbers as the public
route where that route is exact, and a bounded number of passes over the
ratings."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold

from skcrowd import AutoCrowd, DawidSkene, MajorityVote
from skcrowd._auto import FOLD_PASSES
from skcrowd._held_out import held_out_scores, majority_posterior, take_items
from skcrowd.datasets import load_rte


@pytest.fixture(scope="module")
def rte():
    return load_rte().ratings


def _encoded(model, R):
    return model._encode(R, reset=False)


def test_take_items_is_the_encoding_of_the_selected_items(rte):
    model = DawidSkene().fit(rte)
    rows = np.sort(np.random.default_rng(0).choice(len(rte), 200, replace=False))
    taken = take_items(_encoded(model, rte), rows)
    direct = _encoded(model, rte[rows])
    for field in ("item", "rater", "label", "item_ptr"):
        np.testing.assert_array_equal(getattr(taken, field), getattr(direct, field))
    assert (taken.n_raters, taken.n_classes) == (direct.n_raters, direct.n_classes)
    np.testing.assert_array_equal(taken.item_ids, rte.item_ids[rows])


def _public_scores(full, R, splits, **fit_params):
    scores = np.full(len(R), np.nan)
    for train, test in splits:
        model = clone(full).set_params(**fit_params).fit(R[train], **(
            {"init_params": full} if "warm_start" in full.get_params() else {}))
        scores[test] = model.score_samples(R[test])
    return scores


def _refuse(*args):
    raise AssertionError("every candidate shares the encoding here")


def test_majority_vote_is_scored_exactly(rte):
    # majority vote's fold fit is its closed form: the public route's numbers
    full = MajorityVote().fit(rte)
    splits = list(KFold(5, shuffle=True, random_state=0).split(np.arange(len(rte))))
    shared = held_out_scores({"MajorityVote": full}, _encoded(full, rte), full, splits,
                             FOLD_PASSES, _refuse)["MajorityVote"]
    np.testing.assert_allclose(shared, _public_scores(full, rte, splits), rtol=1e-12)


def test_fold_fits_run_to_the_public_optimum_given_the_passes(rte):
    # with passes enough to converge, the warm-started fold fits reach the
    # public route's fits (same start, same optimum)
    full = DawidSkene(tol=1e-12).fit(rte)
    splits = list(KFold(3, shuffle=True, random_state=1).split(np.arange(len(rte))))
    shared = held_out_scores({"DawidSkene": full}, _encoded(full, rte), full, splits, 5000,
                             _refuse)["DawidSkene"]
    public = _public_scores(full, rte, splits, max_iter=5000)
    # (plain EM against SQUAREM: the same optimum, reached to within 1e-4)
    np.testing.assert_allclose(shared, public, atol=1e-4)


def test_a_few_passes_rank_the_candidates_as_converged_fits_do(rte):
    fitted = {name: model.fit(rte) for name, model in {
        "MajorityVote": MajorityVote(), "DawidSkene": DawidSkene(),
        "DawidSkene one_coin": DawidSkene(confusion="one_coin")}.items()}
    splits = list(KFold(5, shuffle=True, random_state=0).split(np.arange(len(rte))))
    reference = fitted["DawidSkene"]
    data = _encoded(reference, rte)
    short = held_out_scores(fitted, data, reference, splits, FOLD_PASSES, _refuse)
    converged = held_out_scores(fitted, data, reference, splits, 500, _refuse)
    means = {name: (short[name].mean(), converged[name].mean()) for name in fitted}
    order_short = sorted(fitted, key=lambda n: means[n][0])
    order_converged = sorted(fitted, key=lambda n: means[n][1])
    assert order_short == order_converged, means


def test_fold_fits_pass_over_the_ratings_a_bounded_number_of_times(rte, monkeypatch):
    # each iterative candidate's fold fit: one pass at its start, FOLD_PASSES
    # EM passes, and the scoring pass; majority vote and the full fits aside
    calls = {"n": 0}
    original = DawidSkene._local_step

    def counted(self, data, params):
        calls["n"] += 1
        return original(self, data, params)

    monkeypatch.setattr(DawidSkene, "_local_step", counted)
    candidates = {"MajorityVote": MajorityVote(), "DawidSkene": DawidSkene()}
    full_fit = DawidSkene().fit(rte)
    calls["n"] = 0
    DawidSkene().fit(rte)
    full_passes = calls["n"]
    calls["n"] = 0
    auto = AutoCrowd(candidates=candidates, cv=5, random_state=0).fit(rte)
    assert auto.selected_ == "DawidSkene"
    assert calls["n"] <= full_passes + 5 * (FOLD_PASSES + 2), (calls["n"], full_passes)
    assert full_fit.n_iter_ > FOLD_PASSES  # the fold fits are shorter than a fit


def test_majority_posterior_is_identical_raters_bayes(rte):
    # p(k | votes) ∝ π_k a^{c_k} ((1 - a) / (K - 1))^{n - c_k}, with majority
    # vote's fitted prevalence and accuracy
    model = DawidSkene().fit(rte)
    posterior = majority_posterior(model, _encoded(model, rte))
    vote = MajorityVote().fit(rte)
    position = {item: i for i, item in enumerate(rte.item_ids)}
    items = np.array([position[item] for item in rte.item])
    counts = np.stack([np.bincount(items, weights=rte.label == k, minlength=len(rte))
                       for k in vote.classes_], axis=1)
    a, K = vote.accuracy_, len(vote.classes_)
    joint = vote.class_prior_ * a ** counts * ((1 - a) / (K - 1)) ** (counts.sum(1, keepdims=True)
                                                                    - counts)
    np.testing.assert_allclose(posterior, joint / joint.sum(axis=1, keepdims=True), rtol=1e-10)


def test_majority_posterior_holds_known_items_at_their_class(rte):
    known = [0, 1, 1, 0, 1]
    y = np.array(known + [None] * (len(rte) - 5), dtype=object)
    model = DawidSkene()
    model._validate_params()
    data, _ = model._fit(rte, y)
    posterior = majority_posterior(model, data)
    np.testing.assert_array_equal(posterior[:5], np.eye(2)[known])
    assert posterior[5:].min() < 0.99  # the others are not all certain


def test_candidates_with_other_classes_are_scored_on_their_own_encoding(rte):
    # a candidate whose classes differ cannot share the codes: it is refitted
    # through the public route, and still scored
    candidates = {"DawidSkene": DawidSkene(), "wider": DawidSkene(classes=[0, 1, 2])}
    auto = AutoCrowd(candidates=candidates, random_state=0).fit(rte)
    assert np.isfinite(auto.cv_scores_["wider"])
    assert np.isfinite(auto.cv_scores_["DawidSkene"])


class _Wrapped(MajorityVote):
    """A candidate that is not an skcrowd model to AutoCrowd's eyes."""


def test_a_first_candidate_of_another_kind_does_not_encode(rte, monkeypatch):
    # the shared encoding comes from the first skcrowd model; a candidate
    # that is not one is fitted and scored through its public methods
    import skcrowd._auto as auto_module

    real = auto_module.CrowdEstimator
    monkeypatch.setattr(auto_module, "CrowdEstimator", DawidSkene)
    candidates = {"other": _Wrapped(), "DawidSkene": DawidSkene()}
    auto = AutoCrowd(candidates=candidates, random_state=0).fit(rte)
    plain = AutoCrowd(candidates={"other": MajorityVote(), "DawidSkene": DawidSkene()},
                      random_state=0).fit(rte)
    assert real is not DawidSkene
    assert auto.cv_scores_ == pytest.approx(plain.cv_scores_, rel=1e-12)
    assert auto.selected_ == plain.selected_ == "DawidSkene"
    # no skcrowd model among the candidates: majority vote encodes
    alone = AutoCrowd(candidates={"other": _Wrapped()}, random_state=0).fit(rte)
    assert alone.cv_scores_["other"] == pytest.approx(plain.cv_scores_["other"], rel=1e-12)


def test_candidates_share_one_encoding_and_equal_their_own_fits(monkeypatch):
    import skcrowd._base

    # a wide table (string rater columns) with known labels on a quarter
    rte = load_rte()
    wide = rte.ratings.to_long().pivot(index="item", columns="rater", values="label")
    wide.columns = [f"r{c}" for c in wide.columns]
    gold = pd.Series(rte.gold, index=np.unique(rte.ratings.to_long()["item"]))[::4]
    calls, encode = [], skcrowd._base.encode

    def counted(*args, **kwargs):
        calls.append(kwargs["reset"])
        return encode(*args, **kwargs)

    monkeypatch.setattr(skcrowd._base, "encode", counted)
    auto = AutoCrowd(random_state=0).fit(wide, gold)
    assert calls.count(True) == 1  # one fit crosses the input boundary
    monkeypatch.undo()
    for name, model in auto.estimators_.items():
        alone = clone(model).fit(wide, gold)
        for attribute in ("classes_", "rater_ids_", "feature_names_in_"):
            np.testing.assert_array_equal(getattr(model, attribute), getattr(alone, attribute))
        np.testing.assert_array_equal(model.predict_proba(wide), alone.predict_proba(wide))
        np.testing.assert_array_equal(model.rater_table(), alone.rater_table())
