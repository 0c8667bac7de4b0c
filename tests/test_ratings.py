"""The data layer: Ratings, matrix conversion, label encoding, indexing."""

import numpy as np
import pytest
import scipy.sparse as sp

from skcrowd import DawidSkene, Ratings
from skcrowd._ratings import _integer_offsets, _unique_labels, encode_labels


def test_long_form_keeps_repeats_and_sorts_by_item():
    R = Ratings(item=["b", "a", "b", "b"], rater=[1, 2, 1, 3], label=[0, 1, 1, 0])
    assert R.shape == (2, 3)
    assert len(R) == 2 and R.n_ratings == 4
    assert R.item.tolist() == ["a", "b", "b", "b"]
    # b's ratings keep their input order, the repeat by rater 1 included
    assert R.rater[1:].tolist() == [1, 1, 3]
    assert R.label[1:].tolist() == [0, 1, 0]


def test_columns_of_different_lengths_are_rejected():
    with pytest.raises(ValueError, match="same length"):
        Ratings(item=[1, 2, 3], rater=[1, 2], label=[0, 1, 1])


def test_missing_label_in_long_form_is_rejected():
    with pytest.raises(ValueError, match="missing label"):
        Ratings(item=[1, 2], rater=[1, 2], label=[0.0, np.nan])


def test_item_ids_keep_unrated_items_in_given_order():
    R = Ratings([5, 5], [0, 1], [1, 0], item_ids=[9, 5, 7], rater_ids=[0, 1, 2])
    assert R.shape == (3, 3)
    assert np.diff(R._item_ptr).tolist() == [0, 2, 0]
    with pytest.raises(ValueError, match="not among"):
        Ratings([4], [0], [1], item_ids=[5])


def test_dense_round_trip_with_strings_and_missing():
    X = np.array([["cat", None, "dog"], [None, "dog", "dog"]], dtype=object)
    R = Ratings.from_matrix(X)
    assert R.n_ratings == 4
    assert R.label.tolist() == ["cat", "dog", "dog", "dog"]
    assert (R.to_dense() == X).all()


def test_sparse_explicit_zeros_are_ratings():
    X = sp.csr_matrix(
        (np.array([0, 1, 0]), (np.array([0, 0, 1]), np.array([0, 2, 1]))), shape=(3, 3)
    )
    assert X.nnz == 3
    R = Ratings.from_matrix(X)
    assert R.n_ratings == 3
    assert R.label.tolist() == [0, 1, 0]
    assert np.diff(R._item_ptr).tolist() == [2, 1, 0]


def test_row_indexing_selects_items_in_the_order_asked():
    R = Ratings([0, 0, 1, 2, 2, 2], [0, 1, 1, 0, 1, 2], [1, 1, 0, 2, 2, 1])
    sub = R[np.array([2, 0, 2])]
    assert sub.item_ids.tolist() == [2, 0, 2]
    assert sub.label.tolist() == [2, 2, 1, 1, 1, 2, 2, 1]
    assert sub.shape == (3, 3)  # every rater kept
    assert R[np.array([False, True, False])].label.tolist() == [0]
    assert R[1:].shape == (2, 3)
    # scikit-learn's _safe_indexing asks for R[key, ...]
    assert R[[1], ...].label.tolist() == [0]


def test_cv_slicing_keeps_explicit_sparse_zeros():
    from sklearn.utils import _safe_indexing

    rows = np.repeat(np.arange(6), 2)
    cols = np.tile([0, 1], 6)
    labels = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0])
    X = sp.csr_matrix((labels, (rows, cols)), shape=(6, 2))
    part = _safe_indexing(X, np.array([0, 2, 4]))
    assert part.nnz == 6  # the zeros were kept through the split
    model = DawidSkene(max_iter=5).fit(X)
    assert model.predict_proba(part).shape == (3, 2)


def test_encode_labels_names_the_unknown_value():
    assert encode_labels(np.array([3, 1]), np.array([1, 2, 3])).tolist() == [2, 0]
    with pytest.raises(ValueError, match="Label 7"):
        encode_labels(np.array([1, 7]), np.array([1, 2, 3]))


_RNG = np.random.default_rng(0)
_LABEL_ARRAYS = [
    _RNG.integers(0, 5, 1000), _RNG.integers(-3, 3, 1000).astype(np.int8),
    _RNG.integers(0, 5, 1000).astype(np.uint64), _RNG.integers(1, 6, 1000).astype(float),
    _RNG.integers(0, 5, 50).astype(np.float32), np.array([True, False, True]), np.array([3]),
    # a range wider than the dtype holds: offsets must not wrap around
    np.array([-100, 100, 0, 100], dtype=np.int8), np.array([0, 250, 3], dtype=np.uint8),
    # not on the counting path: fractions, -0.0, huge or widely spread values, strings
    np.array([0.5, 1.0]), np.array([-0.0, 1.0, 0.0]), np.array([2**60, 2**60 + 1]),
    np.array([0, 10**7]), np.array(["a", "b", "a"], dtype=object),
]


@pytest.mark.parametrize("labels", _LABEL_ARRAYS, ids=lambda v: str(v.dtype))
def test_counting_unique_and_codes_equal_numpy(labels):
    """The small-integer shortcut gives exactly np.unique and searchsorted
    (values, dtype, order), for classes of any numeric type."""
    classes = np.unique(labels)
    unique = _unique_labels(labels)
    assert unique.dtype == classes.dtype
    np.testing.assert_array_equal(unique, classes)
    # the codes found in the same passes (fit): those of searchsorted
    also, codes = _unique_labels(labels, codes=True)
    np.testing.assert_array_equal(also, classes)
    if codes is not None:
        assert codes.dtype == np.int32
        np.testing.assert_array_equal(codes, np.searchsorted(classes, labels))
    if classes.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(unique), np.signbit(classes))
    wider = [classes]
    if classes.dtype.kind in "iuf":
        wider += [classes.astype(float), np.append(classes, classes[-1] + 1), classes - 0.5]
    for scale in wider:
        if np.all(np.isin(labels, scale)):
            np.testing.assert_array_equal(encode_labels(labels, scale),
                                          np.searchsorted(scale, labels).astype(np.int32))
        else:
            with pytest.raises(ValueError, match="is not one of the classes"):
                encode_labels(labels, scale)


def test_counting_path_is_taken_for_small_integer_labels():
    assert _integer_offsets(np.array([4, 2, 9])) is not None
    assert _integer_offsets(np.array([1.0, 3.0])) is not None
    assert _integer_offsets(np.array([1.0, 2.5])) is None
    assert _integer_offsets(np.array([0, 10**7])) is None
    assert _unique_labels(np.array([4, 2, 9]), codes=True)[1] is not None


def test_ratings_work_with_cross_validation():
    from sklearn.model_selection import KFold, cross_val_score

    from skcrowd.datasets import make_dawid_skene

    data = make_dawid_skene(300, 10, 4, 3, random_state=0)
    scores = cross_val_score(DawidSkene(), data.ratings, cv=KFold(3))
    assert np.all(np.isfinite(scores)) and len(scores) == 3


def _object_ids():
    rng = np.random.default_rng(7)
    strings = np.array([f"w{v}" for v in rng.integers(0, 300, 2000)], dtype=object)
    numbers = rng.integers(-50, 50, 500).astype(object)
    floats = np.array([1, 2.0, 1.0, 3, True], dtype=object)  # 1 == 1.0 == True
    tuples = np.empty(4, dtype=object)
    tuples[:] = [("a", 1), ("a", 0), ("b", 0), ("a", 1)]
    return [strings, numbers, floats, tuples, np.array(["x"], dtype=object),
            np.empty(0, dtype=object)]


@pytest.mark.parametrize("pandas_loaded", [True, False])
@pytest.mark.parametrize("values", _object_ids(), ids=lambda v: type(v[0]).__name__
                         if len(v) else "empty")
def test_hashed_ids_and_labels_equal_numpy(values, pandas_loaded, monkeypatch):
    """Object ids and string labels are encoded by hashing (pandas' hash
    table when pandas is loaded, else a dict) instead of np.unique's sort of
    every value: the same sorted ids and codes, and the same positions into
    given ids."""
    from skcrowd import _ratings

    if not pandas_loaded:
        monkeypatch.setattr(_ratings, "loaded_pandas", lambda: None)
    ids, codes = np.unique(values, return_inverse=True)
    got_ids, got_codes = _ratings.unique_codes(values)
    assert got_ids.dtype == object and got_codes.dtype == np.int32
    np.testing.assert_array_equal(got_ids, ids)
    np.testing.assert_array_equal(got_ids[got_codes], ids[codes])
    np.testing.assert_array_equal(got_codes, codes)
    shuffled = ids[np.random.default_rng(0).permutation(len(ids))]
    _, positions = _ratings.unique_codes(values, shuffled)
    np.testing.assert_array_equal(shuffled[positions], ids[codes])
    if len(values) and isinstance(values[0], str):
        classes, label_codes = _ratings._unique_labels(values, codes=True)
        np.testing.assert_array_equal(classes, ids)
        np.testing.assert_array_equal(label_codes, codes)
        np.testing.assert_array_equal(encode_labels(values, ids), codes)
        first = values[0]
        with pytest.raises(ValueError, match=f"Label '{first}' is not one of the classes"):
            encode_labels(values, ids[ids != first])
        with pytest.raises(ValueError,
                           match=f"rater '{first}' is not among the given rater_ids"):
            _ratings.unique_codes(values, ids[ids != first], "rater")


@pytest.mark.parametrize("pandas_loaded", [True, False])
def test_hashed_ids_keep_numpys_errors(pandas_loaded, monkeypatch):
    from skcrowd import _ratings

    if not pandas_loaded:
        monkeypatch.setattr(_ratings, "loaded_pandas", lambda: None)
    with pytest.raises(ValueError, match="item ids must all be of one type"):
        _ratings.unique_codes(np.array(["a", 1, "b"], dtype=object))
    # unhashable ids (lists) go to np.unique, which orders lists
    lists = np.empty(3, dtype=object)
    lists[:] = [[2], [1], [2]]
    ids, codes = _ratings.unique_codes(lists)
    assert ids.tolist() == [[1], [2]] and codes.tolist() == [1, 0, 1]


def _same_ratings(a, b):
    for name in ("item_ids", "rater_ids"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.tolist() == y.tolist()
    for name in ("_item", "_rater", "_item_ptr"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.label.dtype == b.label.dtype and a.label.tolist() == b.label.tolist()


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_long_frame_ids_encoded_by_pandas_equal_the_general_path(dtype):
    """A DataFrame's string id columns are factorized by pandas itself
    (Arrow for a ``str`` column); the Ratings equal those of the same
    columns given as NumPy arrays, unrated rows' ids kept."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 500
    items = np.array([f"t{v}" for v in rng.integers(0, 80, n)], dtype=object)
    raters = np.array([f"w{v}" for v in rng.integers(0, 12, n)], dtype=object)
    labels = rng.choice(np.array(["a", "b", None], dtype=object), n)
    df = pd.DataFrame({"task": items, "worker": raters, "answer": labels}).astype(
        {"task": dtype, "worker": dtype})
    general = Ratings.from_long({"task": items, "worker": raters, "answer": labels},
                                "task", "worker", "answer")
    framed = Ratings.from_long(df, "task", "worker", "answer")
    _same_ratings(framed, general)
    assert framed.n_ratings == np.sum(labels != None)  # noqa: E711
    numbers = df.assign(answer=rng.integers(1, 4, n))
    _same_ratings(Ratings.from_long(numbers, "task", "worker", "answer"),
                  Ratings.from_long({c: np.asarray(numbers[c]) for c in numbers},
                                    "task", "worker", "answer"))


def test_long_frame_id_errors_are_the_general_paths():
    pd = pytest.importorskip("pandas")
    mixed = pd.DataFrame({"item": pd.Series(["a", 1, "b"], dtype=object),
                          "rater": ["x", "y", "x"], "label": [0, 1, 0]})
    with pytest.raises(ValueError, match="item ids must all be of one type"):
        Ratings.from_long(mixed)
    for gap in (None, np.nan):
        holed = pd.DataFrame({"item": ["a", "b", "c"], "rater": ["x", gap, "x"],
                              "label": [0, 1, 0]})
        with pytest.raises(ValueError, match="ids must not be missing"):
            Ratings.from_long(holed)
    repeated = pd.DataFrame([["a", "x", 0, 1]], columns=["item", "rater", "label", "label"])
    with pytest.raises(ValueError, match="repeated column name"):
        Ratings.from_long(repeated)
