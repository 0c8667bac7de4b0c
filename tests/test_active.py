"""skcrowd.active: which item to send for one more rating."""

import numpy as np
import pytest

from skcrowd import DawidSkene
from skcrowd.active import expected_information_gain, information_gain_ranking, \
    uncertainty_ranking

X = np.array([[0, 1, 1], [1, 1, np.nan], [0, 0, 0], [1, np.nan, 1]], dtype=float)


@pytest.mark.parametrize("weights", [[np.nan, 1, 1], [np.inf, 1, 1], [-1, 1, 1], [1, 1],
                                     [[1, 1, 1]], [0, 0, 0], "x", ["a", "b", "c"],
                                     [None, 1, 1]])
def test_bad_pool_weights_are_an_error(weights):
    # NaN or inf weights gave a NaN gain for every item; text or None,
    # numpy's "could not convert string to float" or a TypeError
    model = DawidSkene().fit(X)
    for function in (expected_information_gain, information_gain_ranking):
        with pytest.raises(ValueError, match="weights must be"):
            function(model, X, weights=weights)
    gain = expected_information_gain(model, X, weights=[2, 1, 1])
    assert np.all(np.isfinite(gain)) and np.all(gain >= 0)


@pytest.mark.parametrize("raters, message", [
    (["a"], "rater 'a' of the pool"),  # was: "rater '0' is not among the given rater_ids"
    ([0, 9], "rater 9 of the pool"),
    (0, "raters must be an array"),  # TypeError: object of type 'int' has no len()
    ({0, 1}, "raters must be an array"),  # TypeError: len() of unsized object
])
def test_a_bad_pool_is_an_error_naming_it(raters, message):
    model = DawidSkene().fit(X)
    with pytest.raises(ValueError, match=message):
        expected_information_gain(model, X, raters=raters)


def test_weights_must_fit_every_items_pool():
    # ragged per-item pools with weights: numpy's 'operands could not be
    # broadcast together with shapes (3,) (6,)'
    model = DawidSkene().fit(X)
    with pytest.raises(ValueError, match="weights must be"):
        expected_information_gain(model, X, raters=[[0], [1, 2], [0, 1, 2], [2]], weights=[1])
    pools = [[0, 1], [1, 2], [0, 2], [1, 2]]  # one length: the weights apply to each
    gain = expected_information_gain(model, X, raters=pools, weights=[1, 0])
    first = [[0], [1], [0], [1]]
    np.testing.assert_allclose(gain, expected_information_gain(model, X, raters=first))


def test_no_items_is_no_gain():
    # TypeError: Cannot cast array data from dtype('float64') to dtype('int64')
    model = DawidSkene().fit(X)
    assert expected_information_gain(model, X[:0]).shape == (0,)


def test_long_frame_is_read_as_long_form_and_results_carry_item_ids():
    # A long table (item, rater, label) was read as a wide matrix of three
    # raters called 'item', 'rater', 'label': "ValueError: Labels mix strings
    # with other types", and uncertainty_ranking returned positions in the
    # sorted ids, which the rows of a long table are not.
    pd = pytest.importorskip("pandas")
    from skcrowd import Ratings

    rows = [(f"q{i}" + "x" * (i % 3), f"w{j}", int(v)) for i, row in enumerate(X)
            for j, v in enumerate(row) if not np.isnan(v)]
    long = pd.DataFrame(rows, columns=["item", "rater", "label"]).sample(frac=1, random_state=0)
    R = Ratings.from_long(long)
    model = DawidSkene().fit(long)
    gain = expected_information_gain(model, long)
    assert isinstance(gain, pd.Series) and gain.index.name == "item"
    assert gain.index.tolist() == R.item_ids.tolist()
    np.testing.assert_array_equal(gain.to_numpy(), expected_information_gain(model, R))
    by_id = information_gain_ranking(model, long)
    np.testing.assert_array_equal(by_id, R.item_ids[information_gain_ranking(model, R)])
    by_id = uncertainty_ranking(model, long)
    np.testing.assert_array_equal(by_id, R.item_ids[uncertainty_ranking(model, R)])
    # crowd-kit's column names too
    crowd_kit = long.rename(columns={"item": "task", "rater": "worker"})
    gain = expected_information_gain(model, crowd_kit)
    assert gain.index.name == "task" and gain.index.tolist() == R.item_ids.tolist()


def test_new_raters_are_scored_with_the_population_under_unknown_raters_prior():
    # With unknown_raters="prior", predict_proba takes a batch with raters the
    # model has not seen, but the gain failed: "ValueError: rater 2 is not
    # among the given rater_ids" (the hypotheses were built on fitted ids only).
    from skcrowd import GLAD, Ratings

    R = Ratings.from_matrix(X)
    old = R.rater != 2
    without_new = Ratings(R.item[old], R.rater[old], R.label[old])
    fitted = GLAD(unknown_raters="prior").fit(without_new)
    assert 2 not in fitted.rater_ids_.tolist()
    gain = expected_information_gain(fitted, R)
    assert gain.shape == (4,) and np.all(np.isfinite(gain)) and np.all(gain >= 0)
    # the new rater's ratings count, as predict_proba counts them
    assert not np.allclose(gain, expected_information_gain(fitted, without_new))
    # without the option, the model's own error naming the rater
    with pytest.raises(ValueError, match="Rater 2 was not seen in fit"):
        expected_information_gain(GLAD().fit(without_new), R)


def test_per_item_pools_keyed_by_item_id():
    # Per-item arguments are aligned by item id (doc/data.rst).  A dict of
    # pools failed with "TypeError: unhashable type: 'dict'", and a Series
    # of pools indexed by item id was taken by position: for a long table
    # in another order than its sorted ids, items got other items' pools.
    pd = pytest.importorskip("pandas")
    from skcrowd import Ratings

    rows = [(f"q{i}", f"w{j}", int(v)) for i, row in enumerate(X)
            for j, v in enumerate(row) if not np.isnan(v)]
    long = pd.DataFrame(rows, columns=["item", "rater", "label"])
    R = Ratings.from_long(long)
    model = DawidSkene().fit(long)
    pools = {"q0": ["w2"], "q1": ["w0", "w2"], "q2": ["w1"], "q3": ["w1", "w2"]}
    in_order = [np.array(pools[i]) for i in R.item_ids]
    expected = expected_information_gain(model, R, raters=in_order)
    for X_ in (long, R):
        for given in (pools, dict(reversed(list(pools.items()))),
                      pd.Series(pools).iloc[::-1]):
            gain = np.asarray(expected_information_gain(model, X_, raters=given))
            np.testing.assert_array_equal(gain, expected)
    # an item absent from a dict has no candidate rater; an unknown id is an error
    partial = {k: v for k, v in pools.items() if k != "q1"}
    gain = expected_information_gain(model, R, raters=partial)
    assert gain[1] == 0 and np.array_equal(np.delete(gain, 1), np.delete(expected, 1))
    with pytest.raises(ValueError, match="item 'q9'.* not an item of X"):
        expected_information_gain(model, R, raters={**pools, "q9": ["w1"]})
    # a matrix's items are its rows: a dict is keyed by row number
    matrix_model = DawidSkene().fit(X)
    by_row = {0: [2], 1: [0, 2], 2: [1], 3: [1, 2]}
    np.testing.assert_array_equal(
        expected_information_gain(matrix_model, X, raters=by_row),
        expected_information_gain(matrix_model, X, raters=[np.array(p) for p in by_row.values()]))


def test_wide_frame_is_read_as_the_model_reads_it():
    # A model fitted on an unnamed matrix reads a wide DataFrame's columns
    # by position (as predict_proba does), but the gain mapped them by name:
    # "ValueError: Rater ids are not comparable with those seen in fit."
    pd = pytest.importorskip("pandas")
    model = DawidSkene().fit(X)
    wide = pd.DataFrame(X, columns=["a", "b", "c"])
    np.testing.assert_array_equal(expected_information_gain(model, wide),
                                  expected_information_gain(model, X))
    with pytest.raises(ValueError, match="X has 2 features, but DawidSkene is expecting 3"):
        expected_information_gain(model, wide.iloc[:, :2])
    # a model fitted with named raters checks the names, as predict_proba does
    named = DawidSkene().fit(wide)
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        expected_information_gain(named, wide[["c", "b", "a"]])


def test_weights_series_is_aligned_by_rater_id():
    # weights indexed by rater id were taken by position: in another order
    # than the pool, each rater got another rater's probability, silently.
    pd = pytest.importorskip("pandas")
    from skcrowd import Ratings

    model = DawidSkene().fit(X)
    in_order = np.array([3.0, 1.0, 0.5])  # raters 0, 1, 2
    shuffled = pd.Series(in_order, index=[0, 1, 2])[[2, 0, 1]]
    np.testing.assert_array_equal(expected_information_gain(model, X, weights=shuffled),
                                  expected_information_gain(model, X, weights=in_order))
    # ragged per-item pools: each pool takes its raters' weights, normalised
    pools = [[0], [1, 2], [0, 1, 2], [2, 0]]
    gain = expected_information_gain(model, X, raters=pools, weights=shuffled)
    R = Ratings.from_matrix(X)
    for i, pool in enumerate(pools):
        alone = expected_information_gain(model, R[[i]], raters=[np.array(pool)],
                                          weights=in_order[pool])
        np.testing.assert_allclose(gain[i], alone[0], rtol=1e-12)
