"""skcrowd.metrics: MSE, correlation and grouped NDCG against references."""

import itertools

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from skcrowd.metrics import correlation, gold_accuracy, mean_squared_error, ndcg, ordinal_scores


@pytest.fixture(scope="module")
def graded():
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 4, size=60).astype(float)
    pred = truth + rng.normal(0, 0.8, size=60)
    groups = np.repeat(np.arange(6), 10)
    return truth, pred, groups


def test_mse_and_correlation_ignore_unknown_truth(graded):
    truth, pred, _ = graded
    with_nan = truth.copy()
    with_nan[::7] = np.nan
    known = ~np.isnan(with_nan)
    assert mean_squared_error(with_nan, pred) == pytest.approx(
        np.mean((truth[known] - pred[known]) ** 2))
    assert correlation(with_nan, pred) == pytest.approx(
        np.corrcoef(truth[known], pred[known])[0, 1])


@pytest.mark.parametrize("metric", [mean_squared_error, correlation])
@pytest.mark.parametrize("y_true, y_pred", [(["a", "b"], [1.0, 2.0]),
                                            ([1.0, 2.0], ["a", None])])
def test_graded_metrics_of_class_labels_name_the_argument(metric, y_true, y_pred):
    # numpy's "could not convert string to float: 'a'" named neither
    name = "y_true" if isinstance(y_true[0], str) else "y_pred"
    with pytest.raises(ValueError, match=f"{name} must be numbers.*gold_accuracy"):
        metric(y_true, y_pred)


@pytest.mark.parametrize("metric", [mean_squared_error, correlation])
@pytest.mark.parametrize("missing", [None, "pd.NA", "pd.NaT", "Int64"])
def test_graded_metrics_skip_a_missing_truth_in_an_object_array(metric, missing):
    # an item without gold is skipped whatever marks it missing; None, pd.NA
    # and pd.NaT in an object array (a nullable Int64 column with a gap) were
    # numpy's "float() argument must be ... not 'NAType'", then "must be numbers"
    pd = pytest.importorskip("pandas")
    y_pred = np.array([1.0, 2.0, 2.5, 2.2])
    expected = metric(np.array([1.0, np.nan, 3.0, 2.0]), y_pred)
    if missing == "Int64":
        y_true = pd.Series([1, pd.NA, 3, 2], dtype="Int64")
    else:
        gap = {"pd.NA": pd.NA, "pd.NaT": pd.NaT}.get(missing, missing)
        y_true = np.array([1, gap, 3, 2], dtype=object)
    assert metric(y_true, y_pred) == expected


def test_ndcg_matches_sklearn_without_ties(graded):
    truth, pred, groups = graded
    per_group = [
        ndcg_score([2 ** truth[groups == g] - 1], [pred[groups == g]])
        for g in np.unique(groups)
    ]
    assert ndcg(truth, pred, groups) == pytest.approx(np.mean(per_group), rel=1e-12)
    # linear gain is sklearn's default relevance-as-gain
    per_group = [ndcg_score([truth[groups == g]], [pred[groups == g]]) for g in np.unique(groups)]
    assert ndcg(truth, pred, groups, gain="linear") == pytest.approx(np.mean(per_group))
    at3 = [ndcg_score([2 ** truth[groups == g] - 1], [pred[groups == g]], k=3)
           for g in np.unique(groups)]
    assert ndcg(truth, pred, groups, k=3) == pytest.approx(np.mean(at3))


def test_ndcg_ties_are_the_average_over_orderings():
    truth = np.array([3.0, 1.0, 2.0, 1.0, 3.0])
    pred = np.array([1.0, 1.0, 2.0, 0.0, 1.0])  # three items tied
    gains = 2 ** truth - 1
    discounts = 1 / np.log2(np.arange(2, 7))
    ideal = np.sort(gains)[::-1] @ discounts
    values = []
    # every ordering of the tied items, equally likely
    tied = [0, 1, 4]
    for perm in itertools.permutations(tied):
        order = [2, *perm, 3]
        values.append(gains[order] @ discounts / ideal)
    assert ndcg(truth, pred, np.zeros(5)) == pytest.approx(np.mean(values), rel=1e-12)


def test_ndcg_perfect_and_reversed():
    truth = np.array([1.0, 2.0, 3.0, 1.0, 3.0, 2.0])
    groups = np.array([0, 0, 0, 1, 1, 1])
    assert ndcg(truth, truth, groups) == pytest.approx(1.0)
    assert ndcg(truth, -truth, groups) < 1.0


def test_ndcg_skips_groups_without_gain_and_unknown_items():
    truth = np.array([0.0, 0.0, np.nan, 2.0, 1.0, np.nan])
    pred = np.array([0.5, 0.1, 9.0, 0.2, 0.9, 9.0])
    groups = np.array(["a", "a", "a", "b", "b", "b"])
    # group a has no gain (skipped); in b the unknown item is left out
    gains = np.array([3.0, 1.0])
    ranked = np.array([1.0, 3.0])  # pred ranks item 4 (gain 1) above item 3
    d = 1 / np.log2([2, 3])
    assert ndcg(truth, pred, groups) == pytest.approx((ranked @ d) / (gains @ d))


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "2"])
def test_ndcg_k_must_be_a_positive_integer(graded, k):
    # k=-1 silently dropped the last rank, k=1.5 raised TypeError, k=0 blamed the gains
    truth, pred, groups = graded
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ndcg(truth, pred, groups, k=k)
    assert ndcg(truth, pred, groups, k=np.int64(2)) == ndcg(truth, pred, groups, k=2)


def test_ndcg_exponential_gain_overflow_is_an_error_not_nan():
    with pytest.raises(ValueError, match="overflows"):
        ndcg([2000, 1, 0], [0.1, 0.2, 0.9], [0, 0, 0])
    assert ndcg([2000, 1, 0], [0.9, 0.2, 0.1], [0, 0, 0], gain="linear") == 1.0


def test_ordinal_scores_and_errors(graded):
    truth, pred, groups = graded
    scores = ordinal_scores(truth, pred, groups)
    assert set(scores) == {"mse", "correlation", "ndcg"}
    assert set(ordinal_scores(truth, pred)) == {"mse", "correlation"}
    with pytest.raises(ValueError, match="different lengths"):
        mean_squared_error(truth, pred[:-1])
    with pytest.raises(ValueError, match="groups"):
        ndcg(truth, pred, groups[:-1])
    with pytest.raises(ValueError, match="gain"):
        ndcg(truth, pred, groups, gain="cubic")
    with pytest.raises(ValueError, match="NaN"):
        correlation(truth, np.full_like(pred, np.nan))
    with pytest.raises(ValueError, match="no known"):
        correlation(np.full_like(truth, np.nan), pred)


def test_truth_metrics_align_two_series_by_item_id():
    # Series were compared by position: a gold Series in another item
    # order than predict's (sorted by id) paired each item's gold with
    # another item's prediction.
    pd = pytest.importorskip("pandas")
    gold = pd.Series({"b": 1.0, "a": 0.0, "c": 2.0, "d": np.nan})
    pred = pd.Series({"a": 0.0, "b": 1.0, "c": 2.0, "d": 5.0})
    assert gold_accuracy(gold, pred) == 1.0
    assert mean_squared_error(gold, pred) == 0.0
    assert correlation(gold, pred) == pytest.approx(1.0)
    groups = pd.Series({"c": "q", "a": "q", "b": "q", "d": "q"})
    assert ndcg(gold, pred, groups) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="item 'c' is not in its index"):
        mean_squared_error(gold, pred.drop("c"))
    # arrays: in order, as before
    assert mean_squared_error(gold.to_numpy(), pred.to_numpy()) == pytest.approx(2 / 3)


def test_ndcg_groups_get_the_estimators_group_errors():
    # NaN (and pd.NA) was ranked as a group of its own, silently; None or
    # groups of two types were a TypeError from np.unique ("'<' not supported
    # between instances of 'NoneType' and 'int'"); a 2-D groups was raveled
    # and blamed for its number of cells.
    pd = pytest.importorskip("pandas")
    truth = np.array([3.0, 1.0, 2.0, np.nan, 1.0, 3.0])
    pred = np.array([2.5, 1.0, 2.0, 0.0, 2.2, 1.1])
    groups = np.array([0, 0, 0, 1, 1, 1], dtype=float)
    reference = ndcg(truth, pred, groups)
    for missing in (np.nan, None, pd.NA):
        bad = groups.astype(object)
        bad[4] = missing
        with pytest.raises(ValueError, match="groups must not be missing .* item 4 has"):
            ndcg(truth, pred, bad)
        named = pd.Series(bad, index=list("abcdef"))
        with pytest.raises(ValueError, match="item 'e' has no group"):
            ndcg(pd.Series(truth, index=list("abcdef")), pred, named)
    # the group of an item without gold is never used: it may be missing
    unused = groups.copy()
    unused[3] = np.nan
    assert ndcg(truth, pred, unused) == reference
    mixed = groups.astype(object)
    mixed[0] = "q"
    with pytest.raises(ValueError, match="groups must all be of one comparable type"):
        ndcg(truth, pred, mixed)
    with pytest.raises(ValueError, match=r"one entry per item: y_true has 6 items, "
                                         r"groups has shape \(6, 2\)"):
        ndcg(truth, pred, np.c_[groups, groups])
    with pytest.raises(ValueError, match=r"groups has shape \(5,\)"):
        ndcg(truth, pred, groups[:-1])


def test_truth_metrics_refuse_what_they_would_misread():
    # A 2-D y_pred (or y_true) was raveled and compared cell by cell with
    # the items; a missing prediction was "Labels must be finite; found inf
    # among the ratings" (NaN) or a TypeError (None); gold as numbers
    # against predictions as strings scored 0, silently.
    pd = pytest.importorskip("pandas")
    gold = [0, 1, 1, 0]
    with pytest.raises(ValueError, match=r"y_pred must be one-dimensional .* shape \(2, 2\)"):
        gold_accuracy(gold, np.array([[0, 1], [1, 0]]))
    with pytest.raises(ValueError, match=r"y_true must be one-dimensional .* shape \(2, 2\)"):
        mean_squared_error(np.array([[0.0, 1.0], [1.0, 0.0]]), [0.0, 1.0, 1.0, 0.0])
    # a column vector is one value per item, as in scikit-learn's metrics
    assert gold_accuracy(gold, np.array([[0], [1], [1], [1]])) == 0.75
    for missing in (np.nan, None):
        with pytest.raises(ValueError, match="y_pred is missing .* for item 2, whose gold"):
            gold_accuracy(gold, [0, 1, missing, 0])
        series = pd.Series(gold, index=list("abcd"))
        with pytest.raises(ValueError, match="for item 'c', whose gold"):
            gold_accuracy(series, [0, 1, missing, 0])
        # no gold, no comparison: a missing prediction there is fine
        assert gold_accuracy([0, 1, None, 0], [0, 1, missing, 0]) == 1.0
    with pytest.raises(ValueError, match="different types"):
        gold_accuracy(gold, ["0", "1", "1", "0"])
    assert gold_accuracy(gold, [False, True, True, False]) == 1.0


def test_correlation_of_a_constant_is_an_error_not_nan_or_zero():
    # Pearson's r is 0/0 when either side is constant over the known items:
    # it was NaN for a constant 1.0 and 0.0 for a constant 0.1 (whose mean
    # is not exact), silently; both are now the ValueError that the
    # agreement coefficients give when undefined.
    truth = np.array([1.0, 2.0, np.nan, 3.0])
    for constant in (1.0, 0.1, -7.3):
        flat = np.full(4, constant)
        with pytest.raises(ValueError, match="undefined: y_pred is constant"):
            correlation(truth, flat)
        with pytest.raises(ValueError, match="undefined: y_true is constant"):
            correlation(flat, [1.0, 2.0, 5.0, 3.0])
    # varying only through an item without gold: constant where it counts
    with pytest.raises(ValueError, match="y_pred is constant"):
        correlation(truth, [2.5, 2.5, 9.0, 2.5])
    pred = [1.0, 2.5, 9.0, 2.0]
    assert correlation(truth, pred) == pytest.approx(
        np.corrcoef([1.0, 2.0, 3.0], [1.0, 2.5, 2.0])[0, 1])
