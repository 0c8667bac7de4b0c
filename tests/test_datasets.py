"""Shipped data sets load offline with the documented counts."""

import numpy as np
import pytest

from skcrowd import datasets

COUNTS = {  # name: (items, raters, ratings, gold items)  from SOURCE.md
    "caries": (3869, 5, 19345, None),
    "rte": (800, 164, 8000, 800),
    "bluebirds": (108, 39, 4212, 108),
    "dog": (807, 109, 8070, 807),
    "web": (2665, 177, 15567, 2653),
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_loader_counts(name):
    data = getattr(datasets, f"load_{name}")()
    n_items, n_raters, n_ratings, n_gold = COUNTS[name]
    assert data.ratings.shape == (n_items, n_raters)
    assert data.ratings.n_ratings == n_ratings
    assert "Cite" in data.DESCR
    if n_gold is None:
        assert data.gold is None
    else:
        assert np.sum(~np.isnan(data.gold)) == n_gold


def test_trec2010_as_released():
    data = datasets.load_trec2010()
    assert data.ratings.shape == (20232, 766)
    assert data.ratings.n_ratings == 98453
    assert set(np.unique(data.ratings.label)) == {-2, 0, 1, 2}
    assert np.sum(~np.isnan(data.gold)) == 3277
    assert len(data.groups) == 20232 and len(np.unique(data.groups)) == 100


def test_trec2010_paper_preprocessing():
    data = datasets.load_trec2010(preprocess="paper")
    R = data.ratings
    assert R.n_ratings == 91783
    assert R.shape == (20026, 762)
    assert len(np.unique(data.groups)) == 100
    assert set(np.unique(R.label)) == {1, 2, 3}
    gold = data.gold[~np.isnan(data.gold)]
    assert set(np.unique(gold)) == {1.0, 2.0, 3.0}
    # groups are the query part of the item id
    assert all(i.startswith(g + "_") for i, g in zip(R.item_ids[:50], data.groups[:50]))


def test_trec2010_rejects_unknown_preprocessing():
    with pytest.raises(ValueError, match="preprocess"):
        datasets.load_trec2010(preprocess="drop")


@pytest.mark.parametrize("kwargs, message", [
    ({"accuracy": (0.5, 1.5)}, "accuracy must be"),   # negative confusion entries
    ({"accuracy": (0.9, 0.5)}, "accuracy must be"),
    ({"spammer_fraction": 2.0}, "spammer_fraction"),
    ({"spammer_fraction": np.nan}, "spammer_fraction"),
    ({"n_classes": 0}, "n_classes"),                    # numpy's "a must be greater"
    ({"n_items": 5.5}, "n_items"),                      # a TypeError from numpy
    ({"class_prior": [0.5, 0.6]}, "class_prior must be"),
])
def test_make_dawid_skene_checks_its_parameters(kwargs, message):
    # they were passed to numpy as given: errors from inside it, or silently
    # impossible simulations (accuracy > 1)
    params = dict(n_items=20, n_raters=4, ratings_per_item=2, random_state=0)
    with pytest.raises(ValueError, match=message):
        datasets.make_dawid_skene(**{**params, **kwargs})
    datasets.make_dawid_skene(**params, accuracy=np.array([0.6, 0.9]))


@pytest.mark.parametrize("make, kwargs, message", [
    ("make_irt", {"prevalence": 2.0}, "prevalence"),        # every item positive
    ("make_irt", {"prevalence": np.nan}, "prevalence"),     # every item negative
    ("make_irt", {"n_items": 0}, "n_items"),                # an empty data set
    ("make_irt", {"n_items": 5.5}, "n_items"),              # a TypeError from numpy
    ("make_ordinal", {"ratings_per_item": 0}, "ratings_per_item"),  # no ratings
    ("make_ordinal", {"n_items": 5.5}, "n_items"),
    # a zero rate was a ZeroDivisionError, a zero or negative difficulty
    # made every rating the top level, reliability above 1 was returned
    ("make_ordinal", {"precision": (1.0, 0.0)}, "precision must be"),
    ("make_ordinal", {"precision": (np.inf, 1.0)}, "precision must be"),
    ("make_ordinal", {"difficulty": (2.0, 0.0)}, "difficulty must be"),
    ("make_ordinal", {"difficulty": (-1.0, 1.0)}, "difficulty must be"),
    ("make_ordinal", {"reliability": (1.5, 2.0)}, "reliability must be"),
    ("make_ordinal", {"reliability": (0.9, 0.1)}, "reliability must be"),
    ("make_ordinal", {"true_std": np.nan}, "true_std"),  # NaN true values
])
def test_simulators_check_their_design_parameters(make, kwargs, message):
    params = dict(n_items=20, n_raters=4, ratings_per_item=2, random_state=0)
    with pytest.raises(ValueError, match=message):
        getattr(datasets, make)(**{**params, **kwargs})


def test_make_dawid_skene_returns_truth():
    data = datasets.make_dawid_skene(200, 10, 3, 4, spammer_fraction=0.3, random_state=0)
    assert data.ratings.shape == (200, 10) and data.ratings.n_ratings == 600
    assert data.confusion.shape == (10, 4, 4)
    np.testing.assert_allclose(data.confusion.sum(axis=2), 1)
    spam = data.confusion[data.spammer]
    np.testing.assert_allclose(spam, spam[:, :1, :].repeat(4, axis=1))
    assert data.X.shape == (200, 10)
    np.testing.assert_array_equal(np.sum(~np.isnan(data.X), axis=1), 3)
