"""scikit-learn model selection on long-form DataFrames holds out items."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import (GridSearchCV, GroupKFold, KFold, ShuffleSplit,
                                     cross_val_score, cross_validate)

from skcrowd import DawidSkene, MajorityVote, Ratings
from skcrowd.datasets import load_rte


@pytest.fixture(scope="module")
def rte():
    return load_rte().ratings.to_long()


def test_group_splitter_holds_out_whole_items(rte):
    # the documented route: the item column as groups
    cv = GroupKFold(5)
    folds = list(cv.split(rte, groups=rte["item"]))
    test_items = [set(rte["item"].iloc[test]) for _, test in folds]
    for (train, _), items in zip(folds, test_items):
        assert not items & set(rte["item"].iloc[train])
    # every item is in exactly one test fold
    assert sum(len(items) for items in test_items) == rte["item"].nunique()
    scores = cross_val_score(DawidSkene(), rte, groups=rte["item"], cv=cv)
    # each fold's score: its held-out items with all their ratings, as a
    # fit and score by hand on Ratings
    for score, (train, test) in zip(scores, folds):
        by_hand = DawidSkene().fit(Ratings.from_long(rte.iloc[train])).score(
            Ratings.from_long(rte.iloc[test]))
        assert score == pytest.approx(by_hand, rel=1e-12)
    assert np.all(scores < -4.5)  # about -5.0 per item on RTE
    result = cross_validate(MajorityVote(), rte, groups=rte["item"], cv=cv,
                            return_train_score=True)
    assert np.all(np.isfinite(result["test_score"]))
    assert np.all(np.isfinite(result["train_score"]))


@pytest.mark.parametrize("cv", [KFold(5, shuffle=True, random_state=0),
                                ShuffleSplit(3, test_size=0.2, random_state=0)])
def test_a_plain_splitter_on_a_long_frame_is_refused_with_the_fix(rte, cv):
    # it split ratings, not items, silently: about -1.3 per fold against -5.0
    with pytest.raises(ValueError, match=r"in the training data with other ratings.*"
                                         r"groups=df\['item'\], cv=GroupKFold\(5\)"):
        cross_val_score(DawidSkene(), rte, cv=cv, error_score="raise")
    # scikit-learn's default error_score: a NaN score and the message, never
    # a number that looks right
    with pytest.warns(UserWarning, match=r"GroupKFold"):
        scores = cross_val_score(DawidSkene(), rte, cv=cv)
    assert np.all(np.isnan(scores))


def test_grid_search_by_item_and_refused_by_rating(rte):
    grid = {"confusion": ["full", "one_coin"]}
    search = GridSearchCV(DawidSkene(), grid, cv=GroupKFold(3)).fit(rte, groups=rte["item"])
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_params_["confusion"] in grid["confusion"]
    with pytest.raises(ValueError, match=r"GroupKFold"):
        GridSearchCV(DawidSkene(), grid, cv=KFold(3, shuffle=True, random_state=0),
                     error_score="raise").fit(rte)


def test_scoring_the_training_data_or_new_items_is_not_refused(rte):
    model = DawidSkene().fit(rte)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score = model.score(rte)
    assert score == pytest.approx(np.mean(model.score_samples(Ratings.from_long(rte))))
    # the same ratings in another row order
    assert model.score(rte.sample(frac=1.0, random_state=0)) == pytest.approx(score)
    # whole items, some of them
    items = rte["item"].unique()[:100]
    part = rte[rte["item"].isin(items)]
    assert np.isfinite(model.score(part))
    # training items with some ratings changed (new raters) or missing
    changed = part.copy()
    changed.loc[changed.index[::7], "rater"] = "a new rater"
    assert np.isfinite(model.set_params(unknown_raters="prior").score(changed))
    assert np.isfinite(model.score(part.iloc[1:]))


def test_a_test_fold_of_ratings_scored_by_hand_is_refused(rte):
    # the fold a rating split makes, fitted and scored by hand
    train, test = next(KFold(5, shuffle=True, random_state=1).split(rte))
    model = DawidSkene(unknown_raters="prior").fit(rte.iloc[train])
    with pytest.raises(ValueError, match=r"items of X were in the training data with "
                                         r"other ratings.*GroupKFold"):
        model.score(rte.iloc[test])
    with pytest.raises(ValueError, match="GroupKFold"):
        model.score_samples(rte.iloc[test])
    # a fit on another input form keeps no fingerprint of long-form rows
    matrix_fit = DawidSkene(unknown_raters="prior").fit(Ratings.from_long(rte.iloc[train]))
    assert np.isfinite(matrix_fit.score(rte.iloc[test]))


def test_partial_fit_ends_the_fits_fingerprint(rte):
    train, test = next(KFold(5, shuffle=True, random_state=1).split(rte))
    model = DawidSkene(unknown_raters="prior").fit(rte.iloc[train])
    with pytest.raises(ValueError, match="with other ratings"):
        model.score(rte.iloc[test])
    # a stream begins: the items of the earlier fit are no longer the model's
    model.partial_fit(rte.iloc[train])
    assert np.isfinite(model.score(rte.iloc[test]))
