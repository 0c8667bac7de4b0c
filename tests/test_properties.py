"""Property-based tests (hypothesis) over the data layer and every estimator.

Random rating matrices of many shapes (one item, one rater, many raters),
label types (ints, floats, strings, booleans, pandas categoricals), missing
patterns (empty rows and columns, a single rating), repeated ratings, 2 to 50
classes, extreme imbalance, constant, agreeing and adversarial raters.  For
every model that accepts the data:

- ``predict_proba`` is finite, in [0, 1], and its rows sum to 1;
- ``predict`` is in ``classes_`` (for real-valued predictions: finite, within
  the scale);
- ``score`` and ``score_samples`` are finite;
- ``fit_predict(X)`` equals ``fit(X).predict(X)``;
- a model that rejects the data raises ValueError or TypeError with a
  message, never a numba error.

The examples are few and small (``max_examples`` below) so the module runs
well inside the five minutes CI allows (under a minute measured, with
``pytest tests/test_properties.py --durations=10``); every bug found on the
way has a regression test named after it in test_regressions.py.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from skcrowd import (GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, MeanRating, MedianRating,
                     OrdinalMixture, Ratings)

PROPERTY_SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                             suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.data_too_large])

#: the estimators, with few iterations so that each example is quick
MODELS = {
    "MajorityVote": lambda: MajorityVote(),
    "MeanRating": lambda: MeanRating(),
    "MedianRating": lambda: MedianRating(),
    "DawidSkene": lambda: DawidSkene(max_iter=30, random_state=0),
    "DawidSkene-one-coin": lambda: DawidSkene(confusion="one_coin", max_iter=30,
                                              random_state=0),
    "GLAD": lambda: GLAD(max_iter=30, random_state=0),
    "MACE": lambda: MACE(n_init=2, max_iter=30, random_state=0),
    "MACE-em": lambda: MACE(method="em", class_prior="learn", n_init=2, max_iter=30,
                            random_state=0),
    "OrdinalMixture": lambda: OrdinalMixture(n_init=1, max_iter=30, random_state=0),
    "IRT3PL": lambda: IRT3PL.from_tag("a", n_init=1, max_iter=10, random_state=0),
}

#: real-valued predictions (posterior means, summaries), not classes
REAL_VALUED = {"MeanRating", "MedianRating", "OrdinalMixture"}


# -- strategies --------------------------------------------------------------------------
@st.composite
def label_codes(draw, max_items=25, max_raters=8, max_classes=6):
    """An (n_items, n_raters) matrix of class codes, -1 = not rated, with one
    of several rater/item patterns."""
    n_items = draw(st.integers(1, max_items))
    n_raters = draw(st.integers(1, max_raters))
    K = draw(st.integers(2, max_classes))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pattern = draw(st.sampled_from(
        ["random", "agree", "adversarial", "constant", "imbalanced", "single"]))
    truth = rng.integers(0, K, n_items)
    if pattern == "random":
        codes = rng.integers(0, K, (n_items, n_raters))
    elif pattern == "agree":
        codes = np.repeat(truth[:, None], n_raters, axis=1)
    elif pattern == "adversarial":
        # half the raters right, the others shifted by one class
        codes = np.repeat(truth[:, None], n_raters, axis=1)
        codes[:, n_raters // 2:] = (codes[:, n_raters // 2:] + 1) % K
    elif pattern == "constant":
        codes = np.repeat(rng.integers(0, K, n_raters)[None, :], n_items, axis=0)
    elif pattern == "imbalanced":
        codes = np.where(rng.random((n_items, n_raters)) < 0.97, 0,
                         rng.integers(0, K, (n_items, n_raters)))
    else:  # a single rating in the whole matrix
        codes = np.full((n_items, n_raters), -1)
        codes[rng.integers(n_items), rng.integers(n_raters)] = rng.integers(K)
    missing = draw(st.sampled_from([0.0, 0.3, 0.7]))
    if pattern != "single":
        codes = np.where(rng.random(codes.shape) < missing, -1, codes)
        if draw(st.booleans()) and n_items > 1:
            codes[rng.integers(n_items)] = -1  # an empty row
        if draw(st.booleans()) and n_raters > 1:
            codes[:, rng.integers(n_raters)] = -1  # an empty column
    return codes, K


LABEL_KINDS = ["int", "float", "string", "bool", "categorical"]


def as_input(codes, K, kind):
    """The code matrix as the user would pass it: ``(X, scale)`` where
    ``scale`` holds the label of each code."""
    if kind == "bool":
        K = 2
        codes = np.where(codes < 0, -1, codes % 2)
    scale = {
        "int": np.arange(1, K + 1),
        "float": np.linspace(-1.5, 2.0, K),
        "string": np.array([f"label {k}" for k in range(K)], dtype=object),
        "bool": np.array([False, True], dtype=object),
        "categorical": np.array([f"c{k:02d}" for k in range(K)], dtype=object),
    }[kind]
    if kind in ("int", "float"):
        X = np.where(codes < 0, np.nan, scale[np.maximum(codes, 0)].astype(float))
    else:
        X = np.where(codes < 0, None, scale[np.maximum(codes, 0)]).astype(object)
    if kind == "categorical":
        import pandas as pd

        X = pd.DataFrame({f"r{j}": pd.Categorical(X[:, j], categories=list(scale))
                          for j in range(X.shape[1])})
    return X, scale


# -- invariants ---------------------------------------------------------------------------
def check_rejection(error):
    """A model may refuse data it cannot model, with a proper error."""
    assert isinstance(error, (ValueError, TypeError)), type(error)
    message = str(error)
    assert message, "an error without a message"
    assert "numba" not in message.lower() and "nopython" not in message.lower(), message


def fit_or_reject(make, X, **fit_params):
    model = make()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", UserWarning)  # one class only
            labels = model.fit_predict(X, **fit_params)
    except Exception as error:  # noqa: BLE001 - the type is what is checked
        check_rejection(error)
        return None, None
    return model, labels


def check_invariants(name, make, X):
    model, labels = fit_or_reject(make, X)
    if model is None:
        return
    n_items = X.shape[0]
    proba = model.predict_proba(X)
    assert proba.shape == (n_items, len(model.classes_))
    assert np.all(np.isfinite(proba)), proba
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    predicted = model.predict(X)
    assert len(predicted) == n_items
    if name in REAL_VALUED:
        values = model.classes_.astype(float)
        assert np.all(np.isfinite(predicted.astype(float)))
        # a posterior mean or summary stays within the scale (OrdinalMixture's
        # z may leave it by the reach of its prior; allow one scale width)
        width = values.max() - values.min()
        assert np.all(predicted.astype(float) >= values.min() - width - 1e-9)
        assert np.all(predicted.astype(float) <= values.max() + width + 1e-9)
    else:
        assert set(np.asarray(predicted).tolist()) <= set(np.asarray(model.classes_).tolist())
    scores = model.score_samples(X)
    assert np.all(np.isfinite(scores)), scores
    assert np.isfinite(model.score(X))
    np.testing.assert_array_equal(np.asarray(labels), np.asarray(predicted),
                                  err_msg=f"{name}: fit_predict != fit().predict")


@pytest.mark.parametrize("name", sorted(MODELS))
@PROPERTY_SETTINGS
@given(matrix=label_codes(), kind=st.sampled_from(LABEL_KINDS))
def test_every_model_on_random_rating_matrices(name, matrix, kind):
    codes, K = matrix
    if not np.any(codes >= 0):
        return
    X, _ = as_input(codes, K, kind)
    check_invariants(name, MODELS[name], X)


@pytest.mark.parametrize("name", ["MajorityVote", "DawidSkene", "GLAD", "MACE"])
@settings(max_examples=4, deadline=None, derandomize=True)
@given(matrix=label_codes(max_items=60, max_raters=6, max_classes=50))
def test_many_classes(name, matrix):
    codes, _ = matrix
    if not np.any(codes >= 0):
        return
    K = 50
    X = np.where(codes < 0, np.nan, codes.astype(float))
    check_invariants(name, lambda: MODELS[name]().set_params(classes=np.arange(K)), X)


@pytest.mark.parametrize("name", sorted(MODELS))
@settings(max_examples=6, deadline=None, derandomize=True)
@given(matrix=label_codes(max_items=15, max_raters=5, max_classes=3),
       repeats=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_repeated_ratings_in_the_long_form(name, matrix, repeats, seed):
    """The long form with some (item, rater) pairs rated several times."""
    codes, K = matrix
    item, rater = np.nonzero(codes >= 0)
    if len(item) == 0:
        return
    rng = np.random.default_rng(seed)
    again = rng.integers(0, len(item), size=repeats * len(item) // 3 + 1)
    item = np.concatenate([item, item[again]])
    rater = np.concatenate([rater, rater[again]])
    label = np.concatenate([codes[np.nonzero(codes >= 0)], rng.integers(0, K, len(again))])
    R = Ratings(item, rater, label + 1)
    check_invariants(name, MODELS[name], R)


def test_ten_thousand_raters():
    rng = np.random.default_rng(0)
    n_raters = 10_000
    item = np.repeat(np.arange(2_000), 5)
    rater = rng.integers(0, n_raters, item.size)
    truth = rng.integers(0, 2, 2_000)
    label = np.where(rng.random(item.size) < 0.8, truth[item], 1 - truth[item])
    R = Ratings(item, rater, label)
    for name in ("MajorityVote", "DawidSkene", "GLAD", "MACE", "IRT3PL"):
        check_invariants(name, MODELS[name], R)


# -- the data layer -------------------------------------------------------------------------
@PROPERTY_SETTINGS
@given(matrix=label_codes(), kind=st.sampled_from(LABEL_KINDS))
def test_matrix_and_long_form_agree(matrix, kind):
    """A matrix and the long form of the same ratings give the same fit."""
    codes, K = matrix
    if not np.any(codes >= 0):
        return
    X, scale = as_input(codes, K, kind)
    item, rater = np.nonzero(codes >= 0)
    labels = np.asarray(X)[item, rater] if kind != "categorical" else scale[codes[item, rater]]
    R = Ratings(item, rater, np.asarray(labels.tolist()), item_ids=np.arange(codes.shape[0]),
                rater_ids=np.arange(codes.shape[1]))
    # a pandas categorical's categories name the scale (the data layer's
    # rule); the long form of plain labels is given the same scale
    make = ((lambda: MajorityVote(classes=list(scale))) if kind == "categorical"
            else MODELS["MajorityVote"])
    from_matrix, _ = fit_or_reject(make, X)
    from_long, _ = fit_or_reject(make, R)
    if from_matrix is None or from_long is None:
        assert from_matrix is None and from_long is None
        return
    assert from_matrix.classes_.tolist() == from_long.classes_.tolist()
    np.testing.assert_allclose(from_matrix.predict_proba(X), from_long.predict_proba(R))


@PROPERTY_SETTINGS
@given(matrix=label_codes(), kind=st.sampled_from(LABEL_KINDS))
def test_input_is_never_modified(matrix, kind):
    codes, K = matrix
    if not np.any(codes >= 0):
        return
    X, _ = as_input(codes, K, kind)
    before = X.copy()
    model, _ = fit_or_reject(MODELS["DawidSkene"], X)
    if model is not None:
        model.predict_proba(X)
        model.score(X)
    if hasattr(X, "equals"):
        assert X.equals(before)
    else:
        np.testing.assert_array_equal(X, before)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(values=st.lists(st.one_of(st.integers(-5, 5), st.floats(allow_nan=True,
                                                             allow_infinity=True),
                                 st.text(max_size=3), st.none(), st.booleans()),
                       min_size=1, max_size=12))
def test_bad_labels_are_value_errors_never_numba_errors(values):
    """Arbitrary mixtures of labels: a fit or a proper error."""
    X = np.array(values + [None] * (-len(values) % 3), dtype=object).reshape(-1, 3)
    for name in ("MajorityVote", "DawidSkene", "GLAD", "MACE"):
        model, _ = fit_or_reject(MODELS[name], X)
        if model is not None:
            assert np.all(np.isfinite(model.predict_proba(X)))
