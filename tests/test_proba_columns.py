"""The per-class columns of pandas results are the classes themselves."""

import numpy as np
import pandas as pd
import pytest

from skcrowd import DawidSkene, MajorityVote, Ratings
from skcrowd.datasets import load_rte


@pytest.fixture(scope="module")
def rte_long():
    # RTE's labels are the integers 0 and 1, here shifted to 1 and 2
    ratings = load_rte().ratings
    return Ratings(ratings.item, ratings.rater, ratings.label + 1).to_long()


def test_predict_proba_of_a_long_frame_is_indexed_by_the_classes(rte_long):
    # m.predict_proba(df)[1] raised KeyError: 1 while classes_ was [1 2] and
    # predict returned int64 (crowd-kit's probas_ columns are the labels)
    model = DawidSkene().fit(rte_long)
    assert model.classes_.tolist() == [1, 2]
    proba = model.predict_proba(rte_long)
    assert proba.columns.tolist() == [1, 2] and proba.columns.dtype == model.classes_.dtype
    labels = model.predict(rte_long)
    # the most probable class, read through the columns
    assert (proba.idxmax(axis=1) == labels).all()
    np.testing.assert_allclose(proba[1] + proba[2], 1.0)
    # transform is predict_proba
    assert model.transform(rte_long).columns.tolist() == [1, 2]


@pytest.mark.parametrize("labels, classes", [
    (["no", "yes"], ["no", "yes"]),
    ([0.5, 1.5], [0.5, 1.5]),
])
def test_class_columns_keep_the_label_type(labels, classes):
    df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3,
                       "label": [labels[0], labels[1], labels[1], labels[1], labels[0],
                                 labels[0]]})
    model = MajorityVote().fit(df)
    proba = model.predict_proba(df)
    assert proba.columns.tolist() == classes  # not "0.5", "1.5"
    if model.classes_.dtype.kind != "O":  # (pandas may store strings as its str dtype)
        assert proba.columns.dtype == model.classes_.dtype
    assert proba[classes[1]].tolist() == [0.5, 1.0, 0.0]


def test_pandas_output_names_the_columns_by_get_feature_names_out(rte_long):
    # scikit-learn names every transform output by get_feature_names_out
    # (strings); predict_proba then follows, so that the two agree
    model = DawidSkene().set_output(transform="pandas").fit(rte_long)
    names = model.get_feature_names_out().tolist()
    assert names == ["1", "2"]
    assert model.transform(rte_long).columns.tolist() == names
    assert model.predict_proba(rte_long).columns.tolist() == names
    matrix = Ratings.from_long(rte_long)
    assert model.transform(matrix).columns.tolist() == names
