"""The input boundary with pandas: long-form and wide DataFrames, the rule
that tells them apart, missing values in every dtype, and the data layer's
label rules."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skcrowd import GLAD, DawidSkene, MajorityVote, OrdinalMixture, Ratings
from skcrowd.datasets import (load_bluebirds, load_caries, load_dog, load_rte,
                              load_trec2010, load_web)

LOADERS = [load_bluebirds, load_caries, load_dog, load_rte, load_trec2010, load_web]
CONVENTIONS = [("item", "rater", "label"), ("task", "worker", "label")]


def with_ids(long, kind):
    """The long frame with its ids as given, as integer codes, or as strings
    with spaces and URLs."""
    if kind == "given":
        return long
    out = long.copy()
    for column, prefix in (("item", "https://example.org/item?id="), ("rater", "rater #")):
        codes = pd.factorize(out[column], sort=True)[0]
        out[column] = codes * 3 + 1 if kind == "int" else [f"{prefix}{c} x" for c in codes]
    return out


@pytest.mark.parametrize("load", LOADERS, ids=lambda f: f.__name__)
def test_long_frame_fits_exactly_as_from_long(load):
    long = load().ratings.to_long()
    for kind in ("given", "int", "str"):
        frame = with_ids(long, kind)
        for item, rater, label in CONVENTIONS:
            df = frame.rename(columns={"item": item, "rater": rater, "label": label})
            via_ratings = Ratings.from_long(df, item=item, rater=rater, label=label)
            direct = DawidSkene(max_iter=30).fit(df)
            reference = DawidSkene(max_iter=30).fit(via_ratings)
            np.testing.assert_array_equal(direct.confusion_, reference.confusion_)
            np.testing.assert_array_equal(direct.class_prior_, reference.class_prior_)
            np.testing.assert_array_equal(direct.rater_ids_, reference.rater_ids_)
            proba = direct.predict_proba(df)
            np.testing.assert_array_equal(proba.to_numpy(), reference.predict_proba(via_ratings))
            # labelled by the user's item ids, under the user's column name
            assert proba.index.name == item
            np.testing.assert_array_equal(proba.index, via_ratings.item_ids)
            assert set(proba.index) == set(df[item])


def test_long_frame_fits_every_model_as_from_long():
    data = load_bluebirds()
    df = with_ids(data.ratings.to_long(), "str")
    R = Ratings.from_long(df)
    for model in (MajorityVote(), DawidSkene(), GLAD(max_iter=20)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = type(model)(**model.get_params()).fit(df).predict_proba(df)
            b = model.fit(R).predict_proba(R)
        np.testing.assert_array_equal(a.to_numpy(), b)
    web = load_web().ratings.to_long()
    a = OrdinalMixture(n_init=1, max_iter=20).fit(web)
    b = OrdinalMixture(n_init=1, max_iter=20).fit(Ratings.from_long(web))
    np.testing.assert_array_equal(a.rater_precision_, b.rater_precision_)
    np.testing.assert_array_equal(a.predict(web).to_numpy(), b.predict(Ratings.from_long(web)))


def test_pivoted_frame_is_still_wide():
    long = with_ids(load_bluebirds().ratings.to_long(), "str")
    wide = long.pivot(index="item", columns="rater", values="label")
    assert {"item", "rater", "label"}.isdisjoint(wide.columns)
    model = DawidSkene().fit(wide)
    assert model.n_features_in_ == wide.shape[1]
    np.testing.assert_array_equal(model.rater_ids_, wide.columns)
    reference = DawidSkene().fit(wide.to_numpy())
    np.testing.assert_array_equal(model.confusion_, reference.confusion_)
    # the same fit as the long frame it came from (raters in the same order)
    np.testing.assert_allclose(model.confusion_, DawidSkene().fit(long).confusion_)
    proba = model.set_output(transform="pandas").predict_proba(wide)
    pd.testing.assert_index_equal(proba.index, wide.index)


@pytest.mark.parametrize("columns", [None, [1.5, 2.0, 3.0],
                                     [("a", 1), ("a", 2), ("b", 1)]])
def test_wide_frame_with_non_string_column_names(columns):
    # pd.DataFrame(matrix) has integer column names: scikit-learn sets no
    # feature_names_in_, and fit raised AttributeError instead of fitting
    X = np.array([[0, 1, np.nan], [1, 1, 0], [0, 0, 1]])
    if columns is not None and isinstance(columns[0], tuple):
        columns = pd.MultiIndex.from_tuples(columns)
    wide = pd.DataFrame(X, columns=columns)
    for model in (MajorityVote(), DawidSkene()):
        fitted = model.fit(wide)
        assert list(fitted.rater_ids_) == list(wide.columns)
        reference = clone(model).fit(X).predict(X)
        np.testing.assert_array_equal(fitted.predict(wide), reference)
        assert list(fitted.rater_table().index) == list(wide.columns)


@pytest.mark.parametrize("columns", [[0, 1, 2], [("g", "a"), ("g", "b"), ("h", "c")]])
def test_wide_frame_columns_are_checked_against_the_raters_at_predict(columns):
    # Integer or tuple column names (which scikit-learn does not check) in
    # another order or renamed were read by position: other raters' ratings.
    X = np.array([[0, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 0.0]])
    if isinstance(columns[0], tuple):
        columns = pd.MultiIndex.from_tuples(columns)
    wide = pd.DataFrame(X, columns=columns)
    model = DawidSkene().fit(wide)
    with pytest.raises(ValueError, match="column 0 is .* where .* is expected"):
        model.predict(wide.iloc[:, [2, 0, 1]])
    with pytest.raises(ValueError, match=r"X\[model.rater_ids_\]"):
        model.predict(wide.set_axis([7, 8, 9], axis=1))
    np.testing.assert_array_equal(model.predict(wide), model.predict(X))


def test_wide_frame_after_a_long_fit_must_name_the_raters_in_order():
    # Fitted on long form, a wide frame was read by position (with
    # scikit-learn's warning that the model had no feature names).
    rows = [(i, r, (i + (r == "cat")) % 2) for i in range(12) for r in ("ann", "bob", "cat")]
    long = pd.DataFrame(rows, columns=["item", "rater", "label"])
    model = DawidSkene().fit(long)
    wide = long.pivot(index="item", columns="rater", values="label")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(model.predict_proba(wide),
                                      model.predict_proba(long).to_numpy())
    with pytest.raises(ValueError, match="column 0 is 'cat' where 'ann' is expected"):
        model.predict_proba(wide[["cat", "ann", "bob"]])


def test_python_lists_that_mix_strings_and_numbers_are_not_read_as_strings():
    # NumPy turns [25, "A2K5", 0] into strings: a list of (item, rater,
    # label) rows was fitted, silently, as a 30 x 3 matrix with one class per
    # id ("0", "1", "25", "A11GX90QFWDLMM", ...)
    rows = list(load_rte().ratings.to_long().head(30).itertuples(index=False))
    with pytest.raises(ValueError, match=r"mix strings.*Ratings\(item, rater, label\)"):
        DawidSkene().fit(rows)
    with pytest.raises(ValueError, match="mix strings"):
        DawidSkene().fit([[1, "2"], [2, 2]])
    # the same list given to Ratings: labels 1 and "x" were the strings "1", "x"
    with pytest.raises(ValueError, match="mix strings"):
        Ratings([1, 1, 2, 2], ["a", "b", "a", "b"], [1, "x", 1, 2])
    # and the items 1 and "1" were one item
    with pytest.raises(ValueError, match="item ids must all be of one type"):
        Ratings([1, "1", 2, 2], ["a", "b", "a", "b"], [1, 2, 1, 2])
    # lists of one type read as before
    assert DawidSkene().fit([["a", "b"], ["a", "a"]]).classes_.tolist() == ["a", "b"]
    assert Ratings(["i", "i"], ["a", "b"], ["x", "y"]).shape == (1, 2)


def test_ids_or_groups_of_two_types_are_named_with_their_types():
    # "item ids must all be of one type (numbers or strings)." did not say
    # which types the ids mix (numbers and strings, or bytes: a column read
    # as text in part); the Dask path gives the same message
    with pytest.raises(ValueError, match=r"item ids .*; they mix int and str\.$"):
        Ratings([1, "x", 2, 2], ["a", "b", "a", "b"], [1, 2, 1, 2])
    frame = pd.DataFrame({"item": [1, 1, 2, 2], "rater": [1, b"b", 1, b"b"],
                          "label": [0, 1, 1, 1]})
    with pytest.raises(ValueError, match=r"rater ids .*; they mix bytes and int\.$"):
        DawidSkene().fit(frame)
    with pytest.raises(ValueError, match=r"rater ids .*; they mix int and str\.$"):
        Ratings([1, 1], np.array([np.int64(1), "b"], dtype=object), [0, 1])
    ratings = Ratings([1, 1, 2, 2], ["a", "b", "a", "b"], [0, 1, 1, 1])
    with pytest.raises(ValueError, match=r"groups .*; they mix int and str\.$"):
        OrdinalMixture(difficulty="group", n_init=1).fit(
            ratings, groups=np.array([1, "g"], dtype=object))


def test_ids_of_another_type_are_named_with_their_types():
    # a model fitted on integer ids, given the same ids as strings (a CSV
    # read as text): "Rater ids are not comparable with those seen in fit.",
    # with no id and no type to go on
    long = load_dog().ratings.to_long()
    model = DawidSkene().fit(long)
    with pytest.raises(ValueError, match=r"Rater ids .* '1' \(str\) against 1 \(int\)"):
        model.predict(long.astype({"rater": str}))
    with pytest.raises(ValueError, match=r"y's item ids .* 1 \(int\) against '1' \(str\)"):
        DawidSkene().fit(long.astype({"item": str}), {1: 0})


def test_from_long_reads_crowd_kit_names_and_names_the_columns_it_has():
    # Ratings.from_long(df) on a task/worker/label frame, which fit(df) reads
    # (and which doc/data.rst says to wrap for cross-validation), was
    # "Columns ['item', 'rater'] are not in the table."
    long = load_rte().ratings.to_long()
    crowd_kit = long.rename(columns={"item": "task", "rater": "worker"})
    R, expected = Ratings.from_long(crowd_kit), Ratings.from_long(long)
    np.testing.assert_array_equal(R.item_ids, expected.item_ids)
    np.testing.assert_array_equal(R.rater_ids, expected.rater_ids)
    np.testing.assert_array_equal(R.label, expected.label)
    # a wrong name says which columns there are
    with pytest.raises(ValueError, match=r"\['itm'\] are not in the table; it has "
                                         r"\['item', 'rater', 'label'\]"):
        Ratings.from_long(long, item="itm")
    wide = long.pivot(index="item", columns="rater", values="label")
    with pytest.raises(ValueError, match="and 154 more.*items x raters table is a matrix"):
        Ratings.from_long(wide)


def test_wide_frame_with_column_names_of_mixed_types_is_a_value_error():
    # scikit-learn's TypeError came through as it was
    wide = pd.DataFrame([[0, 1], [1, 1]], columns=["a", 1])
    with pytest.raises(ValueError, match="Feature names are only supported if all"):
        DawidSkene().fit(wide)
    model = DawidSkene().fit(wide.set_axis(["a", "b"], axis=1))
    with pytest.raises(ValueError, match="Feature names are only supported if all"):
        model.predict(wide)


@pytest.mark.parametrize(
    "columns, match",
    [
        (["item", "rater", "label", "task", "worker"], "both long-form conventions"),
        (["item", "rater", "answer"], r"\['item', 'rater'\]"),
        (["task", "annotator", "label"], r"\['label', 'task'\]"),
        (["question", "worker", "label"], r"\['label', 'worker'\]"),
    ],
)
def test_ambiguous_frames_raise_how_to_pass_them(columns, match):
    df = pd.DataFrame({c: [0, 1, 1] for c in columns})
    with pytest.raises(ValueError, match=match) as error:
        DawidSkene().fit(df)
    assert "Ratings.from_long(df, item=..., rater=..., label=...)" in str(error.value)


def test_long_frame_with_other_names_is_refused_not_misread():
    # The silent case: an all-integer long frame whose columns are
    # not named by a convention has ~one "class" per item id.
    data = load_web()
    df = data.ratings.to_long().rename(
        columns={"item": "question", "rater": "annotator", "label": "answer"})
    with pytest.raises(ValueError, match="distinct labels .*long-form table of ids"):
        DawidSkene().fit(df)
    # with string ids it cannot be a matrix of one scale either
    df = with_ids(data.ratings.to_long(), "str").rename(columns={"item": "q", "rater": "w"})
    with pytest.raises(ValueError, match=r"Ratings.from_long\(df"):
        DawidSkene().fit(df.rename(columns={"label": "answer"}))


def test_extra_columns_of_a_long_frame_are_ignored():
    df = load_bluebirds().ratings.to_long()
    extra = df.assign(time=pd.Timestamp("2020-01-01"), comment="x")
    np.testing.assert_array_equal(DawidSkene().fit(extra).confusion_,
                                  DawidSkene().fit(df).confusion_)


# -- missing values: every marker in every dtype ---------------------------------

VALUES = {
    "object": [0, 1, 1, 0, 1, 1],
    "string": ["no", "yes", "yes", "no", "yes", "yes"],
    "str": ["no", "yes", "yes", "no", "yes", "yes"],
    "category": ["no", "yes", "yes", "no", "yes", "yes"],
    "Int64": [0, 1, 1, 0, 1, 1],
    "Float64": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
    "boolean": [False, True, True, False, True, True],
    "float64": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
}
MARKERS = {"None": None, "NaN": np.nan, "NA": pd.NA, "NaT": pd.NaT}
# pandas itself refuses these (TypeError when building the column):
UNREPRESENTABLE = {("Int64", "NaT"), ("Float64", "NaT"), ("boolean", "NaT"),
                   ("float64", "NA"), ("float64", "NaT")}
CASES = [(d, m) for d in VALUES for m in MARKERS if (d, m) not in UNREPRESENTABLE]


def column(dtype, marker, at):
    values = list(VALUES[dtype])
    values[at] = MARKERS[marker]
    return pd.Series(values, dtype=dtype)


@pytest.mark.parametrize("dtype, marker", CASES)
def test_missing_marker_means_not_rated_in_long_form(dtype, marker):
    items = [0, 0, 1, 1, 2, 2]
    raters = ["a", "b", "a", "b", "a", "b"]
    df = pd.DataFrame({"item": items, "rater": raters, "label": column(dtype, marker, 3)})
    before = df.copy()
    model = MajorityVote().fit(df)
    keep = [0, 1, 2, 4, 5]
    reference = MajorityVote().fit(Ratings(
        np.array(items)[keep], np.array(raters)[keep], np.array(VALUES[dtype], dtype=object)[keep]))
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    np.testing.assert_array_equal(model.predict_proba(df).to_numpy(),
                                  reference.predict_proba(Ratings.from_long(df)))
    pd.testing.assert_frame_equal(df, before)


@pytest.mark.parametrize("dtype, marker", CASES)
def test_missing_marker_means_not_rated_in_a_wide_frame(dtype, marker):
    df = pd.DataFrame({"r1": column(dtype, marker, 1), "r2": column(dtype, "None", 4)})
    before = df.copy()
    model = MajorityVote().fit(df)
    matrix = np.array([VALUES[dtype], VALUES[dtype]], dtype=object).T
    matrix[1, 0] = matrix[4, 1] = None
    reference = MajorityVote().fit(matrix)
    np.testing.assert_array_equal(model.classes_, reference.classes_)
    np.testing.assert_array_equal(model.predict_proba(df), reference.predict_proba(matrix))
    pd.testing.assert_frame_equal(df, before)


def test_object_array_with_pandas_markers():
    X = np.array([["a", pd.NA], [pd.NaT, "b"], ["a", None]], dtype=object)
    model = MajorityVote().fit(X)
    assert model.classes_.tolist() == ["a", "b"]
    np.testing.assert_array_equal(model.predict_proba(X), [[1, 0], [0, 1], [1, 0]])


def test_categories_name_the_scale():
    df = pd.DataFrame({"item": [0, 0, 1], "rater": [0, 1, 0],
                       "label": pd.Categorical([1, 2, 2], categories=[1, 2, 3, 4])})
    assert MajorityVote().fit(df).classes_.tolist() == [1, 2, 3, 4]
    assert MajorityVote(classes=[1, 2, 3]).fit(df).classes_.tolist() == [1, 2, 3]
    wide = pd.DataFrame({"r1": pd.Categorical(["x", "y"], categories=["x", "y", "z"]),
                         "r2": pd.Categorical(["x", None], categories=["x", "w"])})
    assert MajorityVote().fit(wide).classes_.tolist() == ["w", "x", "y", "z"]


def test_long_frame_keeps_items_whose_every_rating_is_missing():
    df = pd.DataFrame({"item": ["a", "a", "b"], "rater": [1, 2, 1],
                       "label": pd.array([1, 0, None], dtype="Int64")})
    proba = MajorityVote().fit(df).predict_proba(df)
    assert proba.index.tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="ids must not be missing"):
        MajorityVote().fit(df.assign(item=["a", None, "b"]))


def test_nothing_the_user_passed_is_modified():
    df = with_ids(load_bluebirds().ratings.to_long(), "str")
    df["label"] = df["label"].astype("Int64")
    df.loc[df.index[:5], "label"] = pd.NA
    before = df.copy()
    wide = df.pivot(index="item", columns="rater", values="label")
    wide_before = wide.copy()
    for X, original in ((df, before), (wide, wide_before)):
        model = DawidSkene().fit(X)
        model.predict(X), model.predict_proba(X), model.score_samples(X)
        model.sample(X, random_state=0)
        pd.testing.assert_frame_equal(X, original)


# -- label rules --------------------------------------------------------------------

def test_bug4_nan_in_classes_is_named():
    X = np.array([[0, 1], [1, 1]])
    for missing in (np.nan, None):
        with pytest.raises(ValueError, match="classes contains a missing value"):
            DawidSkene(classes=[0, 1, missing]).fit(X)


def test_unsorted_classes_are_refused_where_their_order_means_something():
    # classes_ is sorted whatever the order of classes=; class_prior is in
    # the order of classes_, and IRT3PL's positive class is classes_[1].
    # DawidSkene(classes=["pos", "neg"], class_prior=[0.9, 0.1]) gave "neg"
    # the prior 0.9, silently; IRT3PL(classes=[1, 0]) kept 1 positive.
    from skcrowd import GLAD, IRT3PL, MACE

    X = np.array([["pos", "neg", "pos"], ["neg", "neg", None], ["pos", "pos", "pos"]],
                 dtype=object)
    for Model in (DawidSkene, GLAD, MACE):
        with pytest.raises(ValueError, match=r"classes=\['pos', 'neg'\] is not sorted.*"
                                             r"class_prior"):
            Model(classes=["pos", "neg"], class_prior=[0.9, 0.1]).fit(X)
        model = Model(classes=["neg", "pos"], class_prior=[0.1, 0.9]).fit(X)
        assert model.classes_.tolist() == ["neg", "pos"]
        # without a per-class parameter the order changes nothing: accepted
        assert Model(classes=["pos", "neg"]).fit(X).classes_.tolist() == ["neg", "pos"]
    with pytest.raises(ValueError, match=r"classes=\[1, 0\] is not sorted.*positive"):
        IRT3PL(classes=[1, 0]).fit(np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1]]))
    from skcrowd import OrdinalMixture

    scale = np.array([[1, 2, 3], [3, 3, 2], [1, 1, 2]])
    with pytest.raises(ValueError, match=r"is not sorted.*spam_distribution"):
        OrdinalMixture(classes=[3, 2, 1], spam_distribution=[0.6, 0.3, 0.1]).fit(scale)


def test_per_class_parameters_given_as_a_series_are_aligned_by_class_label():
    # class_prior=df["label"].value_counts(normalize=True) is ordered by
    # count, not by label: taken by position, the common class's share went
    # to the rare class, silently (likewise OrdinalMixture's spam_distribution).
    from skcrowd import GLAD, MACE, OrdinalMixture

    X = np.array([["pos", "neg", "pos"], ["neg", "neg", None], ["pos", "pos", "pos"],
                  ["pos", "pos", "neg"]], dtype=object)
    by_count = pd.Series({"pos": 0.8, "neg": 0.2})  # value_counts order
    for Model in (DawidSkene, GLAD, MACE):
        a = Model(class_prior=by_count, random_state=0).fit(X)
        b = Model(class_prior=[0.2, 0.8], random_state=0).fit(X)  # classes_ = ['neg', 'pos']
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
        np.testing.assert_array_equal(a.class_prior_, b.class_prior_)
        # unsorted classes= no longer matters: the Series names the classes
        assert Model(classes=["pos", "neg"], class_prior=by_count).fit(X).classes_.tolist() \
            == ["neg", "pos"]
        with pytest.raises(ValueError, match="class_prior is a Series indexed by class "
                                             "label, but class 'neg' is not in its index"):
            Model(class_prior=pd.Series({"pos": 1.0, "no": 0.0})).fit(X)
    scale = np.array([[1, 2, 3], [3, 3, 2], [1, 1, 2], [2, 2, 2]])
    params = dict(n_init=1, max_iter=10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OrdinalMixture(spam_distribution=pd.Series({3: 0.6, 1: 0.3, 2: 0.1}),
                           **params).fit(scale)
        b = OrdinalMixture(spam_distribution=[0.3, 0.1, 0.6], **params).fit(scale)
    np.testing.assert_array_equal(a.predict_proba(scale), b.predict_proba(scale))
    np.testing.assert_array_equal(a.sample(scale, random_state=0),
                                  b.sample(scale, random_state=0))


def test_classes_must_be_one_dimensional():
    # [[0, 1], [2, 3]] was flattened into the scale 0..3, silently
    X = np.array([[0, 1], [2, 3], [1, 1]])
    for classes in ([[0, 1], [2, 3]], np.array([[0, 1, 2, 3]])):
        with pytest.raises(ValueError, match="classes must be a 1-D list.*of shape"):
            DawidSkene(classes=classes).fit(X)
    assert DawidSkene(classes=(0, 1, 2, 3, 4)).fit(X).classes_.tolist() == [0, 1, 2, 3, 4]


def test_inf_is_named_where_it_is():
    long = pd.DataFrame({"item": [0, 0, 1], "rater": [0, 1, 0], "label": [0.0, 1.0, np.inf]})
    with pytest.raises(ValueError, match="found inf among the ratings"):
        DawidSkene().fit(long)
    with pytest.raises(ValueError, match="classes: .*found inf among them"):
        DawidSkene(classes=[0, 1, np.inf]).fit(long.iloc[:2])


def test_bug6_datetime_labels_are_rejected_in_every_form():
    days = np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]")
    forms = [
        np.array([[days[0], days[1]], [days[1], None]], dtype=object),
        np.array([[days[0], days[1]], [days[1], days[0]]]),
        pd.DataFrame({"item": [0, 1], "rater": [0, 0], "label": pd.to_datetime(days)}),
        pd.DataFrame({"r1": pd.to_datetime(days), "r2": pd.to_datetime(days)}),
        pd.DataFrame({"r1": list(pd.to_datetime(days)), "r2": [1, 2]}),
    ]
    for X in forms:
        with pytest.raises(ValueError, match="Labels must be numbers, booleans or strings"):
            MajorityVote().fit(X)
    with pytest.raises(ValueError, match="numbers, booleans or strings"):
        Ratings([0, 1], [0, 0], days)
    with pytest.raises(ValueError, match="numbers, booleans or strings"):
        Ratings.from_long({"item": [0, 1], "rater": [0, 0], "label": days})


def test_groups_series_is_aligned_by_item_id():
    from skcrowd.datasets import make_ordinal

    long = with_ids(make_ordinal(n_items=60, n_raters=6, random_state=0).ratings.to_long(), "str")
    R = Ratings.from_long(long)
    in_order = np.arange(len(R.item_ids)) % 3
    shuffled = pd.Series(in_order, index=R.item_ids).sample(frac=1, random_state=0)
    params = dict(difficulty="group", n_init=1, max_iter=15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OrdinalMixture(**params).fit(long, groups=shuffled)
        b = OrdinalMixture(**params).fit(R, groups=in_order)
    np.testing.assert_array_equal(a.group_difficulty_, b.group_difficulty_)
    np.testing.assert_array_equal(a.predict(long, groups=shuffled).to_numpy(),
                                  b.predict(R, groups=in_order))
    with pytest.raises(ValueError, match="is not in its index"):
        OrdinalMixture(**params).fit(long, groups=shuffled.iloc[1:])



def test_a_column_of_the_long_table_is_not_taken_for_per_item_values():
    # fit(long, groups=long["query"]) passes one group per *rating*, indexed
    # by the table's rows.  With integer item ids 0..39 inside the row labels
    # 0..199, aligning "by item id" read item k's group from row k (a rating
    # of item k // 5): wrong groups, silently.
    from skcrowd.datasets import make_ordinal

    long = make_ordinal(n_items=40, n_raters=5, random_state=0).ratings.to_long()
    long["query"] = long["item"] % 4
    params = dict(difficulty="group", n_init=1, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="groups is a column of the long table"):
            OrdinalMixture(**params).fit(long, groups=long["query"])
        with pytest.raises(ValueError, match="y is a column of the long table"):
            DawidSkene().fit(long, long["label"])
        per_item = long.groupby("item")["query"].first()
        model = OrdinalMixture(**params).fit(long, groups=per_item)
        with pytest.raises(ValueError, match="groups is a column of the long table"):
            model.predict(long, groups=long["query"])
        assert model.predict(long, groups=per_item).shape == (40,)


def test_a_column_of_a_long_table_with_one_rating_per_item_is_not_read_by_id():
    # One rating per item: the column has as many rows as there are items,
    # and the length check let it through.  With integer item ids that are
    # also the row labels (in another order), "aligned by item id" read item
    # k's gold (group) from row k, another item's rating, silently.
    rng = np.random.default_rng(0)
    n = 30
    long = pd.DataFrame({"item": rng.permutation(n), "rater": rng.integers(0, 3, n),
                         "label": rng.integers(0, 3, n)})
    long["query"] = long["item"] % 3
    with pytest.raises(ValueError, match="y is a column of the long table"):
        DawidSkene().fit(long, long["label"])
    with pytest.raises(ValueError, match="y is a column of the long table"):
        DawidSkene().partial_fit(long, long["label"])
    params = dict(difficulty="group", n_init=1, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="groups is a column of the long table"):
            OrdinalMixture(**params).fit(long, groups=long["query"])
        # per-item Series are read by id, even with the table's very index
        gold = long.groupby("item")["label"].first()
        by_id = pd.Series(gold.to_numpy(), index=pd.RangeIndex(n), name="label")
        assert by_id.index.equals(long.index)
        for y in (gold, by_id):
            data = DawidSkene()._encode(long, reset=True, y=y)
            assert np.array_equal(data.gold, gold.to_numpy())
        OrdinalMixture(**params).fit(long, groups=long.groupby("item")["query"].first())
        # a column that is per item in either reading is harmless: accepted
        ordered = long.sort_values("item").reset_index(drop=True)
        data = DawidSkene()._encode(ordered, reset=True, y=ordered["label"])
        assert np.array_equal(data.gold, gold.to_numpy())
        constant = long.assign(g=1)
        OrdinalMixture(**params).fit(constant, groups=constant["g"])


def test_groups_series_with_a_matrix_is_read_in_row_order():
    # A matrix's items are its rows, without ids; a groups Series
    # (df["query"] of the table the matrix came from) was keyed by its index
    # as if it were row numbers: after reordering the rows, items got other
    # items' groups, silently (another group_difficulty_).
    from skcrowd.datasets import make_ordinal

    X = make_ordinal(n_items=60, n_raters=6, random_state=0).ratings.to_dense()
    groups = pd.Series(np.arange(60) % 4)
    order = np.random.default_rng(0).permutation(60)
    params = dict(difficulty="group", n_init=1, max_iter=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OrdinalMixture(**params).fit(X[order], groups=groups[order])
        b = OrdinalMixture(**params).fit(X[order], groups=groups.to_numpy()[order])
        np.testing.assert_array_equal(a.group_difficulty_, b.group_difficulty_)
        np.testing.assert_array_equal(a.predict(X[order], groups=groups[order]),
                                      b.predict(X[order], groups=groups.to_numpy()[order]))


def test_pandas_stays_optional():
    import subprocess
    import sys

    code = """
import sys
sys.modules["pandas"] = None  # as if pandas were not installed
import numpy as np
import skcrowd
from skcrowd import DawidSkene, Ratings
X = np.array([[0, 1, np.nan], [1, 1, 0], [0, 0, 0]])
model = DawidSkene().fit(X)
assert model.predict(X).shape == (3,)
R = Ratings([0, 0, 1], [0, 1, 0], [1, 0, 1])
assert DawidSkene().fit(R).predict_proba(R).shape == (2, 2)
try:
    R.to_long()
except ImportError as error:
    assert "skcrowd[pandas]" in str(error), error
else:
    raise AssertionError("to_long without pandas")
try:
    model.rater_table()
except ImportError as error:
    assert "skcrowd[pandas]" in str(error), error
else:
    raise AssertionError("rater_table without pandas")
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=600, cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("form", ["long, numeric ids", "long, string ids", "wide"])
@pytest.mark.parametrize("dtype, classes", [("Int64", [0, 1]), ("boolean", [False, True])])
def test_nullable_integer_labels_keep_their_type_with_missing_values(form, dtype, classes):
    """An Int64 (or boolean) label column with a missing value gave float
    classes [0.0, 1.0] (columns "0.0", "1.0"; predict 0.0 / 1.0), the same
    column without one int classes: the labels keep the column's type."""
    pd = pytest.importorskip("pandas")
    values = pd.array([classes[0], classes[1], classes[1], None, classes[0], classes[0]],
                      dtype=dtype)
    if form == "wide":
        X = pd.DataFrame({"a": values[:3], "b": values[3:]})
    else:
        X = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["a", "b"] * 3, "label": values})
        if form == "long, string ids":
            X["item"] = X["item"].astype(str)
    model = MajorityVote().fit(X)
    assert model.classes_.tolist() == classes
    assert model.classes_.dtype == np.asarray(classes).dtype
    assert np.asarray(model.predict(X)).dtype == np.asarray(classes).dtype
    proba = model.predict_proba(X)
    if form != "wide":  # a wide frame's results are arrays
        assert list(proba.columns) == classes  # the classes, not "0.0"


def test_a_wide_table_whose_index_repeats_an_item_id_is_refused():
    # pd.concat of two wide tables without ignore_index: two rows named 'x'
    # were fitted as two items, and item_table / predict_proba gave two
    # results (different labels) under the one id
    first = pd.DataFrame({"r1": [0, 1, 1], "r2": [0, 1, 0]}, index=["x", "y", "z"])
    second = pd.DataFrame({"r1": [1, 0], "r2": [1, 0]}, index=["x", "w"])
    table = pd.concat([first, second])
    with pytest.raises(ValueError, match="repeats the item id 'x'.*ignore_index=True"):
        DawidSkene().fit(table)
    model = DawidSkene().fit(pd.concat([first, second], ignore_index=True))
    with pytest.raises(ValueError, match="repeats the item id"):
        model.predict(table.set_axis([0, 1, 2, 0, 4]))
    with pytest.raises(ValueError, match="item_ids contains duplicates: 'x'"):
        Ratings.from_matrix(np.array([[0, 1], [1, 1]]), item_ids=["x", "x"])
    with pytest.raises(ValueError, match="rater_ids contains duplicates: 7"):
        Ratings.from_matrix(np.array([[0, 1], [1, 1]]), rater_ids=[7, 7])
