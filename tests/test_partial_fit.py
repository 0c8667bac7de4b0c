"""Stepwise (online) EM: partial_fit over batches of items."""

import numpy as np
import pytest

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, Ratings
from skcrowd.datasets import make_dawid_skene, make_glad


def batches(R, size, only_used_raters=True):
    """Batches of whole items; each batch lists only the raters it uses, so
    raters appear as the stream goes (matched by id)."""
    for start in range(0, len(R), size):
        part = R[np.arange(start, min(start + size, len(R)))]
        if only_used_raters:
            part = Ratings(part.item, part.rater, part.label, item_ids=part.item_ids)
        yield part


@pytest.fixture(scope="module")
def four_classes():
    return make_dawid_skene(n_items=20_000, n_raters=60, n_classes=4, ratings_per_item=4,
                            random_state=0)


def aligned(model, rater_ids, values):
    pos = {r: j for j, r in enumerate(model.rater_ids_)}
    return values[[pos[r] for r in rater_ids]]


def test_dawid_skene_one_pass_matches_the_batch_fit(four_classes):
    sim = four_classes
    R = sim.ratings
    batch = DawidSkene().fit(R)
    online = DawidSkene(classes=[0, 1, 2, 3])
    for part in batches(R, 1000):
        online.partial_fit(part)
    assert online.n_iter_ == 20
    assert sorted(online.rater_ids_) == sorted(R.rater_ids)
    truth = sim.true_labels
    accuracy = np.mean(online.predict(R) == truth)
    assert accuracy >= np.mean(batch.predict(R) == truth) - 0.01
    confusion = aligned(online, R.rater_ids, online.confusion_)
    assert np.abs(confusion - sim.confusion).mean() < 0.05
    # predict works on any items, after any number of batches
    early = DawidSkene(classes=[0, 1, 2, 3]).partial_fit(next(batches(R, 1000)))
    assert early.predict(R[np.arange(5000, 5100)]).shape == (100,)


def test_glad_one_pass_matches_the_batch_fit():
    sim = make_glad(n_items=10_000, n_raters=40, ratings_per_item=4, dense=False,
                    random_state=1)
    R = sim.ratings
    batch = GLAD().fit(R)
    online = GLAD()
    for part in batches(R, 1000):
        online.partial_fit(part)
    truth = sim.true_labels
    assert np.mean(online.predict(R) == truth) >= np.mean(batch.predict(R) == truth) - 0.01
    ability = aligned(online, R.rater_ids, online.rater_ability_)
    assert np.abs(ability - batch.rater_ability_).mean() < 0.1


def test_mace_one_pass_matches_the_batch_fit(four_classes):
    sim = four_classes
    R = sim.ratings[np.arange(10_000)]
    batch = MACE(n_init=1).fit(R)
    online = MACE(classes=[0, 1, 2, 3])
    for part in batches(R, 1000):
        online.partial_fit(part)
    truth = sim.true_labels[:10_000]
    assert np.mean(online.predict(R) == truth) >= np.mean(batch.predict(R) == truth) - 0.01
    competence = aligned(online, R.rater_ids, online.rater_competence_)
    assert np.abs(competence - batch.rater_competence_).mean() < 0.02


def test_partial_fit_with_gold_clamps_and_informs_raters(four_classes):
    sim = four_classes
    R = sim.ratings[np.arange(2000)]
    y = np.where(np.arange(2000) % 5 == 0, sim.true_labels[:2000], np.nan)
    plain, gold = DawidSkene(), DawidSkene()
    for start in range(0, 2000, 500):
        idx = np.arange(start, start + 500)
        plain.partial_fit(R[idx])
        gold.partial_fit(R[idx], y[idx])
    error = [np.abs(m.confusion_ - sim.confusion).mean() for m in (plain, gold)]
    assert error[1] < error[0]


def test_a_class_missing_from_the_first_batch_needs_classes():
    X1 = np.array([[0, 1], [1, 1]], dtype=float)
    X2 = np.array([[2, 2], [1, 2]], dtype=float)
    with pytest.raises(ValueError, match="declare them all with classes"):
        DawidSkene().partial_fit(X1).partial_fit(X2)
    model = DawidSkene(classes=[0, 1, 2]).partial_fit(X1).partial_fit(X2)
    assert model.classes_.tolist() == [0, 1, 2] and model.predict(X2)[0] == 2


def test_only_models_with_stepwise_em_have_partial_fit():
    assert hasattr(DawidSkene(), "partial_fit") and hasattr(GLAD(), "partial_fit")
    assert not hasattr(IRT3PL(), "partial_fit")


def test_unnamed_columns_must_keep_their_count():
    model = DawidSkene().partial_fit(np.array([[0, 1, 1], [1, 1, 0]], dtype=float))
    with pytest.raises(ValueError, match="X has 2 features, but DawidSkene is expecting 3"):
        model.partial_fit(np.array([[0, 1], [1, 1]], dtype=float))


@pytest.mark.parametrize("Model", [DawidSkene, GLAD, MACE])
def test_a_long_form_batch_is_read_as_ratings(Model):
    # Numeric ids and labels: read as a wide matrix, this batch fitted
    # silently with three raters called item, rater and label.
    pd = pytest.importorskip("pandas")
    first = pd.DataFrame({"item": [1, 1, 2, 2, 3], "rater": [7, 8, 7, 8, 7],
                          "label": [0, 1, 1, 1, 0]})
    second = pd.DataFrame({"item": [4, 4], "rater": [8, 9], "label": [1, 0]})
    from_frames = Model().partial_fit(first).partial_fit(second)
    from_ratings = Model().partial_fit(Ratings.from_long(first)).partial_fit(
        Ratings.from_long(second))
    assert from_frames.rater_ids_.tolist() == [7, 8, 9]
    np.testing.assert_array_equal(from_frames.predict_proba(Ratings.from_long(first)),
                                  from_ratings.predict_proba(Ratings.from_long(first)))


def test_a_categorical_label_column_names_the_scale_of_the_stream():
    pd = pytest.importorskip("pandas")
    first = pd.DataFrame({"item": [1, 1, 2], "rater": ["a", "b", "a"],
                          "label": pd.Categorical(["n", "y", "n"], categories=["n", "m", "y"])})
    model = DawidSkene().partial_fit(first)
    assert model.classes_.tolist() == ["m", "n", "y"]
    model.partial_fit(pd.DataFrame({"item": [3], "rater": ["b"], "label": ["m"]}))


@pytest.mark.parametrize("Model", [DawidSkene, GLAD, MACE])
def test_a_refused_batch_leaves_the_model_as_it_was(Model):
    # The refused batches used to add their raters to rater_ids_ (GLAD then
    # read a rater's ability past the end of its array at predict, the
    # next batch failed with an IndexError), or set n_features_in_ to the
    # refused matrix's column count.
    first = Ratings(item=[1, 1, 2, 2, 3], rater=["a", "b", "a", "b", "a"], label=[0, 1, 0, 0, 1])
    model = Model().partial_fit(first)
    before = model.predict_proba(first)
    with pytest.raises(ValueError, match="keeps the classes of its first batch"):
        model.partial_fit(Ratings(item=[6, 6], rater=["a", "c"], label=[2, 2]))
    with pytest.raises(ValueError, match="y: Label 9"):
        model.partial_fit(Ratings(item=[7], rater=["d"], label=[1]), {7: 9})
    assert model.rater_ids_.tolist() == ["a", "b"] and model.n_features_in_ == 2
    np.testing.assert_array_equal(model.predict_proba(first), before)
    with pytest.raises(ValueError, match="'c' was not seen in fit"):
        model.predict(Ratings(item=[1], rater=["c"], label=[1]))
    model.partial_fit(Ratings(item=[8, 8], rater=["c", "d"], label=[1, 0]))
    assert model.rater_ids_.tolist() == ["a", "b", "c", "d"]

    matrix = Model().partial_fit(np.array([[0, 1], [1, 1]], dtype=float))
    with pytest.raises(ValueError, match="X has 3 features"):
        matrix.partial_fit(np.array([[0, 1, 1]], dtype=float))
    assert matrix.n_features_in_ == 2
    matrix.predict(np.array([[0, 1]], dtype=float))


@pytest.mark.parametrize("Model", [DawidSkene, GLAD, MACE])
def test_a_batch_without_ratings_is_refused_and_leaves_the_stream_as_it_was(Model):
    # As the first batch is refused: a later batch whose items had no
    # rating yet was accepted, and its empty statistics shrank the rater
    # counts (DawidSkene's posteriors moved by 0.04, n_iter_ counted it).
    X = np.array([[0, 1, 0], [1, 1, np.nan], [1, 1, 1], [0, 0, 1.0]])
    model = Model(random_state=0).partial_fit(X)
    before, n_iter = model.predict_proba(X), model.n_iter_
    with pytest.raises(ValueError, match="X has no ratings"):
        model.partial_fit(np.full((2, 3), np.nan))
    np.testing.assert_array_equal(model.predict_proba(X), before)
    assert model.n_iter_ == n_iter


@pytest.mark.parametrize("Model", [DawidSkene, GLAD, MACE])
def test_classes_changed_after_the_first_batch_are_named_as_the_problem(Model):
    # set_params(classes=[0, 1, 2]) mid-stream was ignored, and a batch with
    # the new class got "declare them all with classes=[...]", as declared
    X = np.array([[0, 1, 0], [1, 1, np.nan], [1, 1, 1.0]])
    model = Model(random_state=0).partial_fit(X)
    before = model.predict_proba(X)
    model.set_params(classes=[0, 1, 2])
    with pytest.raises(ValueError, match=r"this stream began with the classes \[0.0, 1.0\]"):
        model.partial_fit(np.array([[2, 1, 0.0]]))
    np.testing.assert_array_equal(model.predict_proba(X), before)
    # the same classes, declared after the first batch, change nothing
    model.set_params(classes=[0, 1]).partial_fit(np.array([[0, 1, 0.0]]))


def test_rater_ids_of_another_type_than_before_are_refused():
    # A number after strings became a string (rater 5 -> '5'), so that
    # predict then knew rater '5' and not rater 5.
    model = DawidSkene().partial_fit(Ratings(item=[1, 1], rater=["a", "b"], label=[0, 1]))
    with pytest.raises(ValueError, match="rater ids must all be of one type"):
        model.partial_fit(Ratings(item=[2], rater=[5], label=[0]))
    assert model.rater_ids_.tolist() == ["a", "b"]


@pytest.mark.parametrize("Model", [DawidSkene, GLAD, MACE])
def test_rater_table_and_new_raters_work_after_partial_fit(Model):
    # Both failed with AttributeError '_rater_counts' (set only by fit).
    model = Model(unknown_raters="prior")
    model.partial_fit(Ratings(item=[1, 1, 2, 2, 3], rater=["a", "b", "a", "b", "a"],
                              label=[0, 1, 0, 0, 1]))
    model.partial_fit(Ratings(item=[4, 4], rater=["c", "a"], label=[1, 1]))
    assert model.rater_table()["n_ratings"].to_dict() == {"a": 4, "b": 2, "c": 1}
    proba = model.predict_proba(Ratings(item=[9, 9], rater=["a", "new"], label=[1, 0]))
    assert proba.shape == (1, 2) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("Model", [DawidSkene, GLAD, MACE])
def test_fit_ends_a_stream(Model):
    # The next partial_fit blended the old stream's running statistics,
    # per rater position, into raters of the fit (here: other raters).
    old = Ratings(item=range(6), rater=["a", "b"] * 3, label=[0, 0, 1, 1, 0, 0])
    new = Ratings(item=range(6), rater=["c", "d"] * 3, label=[1, 0, 1, 0, 1, 0])
    model = Model().partial_fit(old).fit(new).partial_fit(new)
    fresh = Model().partial_fit(new)
    assert model.n_iter_ == 1
    np.testing.assert_array_equal(model.predict_proba(new), fresh.predict_proba(new))


def test_a_stream_of_wide_frames_predicts_a_frame_of_all_its_raters():
    # feature_names_in_ was the last batch's columns: a frame of every
    # rater of the stream was refused ("Feature names unseen at fit time").
    pd = pytest.importorskip("pandas")
    model = DawidSkene().partial_fit(pd.DataFrame({"x": [0, 1.0], "y": [1, 1]}))
    model.partial_fit(pd.DataFrame({"y": [0, 1.0], "z": [1, 1]}))
    everyone = pd.DataFrame({"x": [0, 1.0], "y": [1, 1], "z": [1, 0]})
    np.testing.assert_array_equal(
        model.predict_proba(everyone),
        model.predict_proba(Ratings.from_long(everyone.melt(
            ignore_index=False, var_name="rater", value_name="label").rename_axis(
            "item").reset_index())))
    with pytest.raises(ValueError, match="column 0 is 'z' where 'x' is expected"):
        model.predict(everyone[["z", "x", "y"]])


def test_batches_of_a_matrix_take_a_series_y_in_row_order():
    # y[k:k + 200] of a Series keeps the index k..k + 199: read as row
    # numbers of the batch, the second batch failed with "ValueError: y has a
    # label for item 200, which is not an item of X".
    import pandas as pd

    R = make_dawid_skene(n_items=800, n_raters=10, ratings_per_item=3, random_state=0)
    X, truth = R.ratings.to_dense(), R.true_labels
    y = np.where(np.arange(800) % 5 == 0, truth, np.nan)
    as_series, as_array = DawidSkene(), DawidSkene()
    for k in range(0, 800, 200):
        as_series.partial_fit(X[k:k + 200], pd.Series(y)[k:k + 200])
        as_array.partial_fit(X[k:k + 200], y[k:k + 200])
    np.testing.assert_array_equal(as_series.predict_proba(X), as_array.predict_proba(X))
