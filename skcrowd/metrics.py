"""Metrics against gold: accuracy on the items with known labels (and a
scorer for model selection on held-out gold); for real-valued (ordinal)
truth MSE, Pearson correlation and NDCG averaged over groups (queries), as in
Lakshminarayanan & Teh (2013); and agreement between raters and the
uncertainty of a fitted model's labels (Krippendorff's alpha, Fleiss' kappa,
pairwise Cohen's kappa, posterior entropy, crowd-kit's uncertainty and
consistency).

The truth metrics take the gold values first and ignore the items whose gold
is missing (NaN, None), so a loader's ``gold`` can be passed as is.  When
the gold values are a pandas Series, the predictions (and NDCG's groups)
given as a Series are aligned to it by item id (as the Series that
``predict`` returns for long-form input are indexed); arrays are taken in
order.  The agreement metrics take the ratings in any form the estimators
accept.
"""

import numpy as np

from ._agreement import (
    cohen_kappa_matrix,
    consistency,
    fleiss_kappa,
    krippendorff_alpha,
    posterior_entropy,
    uncertainty,
)
from ._ratings import (aligned_by_id, as_label_array, check_positive_int, encode_groups,
                       input_form, is_missing, loaded_pandas, missing_any, show)

__all__ = [
    "gold_accuracy",
    "gold_accuracy_scorer",
    "mean_squared_error",
    "correlation",
    "ndcg",
    "ordinal_scores",
    "krippendorff_alpha",
    "fleiss_kappa",
    "cohen_kappa_matrix",
    "posterior_entropy",
    "uncertainty",
    "consistency",
]


def _gold_ids(y_true):
    """The item ids of ``y_true`` when it is a pandas Series, else None."""
    pd = loaded_pandas()
    return y_true.index if pd is not None and isinstance(y_true, pd.Series) else None


def _by_gold_ids(y_true, values, what):
    """``values`` (per item) aligned to ``y_true`` by item id when both are
    pandas Series (as returned for long-form input, sorted by id), else as
    given: positions would pair an item's gold with another's prediction."""
    return aligned_by_id(values, _gold_ids(y_true), what)


def _one_per_item(values, what, dtype):
    """``values`` as a 1-D array (a column vector too, as scikit-learn's
    metrics take it); another shape is a ValueError: raveled, a matrix
    (``predict_proba``'s, say) was compared cell by cell with the items."""
    values = np.asarray(values, dtype=dtype)
    if values.ndim == 2 and values.shape[1] == 1:
        return values.ravel()
    if values.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional (one value per item); got "
                         f"shape {values.shape}.")
    return values


def gold_accuracy(y_true, y_pred):
    """Share of the items with known gold whose predicted label equals it.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Gold labels (numbers or strings); missing (NaN, None, ``pd.NA``) =
        unknown, ignored.
    y_pred : array-like of shape (n_items,)
        Predicted labels, e.g. ``model.predict(X)``.

    Returns
    -------
    accuracy : float

    Examples
    --------
    >>> from skcrowd.metrics import gold_accuracy
    >>> gold_accuracy([0, 1, float("nan"), 1], [0, 0, 1, 1])
    0.6666666666666666
    """
    ids = _gold_ids(y_true)
    y_pred = _one_per_item(_by_gold_ids(y_true, y_pred, "y_pred"), "y_pred", object)
    y_true = _one_per_item(y_true, "y_true", object)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"y_true and y_pred have different lengths: {len(y_true)} and {len(y_pred)}."
        )
    known = ~missing_any(y_true)
    if not np.any(known):
        raise ValueError("y_true has no known (non-missing) label.")
    unpredicted = known & missing_any(y_pred)
    if np.any(unpredicted):
        # was "Labels must be finite; found inf" (NaN) or a TypeError (None)
        row = int(np.argmax(unpredicted))
        raise ValueError(f"y_pred is missing (NaN or None) for item "
                         f"{show(row if ids is None else ids[row])}, whose gold is known.")
    truth = as_label_array(y_true[known], "y_true")
    pred = as_label_array(y_pred[known], "y_pred")
    if (truth.dtype.kind == "O") != (pred.dtype.kind == "O"):
        # 1 never equals "1": gold read as strings (from a CSV) scored 0, silently
        raise ValueError("y_true and y_pred hold labels of different types (numbers and "
                         f"strings: {show(truth[0])} and {show(pred[0])}); give both one type.")
    return float(np.mean(truth == pred))


def gold_accuracy_scorer(estimator, X, y):
    """Scorer: :func:`gold_accuracy` of ``estimator.predict(X)`` against ``y``.

    ``score(X)`` of every skcrowd model is the held-out likelihood of the
    ratings and ignores ``y``; pass this as ``scoring=`` to
    :func:`~sklearn.model_selection.cross_val_score` or
    :class:`~sklearn.model_selection.GridSearchCV` to select on held-out
    gold instead.  Each training fold is fitted with its own gold
    (``fit(X_train, y_train)``, clamped) and the test fold's items are
    predicted from their ratings alone, so their gold is never seen.

    ``y`` is read as ``fit`` reads it: a pandas Series is paired with the
    items of ``X`` by item id (a Ratings, a long or wide DataFrame), and
    with the rows of a matrix (array, sparse) in order.

    Parameters
    ----------
    estimator : fitted skcrowd estimator
        One whose ``predict`` gives classes (not MeanRating, MedianRating or
        OrdinalMixture, whose prediction is a value on the label scale: a
        ``ValueError``).
    X : ratings of the test items, in any form ``estimator`` accepts
    y : array-like of shape (n_items,) or pandas Series
        Their gold labels; missing (NaN, None, ``pd.NA``) = unknown, ignored.

    Returns
    -------
    accuracy : float
        :func:`gold_accuracy` on the items with known gold.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import cross_val_score
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.metrics import gold_accuracy_scorer
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 0, 0], [1, 0, 1]] * 5)
    >>> y = np.array([0, 1, 0, 1] * 5)
    >>> cross_val_score(DawidSkene(), X, y, cv=2, scoring=gold_accuracy_scorer)
    array([1., 1.])
    """
    prediction = getattr(estimator, "_prediction_name", "label")
    if prediction != "label":
        # a mean on the label scale is never equal to a class: accuracy 0
        raise ValueError(
            f"gold_accuracy_scorer compares predicted classes with gold, and "
            f"{type(estimator).__name__}.predict gives a {prediction} on the label scale; "
            "score it on gold with make_scorer(skcrowd.metrics.mean_squared_error, "
            "greater_is_better=False) or skcrowd.metrics.correlation instead."
        )
    predicted = estimator.predict(X)
    pd = loaded_pandas()
    if pd is not None and isinstance(y, pd.Series):
        form = input_form(X)
        if form == "matrix":
            # a matrix's items are its rows, with no ids: y is in row order,
            # as fit reads it (its index is a fold's rows of the user's table)
            y = y.to_numpy(dtype=object)
            predicted = np.asarray(predicted)
        elif not isinstance(predicted, pd.Series):
            # y is keyed by item id, as fit reads it: pair by id, not position
            ids = X.item_ids if form == "ratings" else X.index
            predicted = pd.Series(np.asarray(predicted), index=ids)
    return gold_accuracy(y, predicted)


def _known(y_true, y_pred):
    y_pred = _one_per_item(_numbers(_by_gold_ids(y_true, y_pred, "y_pred"), "y_pred"),
                           "y_pred", np.float64)
    y_true = _one_per_item(_numbers(y_true, "y_true"), "y_true", np.float64)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"y_true and y_pred have different lengths: {len(y_true)} and {len(y_pred)}."
        )
    if np.any(np.isnan(y_pred)):
        raise ValueError("y_pred has NaN values.")
    known = ~np.isnan(y_true)
    if not np.any(known):
        raise ValueError("y_true has no known (non-NaN) value.")
    return y_true, y_pred, known


def _numbers(values, name):
    """``values`` as a float array; labels that are not numbers are a
    ValueError naming ``name`` (numpy's "could not convert string to float:
    'a'" named neither the argument nor the metric to use)."""
    values = np.asarray(values)
    if values.dtype.kind == "O":
        # a missing truth or prediction (None, pd.NA, pd.NaT in an object
        # array, as a nullable Int64 column with a gap gives) is NaN: an
        # item without it is skipped, not "not a number"
        values = np.where(is_missing(values), np.nan, values)
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be numbers (values on a graded scale); for class labels use "
            "gold_accuracy."
        ) from None


def mean_squared_error(y_true, y_pred):
    """Mean of (y_true - y_pred)² over the items with known truth.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Gold values; NaN = unknown (ignored).
    y_pred : array-like of shape (n_items,)

    Returns
    -------
    mse : float

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.metrics import mean_squared_error
    >>> mean_squared_error([1, 2, np.nan, 3], [1.5, 2, 9, 2.5])  # NaN gold is skipped
    0.16666666666666666
    """
    y_true, y_pred, known = _known(y_true, y_pred)
    return float(np.mean((y_true[known] - y_pred[known]) ** 2))


def correlation(y_true, y_pred):
    """Pearson's correlation of y_true and y_pred over the items with known
    truth.  Undefined (0/0) when either is constant there: a ``ValueError``
    naming it, as for the agreement coefficients (user guide, "Undefined
    values").

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Gold values; NaN = unknown (ignored).
    y_pred : array-like of shape (n_items,)

    Returns
    -------
    correlation : float

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.metrics import correlation
    >>> round(correlation([1, 2, 3, np.nan], [1.2, 1.9, 3.3, 0.0]), 4)
    0.982
    """
    y_true, y_pred, known = _known(y_true, y_pred)
    a = y_true[known] - y_true[known].mean()
    b = y_pred[known] - y_pred[known].mean()
    for values, what in ((y_true[known], "y_true"), (y_pred[known], "y_pred")):
        # was NaN, which went into tables of scores silently (tested on the
        # values: their mean need not be exact, a - mean not exactly 0)
        if np.all(values == values[0]):
            raise ValueError(f"Pearson's correlation is undefined: {what} is constant over "
                             "the items with known truth (its variance is 0).")
    denom = np.sqrt(np.sum(a * a) * np.sum(b * b))
    if not 0 < denom < np.inf:  # spreads below (above) float64's range squared
        raise ValueError("Pearson's correlation cannot be computed in float64: the values' "
                         "spread is too small or too large; rescale them.")
    return float(np.sum(a * b) / denom)


def _gain(values, gain):
    if gain == "exponential":
        with np.errstate(over="ignore"):
            gains = np.exp2(values) - 1.0
        if not np.all(np.isfinite(gains)):
            raise ValueError(
                f"The exponential gain 2**y - 1 overflows for y = {np.max(values):g}; "
                "use gain='linear' or code the scale with small numbers."
            )
        return gains
    if gain == "linear":
        return values
    raise ValueError(f"gain must be 'exponential' or 'linear'; got {gain!r}.")


def _dcg_expected(gains, scores, discounts):
    """DCG of the ranking by ``scores`` (descending), with tied scores
    sharing the mean discount of the ranks they occupy: the expected DCG
    over random orderings of the ties."""
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    g = gains[order]
    # runs of equal scores
    edges = np.flatnonzero(np.diff(s) != 0) + 1
    starts = np.concatenate([[0], edges])
    stops = np.concatenate([edges, [len(s)]])
    total = 0.0
    for a, b in zip(starts, stops):
        total += g[a:b].sum() * discounts[a:b].mean()
    return total


def ndcg(y_true, y_pred, groups, *, gain="exponential", k=None):
    """Normalised discounted cumulative gain, averaged over groups (queries).

    Within each group the items with known truth are ranked by ``y_pred``
    (descending); DCG = Σ_i gain(y_true_i) / log2(rank_i + 1), and NDCG is
    DCG divided by the DCG of the ideal ranking (by ``y_true``).  The gain
    is ``2**y - 1`` (``gain="exponential"``, Järvelin & Kekäläinen's
    graded-relevance gain, the one used for TREC and web search) or ``y``
    (``"linear"``); either way it depends on the coding of the scale (0/1/2
    and 1/2/3 give different NDCG).  Items with equal predictions share the
    mean discount of the ranks they occupy, i.e. the expected DCG when ties
    are broken at random, so a method that predicts many ties (majority
    vote, median) is neither favoured nor penalised by the order of the
    data.  Groups whose ideal DCG is 0 (every gain 0) are skipped.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Gold values; NaN = unknown (the item is left out of its group).
    y_pred : array-like of shape (n_items,)
    groups : array-like of shape (n_items,)
        The query of each item (not missing), one per item: not a column of
        a long table of ratings (pass ``df.groupby("item")["query"].first()``,
        not ``df["query"]``).
    gain : {"exponential", "linear"}, default="exponential"
    k : int, default=None
        Truncate at the top ``k`` ranks (NDCG@k); default all.

    Returns
    -------
    ndcg : float
        The mean over the groups with a positive ideal DCG.

    Examples
    --------
    >>> from skcrowd.metrics import ndcg
    >>> y_true = [3, 1, 2, 1, 3]
    >>> y_pred = [2.5, 1.0, 2.0, 2.2, 1.1]
    >>> round(ndcg(y_true, y_pred, groups=["q1", "q1", "q1", "q2", "q2"]), 4)
    0.8549
    """
    ids = _gold_ids(y_true)  # to name an item without a group (else its row)
    groups = np.asarray(_by_gold_ids(y_true, groups, "groups"))
    y_true, y_pred, known = _known(y_true, y_pred)
    if groups.shape != y_true.shape:
        # not raveled: a 2-D groups was counted as one entry per cell
        raise ValueError(
            f"groups must have one entry per item: y_true has {len(y_true)} items, "
            f"groups has shape {groups.shape}."
        )
    _gain(np.zeros(1), gain)
    if k is not None:
        k = check_positive_int(k, "k", "the top k ranks, or None for all")
    # as the estimators' groups: a missing group (NaN was a group of its
    # own, None a TypeError) or groups of two types is a ValueError naming
    # it; only the items with known truth are ranked, so only theirs count
    ids, codes = encode_groups(groups[known], (np.arange(len(known)) if ids is None
                                               else np.asarray(ids))[known])
    truth = y_true[known]
    pred = y_pred[known]
    values = []
    for c in range(len(ids)):
        sel = codes == c
        gains = _gain(truth[sel], gain)
        n = len(gains)
        discounts = 1.0 / np.log2(np.arange(2, n + 2))
        if k is not None:
            discounts[k:] = 0.0
        ideal = np.sort(gains)[::-1] @ discounts
        if ideal <= 0:
            continue
        values.append(_dcg_expected(gains, pred[sel], discounts) / ideal)
    if not values:
        raise ValueError("No group has a positive ideal DCG.")
    return float(np.mean(values))


def ordinal_scores(y_true, y_pred, groups=None, **ndcg_params):
    """The three metrics of Table 1 of Lakshminarayanan & Teh (2013) as a
    dict: ``mse``, ``correlation`` and (when ``groups`` is given) ``ndcg``.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_items,)
        Gold values (NaN = unknown) and estimates.
    groups : array-like of shape (n_items,), default=None
        The query of each item; NDCG is computed only when given.
    **ndcg_params
        ``gain`` and ``k``, passed to :func:`ndcg`.

    Returns
    -------
    scores : dict of str to float

    Examples
    --------
    >>> from skcrowd.metrics import ordinal_scores
    >>> scores = ordinal_scores([1, 2, 3, 2], [1.1, 2.2, 2.7, 2.0])
    >>> {name: round(value, 4) for name, value in scores.items()}
    {'mse': 0.035, 'correlation': 0.9774}
    """
    scores = {
        "mse": mean_squared_error(y_true, y_pred),
        "correlation": correlation(y_true, y_pred),
    }
    if groups is not None:
        scores["ndcg"] = ndcg(y_true, y_pred, groups, **ndcg_params)
    return scores
