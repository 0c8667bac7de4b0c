"""Results labelled by id: scikit-learn's set_output, pipelines with pandas
output, and predictions that join back to the user's data by id."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks

from skcrowd import IRT3PL, DawidSkene, MajorityVote, OrdinalMixture, Ratings
from skcrowd.datasets import make_dawid_skene

from test_common import all_estimators, fast_instance

SET_OUTPUT_CHECKS = [
    estimator_checks.check_set_output_transform,
    estimator_checks.check_set_output_transform_pandas,
    estimator_checks.check_global_output_transform_pandas,
    estimator_checks.check_transformer_get_feature_names_out,
    estimator_checks.check_transformer_get_feature_names_out_pandas,
    estimator_checks.check_dataframe_column_names_consistency,
]
# These three fit sklearn's own multi-class data; IRT3PL is binary only.
BINARY_ONLY = {"check_transformer_get_feature_names_out",
               "check_transformer_get_feature_names_out_pandas",
               "check_dataframe_column_names_consistency"}


@pytest.mark.parametrize("check", SET_OUTPUT_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("cls", all_estimators(), ids=lambda c: c.__name__)
def test_sklearn_set_output_checks(cls, check):
    if cls is IRT3PL and check.__name__ in BINARY_ONLY:
        pytest.skip("IRT3PL is binary; the check feeds multi-class ratings")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(cls.__name__, fast_instance(cls))


def string_ids(ratings):
    """Long form with item ids that are URLs and rater ids with spaces."""
    long = ratings.to_long()
    long["item"] = [f"https://example.org/q?id={i}&k=a b" for i in long["item"]]
    long["rater"] = [f"rater {r} (team x)" for r in long["rater"]]
    return long


@pytest.fixture(scope="module")
def crowd():
    data = make_dawid_skene(600, 12, 4, 2, random_state=0)
    long = string_ids(data.ratings)
    truth = pd.Series(data.true_labels, name="truth",
                      index=[f"https://example.org/q?id={i}&k=a b" for i in data.ratings.item_ids])
    return long, truth


def test_pipeline_with_pandas_output(crowd):
    long, truth = crowd
    ids = np.sort(long["item"].unique())
    pipe = make_pipeline(DawidSkene(), LogisticRegression()).set_output(transform="pandas")
    pipe.fit(long, truth.loc[ids])
    features = pipe[0].transform(long)
    assert isinstance(features, pd.DataFrame)
    assert features.index.tolist() == ids.tolist()
    assert pipe[-1].feature_names_in_.tolist() == ["0", "1"]
    predicted = pd.Series(pipe.predict(long), index=features.index)
    # misaligned rows would score about one half
    assert (predicted == truth.loc[predicted.index]).mean() > 0.9


def test_predictions_join_back_by_id(crowd):
    long, truth = crowd
    model = DawidSkene().fit(long)
    labels = model.predict(long)
    proba = model.predict_proba(long)
    assert isinstance(labels, pd.Series) and labels.name == "label"
    R = Ratings.from_long(long)
    expected = dict(zip(R.item_ids, DawidSkene().fit(R).predict(R)))
    joined = long.rename(columns={"label": "rating"}).join(labels, on="item")
    assert len(joined) == len(long)
    assert all(joined["label"] == joined["item"].map(expected))
    assert proba.columns.tolist() == ["0", "1"]
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    agree = truth.to_frame().join(labels)
    assert (agree["truth"] == agree["label"]).mean() > 0.9


def test_wide_and_array_output_follow_set_output():
    data = make_dawid_skene(50, 5, 3, 2, random_state=1)
    X = data.ratings.to_dense()
    model = MajorityVote().fit(X)
    assert isinstance(model.predict(X), np.ndarray)
    model.set_output(transform="pandas")
    labels = model.predict(X)
    assert isinstance(labels, pd.Series) and labels.index.equals(pd.RangeIndex(50))
    wide = pd.DataFrame(X, index=pd.Index([f"item {i}" for i in range(50)], name="id"),
                        columns=[f"r {j}" for j in range(5)])
    proba = MajorityVote().set_output(transform="pandas").fit(wide).transform(wide)
    assert proba.index.equals(wide.index) and proba.index.name == "id"
    assert MajorityVote().set_output(transform="default").fit(wide).predict(wide).ndim == 1


def test_ordinal_and_summaries_name_their_prediction():
    from skcrowd.datasets import make_ordinal

    long = make_ordinal(n_items=60, n_raters=5, random_state=0).ratings.to_long()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = OrdinalMixture(n_init=1, max_iter=20).fit(long)
    assert model.predict(long).name == "mean"
    assert model.score_samples(long).name == "log_likelihood"
    assert model.fit_predict(long).index.equals(model.predict(long).index)


def test_sample_of_a_long_frame_is_a_long_frame(crowd):
    long, _ = crowd
    ck = long.rename(columns={"item": "task", "rater": "worker"})
    model = DawidSkene().fit(ck)
    sim = model.sample(ck, random_state=0)
    assert sim.columns.tolist() == ["task", "worker", "label"]
    R = Ratings.from_long(ck, item="task", rater="worker")
    np.testing.assert_array_equal(sim["task"], R.item)
    np.testing.assert_array_equal(sim["worker"], R.rater)
