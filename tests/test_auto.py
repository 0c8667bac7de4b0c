"""AutoCrowd, the default: close to the best model on crowds where single
models fail, and a full estimator (pipelines, searches, gold, checks)."""

import os
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skcrowd import IRT3PL, MACE, AutoCrowd, DawidSkene, MajorityVote, Ratings
from skcrowd.datasets import load_rte

# the crowds of the benchmark (benchmarks/bench_default.py), at test size
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from bench_default import CROWDS, random_crowd, skcrowd_models  # noqa: E402


@pytest.fixture(scope="module")
def rte():
    return load_rte()


def accuracy(labels, truth):
    return float(np.mean(np.asarray(labels) == truth))


# On the small Dawid-Skene crowd (400 items) held-out likelihood cannot
# tell MACE from Dawid-Skene (-4.0227 against -4.0239 nats per item, the
# paired standard error 0.03), their labels agree with every clear
# majority, and the likelier, MACE, is 1.25 points less accurate (0.9650,
# 0.9775).  At the benchmark's 1500 items Dawid-Skene is chosen on every
# seed, 3 to 6 standard errors likelier.
KNOWN_MISS = pytest.mark.xfail(strict=True, reason="tied with the truth's model, 1.25 "
                               "points less accurate (dawid_skene, 400 items)")


@pytest.mark.parametrize("crowd", [pytest.param(c, marks=KNOWN_MISS) if c == "dawid_skene"
                                   else c for c in sorted(CROWDS)])
def test_close_to_the_best_model_and_never_below_majority_vote(crowd):
    R, truth = CROWDS[crowd](0, small=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = skcrowd_models(len(np.unique(R.label)))
        scores = {name: accuracy(m.fit_predict(R), truth) for name, m in models.items()}
        auto = accuracy(AutoCrowd(random_state=0).fit_predict(R), truth)
    best = max(scores.values())
    assert auto >= best - 0.01, (auto, scores)
    assert auto >= scores["MajorityVote"] - 0.01, (auto, scores)


def test_guard_refuses_a_likelier_model_unrelated_to_the_consensus():
    # raters in camps: IRT3PL predicts held-out ratings best with labels
    # that agree with majority vote hardly more than chance
    R, truth = CROWDS["schools"](0, small=True)
    candidates = {"DawidSkene": DawidSkene(), "IRT3PL": IRT3PL(random_state=0)}
    auto = AutoCrowd(candidates=candidates, random_state=0).fit(R)
    assert auto.cv_scores_["IRT3PL"] > auto.cv_scores_["DawidSkene"]
    # IRT3PL's labels are the clear majority's on about half the items
    assert auto.agreement_["IRT3PL"] < 0.6 < 0.95 < auto.agreement_["DawidSkene"]
    assert auto.eligible_ == ["DawidSkene"]
    assert auto.selected_ == "DawidSkene"
    assert accuracy(auto.predict(R), truth) > accuracy(auto.estimators_["IRT3PL"].predict(R),
                                                        truth) + 0.2


def test_guard_keeps_models_that_are_right_where_the_vote_ties():
    # two ratings per item, 95% of the items in one class: a third of the
    # items are ties, which majority vote breaks toward the smaller class.
    # Every model is right on 93-94% of the items and majority vote on 62%;
    # compared with majority vote's labels by Cohen's kappa, the models
    # looked unrelated to the raters and only majority vote was eligible
    rng = np.random.default_rng(0)
    n_items, n_raters = 600, 40
    truth = (rng.random(n_items) < 0.95).astype(int)
    right = rng.uniform(0.65, 0.9, n_raters)
    item = np.repeat(np.arange(n_items), 2)
    rater = np.concatenate([rng.choice(n_raters, 2, replace=False) for _ in range(n_items)])
    label = np.where(rng.random(item.size) < right[rater], truth[item], 1 - truth[item])
    R = Ratings(item, rater, label)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoCrowd(random_state=0).fit(R)
    scores = {name: accuracy(model.predict(R), truth) for name, model in auto.estimators_.items()}
    assert auto.eligible_ == list(auto.cv_scores_)
    assert scores[auto.selected_] >= max(scores.values()) - 0.01, (auto.selected_, scores)
    assert scores[auto.selected_] > scores["MajorityVote"] + 0.2


def test_mace_learns_the_prevalence_on_imbalanced_data():
    # 88% of the items in one class, 3 ratings per item: with the prevalence
    # held uniform the spam distributions absorb the majority class
    R, truth = CROWDS["imbalanced"](1, small=True)
    majority = accuracy(MajorityVote().fit_predict(R), truth)
    learned = MACE(random_state=0).fit(R)
    uniform = MACE(random_state=0, class_prior="uniform").fit(R)
    assert learned.class_prior_[0] > 0.8
    assert accuracy(learned.predict(R), truth) >= majority
    assert accuracy(uniform.predict(R), truth) < majority


def test_selection_follows_the_held_out_likelihood(rte):
    auto = AutoCrowd(random_state=0).fit(rte.ratings)
    # two classes: the item-difficulty model is a candidate too
    assert set(auto.cv_scores_) == {"MajorityVote", "DawidSkene", "DawidSkene one_coin",
                                    "MACE", "IRT3PL difficulty"}
    best = max(auto.eligible_, key=auto.cv_scores_.get)
    assert best in auto.tied_ and auto.selected_ in auto.tied_
    assert set(auto.tied_) <= set(auto.eligible_)
    assert auto.agreement_[auto.selected_] == max(auto.agreement_[n] for n in auto.tied_)
    for name, scores in auto.held_out_scores_.items():
        assert scores.shape == (800,)
        assert np.mean(scores) == auto.cv_scores_[name]
    best = auto.selected_
    assert auto.best_estimator_ is auto.estimators_[best]
    np.testing.assert_array_equal(auto.predict(rte.ratings),
                                  auto.best_estimator_.predict(rte.ratings))
    np.testing.assert_allclose(auto.predict_proba(rte.ratings),
                               auto.best_estimator_.predict_proba(rte.ratings))
    assert auto.score(rte.ratings) == auto.best_estimator_.score(rte.ratings)
    assert np.all(np.isfinite(list(auto.cv_scores_.values())))


def test_the_rule_on_known_scores():
    from skcrowd._auto import choose

    rng = np.random.default_rng(0)
    base = rng.normal(-3.0, 1.0, 400)
    scores = {
        "likeliest": base,
        # 0.002 nats per item below, with paired noise of sd 0.1 (two
        # standard errors: 0.01): tied
        "tied": base - 0.002 + rng.normal(0.0, 0.1, 400),
        # 0.2 below with the same noise: clearly worse
        "worse": base - 0.2 + rng.normal(0.0, 0.1, 400),
        # the likeliest of all, but its labels leave the clear majorities
        "unrelated": base + 1.0,
    }
    agreement = {"likeliest": 0.90, "tied": 0.99, "worse": 1.0, "unrelated": 0.5}
    selected, eligible, tied = choose(scores, agreement)
    assert eligible == ["likeliest", "tied", "worse"]
    assert tied == ["likeliest", "tied"]
    assert selected == "tied"
    # equal agreement (to 0.1%): the likelier
    assert choose(scores, {**agreement, "likeliest": 0.9904})[0] == "likeliest"
    # no folds: the first eligible candidate
    nan = {name: np.full(3, np.nan) for name in scores}
    assert choose(nan, agreement) == ("likeliest", eligible, ["likeliest"])


def test_a_tie_in_likelihood_goes_to_the_labels_that_follow_the_raters():
    # 99% of the items in one class, a quarter of the raters spammers: with
    # the paper's prior on competence in MACE, the full Dawid-Skene model is
    # the likeliest held out, by less than two standard errors, with labels
    # that leave the clear majorities on 8% of their items and are 30
    # points less accurate than MACE's
    from skcrowd._auto import default_candidates

    R, truth, _ = random_crowd(156)
    default = AutoCrowd(random_state=0).fit(R)
    # the default's MACE (the two-stage prior) is the likeliest outright
    assert default.selected_ == "MACE"
    assert accuracy(default.predict(R), truth) >= accuracy(
        default.estimators_["DawidSkene"].predict(R), truth) + 0.2
    candidates = dict(default_candidates(0, len(np.unique(R.label))),
                      MACE=MACE(n_init=1, tol=1e-5, random_state=0))
    auto = AutoCrowd(candidates=candidates, random_state=0).fit(R)
    likeliest = max(auto.eligible_, key=auto.cv_scores_.get)
    assert likeliest == "DawidSkene" and len(auto.tied_) > 1
    assert auto.agreement_["DawidSkene"] < 0.95
    assert auto.selected_ != "DawidSkene"
    chosen = accuracy(auto.predict(R), truth)
    assert chosen >= accuracy(auto.estimators_["DawidSkene"].predict(R), truth) + 0.2
    assert chosen >= accuracy(auto.estimators_["MajorityVote"].predict(R), truth)


def test_item_difficulty_is_a_candidate_for_two_classes_only(rte):
    # IRT3PL takes binary ratings; with more classes the candidates are
    # the four categorical models
    R, _ = CROWDS["spammers"](0, small=True)
    auto = AutoCrowd(random_state=0).fit(R)
    assert set(auto.cv_scores_) == {"MajorityVote", "DawidSkene", "DawidSkene one_coin", "MACE"}
    binary = AutoCrowd(random_state=0).fit(rte.ratings)
    model = binary.estimators_["IRT3PL difficulty"]
    assert isinstance(model, IRT3PL)
    assert not model.guessing and not model.discrimination and model.difficulty
    # candidates passed by the user are the only ones
    only = AutoCrowd(candidates={"DawidSkene": DawidSkene()}, random_state=0).fit(rte.ratings)
    assert list(only.cv_scores_) == ["DawidSkene"]


def _difficulty_loglik(ds, data, variance):
    """The log marginal likelihood of Carpenter's reduction AB at the
    Dawid-Skene fit's rater parameters, β ~ N(0, variance) summed out on
    40 Gauss-Hermite nodes; a known item's class is its known one."""
    from scipy.special import log_expit, logit, logsumexp

    x, w = np.polynomial.hermite_e.hermegauss(40)
    beta = np.sqrt(variance) * x
    joint = np.zeros((data.n_items, 2, len(beta)))
    for z in range(2):
        alpha = logit(ds.confusion_[data.rater, z, z])
        sign = np.where(data.label == z, 1.0, -1.0)
        np.add.at(joint[:, z], data.item, log_expit(sign[:, None] * (alpha[:, None] - beta)))
    joint += np.log(w / w.sum()) + np.log(ds.class_prior_)[None, :, None]
    known = np.flatnonzero(data.gold >= 0) if data.gold is not None else []
    for i in known:
        joint[i, 1 - data.gold[i]] = -np.inf
    return logsumexp(joint.reshape(data.n_items, -1), axis=1).sum()


@pytest.mark.parametrize("with_gold", [False, True])
def test_difficulty_score_is_the_derivative_in_the_difficulty_variance(with_gold):
    from skcrowd._auto import difficulty_terms

    R, truth = CROWDS["difficulty"](0, small=True)
    y = np.where(np.arange(len(truth)) % 5 == 0, truth, np.nan) if with_gold else None
    ds = DawidSkene().fit(R, y)
    data = ds._encode(R, reset=False, y=y)
    h = 1e-4  # a one-sided difference, exact to O(h^2)
    derivative = (4 * _difficulty_loglik(ds, data, h) - _difficulty_loglik(ds, data, 2 * h)
                  - 3 * _difficulty_loglik(ds, data, 0.0)) / (2 * h)
    assert derivative > 1.0  # the crowd has item difficulty
    np.testing.assert_allclose(difficulty_terms(ds, data).sum(), derivative, rtol=1e-6)
    # at σ_β = 0 the model is the Dawid-Skene fit
    if not with_gold:
        np.testing.assert_allclose(_difficulty_loglik(ds, data, 0.0),
                                   ds.score(R) * data.n_items, rtol=1e-12)


def test_difficulty_score_is_the_same_for_the_same_crowd_told_otherwise():
    # the model is symmetric in the two classes (sensitivity and
    # specificity trade places), and ids and the order of rows are names
    from skcrowd._auto import difficulty_score

    def score(X):
        ds = DawidSkene().fit(X)
        return difficulty_score(ds, ds._encode(X, reset=False))

    frame = CROWDS["difficulty"](0, small=True)[0].to_long()
    reference = score(frame)
    order = np.random.default_rng(0).permutation(len(frame))
    told_otherwise = [
        frame.assign(label=1 - frame["label"]),
        frame.iloc[order],
        frame.assign(item="q" + frame["item"].astype(str), rater="w" + frame["rater"].astype(str)),
    ]
    for other in told_otherwise:
        assert score(other) == pytest.approx(reference, rel=1e-9)


def test_item_difficulty_is_fitted_only_where_the_ratings_show_it():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hard = AutoCrowd(random_state=0).fit(CROWDS["difficulty"](0, small=True)[0])
        # raters with a handful of ratings each, no item effects
        sparse = AutoCrowd(random_state=0).fit(CROWDS["sparse"](0, small=True)[0])
        three = AutoCrowd(random_state=0).fit(CROWDS["spammers"](0, small=True)[0])
    assert hard.difficulty_score_ > 2 and "IRT3PL difficulty" in hard.estimators_
    assert sparse.difficulty_score_ < -2 and "IRT3PL difficulty" not in sparse.estimators_
    assert np.isnan(three.difficulty_score_)
    # no item difficulty, 98% of the items in one class: the item-difficulty
    # model was the likeliest held out with labels 20 points less accurate
    R, truth, _ = random_crowd(32)
    auto = AutoCrowd(random_state=0).fit(R)
    assert auto.difficulty_score_ < 0 and "IRT3PL difficulty" not in auto.estimators_
    assert accuracy(auto.predict(R), truth) > 0.95


def test_estimator_api(rte):
    R = rte.ratings
    auto = AutoCrowd(random_state=0)
    labels = auto.fit_predict(R)
    assert accuracy(labels, rte.gold) > 0.9
    proba = auto.predict_proba(R)
    assert proba.shape == (len(R), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.isfinite(auto.score(R))
    assert auto.rater_table().shape[0] == len(R.rater_ids)
    assert auto.item_table(R).shape[0] == len(R)
    assert list(auto.classes_) == [0, 1]
    # long form, and a clone refits to the same choice
    frame = R.to_long()
    again = clone(auto).fit(frame)
    assert again.selected_ == auto.selected_
    np.testing.assert_array_equal(again.predict(frame).to_numpy(), labels)


def test_gold_labels_are_used(rte):
    R = rte.ratings
    gold = np.asarray(rte.gold, dtype=object)
    known = np.full(len(R), None, dtype=object)
    known[:200] = gold[:200]
    auto = AutoCrowd(random_state=0).fit(R, known)
    # the known items take their known labels; the others are inferred
    np.testing.assert_array_equal(auto.best_estimator_.fit_predict(R, known)[:200],
                                  gold[:200].astype(float))
    assert accuracy(auto.predict(R)[200:], rte.gold[200:]) > 0.9
    # a mapping keyed by item id means the same
    mapping = dict(zip(R.item_ids[:200], gold[:200]))
    by_id = AutoCrowd(random_state=0).fit(R, mapping)
    assert by_id.cv_scores_ == auto.cv_scores_


def test_pipeline_and_grid_search(rte):
    R = rte.ratings[:300]
    pipe = Pipeline([("model", AutoCrowd(random_state=0))])
    assert pipe.fit(R).predict_proba(R).shape == (300, 2)
    search = GridSearchCV(pipe, {"model__cv": [2, 3]}, cv=KFold(3, shuffle=True,
                                                                random_state=0))
    search.fit(R)
    assert search.best_params_["model__cv"] in (2, 3)
    assert np.isfinite(search.best_score_)


def test_a_wide_table_keeps_its_rater_columns(rte):
    wide = pd.DataFrame(rte.ratings[:100].to_dense(),
                        columns=[f"r{j}" for j in range(len(rte.ratings.rater_ids))])
    auto = AutoCrowd(cv=2, random_state=0).fit(wide)
    assert list(auto.feature_names_in_) == list(wide.columns)
    assert auto.predict(wide).shape == (100,)


def test_bad_candidates_are_refused(rte):
    with pytest.raises(ValueError, match="candidates"):
        AutoCrowd(candidates={}).fit(rte.ratings)
    with pytest.raises(ValueError, match="cv"):
        AutoCrowd(cv=1).fit(rte.ratings)


SPARSE_CHECK_REASON = (
    "sklearn's check expects predict_proba to have y's classes as columns; "
    "skcrowd's columns are the rating classes of X (sparse input is tested "
    "separately)"
)


@parametrize_with_checks(
    [AutoCrowd(cv=2, random_state=0)],
    expected_failed_checks=lambda est: {
        "check_estimator_sparse_array": SPARSE_CHECK_REASON,
        "check_estimator_sparse_matrix": SPARSE_CHECK_REASON,
    },
    xfail_strict=True,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
