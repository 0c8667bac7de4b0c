"""The estimator API shared by every model: bad input, edge cases, outputs."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import make_pipeline
from sklearn.linear_model import LogisticRegression

from skcrowd import (GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, MeanRating, MedianRating,
                     OrdinalMixture, Ratings)

MODELS = [DawidSkene, MACE, MajorityVote, MeanRating, MedianRating]

X = np.array(
    [
        [0, 0, 1, np.nan],
        [1, 1, 1, 0],
        [0, np.nan, 0, 0],
        [1, 0, 1, 1],
        [2, 2, np.nan, 2],
        [np.nan, 1, 2, 1],
    ]
)


@pytest.mark.parametrize("Model", MODELS)
def test_empty_input_is_a_value_error(Model):
    for empty, message in ((np.empty((0, 3)), "0 sample"), (np.empty((3, 0)), "0 feature"),
                           ([], "no items"), (np.full((3, 2), np.nan), "no ratings")):
        with pytest.raises(ValueError, match=message):
            Model().fit(empty)
    with pytest.raises(ValueError, match="no ratings"):
        Model().fit(Ratings([], [], []))


@pytest.mark.parametrize("Model", MODELS)
def test_infinite_label_is_a_value_error(Model):
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity|inf"):
        Model().fit(bad)
    with pytest.raises(ValueError, match="inf"):
        Model().fit(Ratings([0, 1], [0, 0], [1.0, np.inf]))


@pytest.mark.parametrize("Model", MODELS)
def test_label_outside_classes_is_named(Model):
    with pytest.raises(ValueError, match="Label 2"):
        Model(classes=[0, 1]).fit(X)
    model = Model().fit(X)
    new = X.copy()
    new[0, 0] = 7
    with pytest.raises(ValueError, match="Label 7"):
        model.predict(new)


@pytest.mark.parametrize("Model", MODELS)
def test_different_number_of_raters_at_predict(Model):
    model = Model().fit(X)
    with pytest.raises(ValueError, match="3 features, but .* is expecting 4"):
        model.predict(X[:, :3])


@pytest.mark.parametrize("Model", MODELS)
def test_unknown_rater_in_ratings_at_predict(Model):
    R = Ratings([0, 0, 1, 1], ["a", "b", "a", "b"], [0, 1, 1, 1])
    model = Model().fit(R)
    with pytest.raises(ValueError, match="Rater 'c' was not seen"):
        model.predict(Ratings([0], ["c"], [1]))
    # a subset of the raters maps by id
    assert model.predict(Ratings([0], ["b"], [1])).shape == (1,)


@pytest.mark.parametrize("Model", MODELS)
def test_raters_and_items_without_ratings_are_handled(Model):
    Xe = np.column_stack([X, np.full(len(X), np.nan)])  # a rater who rated nothing
    Xe = np.vstack([Xe, np.full(Xe.shape[1], np.nan)])  # an item nobody rated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Model().fit(Xe)
    proba = model.predict_proba(Xe)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    np.testing.assert_allclose(proba[-1], model.class_prior_)
    scores = model.score_samples(Xe)
    assert np.all(np.isfinite(scores)) and scores[-1] == 0.0
    assert np.all(np.isfinite(model.predict(Xe).astype(float)))


@pytest.mark.parametrize("Model", MODELS)
def test_one_class_warns_and_answers_that_class(Model):
    one = np.array([[1, 1, np.nan], [1, np.nan, 1]])
    with pytest.warns(UserWarning, match="only one class"):
        model = Model().fit(one)
    np.testing.assert_array_equal(model.predict(one), [1, 1])
    np.testing.assert_allclose(model.predict_proba(one), 1.0)
    # naming the scale makes it a two-class problem
    model = Model(classes=[0, 1]).fit(one)
    assert model.predict_proba(one).shape == (2, 2)


def test_string_labels_and_object_arrays():
    S = np.array([["cat", "dog", None], ["dog", "dog", "cat"], [None, "cat", "cat"]], dtype=object)
    model = DawidSkene().fit(S)
    assert model.classes_.tolist() == ["cat", "dog"]
    assert set(model.predict(S)) <= {"cat", "dog"}
    with pytest.raises(ValueError, match="mix strings"):
        DawidSkene().fit(np.array([["cat", 1], ["dog", 2]], dtype=object))


def test_user_input_is_not_modified():
    Xc = X.copy()
    R = Ratings([0, 0, 1], [0, 1, 1], [1, 0, 0])
    labels_before = R.label.copy()
    DawidSkene().fit(Xc).predict(Xc)
    DawidSkene().fit(R).sample(R, random_state=0)
    np.testing.assert_array_equal(Xc, X)
    np.testing.assert_array_equal(R.label, labels_before)


@pytest.mark.parametrize("Model", MODELS)
def test_sample_keeps_the_design(Model):
    model = Model().fit(X)
    sim = model.sample(X, random_state=0)
    assert sim.shape == X.shape
    np.testing.assert_array_equal(np.isnan(sim), np.isnan(X))
    assert set(np.unique(sim[~np.isnan(sim)])) <= set(model.classes_)
    np.testing.assert_array_equal(sim, model.sample(X, random_state=0))
    # every rating stored, the label-0 ones as explicit zeros
    rated = ~np.isnan(X)
    S = sp.csr_matrix((X[rated], np.nonzero(rated)), shape=X.shape)
    assert S.nnz == rated.sum() and np.any(S.data == 0)
    sim_sparse = model.sample(S, random_state=1)
    assert sp.issparse(sim_sparse) and sim_sparse.nnz == S.nnz
    stored = sim_sparse.tocoo()
    np.testing.assert_array_equal(np.sort(stored.row * X.shape[1] + stored.col),
                                  np.sort(np.flatnonzero(rated.ravel())))
    R = Ratings.from_matrix(X)
    sim_r = model.sample(R, random_state=2)
    assert isinstance(sim_r, Ratings) and sim_r.n_ratings == R.n_ratings
    np.testing.assert_array_equal(sim_r.rater, R.rater)
    # a wide table in, the same table out (it was a bare array, without the
    # items' index and the raters' column names)
    pd = pytest.importorskip("pandas")
    wide = pd.DataFrame(X, index=[f"item{i}" for i in range(X.shape[0])],
                        columns=[f"r{j}" for j in range(X.shape[1])])
    sim_w = Model().fit(wide).sample(wide, random_state=0)
    assert isinstance(sim_w, pd.DataFrame)
    assert sim_w.index.equals(wide.index) and sim_w.columns.equals(wide.columns)
    np.testing.assert_array_equal(sim_w.isna().to_numpy(), wide.isna().to_numpy())


def test_sampled_ratings_follow_the_fitted_confusion():
    from skcrowd.datasets import make_dawid_skene

    data = make_dawid_skene(4000, 8, 4, 2, random_state=0)
    model = DawidSkene().fit(data.ratings)
    sim = model.sample(data.ratings, random_state=0)
    refit = DawidSkene().fit(sim)
    np.testing.assert_allclose(refit.class_prior_, model.class_prior_, atol=0.03)
    np.testing.assert_allclose(refit.confusion_, model.confusion_, atol=0.06)


def test_transform_is_predict_proba_and_works_in_a_pipeline():
    from skcrowd.datasets import make_dawid_skene

    data = make_dawid_skene(400, 10, 5, 2, random_state=0)
    model = DawidSkene().fit(data.ratings)
    np.testing.assert_array_equal(model.transform(data.ratings), model.predict_proba(data.ratings))
    pipe = make_pipeline(DawidSkene(), LogisticRegression())
    pipe.fit(data.X, data.true_labels)
    # the pipeline is the two steps composed by hand; a Pipeline passes y to
    # every step's fit, so the crowd model gets it as gold labels
    crowd = DawidSkene().fit(data.X, data.true_labels)
    by_hand = LogisticRegression().fit(crowd.transform(data.X), data.true_labels)
    np.testing.assert_allclose(pipe.predict_proba(data.X),
                               by_hand.predict_proba(crowd.transform(data.X)))


def test_score_is_mean_log_marginal_likelihood():
    model = DawidSkene().fit(X)
    assert model.score(X) == pytest.approx(model.score_samples(X).mean())
    # log P(ratings of one item) by brute force over its true class
    i = 1
    rated = ~np.isnan(X[i])
    codes = np.searchsorted(model.classes_, X[i, rated]).astype(int)
    raters = np.flatnonzero(rated)
    joint = model.class_prior_ * np.prod(model.confusion_[raters, :, codes], axis=0)
    assert model.score_samples(X)[i] == pytest.approx(np.log(joint.sum()))


def test_invalid_parameters_are_rejected_by_validation():
    with pytest.raises(ValueError, match="confusion"):
        DawidSkene(confusion="diagonal").fit(X)
    with pytest.raises(ValueError, match="max_iter"):
        DawidSkene(max_iter=-1).fit(X)


def test_verbose_prints_progress(capsys):
    DawidSkene(verbose=2, max_iter=3, tol=0).fit(X)
    out = capsys.readouterr().out
    assert "[DawidSkene restart 1/1] started" in out and "iteration 3 " in out


# -- unexpected fit arguments ---------------------------------------------------------
@pytest.mark.parametrize("Model", [MajorityVote, MeanRating, MedianRating, DawidSkene,
                                   GLAD, IRT3PL, OrdinalMixture])
@pytest.mark.parametrize("argument", ["foo", "groups"])
def test_unexpected_fit_argument_names_the_public_method(Model, argument):
    """Non-regression: fit(X, foo=1) named a private method in its TypeError."""
    if Model is OrdinalMixture and argument == "groups":
        return  # OrdinalMixture takes groups
    X = np.array([[1, 2, 1], [2, 2, np.nan], [1, 1, 2]], dtype=float)
    for method in ("fit", "fit_predict"):
        with pytest.raises(TypeError) as info:
            getattr(Model(), method)(X, **{argument: np.arange(3)})
        message = str(info.value)
        assert f"{Model.__name__}.fit" in message and repr(argument) in message
        assert "_fit" not in message and "._" not in message




# -- empty input at predict time ---------------------------------------------------------
def _empty_forms(X):
    import pandas as pd

    from skcrowd import Ratings

    R = Ratings.from_matrix(X)
    return {"long": R.to_long().iloc[:0], "ratings": R[[]],
            "wide": pd.DataFrame(X).iloc[:0], "array": X[:0]}


@pytest.mark.parametrize("name", ["DawidSkene", "EBCC", "GLAD", "IRT3PL", "MACE",
                                  "MajorityVote", "MeanRating", "MedianRating",
                                  "OrdinalMixture"])
def test_empty_input_after_fit_is_a_value_error_naming_it(name):
    """Non-regression: empty input after fit gave empty results and score() NaN."""
    # A long table with no rows (or a Ratings with no items) gave empty
    # predictions and score() = nan (the mean of nothing); arrays and wide
    # frames already got scikit-learn's "Found array with 0 sample(s)".
    import skcrowd
    from skcrowd.metrics import consistency, posterior_entropy, uncertainty

    from test_common import all_estimators, fast_instance

    assert name in {c.__name__ for c in all_estimators()}  # the list is every estimator
    X = np.array([[0, 0, 1, np.nan], [1, 1, 1, 0], [0, np.nan, 0, 0], [1, 0, 1, 1]] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fast_instance(getattr(skcrowd, name)).fit(X)
    methods = ["predict", "predict_proba", "score", "score_samples", "transform",
               "item_table"]
    metrics = [lambda E: posterior_entropy(model, E), lambda E: uncertainty(model, E)]
    if model._prediction_name == "label":
        metrics.append(lambda E: consistency(model, E))
    for form, empty in _empty_forms(X).items():
        message = "0 sample" if form in ("wide", "array") else "X is empty: it has no items"
        calls = [getattr(model, m) for m in methods if hasattr(model, m)] + metrics
        for call in calls:
            with pytest.raises(ValueError, match=message):
                call(empty)


def test_fitting_a_table_without_rows_does_not_say_its_entries_are_missing():
    """Non-regression: fit on a table without rows said every entry was missing."""
    # fit on a long table with no rows said "every entry is missing": there
    # are no entries; the message now covers both cases, in memory and on Dask
    pd = pytest.importorskip("pandas")
    empty = pd.DataFrame({"item": [], "rater": [], "label": []})
    with pytest.raises(ValueError, match=r"X has no ratings \(no rows, or every entry "
                                         r"missing\): nothing to fit\."):
        DawidSkene().fit(empty)
    with pytest.raises(ValueError, match=r"X has no ratings \(no rows, or every entry"):
        DawidSkene().fit(np.full((3, 2), np.nan))




# -- n_jobs --------------------------------------------------------------------------
@pytest.mark.parametrize("Model", [DawidSkene, GLAD, IRT3PL, OrdinalMixture])
def test_n_jobs_zero_is_refused_as_joblib_refuses_it(Model):
    """Non-regression: n_jobs=0 ran on every core without a word."""
    # n_jobs=0 ran on every core (max(1, available + 1 + 0)) without a word
    X = np.array([[1, 1, 2, 1], [2, 2, 1, 2], [1, 1, 1, 1], [1, 1, 2, 2], [2, 2, 2, 1],
                  [1, 1, 1, np.nan]])
    with pytest.raises(ValueError, match="'n_jobs' parameter"):
        Model(n_jobs=0).fit(X)
    for n_jobs in (None, 1, -1, -100):
        Model(n_jobs=n_jobs, max_iter=2, n_init=1).fit(X)
