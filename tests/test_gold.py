"""Partial gold: fit(X, y) with some items' true labels known."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score

from skcrowd import (GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, MeanRating, MedianRating,
                     OrdinalMixture, Ratings)
from skcrowd.datasets import make_dawid_skene
from skcrowd.metrics import gold_accuracy, gold_accuracy_scorer

CATEGORICAL = [DawidSkene(), DawidSkene(confusion="one_coin"), GLAD(max_iter=50),
               IRT3PL(max_iter=30), MACE(n_init=2), MACE(method="em", n_init=2),
               MajorityVote()]
ITERATIVE = [DawidSkene(), DawidSkene(confusion="one_coin"), GLAD(class_prior="learn"),
             IRT3PL(max_iter=30), MACE(n_init=1), MACE(method="em", class_prior="learn",
                                                     n_init=1),
             OrdinalMixture(max_iter=30, n_init=1)]


@pytest.fixture(scope="module")
def binary():
    sim = make_dawid_skene(n_items=300, n_raters=8, n_classes=2, ratings_per_item=3,
                           random_state=0)
    rng = np.random.default_rng(1)
    known = rng.random(len(sim.true_labels)) < 0.2
    y = np.where(known, sim.true_labels, np.nan)
    return sim, known, y


def _fit_quietly(model, X, y=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit_predict(X, y)


@pytest.mark.parametrize("model", CATEGORICAL, ids=lambda m: type(m).__name__)
def test_known_items_keep_their_labels_exactly(binary, model):
    sim, known, y = binary
    labels = _fit_quietly(model, sim.ratings, y)
    np.testing.assert_array_equal(labels[known], sim.true_labels[known])


@pytest.mark.parametrize("model", [MeanRating(), MedianRating(),
                                   OrdinalMixture(max_iter=30, n_init=1)],
                         ids=lambda m: type(m).__name__)
def test_known_items_keep_their_values_exactly(model):
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, 120)
    X = np.clip(truth[:, None] + rng.integers(-1, 2, (120, 5)), 1, 5).astype(float)
    X[rng.random(X.shape) < 0.3] = np.nan
    y = np.where(rng.random(120) < 0.25, truth, np.nan)
    values = _fit_quietly(model, X, y)
    known = ~np.isnan(y)
    np.testing.assert_array_equal(values[known], y[known])
    proba = model.fit(X, y).predict_proba(X)  # without y: the ratings alone
    assert proba.shape == (120, 5)


@pytest.mark.parametrize("model", ITERATIVE, ids=lambda m: type(m).__name__)
def test_objective_with_gold_never_decreases(binary, model):
    sim, known, y = binary
    X, yy = sim.ratings, y
    if isinstance(model, OrdinalMixture):
        X = np.where(np.isnan(sim.ratings.to_dense()), np.nan, sim.ratings.to_dense() + 1)
        yy = y + 1
    _fit_quietly(model, X, yy)
    history = model.objective_history_
    assert len(history) > 2
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))
    assert np.all(np.isfinite(history))


def test_gold_rescues_a_label_flipped_crowd():
    """Most raters flip the binary label: unsupervised EM takes the flipped
    reading (as the majority does); 10% gold tells it which is which, and the
    known items move the raters' confusion matrices to the right mode."""
    rng = np.random.default_rng(3)
    n, truth = 600, rng.integers(0, 2, 600)
    X = np.empty((n, 5))
    for j in range(5):
        right = rng.random(n) < 0.85
        X[:, j] = np.where(right, truth, 1 - truth) if j < 2 else np.where(right, 1 - truth,
                                                                            truth)
    y = np.where(rng.random(n) < 0.1, truth, np.nan)
    unknown = np.isnan(y)
    # MACE has no adversarial raters (a spammer's labels do not depend on
    # the truth): with gold it can only follow the two good raters (85%)
    for model, level in ((DawidSkene(), 0.9), (GLAD(), 0.9), (MACE(n_init=1), 0.8)):
        plain = _fit_quietly(model, X)
        assert np.mean(plain[unknown] == truth[unknown]) < 0.5
        labels = _fit_quietly(model, X, y)
        assert np.mean(labels[unknown] == truth[unknown]) > level
    ds = DawidSkene().fit(X, y)
    accuracy = np.diagonal(ds.confusion_, axis1=1, axis2=2).mean(axis=1)
    assert np.all(accuracy[:2] > 0.75) and np.all(accuracy[2:] < 0.25)


def test_predict_infers_from_ratings_alone(binary):
    """fit_predict(X, y) clamps; predict(X) does not see y, and agrees with it
    on every unknown item."""
    sim, known, y = binary
    model = DawidSkene()
    clamped = model.fit_predict(sim.ratings, y)
    free = model.predict(sim.ratings)
    np.testing.assert_array_equal(free[~known], clamped[~known])


def test_y_by_item_id_and_missing_markers(binary):
    pd = pytest.importorskip("pandas")
    sim, known, y = binary
    R = sim.ratings
    ids = np.array([f"item{i}" for i in range(len(R))])
    named = Ratings(ids[R.item], R.rater, R.label, item_ids=ids)
    expected = DawidSkene().fit(R, y).confusion_
    mapping = {ids[i]: sim.true_labels[i] for i in np.flatnonzero(known)}
    # positional, with pd.NA where unknown (a nullable array has no index)
    nullable = pd.Series(sim.true_labels, dtype="Int64").mask(~known).array
    for gold in (mapping, pd.Series(mapping), pd.Series(y, index=ids), nullable):
        np.testing.assert_allclose(DawidSkene().fit(named, gold).confusion_, expected)
    as_objects = np.where(known, sim.true_labels.astype(object), None)
    np.testing.assert_allclose(DawidSkene().fit(R, as_objects).confusion_, expected)
    all_missing = np.full(len(R), np.nan)
    np.testing.assert_allclose(DawidSkene().fit(R, all_missing).confusion_,
                               DawidSkene().fit(R).confusion_)


def test_y_string_labels_and_new_class():
    X = np.array([["a", "b"], ["a", "a"], ["b", "b"]], dtype=object)
    model = DawidSkene().fit(X, ["c", None, None])
    np.testing.assert_array_equal(model.classes_, ["a", "b", "c"])
    assert model.fit_predict(X, ["c", None, None])[0] == "c"


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_categories_of_a_categorical_y_name_the_scale(method):
    """The categories of a categorical y are classes, levels nobody used
    included, as those of a categorical label column are (doc/data.rst);
    classes= still names the scale.  Before, an unused category of y was
    dropped (classes_ [0, 1] for categories [0, 1, 2]), while the same
    categories on the label column gave [0, 1, 2]."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3,
                       "label": [0, 1, 0, 0, 1, 1]})
    y = pd.Series(pd.Categorical([0, None, 1], categories=[0, 1, 2]), index=[1, 2, 3])
    as_label_column = DawidSkene().fit(df.assign(label=pd.Categorical(
        df["label"], categories=y.cat.categories)))
    model = getattr(DawidSkene(), method)(df, y)
    np.testing.assert_array_equal(model.classes_, as_label_column.classes_)
    assert model.classes_.tolist() == [0, 1, 2]
    assert getattr(DawidSkene(), method)(df, y.cat.remove_unused_categories()
                                          ).classes_.tolist() == [0, 1]
    # no known label at all: the categories still name the scale
    unknown = pd.Series(pd.Categorical([None] * 3, categories=[0, 1, 2]), index=[1, 2, 3])
    assert getattr(DawidSkene(), method)(df, unknown).classes_.tolist() == [0, 1, 2]
    assert getattr(DawidSkene(classes=[0, 1]), method)(df, y).classes_.tolist() == [0, 1]
    words = pd.Series(pd.Categorical([None] * 3, categories=["x", "y"]), index=[1, 2, 3])
    with pytest.raises(ValueError, match="y and of the ratings are of different types"):
        getattr(DawidSkene(), method)(df, words)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_labels_of_y_join_the_categories_of_a_categorical_label_column(method):
    """fit and a stream's first batch read y's labels alike when the label
    column is categorical: they join its categories.  Before, partial_fit
    took the categories alone and refused y ("y: Label 2.0 is not one of
    the classes [0, 1]") where fit gave the classes [0, 1, 2]."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3,
                       "label": pd.Categorical([0, 1, 0, 0, 1, 1], categories=[0, 1])})
    model = getattr(DawidSkene(), method)(df, pd.Series([2], index=[3]))
    assert model.classes_.tolist() == [0, 1, 2]
    assert model.predict(df).loc[3] == 2


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_class_only_y_knows_counts_before_the_one_class_checks(method):
    """Ratings of one class with y naming a second: the model has two
    classes, so neither the one-class warning nor (IRT3PL, which needs two)
    the refusal applies.  Before, fit warned "The ratings contain only one
    class (0); every item will get it" with classes_ [0, 1], and IRT3PL's
    fit refused the data."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3, "label": [0] * 6})
    y = pd.Series([1], index=[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert getattr(DawidSkene(), method)(df, y).classes_.tolist() == [0, 1]
    if method == "fit":
        assert IRT3PL(n_init=1, max_iter=5).fit(df, y).classes_.tolist() == [0, 1]
    # without y the warning (and IRT3PL's refusal) stand
    with pytest.warns(UserWarning, match="only one class"):
        getattr(DawidSkene(), method)(df)
    with pytest.raises(ValueError, match="IRT3PL needs at least 2 classes"):
        IRT3PL().fit(df)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_label_of_y_outside_the_classes_is_named_as_given(method):
    """y with a missing value arrives as floats; the error names the label
    2 as the user wrote it, not 2.0."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3,
                       "label": [0, 1, 0, 0, 1, 1]})
    with pytest.raises(ValueError, match=r"y: Label 2 is not one of the classes \[0, 1\]"):
        getattr(DawidSkene(classes=[0, 1]), method)(df, pd.Series([2, None], index=[3, 1]))


@pytest.mark.parametrize("y, message", [
    (np.zeros(5), "y has 5 entries but X has 3 items"),
    (np.zeros((3, 2)), "one-dimensional"),
    ({7: 1.0}, "item 7, which is not an item of X"),
    (["x", None, None], "different types"),
    # inf was reported as found "among the ratings"
    ([np.inf, np.nan, 0.0], "finite; found inf among the known labels y"),
    ({0: -np.inf}, "finite; found inf among the known labels y"),
])
def test_bad_y_is_a_clear_error(y, message):
    X = np.array([[0, 1], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match=message):
        DawidSkene().fit(X, y)


def test_y_outside_declared_classes():
    X = np.array([[0, 1], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match="y: Label 2 is not one of the classes"):
        DawidSkene(classes=[0, 1]).fit(X, [2, np.nan, np.nan])


def test_y_is_not_modified(binary):
    sim, known, y = binary
    before = y.copy()
    DawidSkene().fit(sim.ratings, y)
    np.testing.assert_array_equal(y, before)


def test_gold_accuracy_and_scorer(binary):
    sim, known, y = binary
    assert gold_accuracy(["a", None, "b"], ["a", "b", "a"]) == 0.5
    with pytest.raises(ValueError, match="no known"):
        gold_accuracy([np.nan], [1.0])
    scores = cross_val_score(DawidSkene(), sim.ratings, sim.true_labels.astype(float), cv=3,
                             scoring=gold_accuracy_scorer)
    assert np.all(scores > 0.8)


@pytest.mark.parametrize("model", [DawidSkene(), MajorityVote()], ids=lambda m: type(m).__name__)
def test_a_series_y_with_a_matrix_is_read_in_row_order(binary, model):
    # A matrix's items are its rows: they have no ids.  A pandas Series y
    # (X, y = df[raters].to_numpy(), df["gold"]) was keyed by its index as
    # if that were row numbers: after df.sort_values(...) the gold was
    # clamped on other items, silently; in cross-validation the training
    # fold's y failed, "ValueError: y has a label for item 533, which is not
    # an item of X".
    pd = pytest.importorskip("pandas")
    sim, known, y = binary
    X = sim.ratings.to_dense()
    order = np.random.default_rng(2).permutation(len(y))
    gold = pd.Series(y)[order]  # the index keeps the old row numbers
    labels = _fit_quietly(model, X[order], gold)
    np.testing.assert_array_equal(labels[known[order]], sim.true_labels[order][known[order]])
    np.testing.assert_array_equal(labels, _fit_quietly(model, X[order], y[order]))
    scores = cross_val_score(model, X, pd.Series(sim.true_labels), cv=3,
                             scoring=gold_accuracy_scorer, error_score="raise")
    np.testing.assert_array_equal(scores, cross_val_score(
        model, X, sim.true_labels, cv=3, scoring=gold_accuracy_scorer))
    # a mapping is explicit: keyed by row number, as documented
    first = {0: sim.true_labels[0]}
    assert _fit_quietly(model, X, first)[0] == sim.true_labels[0]


def test_gold_accuracy_scorer_pairs_a_gold_series_with_the_items_of_x(binary):
    # fit(X, y) reads a gold Series by item id; the scorer paired it with the
    # predictions of a Ratings (or wide DataFrame) by position: gold in
    # another order than X scored 0.49 instead of 0.93 on rte, silently.
    pd = pytest.importorskip("pandas")
    sim, known, y = binary
    R = sim.ratings
    model = DawidSkene().fit(R)
    gold = pd.Series(sim.true_labels, index=R.item_ids)
    shuffled = gold.sample(frac=1, random_state=0)
    wide = R.to_long().pivot(index="item", columns="rater", values="label")
    expected = gold_accuracy(sim.true_labels, model.predict(R))
    for X in (R, wide, R.to_long()):
        fitted = DawidSkene().fit(X)
        assert gold_accuracy_scorer(fitted, X, shuffled) == expected
        assert gold_accuracy_scorer(fitted, X, gold) == expected
    # a matrix's items are its rows: a Series is read in row order (its
    # index is a cross-validation fold's, not row numbers), as fit reads it
    X = R.to_dense()
    fitted = DawidSkene().fit(X)
    part = gold.iloc[10:].set_axis(np.arange(10, len(gold)))
    for fitted in (fitted, DawidSkene().set_output(transform="pandas").fit(X)):
        assert gold_accuracy_scorer(fitted, X[10:], part) == gold_accuracy(
            sim.true_labels[10:], np.asarray(fitted.predict(X[10:])))


def test_gold_accuracy_scorer_refuses_a_model_that_predicts_values():
    # OrdinalMixture's (and MeanRating's) predict is a mean on the label
    # scale, never equal to a class: the scorer gave 0.0, silently
    from skcrowd import MeanRating, OrdinalMixture
    from skcrowd.datasets import make_ordinal

    sim = make_ordinal(n_items=60, n_raters=5, random_state=0)
    for model in (MeanRating().fit(sim.ratings),
                  OrdinalMixture(n_init=1, max_iter=5).fit(sim.ratings)):
        with pytest.raises(ValueError, match="predicted classes with gold.*mean_squared_error"):
            gold_accuracy_scorer(model, sim.ratings, np.round(sim.z))
