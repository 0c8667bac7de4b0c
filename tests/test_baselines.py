"""MajorityVote, MeanRating, MedianRating."""

import numpy as np
import pytest

from skcrowd import MajorityVote, MeanRating, MedianRating
from skcrowd.datasets import load_web

X = np.array([[1, 2, 2, np.nan], [3, 3, 1, 1], [5, np.nan, np.nan, np.nan], [4, 5, 1, 2]])


def test_majority_vote_shares_and_tie_rule():
    model = MajorityVote().fit(X)
    proba = model.predict_proba(X)
    # item 1 is a tie between 1 and 3: split evenly, predict the smaller class
    np.testing.assert_allclose(proba[1], [0.5, 0, 0.5, 0, 0])
    assert model.predict(X)[1] == 1
    np.testing.assert_allclose(proba[0], [1 / 3, 2 / 3, 0, 0, 0])


def test_majority_vote_score_is_the_identical_rater_model():
    model = MajorityVote().fit(X)
    a, K = model.accuracy_, 5
    counts = np.array([1, 2, 0, 0, 0])  # item 0
    direct = np.log(np.sum(model.class_prior_ * a**counts * ((1 - a) / (K - 1)) ** (3 - counts)))
    assert model.score_samples(X)[0] == pytest.approx(direct)


def test_mean_and_median_match_numpy():
    means = MeanRating().fit_predict(X)
    medians = MedianRating().fit_predict(X)
    np.testing.assert_allclose(means, np.nanmean(X, axis=1))
    np.testing.assert_allclose(medians, np.nanmedian(X, axis=1))


def test_mean_of_an_unrated_item_is_the_prior_mean():
    Xe = np.vstack([X, np.full(4, np.nan)])
    model = MeanRating().fit(Xe)
    assert model.predict(Xe)[-1] == pytest.approx(model.class_prior_ @ model.classes_)


def test_mean_needs_numbers():
    with pytest.raises(ValueError, match="numeric"):
        MeanRating().fit(np.array([["a", "b"], ["b", "b"]], dtype=object))


@pytest.mark.parametrize("cls", [MeanRating, MedianRating])
def test_labels_too_large_to_sum_are_an_error_not_inf(cls):
    # the mean of 1e308 and 1e308 was inf, its standard error NaN
    X = np.array([[1e308, 1e308, -1e308], [1e308, np.nan, 1e308]])
    with pytest.raises(ValueError, match="rescale the labels"):
        cls().fit(X)
    big = np.array([[1e150, 3e150], [2e150, np.nan]])
    np.testing.assert_allclose(cls().fit(big).predict(big), [2e150, 2e150])


def test_baselines_on_web_gold():
    data = load_web()
    known = ~np.isnan(data.gold)
    mv = MajorityVote().fit_predict(data.ratings)
    # SOURCE.md's majority vote (ties toward the smallest label) on gold
    assert np.mean(mv[known] == data.gold[known]) == pytest.approx(0.7765, abs=5e-5)
    mean = MeanRating().fit_predict(data.ratings)
    assert np.corrcoef(mean[known], data.gold[known])[0, 1] > 0.5
