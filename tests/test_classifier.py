"""CrowdClassifier (Raykar et al. 2010), training_set and the data sets with
features: the joint EM's math against direct numpy, its guarantees, and
its life as a scikit-learn classifier."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from skcrowd import GLAD, MACE, CrowdClassifier, DawidSkene, MajorityVote, Ratings, training_set
from skcrowd._classifier import _as_ratings, _log_marginal, _posterior
from skcrowd._dawid_skene import _refit_raters
from skcrowd._mace import _refit_raters as _mace_refit_raters
from skcrowd.datasets import load_digits_crowd, make_crowd_classification


@pytest.fixture(scope="module")
def small():
    return make_crowd_classification(300, n_features=3, n_raters=8, ratings_per_item=4,
                                     random_state=1)


@pytest.fixture(scope="module")
def recovery():
    """Well specified: 5 logistic features, 10 raters (accuracy 0.6-0.95, 2
    of them spammers), 5 ratings per item; 4,000 items to train on and
    20,000 held out."""
    data = make_crowd_classification(24_000, n_features=5, n_raters=10, ratings_per_item=5,
                                     spammer_fraction=0.2, random_state=7)
    return data, 4000


def label_probabilities(model):
    """P(label l | class k) of each rater, (n_raters, K, K), from the
    fitted attributes: Dawid-Skene's confusion, or MACE's mixture
    θ_j 1{l = k} + (1 - θ_j) ξ_j[l] (Hovy et al. 2013)."""
    if isinstance(model, DawidSkene):
        return model.confusion_
    theta, xi = model.rater_competence_, model.spam_distribution_
    K = xi.shape[1]
    return theta[:, None, None] * np.eye(K) + (1 - theta)[:, None, None] * xi[:, None, :]


def direct_log_likelihood(model, ratings):
    """log p(ratings_i | class k) = Σ_j log P_j(y_ij | k), from the matrix."""
    table = label_probabilities(model)
    items, raters = np.nonzero(~np.isnan(ratings))
    labels = ratings[items, raters].astype(int)
    out = np.zeros((ratings.shape[0], table.shape[1]))
    np.add.at(out, items, np.log(table[raters, :, labels]))
    return out


CROWD_MODELS = {
    "dawid-skene": DawidSkene(),
    "one-coin": DawidSkene(confusion="one_coin"),
    "mace-em": MACE(method="em", n_init=1),
}


# -- the joint EM's math -------------------------------------------------------

@pytest.mark.parametrize("name", CROWD_MODELS)
def test_posterior_and_objective_equal_the_direct_computation(small, name):
    """The E-step reads each item's likelihood off the crowd model
    (predict_proba / class_prior_ x the marginal): the fitted posterior_ must
    be p(k | x_i) Π_j P_j(y_ij | k) normalised, at the fitted parameters."""
    clf = CrowdClassifier(crowd_model=CROWD_MODELS[name], max_iter=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(small.features, small.ratings)
    log_joint = (np.log(clf.estimator_.predict_proba(small.features))
                 + direct_log_likelihood(clf.crowd_model_, small.ratings))
    marginal = logsumexp(log_joint, axis=1)
    assert_allclose(clf.posterior_, np.exp(log_joint - marginal[:, None]), rtol=1e-9,
                    atol=1e-12)
    assert_allclose(clf.objective_history_[-1], marginal.mean(), rtol=1e-10)


@pytest.mark.parametrize("name", CROWD_MODELS)
def test_rater_m_step_at_the_crowd_optimum_is_a_fixed_point(small, name):
    """Given a converged crowd model's own posteriors, its M-step from
    posteriors returns its own parameters."""
    model = clone(CROWD_MODELS[name]).set_params(tol=1e-13, max_iter=5000,
                                                 accelerate=False)
    model.fit(small.ratings)
    before = label_probabilities(model).copy()
    step = _mace_refit_raters if isinstance(model, MACE) else _refit_raters
    step(model, model._encode(small.ratings, reset=False), model.predict_proba(small.ratings))
    assert_allclose(label_probabilities(model), before, atol=1e-6)


@pytest.mark.parametrize("confusion", ["full", "one_coin"])
def test_rater_m_step_from_posteriors_matches_numpy(small, confusion):
    """Dawid & Skene's (1979) MAP M-step from arbitrary item posteriors."""
    model = DawidSkene(confusion=confusion, prior_correct=2.0, prior_wrong=0.5,
                       prior_class=1.0).fit(small.ratings)
    posterior = np.random.default_rng(0).dirichlet([1, 1], size=len(small.ratings))
    _refit_raters(model, model._encode(small.ratings, reset=False), posterior)
    items, raters = np.nonzero(~np.isnan(small.ratings))
    labels = small.ratings[items, raters].astype(int)
    counts = np.zeros((8, 2, 2))
    np.add.at(counts, (raters, slice(None), labels), posterior[items])
    if confusion == "full":
        rows = counts + np.array([[2.0, 0.5], [0.5, 2.0]])
        expected = rows / rows.sum(axis=2, keepdims=True)
    else:
        right = np.trace(counts, axis1=1, axis2=2)
        accuracy = (right + 2.0) / (counts.sum(axis=(1, 2)) + 2.5)
        expected = np.empty((8, 2, 2))
        expected[:, [0, 1], [0, 1]] = accuracy[:, None]
        expected[:, [0, 1], [1, 0]] = 1 - accuracy[:, None]
    assert_allclose(model.confusion_, expected, rtol=1e-12)
    prior = posterior.sum(axis=0) + 1.0
    assert_allclose(model.class_prior_, prior / prior.sum(), rtol=1e-12)


def test_objective_never_decreases_unpenalised(small):
    """No priors (LogisticRegression without penalty, DawidSkene without
    pseudo-counts): objective_history_ is the whole EM objective."""
    clf = CrowdClassifier(LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000),
                          DawidSkene(prior_correct=0, prior_wrong=0, prior_class=0),
                          max_iter=30, tol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(small.features, small.ratings)
    history = clf.objective_history_
    assert len(history) == 30
    assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:])), np.diff(history)
    assert history[-1] > history[0] + 1e-4  # it moved


def test_map_objective_never_decreases_with_priors(small):
    """Default priors: the log likelihood plus log p(θ) (the Dirichlet
    pseudo-counts) minus LogisticRegression's penalty ||w||² / 2C, computed
    directly from the fitted state after 1, 2, ... iterations."""
    values = []
    for n_iter in range(1, 8):
        clf = CrowdClassifier(LogisticRegression(C=0.5, tol=1e-10, max_iter=1000),
                              max_iter=n_iter, tol=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(small.features, small.ratings)
        theta = clf.crowd_model_.confusion_
        log_joint = (np.log(clf.estimator_.predict_proba(small.features))
                     + direct_log_likelihood(clf.crowd_model_, small.ratings))
        pseudo = np.array([[1.0, 0.5], [0.5, 1.0]])
        values.append(logsumexp(log_joint, axis=1).sum() + np.sum(pseudo * np.log(theta))
                      - np.sum(clf.estimator_.coef_ ** 2) / (2 * 0.5))
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:])), np.diff(values)


def test_mace_map_objective_never_decreases(small):
    """MACE's EM: the log likelihood plus its smoothing prior, s (log θ +
    log(1 - θ)) + s Σ_l log ξ_l, after 1, 2, ... iterations."""
    values = []
    for n_iter in range(1, 8):
        clf = CrowdClassifier(LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000),
                              MACE(method="em", n_init=1), max_iter=n_iter, tol=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(small.features, small.ratings)
        mace = clf.crowd_model_
        theta, xi, s = mace.rater_competence_, mace.spam_distribution_, 0.01 / 2
        log_joint = (np.log(clf.estimator_.predict_proba(small.features))
                     + direct_log_likelihood(mace, small.ratings))
        values.append(logsumexp(log_joint, axis=1).sum()
                      + s * np.sum(np.log(theta) + np.log1p(-theta)) + s * np.sum(np.log(xi)))
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:])), np.diff(values)


def test_recovers_coefficients_and_confusions(recovery):
    """Joint EM against logistic regression on majority labels: closer to
    the true coefficients (majority labels are noisy, which shrinks the
    fitted coefficients toward 0) and the rater confusions within 0.05."""
    data, n_train = recovery
    X, R = data.features[:n_train], data.ratings[:n_train]
    truth = np.concatenate([data.coef.ravel(), data.intercept])

    def error(clf):
        fitted = np.concatenate([clf.coef_.ravel(), clf.intercept_])
        return np.linalg.norm(fitted - truth) / np.linalg.norm(truth)

    joint = CrowdClassifier().fit(X, R)
    majority = LogisticRegression().fit(*training_set(MajorityVote().fit(R), X, R,
                                                      strategy="label"))
    assert error(joint.estimator_) < 0.2
    assert error(joint.estimator_) < error(majority) / 2
    assert np.abs(joint.crowd_model_.confusion_ - data.confusion).max() < 0.05


def test_held_out_order(recovery):
    """On 20,000 held-out items: joint EM's probabilities are clearly the
    best (log loss: the aggregate strategies shrink the coefficients), and
    its accuracy is at least that of training on the posteriors, which is
    at least that of majority labels, each up to one standard error of a
    20,000-item accuracy (the accuracy gaps are under a point when the
    classifier is well specified: see doc/crowd_classifier.rst)."""
    data, n_train = recovery
    X, R = data.features[:n_train], data.ratings[:n_train]
    X_test, y_test = data.features[n_train:], data.true_labels[n_train:]
    crowd = DawidSkene().fit(R)
    models = {
        "majority": LogisticRegression().fit(
            *training_set(MajorityVote().fit(R), X, R, strategy="label")),
        "weights": LogisticRegression().fit(*training_set(crowd, X, R)),
        "joint": CrowdClassifier().fit(X, R),
    }
    accuracy = {name: m.score(X_test, y_test) for name, m in models.items()}
    loss = {name: log_loss(y_test, m.predict_proba(X_test)) for name, m in models.items()}
    assert loss["joint"] < min(loss["weights"], loss["majority"]) - 0.01, loss
    slack = np.sqrt(0.8 * 0.2 / len(y_test))
    assert accuracy["joint"] >= accuracy["weights"] - slack, accuracy
    assert accuracy["weights"] >= accuracy["majority"] - slack, accuracy


def test_trees_are_allowed_without_warning_spam(small):
    """A tree does not maximise the likelihood (the objective may go down),
    but the fit runs, predicts, and warns at most once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = CrowdClassifier(DecisionTreeClassifier(max_depth=3, random_state=0),
                              max_iter=20).fit(small.features, small.ratings)
    assert len(caught) <= 1, [str(w.message) for w in caught]
    assert np.all(np.isfinite(clf.posterior_))
    assert_allclose(clf.posterior_.sum(axis=1), 1.0)
    # as good on the training items as the same tree on the crowd's posteriors
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(
        *training_set(DawidSkene().fit(small.ratings), small.features, small.ratings))
    assert np.mean(clf.predict(small.features) == small.true_labels) >= np.mean(
        tree.predict(small.features) == small.true_labels) - 0.02


def test_an_item_the_classifier_rules_out_keeps_the_crowd_posterior(small):
    """Where the classifier's prior is 0 on every class the ratings allow
    (a pure leaf of a tree against the raters), the joint is 0 / 0: the
    item keeps the crowd model's posterior; the other items are the
    normalised joint."""
    crowd = DawidSkene().fit(small.ratings)
    ratings = _as_ratings(small.features, small.ratings)
    crowd_posterior = crowd.predict_proba(ratings)
    log_joint = np.log(crowd_posterior) + np.log([0.3, 0.7])
    log_joint[3] = -np.inf
    posterior = _posterior(log_joint, _log_marginal(log_joint), crowd, ratings)
    assert_allclose(posterior[3], crowd_posterior[3])
    others = np.delete(np.arange(300), 3)
    expected = crowd_posterior * [0.3, 0.7]
    assert_allclose(posterior[others], (expected / expected.sum(axis=1, keepdims=True))[others])


# -- a scikit-learn classifier ------------------------------------------------

@parametrize_with_checks([CrowdClassifier(max_iter=5)],
                         expected_failed_checks=lambda e: e._expected_failed_checks())
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_column_vector_y_is_one_rater(small):
    """The one expected failure of the checks: (n, 1) is a ratings matrix."""
    y = small.ratings[:, 0]
    rated = ~np.isnan(y)
    X, y = small.features[rated], y[rated]
    kwargs = dict(max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = CrowdClassifier(**kwargs).fit(X, y)
        column = CrowdClassifier(**kwargs).fit(X, y[:, None])
    assert_array_equal(one.predict(X), column.predict(X))
    assert is_classifier(one)


def test_pipeline_pickle_and_clone(small):
    pipe = make_pipeline(StandardScaler(), CrowdClassifier(max_iter=10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(small.features * 100 + 5, small.ratings)
    proba = pipe.predict_proba(small.features * 100 + 5)
    assert proba.shape == (300, 2)
    restored = pickle.loads(pickle.dumps(pipe))
    assert_array_equal(restored.predict_proba(small.features * 100 + 5), proba)
    assert clone(pipe[-1]).get_params()["max_iter"] == 10


def test_grid_search_over_the_classifier_by_held_out_ratings(small):
    """GridSearchCV with the ratings as y: score is the held-out ratings'
    log likelihood, which needs no true label."""
    search = GridSearchCV(CrowdClassifier(LogisticRegression(), max_iter=10),
                          {"estimator__C": [1e-3, 1.0]},
                          cv=KFold(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(small.features, small.ratings)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(scores < 0)  # log likelihoods
    # heavy shrinkage makes every item's prior near the prevalence: worse
    assert search.best_params_ == {"estimator__C": 1.0}


def test_score_on_labels_is_accuracy(small):
    clf = CrowdClassifier().fit(small.features, small.ratings)
    assert clf.score(small.features, small.true_labels) == pytest.approx(
        np.mean(clf.predict(small.features) == small.true_labels))


# -- input forms and errors ------------------------------------------------------

def test_long_form_by_index_equals_the_matrix(small):
    """A long frame's item ids index X's rows (a DataFrame's index); the
    order of the ratings and of X's rows does not matter."""
    names = np.array([f"item{i}" for i in range(300)])
    features = pd.DataFrame(small.features, index=names)
    items, raters = np.nonzero(~np.isnan(small.ratings))
    long = pd.DataFrame({"item": names[items], "rater": raters,
                         "label": small.ratings[items, raters].astype(int)})
    order = np.random.default_rng(0).permutation(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        matrix_fit = CrowdClassifier(max_iter=8, tol=0).fit(small.features, small.ratings)
        long_fit = CrowdClassifier(max_iter=8, tol=0).fit(
            features.iloc[order], long.sample(frac=1, random_state=0))
    assert_allclose(long_fit.posterior_, matrix_fit.posterior_[order], rtol=1e-6, atol=1e-9)
    assert_allclose(long_fit.predict_proba(small.features),
                    matrix_fit.predict_proba(small.features), rtol=1e-6, atol=1e-9)


def test_ratings_object_and_unrated_rows(small):
    R = Ratings.from_matrix(small.ratings)
    ratings = small.ratings.copy()
    ratings[:20] = np.nan  # rows of X without ratings: their prior is their posterior
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = CrowdClassifier(max_iter=5).fit(small.features, ratings)
        CrowdClassifier(max_iter=5).fit(small.features, R)
    assert_allclose(clf.posterior_[:20], clf.predict_proba(small.features[:20]), rtol=1e-12)


@pytest.mark.parametrize("ratings, match", [
    (np.full((300, 3), np.nan), "no item has a rating"),
    (np.zeros((299, 3)), "299 rows but X has 300"),
    (np.full((300, 2), np.inf), "infinity"),
    (pd.DataFrame({"item": [0, 400], "rater": [0, 0], "label": [1, 0]}), "not rows of X"),
    (pd.DataFrame({"item": ["a"], "rater": [0], "label": [1]}), "row numbers of X"),
    (None, "requires y to be passed"),
])
def test_bad_ratings_are_named(small, ratings, match):
    with pytest.raises(ValueError, match=match):
        CrowdClassifier().fit(small.features, ratings)


def test_unsupported_inner_models_are_named(small):
    with pytest.raises(ValueError, match="sample_weight"):
        CrowdClassifier(KNeighborsClassifier()).fit(small.features, small.ratings)
    with pytest.raises(ValueError, match="got GLAD"):
        CrowdClassifier(crowd_model=GLAD()).fit(small.features, small.ratings)
    with pytest.raises(ValueError, match=r"got MACE\(method='vb'\)"):
        CrowdClassifier(crowd_model=MACE()).fit(small.features, small.ratings)


# -- training_set --------------------------------------------------------------

def test_training_set_strategies(small):
    X, R = small.features, small.ratings
    crowd = DawidSkene().fit(R)
    posterior = crowd.predict_proba(R)
    X_w, y_w, w = training_set(crowd, X, R)
    assert X_w.shape == (600, 3)
    assert_array_equal(y_w, np.repeat([0, 1], 300))
    assert_allclose(w, posterior.T.ravel())
    X_l, y_l, w_l = training_set(MajorityVote().fit(R), X, R, strategy="label")
    assert_array_equal(y_l, MajorityVote().fit(R).predict(R))
    assert_array_equal(w_l, 1.0)
    draws = np.array([training_set(crowd, X, R, strategy="sample", random_state=s)[1]
                      for s in range(400)])
    # the sampled labels follow the posterior (400 draws: 5 standard errors)
    assert np.all(np.abs(draws.mean(axis=0) - posterior[:, 1]) < 5 * 0.5 / np.sqrt(400))


# -- the data sets ---------------------------------------------------------------

def test_make_crowd_classification_is_well_specified():
    """Logistic regression on the true labels recovers the true coefficients
    (the labels are drawn from that model), and the spammers are exact."""
    data = make_crowd_classification(20_000, n_features=4, n_raters=10, n_classes=3,
                                     spammer_fraction=0.2, random_state=0)
    fit = LogisticRegression(C=np.inf).fit(data.features, data.true_labels)
    assert_allclose(fit.coef_, data.coef, atol=0.1)
    assert_allclose(fit.intercept_, data.intercept, atol=0.1)
    assert data.spammer.sum() == 2
    assert np.all(np.sum(~np.isnan(data.ratings), axis=1) == 5)
    spam = data.confusion[data.spammer]
    assert_allclose(spam, spam[:, :1, :].repeat(3, axis=1))


def test_digits_with_simulated_raters():
    data = load_digits_crowd(n_raters=10, ratings_per_item=3, random_state=0)
    assert data.features.shape == (1797, 64)
    rated = ~np.isnan(data.ratings)
    assert np.all(rated.sum(axis=1) == 3)
    items, raters = np.nonzero(rated)
    honest = ~data.spammer[raters]
    right = data.ratings[items, raters] == data.true_labels[items]
    assert 0.5 < right[honest].mean() < 0.9
    assert data.spammer.sum() == 2
