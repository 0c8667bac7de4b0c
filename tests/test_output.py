"""Results labelled by id: scikit-learn's set_output, pipelines with pandas
output, and predictions that join back to the user's data by id."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks

from skcrowd import GLAD as GLAD_CLASS
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
        if (check.__name__ == "check_dataframe_column_names_consistency"
                and hasattr(fast_instance(cls), "partial_fit")):
            # partial_fit matches raters by id and adds new ones as they
            # appear (streaming, doc/gold.rst), so a batch with other column
            # names is new raters, not an error.  The check's predict /
            # transform / score part runs first and raises its own
            # "<method> did not raise"; only the partial_fit part may differ.
            with pytest.raises(AssertionError, match="^Did not raise: "):
                check(cls.__name__, fast_instance(cls))
            return
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
    assert proba.columns.tolist() == [0, 1]  # the classes themselves
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


# -- rater and item tables ---------------------------------------------------------

def fitted_models(long):
    """Every model fitted on ``long`` (binary labels), quickly."""
    from test_common import all_estimators

    models = []
    for cls in all_estimators():
        params = {k: v for k, v in {"max_iter": 30, "n_init": 1}.items()
                  if k in cls().get_params()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.append(cls(**params).fit(long))
    return models


@pytest.fixture(scope="module")
def binary_models(crowd):
    return fitted_models(crowd[0])


RATER_COLUMNS = {
    "DawidSkene": ["accuracy", "recall_0", "recall_1"],
    "EBCC": ["accuracy", "recall_0", "recall_1"],
    "GLAD": ["ability"],
    "IRT3PL": ["accuracy", "sensitivity", "specificity", "alpha_sens", "alpha_spec"],
    "MACE": ["accuracy", "competence"],
    "MajorityVote": ["agreement"],
    "MeanRating": ["agreement"],
    "MedianRating": ["agreement"],
    "OrdinalMixture": ["precision", "reliability"],
    "PooledDawidSkene": ["accuracy", "recall_0", "recall_1"],
}


def test_every_model_is_in_the_rater_column_table(binary_models):
    assert {type(m).__name__ for m in binary_models} <= set(RATER_COLUMNS)


def test_rater_and_item_tables_join_back_by_id(crowd, binary_models):
    long, truth = crowd
    for model in binary_models:
        name = type(model).__name__
        raters = model.rater_table()
        assert raters.columns.tolist() == ["n_ratings", *RATER_COLUMNS[name]], name
        assert raters.index.name == "rater"
        assert set(raters.index) == set(long["rater"])
        counts = long.groupby("rater").size()
        joined = counts.rename("counted").to_frame().join(raters)
        assert (joined["counted"] == joined["n_ratings"]).all(), name
        items = model.item_table(long)
        assert items.index.name == "item" and set(items.index) == set(long["item"])
        assert np.all(np.isfinite(items["log_likelihood"])), name
        assert (items["n_ratings"] == long.groupby("item").size().loc[items.index]).all()
        prediction = model.predict(long)
        np.testing.assert_array_equal(items[prediction.name], prediction.loc[items.index])
        back = long.join(items.add_suffix("_item"), on="item")
        assert back[prediction.name + "_item"].notna().all(), name


def test_rater_table_has_no_nan_for_a_rater_without_ratings(crowd):
    # A wide frame keeps every column as a rater, an all-missing one too:
    # its row says n_ratings 0 and, like every model, the value the model
    # holds for a rater it has no ratings of (never NaN).
    long, _ = crowd
    wide = long.pivot(index="item", columns="rater", values="label")
    wide["nobody"] = np.nan
    for model in fitted_models(wide):
        table = model.rater_table()
        name = type(model).__name__
        assert table.loc["nobody", "n_ratings"] == 0, name
        assert np.all(np.isfinite(table.to_numpy(dtype=float))), (name, table.loc["nobody"])
        if isinstance(model, MajorityVote):  # every rater is the same rater
            assert table.loc["nobody", "agreement"] == model.accuracy_


def test_item_table_columns_per_model(crowd, binary_models):
    long, _ = crowd
    for model in binary_models:
        items = model.item_table(long)
        proba = model.predict_proba(long).to_numpy()
        entropy = -np.sum(proba * np.log(np.where(proba > 0, proba, 1)), axis=1)
        np.testing.assert_allclose(items["entropy"], entropy, atol=1e-12)
        np.testing.assert_allclose(items["log_likelihood"], model.score_samples(long))
        if "probability" in items:
            np.testing.assert_allclose(items["probability"], proba.max(axis=1))
        if isinstance(model, GLAD_CLASS):
            # 1/β_i of the item-level inference (fit's warm start aside, as
            # close as the fit's convergence allows)
            np.testing.assert_allclose(items["difficulty"].to_numpy(),
                                       model.item_difficulty_, rtol=1e-4)


def test_a_sure_items_entropy_is_not_negative_zero():
    # MeanRating's item_table on web printed "entropy -0.0" for every item
    # whose ratings agree
    from skcrowd import MeanRating

    X = np.array([[1, 1, 1], [2, 2, np.nan], [1, 2, 2]])
    for model in (MeanRating(), MajorityVote()):
        entropy = model.fit(X).item_table(X)["entropy"].to_numpy()
        assert entropy[0] == 0 and not np.signbit(entropy[0]), entropy
        assert not np.any(np.signbit(entropy))
        assert "-0.0" not in model.item_table(X).to_string()


def test_mean_rating_std_is_the_standard_error():
    from skcrowd import MeanRating

    X = np.array([[1, 2, 4], [5, 5, np.nan], [3, np.nan, np.nan]])
    items = MeanRating().fit(X).item_table(X)
    np.testing.assert_allclose(items["std"].iloc[0], np.std([1, 2, 4], ddof=1) / np.sqrt(3))
    assert items["std"].iloc[1] == 0.0 and np.isnan(items["std"].iloc[2])


# -- raters not seen in fit --------------------------------------------------------

def with_new_raters(long, n=40):
    new = long.copy()
    new.loc[new.index[:n], "rater"] = [f"new rater {i % 3}" for i in range(n)]
    return new


def test_unknown_rater_default_error_names_rater_and_option(crowd, binary_models):
    long, _ = crowd
    new = with_new_raters(long)
    for model in binary_models:
        with pytest.raises(ValueError, match="Rater 'new rater 0' was not seen in fit.*"
                                             "unknown_raters='prior'"):
            model.predict_proba(new)


def test_unknown_raters_prior_gives_finite_normalised_posteriors(crowd, binary_models):
    long, _ = crowd
    new = with_new_raters(long)
    for model in binary_models:
        model = model.set_params(unknown_raters="prior")
        before = {k: np.copy(v) for k, v in vars(model).items() if isinstance(v, np.ndarray)}
        proba = model.predict_proba(new)
        assert np.all(np.isfinite(proba.to_numpy())), type(model).__name__
        np.testing.assert_allclose(proba.sum(axis=1), 1)
        assert np.all(np.isfinite(model.score_samples(new)))
        assert model.item_table(new)["n_ratings"].sum() == len(new)
        sim = model.sample(new, random_state=0)
        assert sim["rater"].tolist() == Ratings.from_long(new).rater.tolist()
        # the model itself is unchanged (the population rater lives in a copy)
        for k, v in before.items():
            np.testing.assert_array_equal(getattr(model, k), v)
        model.set_params(unknown_raters="error")


def test_population_rater_matches_the_crowd():
    # A new rater's ratings move an item's posterior as an average rater's
    # would: between the best and the worst fitted rater's effect.
    data = make_dawid_skene(800, 10, 8, 2, random_state=3)
    model = DawidSkene(unknown_raters="prior").fit(data.ratings)
    one = lambda rater: model.predict_proba(Ratings([0], [rater], [1]))[0, 1]  # noqa: E731
    fitted = [one(r) for r in model.rater_ids_]
    assert min(fitted) < one("someone new") < max(fitted)
    np.testing.assert_allclose(
        model._population_rater()["confusion_"],
        np.average(model.confusion_, axis=0, weights=model.rater_table()["n_ratings"]))


def test_unknown_raters_prior_ordinal():
    from skcrowd.datasets import make_ordinal

    long = make_ordinal(n_items=80, n_raters=6, random_state=1).ratings.to_long()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = OrdinalMixture(n_init=1, max_iter=30, unknown_raters="prior").fit(long)
    new = long.copy()
    new.loc[new.index[:20], "rater"] = 99
    proba = model.predict_proba(new)
    assert np.all(np.isfinite(proba.to_numpy()))
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    assert np.all(np.isfinite(model.predict(new)))
