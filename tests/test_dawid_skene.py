"""DawidSkene: recovery, monotone EM, determinism, accuracy on real gold."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold

import numba

from skcrowd import DawidSkene, MajorityVote, dawid_skene_prior_grid
from skcrowd._base import numba_threads
from skcrowd._kernels import _common
from skcrowd._kernels import _dawid_skene as ds_kernels
from skcrowd._kernels._config import kernel_path
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


def test_same_result_for_any_number_of_threads(simulated, monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here: the threaded kernel cannot run")
    R = simulated.ratings[:5000]
    # 25,000 ratings are below the parallel threshold: lower it, so that the
    # n_jobs=2 fit really runs the threaded kernel.
    monkeypatch.setattr(_common, "PARALLEL_MIN_RATINGS", 1)
    with kernel_path("jit"):  # not the numpy twin of small data
        one = DawidSkene(n_jobs=1, max_iter=30).fit(R)
        two = DawidSkene(n_jobs=2, max_iter=30).fit(R)
        with numba_threads(2):
            assert ds_kernels.e_step.pick(R.n_ratings) is ds_kernels.e_step, (
                "the n_jobs=2 fit must run the threaded e_step, not the serial one")
        with numba_threads(1):
            assert ds_kernels.e_step.pick(R.n_ratings) is ds_kernels.e_step.serial
    np.testing.assert_array_equal(one.confusion_, two.confusion_,
                                  err_msg="threaded and serial kernels differ")
    np.testing.assert_array_equal(one.objective_history_, two.objective_history_)
    np.testing.assert_array_equal(one.predict_proba(R), two.predict_proba(R))


def test_same_random_state_same_fit(simulated):
    R = simulated.ratings[:3000]
    a = DawidSkene(init="random", n_init=3, random_state=7).fit(R)
    b = DawidSkene(init="random", n_init=3, random_state=7).fit(R)
    np.testing.assert_array_equal(a.confusion_, b.confusion_)
    # another seed alone (same n_init, max_iter) gives another fit
    c = DawidSkene(init="random", n_init=3, random_state=8).fit(R)
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


# -- the MAP updates and the objective in closed form, on a tiny example ----------------
TINY = np.array([[0, 0, 1], [1, 1, np.nan], [0, 1, 1], [2, 2, 2], [0, np.nan, 2]])


def _tiny_counts(X, posterior, K):
    """counts[j, k, l] = Σ_i P(z_i = k) [rater j gave label l to item i]."""
    counts = np.zeros((X.shape[1], K, K))
    for i, j in zip(*np.nonzero(~np.isnan(X))):
        counts[j, :, int(X[i, j])] += posterior[i]
    return counts


def _vote_shares(X, K):
    shares = np.array([[np.sum(row == k) for k in range(K)] for row in X], dtype=float)
    return shares / shares.sum(axis=1, keepdims=True)


def test_map_update_full_confusion_in_closed_form():
    """With max_iter=0 the fitted θ is one M-step from the vote shares:
    θ_j[k, l] = (n_jkl + a_kl) / Σ_l' (n_jkl' + a_kl'), a = prior_correct on
    the diagonal and prior_wrong off it (different values, so a swap shows)."""
    K = 3
    model = DawidSkene(prior_correct=2.0, prior_wrong=0.3, prior_class=1.5, max_iter=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(TINY)
    counts = _tiny_counts(TINY, _vote_shares(TINY, K), K)
    pseudo = np.where(np.eye(K, dtype=bool), 2.0, 0.3)
    expected = (counts + pseudo) / (counts + pseudo).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(model.confusion_, expected, rtol=1e-9)
    prior = _vote_shares(TINY, K).sum(axis=0) + 1.5
    np.testing.assert_allclose(model.class_prior_, prior / prior.sum(), rtol=1e-9)
    # by hand, rater 2 and true class 2: label 2 on item 3 (share 1) and item 4
    # (share 1/2), so counts (0, 0, 1.5) -> (0.3, 0.3, 3.5) / 4.1
    np.testing.assert_allclose(model.confusion_[2, 2], [0.3 / 4.1, 0.3 / 4.1, 3.5 / 4.1])


def test_map_update_one_coin_in_closed_form():
    """accuracy_j = (Σ_k n_jkk + prior_correct) / (n_j + prior_correct +
    prior_wrong); every error (1 - accuracy_j) / (K - 1)."""
    K = 3
    model = DawidSkene(confusion="one_coin", prior_correct=2.0, prior_wrong=0.3, max_iter=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(TINY)
    counts = _tiny_counts(TINY, _vote_shares(TINY, K), K)
    right = np.trace(counts, axis1=1, axis2=2)
    accuracy = (right + 2.0) / (counts.sum(axis=(1, 2)) + 2.3)
    for j in range(TINY.shape[1]):
        expected = np.full((K, K), (1 - accuracy[j]) / (K - 1))
        np.fill_diagonal(expected, accuracy[j])
        np.testing.assert_allclose(model.confusion_[j], expected, rtol=1e-9)


def _log_posterior(model, X):
    """log p(X | π, θ) + log p(π) + log p(θ) (Dirichlet / Beta kernels), per item."""
    K = len(model.classes_)
    theta, prior = model.confusion_, model.class_prior_
    total = 0.0
    for row in X:
        rated = np.flatnonzero(~np.isnan(row))
        labels = np.searchsorted(model.classes_, row[rated])
        terms = np.log(prior) + np.array(
            [np.sum(np.log(theta[rated, k, labels])) for k in range(K)])
        total += np.logaddexp.reduce(terms)
    if model.confusion == "full":
        pseudo = np.where(np.eye(K, dtype=bool), model.prior_correct, model.prior_wrong)
        total += np.sum(pseudo * np.log(theta))
    else:
        accuracy = theta[:, 0, 0]
        total += np.sum(model.prior_correct * np.log(accuracy)
                        + model.prior_wrong * np.log(1 - accuracy))
    if model.class_prior is None:
        total += np.sum(model.prior_class * np.log(prior))
    return total / len(X)


@pytest.mark.parametrize("confusion", ["full", "one_coin"])
@pytest.mark.parametrize("class_prior", [None, [0.5, 0.3, 0.2]])
def test_objective_is_the_log_posterior(confusion, class_prior):
    model = DawidSkene(confusion=confusion, class_prior=class_prior, prior_correct=2.0,
                       prior_wrong=0.3, prior_class=1.5, tol=1e-10).fit(TINY)
    assert model.lower_bound_ == pytest.approx(_log_posterior(model, TINY), rel=1e-10)
    # and at the start (the M-step from the vote shares)
    start = DawidSkene(confusion=confusion, class_prior=class_prior, prior_correct=2.0,
                       prior_wrong=0.3, prior_class=1.5, max_iter=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start.fit(TINY)
    assert model.objective_history_[0] == pytest.approx(_log_posterior(start, TINY), rel=1e-10)


@pytest.mark.parametrize("confusion", ["full", "one_coin"])
def test_objective_never_decreases_with_fixed_prior_and_zero_pseudo_counts(simulated, confusion):
    R = simulated.ratings[:3000]
    for kwargs in ({"class_prior": [0.5, 0.3, 0.2]},
                   {"prior_correct": 0.0, "prior_wrong": 0.0, "prior_class": 0.0}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DawidSkene(confusion=confusion, max_iter=60, tol=0, init="random",
                               random_state=0, **kwargs).fit(R)
        history = model.objective_history_
        assert np.all(np.isfinite(history)), kwargs
        assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:])), kwargs
        if "class_prior" in kwargs:
            np.testing.assert_allclose(model.class_prior_, kwargs["class_prior"])


@pytest.mark.parametrize("params", [
    {"prior_correct": 0, "prior_wrong": 0},
    {"prior_correct": 0, "prior_wrong": 0, "prior_class": 0},
    {"prior_correct": 0, "prior_wrong": 0, "confusion": "one_coin"},
    {"prior_correct": 0, "prior_wrong": 0, "accelerate": False, "n_init": 2,
     "random_state": 0},
])
def test_no_smoothing_fits_without_runtime_warnings(params):
    # EM without smoothing (the "no smoothing" setting) has zero
    # confusion entries, whose log is -inf by design: fit, predict and
    # score printed "divide by zero" and "invalid value" warnings
    from skcrowd.datasets import load_web

    ratings = load_web().ratings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        model = DawidSkene(**params).fit(ratings)
        proba = np.asarray(model.predict_proba(ratings))
        model.score(ratings)
    assert np.all(np.isfinite(proba))
    assert np.min(model.confusion_) == 0.0  # the case this is about


# -- the prior grid for a held-out search (doc/dawid_skene.rst, "Choosing the
# prior by held-out likelihood") ---------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 5, 10])
def test_prior_grid_splits_the_wrong_total_over_the_wrong_cells(n_classes):
    grid = dawid_skene_prior_grid(n_classes, correct=[1, 4], wrong=[0.5, 2])
    assert len(grid) == 4
    for params, (c, w) in zip(grid, [(1, 0.5), (1, 2), (4, 0.5), (4, 2)]):
        assert params == {"prior_correct": [c], "prior_wrong": [w / (n_classes - 1)]}
        # the prior's total wrong mass, and so its prior accuracy c / (c + w),
        # does not depend on K
        model = DawidSkene(**{k: v[0] for k, v in params.items()})
        row = model._pseudo_counts(n_classes)[0]
        assert row[0] == c and np.isclose(row[1:].sum(), w)


@pytest.mark.parametrize("bad, message", [
    (dict(n_classes=1), "n_classes must be an integer >= 2"),
    (dict(n_classes=2.5), "n_classes must be an integer >= 2"),
    (dict(n_classes=3, correct=[]), "correct must be one or more finite numbers >= 0"),
    (dict(n_classes=3, correct=[-1.0]), "correct must be"),
    (dict(n_classes=3, wrong=[np.inf]), "wrong must be"),
    (dict(n_classes=3, wrong=["a"]), "wrong must be"),
])
def test_prior_grid_rejects_bad_arguments(bad, message):
    with pytest.raises(ValueError, match=message):
        dawid_skene_prior_grid(**bad)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_held_out_search_over_the_prior_grid_beats_the_default_with_many_classes():
    # K = 8, two ratings per item: the per-cell default puts 3.5 wrong
    # pseudo-answers in every row against about 4 ratings, and falls below
    # majority vote; the search over the split priors, by held-out
    # likelihood alone, picks a prior that trusts the raters.
    data = make_dawid_skene(1000, 60, 2, 8, accuracy=(0.4, 0.9), random_state=0)
    truth = data.true_labels
    default = np.mean(DawidSkene().fit_predict(data.ratings) == truth)
    vote = np.mean(MajorityVote().fit_predict(data.ratings) == truth)
    search = GridSearchCV(DawidSkene(), dawid_skene_prior_grid(8),
                          cv=KFold(5, shuffle=True, random_state=0)).fit(data.ratings)
    chosen = np.mean(search.best_estimator_.predict(data.ratings) == truth)
    assert default < vote
    assert search.best_params_["prior_correct"] >= 2
    assert chosen > vote + 0.02 and chosen > default + 0.1
