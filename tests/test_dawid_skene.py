"""DawidSkene: recovery, monotone EM, determinism, accuracy on real gold."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, KFold

from skcrowd import DawidSkene, MajorityVote
from skcrowd.datasets import (
    load_bluebirds,
    load_dog,
    load_rte,
    load_web,
    make_dawid_skene,
)


@pytest.fixture(scope="module")
def simulated():
    return make_dawid_skene(20_000, 50, 5, 3, random_state=0)


@pytest.fixture(scope="module")
def fitted(simulated):
    return DawidSkene().fit(simulated.ratings)


def test_recovers_confusion_matrices_and_prior(simulated, fitted):
    truth = simulated
    # Standard error of each confusion entry given the ratings the rater made
    # of that true class; every entry within 4.5 of them, on average 0.02.
    per_class = np.bincount(truth.ratings._rater)[:, None, None] * truth.class_prior[None, :, None]
    se = np.sqrt(truth.confusion * (1 - truth.confusion) / per_class)
    error = np.abs(fitted.confusion_ - truth.confusion)
    assert np.all(error <= 4.5 * se + 1e-3)
    assert error.mean() < 0.02
    np.testing.assert_allclose(fitted.class_prior_, truth.class_prior, atol=0.015)


def test_beats_majority_vote_on_simulated_data(simulated, fitted):
    ds = np.mean(fitted.predict(simulated.ratings) == simulated.true_labels)
    mv = np.mean(MajorityVote().fit_predict(simulated.ratings) == simulated.true_labels)
    assert ds > mv + 0.01


@pytest.mark.parametrize("accelerate", [True, False])
@pytest.mark.parametrize("confusion", ["full", "one_coin"])
@pytest.mark.parametrize("init", ["majority", "random"])
def test_log_posterior_never_decreases(simulated, confusion, init, accelerate):
    model = DawidSkene(confusion=confusion, init=init, tol=0, max_iter=40, random_state=3,
                       accelerate=accelerate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(simulated.ratings[:3000])
    history = model.objective_history_
    assert model.n_iter_ == 40
    # one entry per kept state: a rejected extrapolation is not kept
    if accelerate:
        assert 20 <= len(history) <= 41
    else:
        assert len(history) == 41
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:]))


def test_fit_predict_equals_fit_then_predict(simulated):
    R = simulated.ratings[:5000]
    a = DawidSkene(random_state=0).fit_predict(R)
    model = DawidSkene(random_state=0).fit(R)
    np.testing.assert_array_equal(a, model.predict(R))


def test_same_result_for_any_number_of_threads(simulated):
    R = simulated.ratings[:5000]
    one = DawidSkene(n_jobs=1, max_iter=30).fit(R)
    two = DawidSkene(n_jobs=2, max_iter=30).fit(R)
    np.testing.assert_array_equal(one.confusion_, two.confusion_)
    np.testing.assert_array_equal(one.objective_history_, two.objective_history_)
    np.testing.assert_array_equal(one.predict_proba(R), two.predict_proba(R))


def test_same_random_state_same_fit(simulated):
    R = simulated.ratings[:3000]
    a = DawidSkene(init="random", n_init=3, random_state=7).fit(R)
    b = DawidSkene(init="random", n_init=3, random_state=7).fit(R)
    np.testing.assert_array_equal(a.confusion_, b.confusion_)
    c = DawidSkene(init="random", n_init=1, max_iter=2, random_state=8).fit(R)
    assert not np.array_equal(a.confusion_, c.confusion_)


def test_restarts_keep_the_best_objective(simulated):
    R = simulated.ratings[:3000]
    best = DawidSkene(init="random", n_init=4, random_state=1, max_iter=30).fit(R)
    # replay the four restarts one by one from the same random stream
    replay = DawidSkene(init="random", n_init=4, random_state=1, max_iter=30)
    rng = np.random.RandomState(1)
    data = replay._encode(R, reset=True)
    finals = [
        replay._run(data, replay._init_params(data, rng, restart))[2][-1]
        for restart in range(4)
    ]
    assert len(set(np.round(finals, 9))) > 1  # the restarts differ
    assert best.lower_bound_ == pytest.approx(max(finals))


def test_one_coin_has_one_accuracy_per_rater(simulated):
    model = DawidSkene(confusion="one_coin").fit(simulated.ratings[:4000])
    diag = np.diagonal(model.confusion_, axis1=1, axis2=2)
    np.testing.assert_allclose(diag, diag[:, :1] * np.ones_like(diag))
    off = model.confusion_.sum(axis=2) - diag
    np.testing.assert_allclose(off, 1 - diag)


def test_known_class_prior_is_held_fixed(simulated):
    prior = np.array([0.2, 0.3, 0.5])
    model = DawidSkene(class_prior=prior).fit(simulated.ratings[:2000])
    np.testing.assert_array_equal(model.class_prior_, prior)
    with pytest.raises(ValueError, match="class_prior"):
        DawidSkene(class_prior=[0.5, 0.5]).fit(simulated.ratings[:100])


@pytest.mark.parametrize(
    "kind", ["dense", "sparse", "ratings"]
)
def test_grid_search_on_every_input_form(kind):
    data = make_dawid_skene(600, 12, 4, 3, random_state=5)
    X = {
        "dense": data.X,
        "sparse": sp.csr_matrix(
            (data.ratings.label, (data.ratings._item, data.ratings._rater)), shape=data.X.shape
        ),
        "ratings": data.ratings,
    }[kind]
    search = GridSearchCV(
        DawidSkene(max_iter=50),
        {"confusion": ["full", "one_coin"], "prior_correct": [0.5, 2.0]},
        cv=KFold(3, shuffle=True, random_state=0),
    )
    search.fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    # the held-out score is the mean log likelihood of the held-out items
    best = search.best_estimator_
    assert search.best_score_ == pytest.approx(max(scores))
    assert best.score(X) == pytest.approx(np.mean(best.score_samples(X)))


# crowd-kit 1.4.2 DawidSkene, defaults, accuracy on the same files
CROWDKIT_DS = {"rte": 0.9275, "bluebirds": 0.8889, "dog": 0.8426, "web": 0.8292}
LOADERS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}


@pytest.mark.parametrize("name", sorted(CROWDKIT_DS))
def test_accuracy_on_gold_matches_crowdkit(name):
    data = LOADERS[name]()
    known = ~np.isnan(data.gold)
    labels = DawidSkene().fit_predict(data.ratings)
    accuracy = np.mean(labels[known] == data.gold[known])
    assert accuracy >= CROWDKIT_DS[name] - 0.005
