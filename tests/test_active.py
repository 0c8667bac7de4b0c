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
