"""skcrowd.active: which item to send for one more rating."""

import numpy as np
import pytest

from skcrowd import DawidSkene
from skcrowd.active import expected_information_gain, information_gain_ranking

X = np.array([[0, 1, 1], [1, 1, np.nan], [0, 0, 0], [1, np.nan, 1]], dtype=float)


@pytest.mark.parametrize("weights", [[np.nan, 1, 1], [np.inf, 1, 1], [-1, 1, 1], [1, 1],
                                     [[1, 1, 1]], [0, 0, 0]])
def test_bad_pool_weights_are_an_error(weights):
    # NaN or inf weights gave a NaN gain for every item
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
