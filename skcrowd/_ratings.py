"""The data layer: the long-form :class:`Ratings` container and the conversion
of every accepted input into the internal form the kernels read.

A rating is a triple (item, rater, label).  The scikit-learn view is a matrix
with one row per item and one column per rater; the long view keeps every
rating, repeats included.  Both are converted once, at the boundary, into
:class:`RatingData`: int32 item codes sorted by item with a CSR ``item_ptr``
index, int32 rater codes and int32 label codes.  Kernels see only that.
"""

import copy
import itertools
import sys
from collections.abc import Mapping
import warnings
from datetime import date, datetime, timedelta
from functools import cached_property
from numbers import Integral, Number

import numpy as np
import scipy.sparse as sp

from ._kernels._common import count_codes, lookup_codes

__all__ = ["Ratings"]


def show(value):
    """``repr`` of a numpy scalar as the plain Python value (for messages)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _type_names(values):
    """The types among ``values`` for a message ("int and str"); a NumPy
    scalar counts as the Python type it holds, as in :func:`show`."""
    names = sorted({type(v.item() if isinstance(v, np.generic) else v).__name__
                    for v in np.asarray(values, dtype=object).ravel().tolist()})
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def mixed_ids_error(what, values):
    """The ValueError for ids of types that do not compare (numbers and
    strings), naming the types found among ``values``: the same message
    whichever path (in memory, the Dask client) finds them."""
    return ValueError(f"{what} ids must all be of one type (numbers or strings); "
                      f"they mix {_type_names(values)}.")


def mixed_groups_error(values):
    """As :func:`mixed_ids_error`, for OrdinalMixture's groups."""
    return ValueError("groups must all be of one comparable type; "
                      f"they mix {_type_names(values)}.")


#: fit's error for an X without a single rating (every form, in memory and on
#: Dask, partial_fit included)
NO_RATINGS = "X has no ratings (no rows, or every entry missing): nothing to fit."


def _incomparable(what, given, known, where):
    """The ValueError for ids that cannot be compared with the known ones
    (``1`` against ``"1"``: mostly ids read as strings on one side, say
    from a CSV, and as numbers on the other), naming one of each."""
    def example(ids):
        value = np.asarray(ids).ravel()[0]
        plain = value.item() if isinstance(value, np.generic) else value
        return f"{show(value)} ({type(plain).__name__})"

    return ValueError(
        f"{what} ids are not comparable with those {where}: {example(given)} against "
        f"{example(known)}. Give the ids one type on both sides (for example as strings)."
    )


def check_positive_int(value, name, meaning):
    """``value`` if it is an integer >= 1 (bools excluded), else a
    ValueError naming ``name`` and what it counts (``meaning``)."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))
            or value < 1):
        raise ValueError(
            f"{name} must be a positive integer ({meaning}); got {value!r}."
        )
    return int(value)


def loaded_pandas():
    """pandas if it has been imported (only then can the data hold its
    missing-value markers ``pd.NA`` / ``pd.NaT``), else None."""
    return sys.modules.get("pandas")


def import_pandas(what):
    """Import pandas for ``what``, or raise an ImportError naming the extra."""
    try:
        import pandas
    except ImportError:  # pragma: no cover - the test extra installs pandas
        raise ImportError(
            f"{what} needs pandas: pip install 'skcrowd[pandas]'."
        ) from None
    return pandas


def is_dataframe(X):
    """Whether ``X`` is a pandas DataFrame (without importing pandas)."""
    pd = loaded_pandas()
    return pd is not None and isinstance(X, pd.DataFrame)


def is_missing(values):
    """Boolean mask of missing entries.

    Missing means *not rated*: NaN in a float array; None, NaN, ``pd.NA``,
    ``pd.NaT`` or ``np.datetime64("NaT")`` in an object array; NaT in a
    datetime array.
    """
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "mM":
        return np.isnat(values)
    if values.dtype.kind == "O":
        pd = loaded_pandas()
        if pd is not None:
            return np.asarray(pd.isna(values), dtype=bool)
        return np.fromiter(
            (v is None or (isinstance(v, (float, np.floating)) and v != v)
             or (isinstance(v, (np.datetime64, np.timedelta64)) and np.isnat(v))
             for v in values.ravel()),
            dtype=bool,
            count=values.size,
        ).reshape(values.shape)
    return np.zeros(values.shape, dtype=bool)


#: what a label may be (booleans are numbers here)
_LABEL_TYPES = "numbers, booleans or strings"


def _sequence_array(values):
    """``np.asarray(values)``, except that a Python sequence mixing strings
    with other values becomes an object array of the values as given.

    NumPy turns ``[1, "x"]`` into ``["1", "x"]``: labels of mixed types then
    pass as strings (instead of the error an object array gets), the ids
    ``1`` and ``"1"`` become one item, and a list of (item, rater, label)
    rows becomes a matrix of strings with an id for every class.
    """
    array = np.asarray(values)
    if array.dtype.kind == "U" and not isinstance(values, np.ndarray):
        objects = np.asarray(values, dtype=object)
        if objects.shape == array.shape and not all(
                isinstance(v, str) for v in objects.ravel().tolist()):
            return objects
    return array


def _not_a_label(kind_name):
    return ValueError(
        f"Labels must be {_LABEL_TYPES}; got {kind_name}. Dates and times are "
        "not labels: encode them (for example as strings) first."
    )


def as_label_array(labels, where="the ratings"):
    """Normalise observed (non-missing) labels to a numeric, boolean or
    object (strings) array (``where`` they come from names them in errors).

    Object arrays holding numbers become float64 so that ``1`` and ``1.0`` are
    one class; object arrays holding only booleans become a boolean array.
    Anything that is not a number, a boolean or a string (dates and times
    included, whatever the container) is a ValueError: a label is compared and
    sorted as a value, and a date turned into a number would be misread.
    """
    labels = np.asarray(labels)
    if labels.dtype.kind in "biuf":
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise ValueError(f"Labels must be finite; found inf among {where}.")
        return labels
    if labels.dtype.kind == "c":
        raise ValueError("Complex data not supported as labels.")
    if labels.dtype.kind in "US":
        return labels.astype(object)
    if labels.dtype.kind in "mM":
        raise _not_a_label(f"dtype {labels.dtype}")
    if labels.dtype.kind != "O":
        raise ValueError(f"Unsupported label dtype {labels.dtype}.")
    kinds = {type(v) for v in labels}
    if kinds and all(issubclass(k, (bool, np.bool_)) for k in kinds):
        return labels.astype(bool)
    odd = [k for k in kinds
           if not issubclass(k, (str, Number, np.number, np.bool_))
           or issubclass(k, (complex, np.complexfloating))]
    if odd:
        names = ", ".join(sorted(k.__name__ for k in odd))
        if any(issubclass(k, (np.datetime64, np.timedelta64, datetime, date, timedelta))
               for k in odd):
            raise _not_a_label(f"values of type {names}")
        # As float() would say (scikit-learn's checks expect a TypeError).
        raise TypeError(
            f"Labels must be {_LABEL_TYPES}: a label argument must be a string or a "
            f"number, not {names}."
        )
    if any(issubclass(k, str) for k in kinds):
        # Strings: every label must then be a string, or they cannot be ordered.
        if not all(issubclass(k, str) for k in kinds):
            names = sorted(k.__name__ for k in kinds)
            raise ValueError(
                f"Labels mix strings with other types ({', '.join(names)}); "
                "use one type for all labels."
            )
        return labels
    numeric = labels.astype(np.float64)
    if not np.all(np.isfinite(numeric)):
        raise ValueError(f"Labels must be finite; found inf among {where}.")
    return numeric


def _hashed_unique(values):
    """``np.unique(values, return_inverse=True)`` for an object array, by
    hashing: np.unique sorts all n values with Python comparisons (about 2 s
    per million string ids, most of a long DataFrame's fit), this sorts only
    the distinct ones.  pandas' hash table when pandas is loaded (a
    DataFrame's columns), else a dict; None when a value is unhashable
    (np.unique then decides); a TypeError, as np.unique's, when the values
    cannot be ordered."""
    pd = loaded_pandas()
    try:
        if pd is not None:
            codes, distinct = pd.factorize(values)  # in order of appearance
            distinct = np.asarray(distinct, dtype=object)
        else:
            index = {}
            codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()),
                                dtype=np.intp, count=len(values))
            distinct = np.empty(len(index), dtype=object)
            distinct[:] = list(index)
    except TypeError:
        return None
    if len(codes) and codes.min() < 0:  # pandas' code of a missing value: np.unique decides
        return None
    return _sorted_codes(distinct, codes)


def _sorted_codes(distinct, codes):
    """Distinct values in order of appearance and their codes, as sorted
    values and codes into them (a TypeError when they cannot be ordered)."""
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return distinct[order], rank[codes]


def _hashed_positions(values, ids):
    """Position in ``ids`` (distinct) of each of ``values`` (object arrays),
    -1 where a value is not among them, by hashing instead of a binary
    search with Python comparisons; None when a value is unhashable."""
    pd = loaded_pandas()
    try:
        if pd is not None:
            index = pd.Index(np.asarray(ids, dtype=object), dtype=object)
            return index.get_indexer(np.asarray(values, dtype=object)).astype(np.int32)
        position = dict(zip(ids.tolist(), range(len(ids))))
        return np.fromiter(map(position.get, values.tolist(), itertools.repeat(-1)),
                           dtype=np.int32, count=len(values))
    except TypeError:
        return None


def kept_label_dtype(columns):
    """The NumPy dtype that the labels of these pandas columns keep once
    their missing values are dropped: int64 (uint64) when every column holds
    signed (unsigned) integers, NumPy or nullable (``Int64``, ``UInt8``
    ...), bool when every column is boolean
    (``boolean`` included), else None.  A nullable column with a missing
    value reaches NumPy as objects or floats, whose numbers would be read as
    floats: classes 0.0 and 1.0 for an ``Int64`` column of 0, 1 and NA."""
    kinds = {getattr(getattr(c.dtype, "numpy_dtype", c.dtype), "kind", "O") for c in columns}
    # (signed and unsigned columns together stay floats, as NumPy mixes them)
    return {"i": np.dtype(np.int64), "u": np.dtype(np.uint64),
            "b": np.dtype(bool)}.get(kinds.pop()) if len(kinds) == 1 else None


def _rated_labels(labels, rated, column):
    """``labels[rated]`` of a DataFrame's label column, in the dtype the
    column's values have (:func:`kept_label_dtype`)."""
    rated_labels = labels[rated] if not np.all(rated) else labels
    dtype = kept_label_dtype([column])
    return rated_labels if dtype is None else rated_labels.astype(dtype, copy=False)


def _frame_id_codes(column, what):
    """``unique_codes`` of a DataFrame's id column of strings (or Python
    objects), from pandas' factorize of the column itself: a ``str`` column
    is encoded in Arrow, without a Python object per row (a third of the
    time of converting it to an object array first).  None for a column of
    another dtype (NumPy sorts numbers fast), a repeated column name (a
    DataFrame) or unhashable ids: the general path then decides."""
    pd = loaded_pandas()
    if getattr(column, "ndim", 0) != 1 or not (
            column.dtype == object or isinstance(column.dtype, pd.StringDtype)):
        return None
    try:
        codes, uniques = pd.factorize(column)  # in order of appearance
    except TypeError:
        return None
    if np.any(codes < 0):  # factorize's code of a missing id
        raise ValueError("item and rater ids must not be missing (NaN or None).")
    uniques = np.asarray(uniques, dtype=object)
    try:
        return _sorted_codes(uniques, codes)
    except TypeError:
        raise mixed_ids_error(what, uniques) from None


def unique_codes(values, ids=None, what="item"):
    """Codes of ``values`` into ``ids`` (the sorted unique values when None)."""
    values = np.asarray(values)
    try:
        if ids is None:
            hashed = _hashed_unique(values) if values.dtype.kind == "O" else None
            if hashed is not None:
                return hashed
            ids, codes = np.unique(values, return_inverse=True)
            return np.asarray(ids), codes.astype(np.int32).ravel()
        ids = np.asarray(ids)
        order = np.argsort(ids, kind="stable")
    except TypeError:
        raise mixed_ids_error(what, values if ids is None else ids) from None
    sorted_ids = ids[order]
    if len(sorted_ids) > 1 and np.any(sorted_ids[1:] == sorted_ids[:-1]):
        raise ValueError(f"{what}_ids contains duplicates.")
    if len(values) == 0:
        return ids, np.zeros(0, dtype=np.int32)
    if len(ids) == 0:
        raise ValueError(f"{what} {show(values[0])} is not among the given {what}_ids.")
    if values.dtype.kind == "O" and ids.dtype.kind == "O":
        codes = _hashed_positions(values, ids)
        if codes is not None:
            if np.any(codes < 0):
                raise ValueError(f"{what} {show(values[np.argmax(codes < 0)])} is not "
                                 f"among the given {what}_ids.")
            return ids, codes
    pos = np.minimum(np.searchsorted(sorted_ids, values), len(ids) - 1)
    bad = sorted_ids[pos] != values
    if np.any(bad):
        raise ValueError(
            f"{what} {show(values[np.argmax(bad)])} is not among the given {what}_ids."
        )
    return ids, order[pos].astype(np.int32)


def _first_repeated(ids):
    """An id that occurs more than once in ``ids``, or None (hashing with
    pandas when it is loaded, else sorting)."""
    pd = loaded_pandas()
    if pd is not None:
        index = pd.Index(ids)
        return None if index.is_unique else index[index.duplicated()][0]
    try:
        ordered = np.sort(ids, kind="stable")
    except TypeError:
        return None  # ids of mixed types: encoding them names the problem
    same = ordered[1:] == ordered[:-1]
    return ordered[1:][np.argmax(same)] if np.any(same) else None


class Ratings:
    """Crowd ratings in long form: one (item, rater, label) triple per rating.

    ``Ratings`` is the container for data that is too sparse for a matrix or
    that repeats ratings (one rater labelling one item twice).  It behaves like
    a matrix of shape ``(n_items, n_raters)`` for scikit-learn: ``len(R)`` is
    the number of items and ``R[indices]`` selects items (all raters kept), so
    splitters, :func:`~sklearn.model_selection.cross_val_score` and
    :class:`~sklearn.model_selection.GridSearchCV` work on it.

    Parameters
    ----------
    item, rater, label : array-like of shape (n_ratings,)
        The item id, rater id and label of each rating.  Ids may be numbers or
        strings; labels may be numbers or strings.
    item_ids : array-like of shape (n_items,), default=None
        All item ids, in the order rows should have.  Use it to keep items that
        have no rating.  Default: the sorted unique values of ``item``.
    rater_ids : array-like of shape (n_raters,), default=None
        All rater ids, in column order.  Default: sorted unique ``rater``.

    Examples
    --------
    >>> from skcrowd import Ratings
    >>> R = Ratings(item=["a", "a", "b"], rater=[1, 2, 1], label=["yes", "no", "no"])
    >>> R.shape
    (2, 2)
    >>> R[[1]].item_ids
    array(['b'], dtype='<U1')
    """

    def __init__(self, item, rater, label, *, item_ids=None, rater_ids=None):
        item = _sequence_array(item)
        rater = _sequence_array(rater)
        label = _sequence_array(label)
        lengths = {"item": item.shape, "rater": rater.shape, "label": label.shape}
        if any(len(s) != 1 for s in lengths.values()):
            raise ValueError(
                "item, rater and label must be one-dimensional; got shapes "
                + ", ".join(f"{k}={v}" for k, v in lengths.items())
            )
        if len({s[0] for s in lengths.values()}) != 1:
            raise ValueError(
                "item, rater and label must have the same length; got "
                + ", ".join(f"{k}={v[0]}" for k, v in lengths.items())
            )
        if np.any(is_missing(item)) or np.any(is_missing(rater)):
            raise ValueError("item and rater ids must not be missing (NaN or None).")
        if np.any(is_missing(label)):
            raise ValueError(
                "A rating has a missing label (NaN or None); drop unrated "
                "pairs before building Ratings."
            )
        item_ids, item_codes = unique_codes(item, item_ids, "item")
        rater_ids, rater_codes = unique_codes(rater, rater_ids, "rater")
        self._set_by_item(item_codes, rater_codes, label, item_ids, rater_ids)

    def _set_by_item(self, item_codes, rater_codes, labels, item_ids, rater_ids):
        """The ratings sorted by item (stable: an item's ratings keep their
        order), the labels checked and normalised."""
        order = np.argsort(item_codes, kind="stable")
        return self._set(item_codes[order], rater_codes[order],
                         as_label_array(labels)[order], item_ids, rater_ids)

    def _set(self, item_codes, rater_codes, labels, item_ids, rater_ids):
        self._item = np.ascontiguousarray(item_codes, dtype=np.int32)
        self._rater = np.ascontiguousarray(rater_codes, dtype=np.int32)
        self._label = labels
        self.item_ids = np.asarray(item_ids)
        self.rater_ids = np.asarray(rater_ids)
        counts = np.bincount(self._item, minlength=len(self.item_ids))
        self._item_ptr = np.zeros(len(self.item_ids) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._item_ptr[1:])
        return self

    @classmethod
    def _from_sorted(cls, item_codes, rater_codes, labels, item_ids, rater_ids):
        """Build from codes already sorted by item, skipping validation."""
        return cls.__new__(cls)._set(item_codes, rater_codes, labels, item_ids, rater_ids)

    @classmethod
    def from_long(cls, df, item="item", rater="rater", label="label", **kwargs):
        """Ratings from a long-form table (a DataFrame or a dict of columns).

        A row whose label is missing (None, NaN, ``pd.NA``, ``pd.NaT``) is not
        a rating, but its item and rater are kept (as an item or rater without
        ratings), as an empty cell of a matrix is.  Other columns are ignored.

        Parameters
        ----------
        df : pandas.DataFrame or mapping of str to array-like
            One row per rating.
        item, rater, label : str, default="item", "rater", "label"
            Column names.  With the defaults, a table with crowd-kit's
            ``task, worker, label`` and neither ``item`` nor ``rater`` is
            read by those names, as the estimators read it.
        **kwargs
            ``item_ids`` and ``rater_ids``, passed to :class:`Ratings`.

        Returns
        -------
        ratings : Ratings

        Examples
        --------
        >>> import pandas as pd
        >>> from skcrowd import Ratings
        >>> df = pd.DataFrame({"task": ["t1", "t1", "t2"], "worker": ["w1", "w2", "w1"],
        ...                    "answer": ["cat", "dog", None]})
        >>> R = Ratings.from_long(df, item="task", rater="worker", label="answer")
        >>> R.shape, R.n_ratings
        ((2, 2), 2)
        """
        names = list(df.columns) if is_dataframe(df) else list(df)
        item, rater = default_id_columns(names, item, rater)
        missing = [c for c in (item, rater, label) if c not in df]
        if missing:
            more = f" and {len(names) - 10} more" if len(names) > 10 else ""
            raise ValueError(
                f"Columns {missing} are not in the table; it has {names[:10]}{more}. "
                "Name the columns with Ratings.from_long(df, item=..., rater=..., "
                "label=...); an items x raters table is a matrix (Ratings.from_matrix, "
                "or pass it to the estimator as it is)."
            )
        if is_dataframe(df) and not kwargs:
            encoded = [_frame_id_codes(df[c], what)
                       for c, what in ((item, "item"), (rater, "rater"))]
            labels = np.asarray(df[label])
            if None not in encoded and labels.ndim == 1:
                (item_ids, item_codes), (rater_ids, rater_codes) = encoded
                rated = ~is_missing(labels)
                return cls.__new__(cls)._set_by_item(
                    item_codes[rated], rater_codes[rated],
                    _rated_labels(labels, rated, df[label]), item_ids, rater_ids)
        items, raters, labels = (np.asarray(df[c]) for c in (item, rater, label))
        if items.ndim != 1 or raters.ndim != 1 or labels.ndim != 1:
            raise ValueError(
                "The item, rater and label columns must each be one column; "
                f"got {item!r}, {rater!r}, {label!r} (a repeated column name?)."
            )
        rated = ~is_missing(labels)
        if not np.all(rated):
            if np.any(is_missing(items)) or np.any(is_missing(raters)):
                raise ValueError("item and rater ids must not be missing (NaN or None).")
            # Keep the items and raters of unrated rows, as a matrix keeps
            # its empty rows and columns.
            if kwargs.get("item_ids") is None:
                kwargs["item_ids"] = unique_codes(items, what="item")[0]
            if kwargs.get("rater_ids") is None:
                kwargs["rater_ids"] = unique_codes(raters, what="rater")[0]
            items, raters = items[rated], raters[rated]
        if is_dataframe(df):
            labels = _rated_labels(labels, rated, df[label])
        elif not np.all(rated):
            labels = labels[rated]
        return cls(items, raters, labels, **kwargs)

    @classmethod
    def from_matrix(cls, X, *, item_ids=None, rater_ids=None):
        """Ratings from an ``(n_items, n_raters)`` matrix.

        Dense: NaN (or None in an object array) means *not rated*.  Sparse:
        every stored entry is a rating, explicit zeros included.
        """
        if sp.issparse(X):
            coo = sp.coo_matrix(X)
            rows, cols, labels = coo.row, coo.col, coo.data
            keep = ~is_missing(labels)
            rows, cols, labels = rows[keep], cols[keep], labels[keep]
            order = np.lexsort((cols, rows))
            rows, cols, labels = rows[order], cols[order], labels[order]
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"Expected a 2D matrix of ratings, got {X.ndim}D.")
            rated = ~is_missing(X)
            rows, cols = np.nonzero(rated)  # row-major: already sorted by item
            labels = X[rows, cols]
        n_items, n_raters = X.shape
        item_ids = np.arange(n_items) if item_ids is None else np.asarray(item_ids)
        rater_ids = np.arange(n_raters) if rater_ids is None else np.asarray(rater_ids)
        if len(item_ids) != n_items or len(rater_ids) != n_raters:
            raise ValueError("item_ids/rater_ids do not match the matrix shape.")
        for what, ids in (("item", item_ids), ("rater", rater_ids)):
            # as the constructor checks: two rows (columns) under one id
            # would be two items (raters) whose results share a label
            repeated = _first_repeated(ids)
            if repeated is not None:
                raise ValueError(f"{what}_ids contains duplicates: {show(repeated)} "
                                 "is given more than once.")
        return cls._from_sorted(rows, cols, as_label_array(labels), item_ids, rater_ids)

    # -- the matrix-like face used by scikit-learn ---------------------------
    @property
    def shape(self):
        """``(n_items, n_raters)``."""
        return (len(self.item_ids), len(self.rater_ids))

    def __len__(self):
        return len(self.item_ids)

    @property
    def n_ratings(self):
        return len(self._item)

    @property
    def item(self):
        """The item id of each rating (sorted by item)."""
        return self.item_ids[self._item]

    @property
    def rater(self):
        """The rater id of each rating."""
        return self.rater_ids[self._rater]

    @property
    def label(self):
        """The label of each rating."""
        return self._label

    def __getitem__(self, key):
        # scikit-learn's _safe_indexing asks for X[key, ...]
        if isinstance(key, tuple):
            if len(key) == 2 and key[1] is Ellipsis:
                key = key[0]
            else:
                raise IndexError("Ratings supports indexing of items (rows) only.")
        rows = np.arange(len(self))[key]
        if np.ndim(rows) == 0:
            rows = np.array([rows])
        rows = np.asarray(rows, dtype=np.int64)
        starts, stops = self._item_ptr[rows], self._item_ptr[rows + 1]
        lengths = stops - starts
        # Gather the ratings of the selected rows, in the order asked for.
        offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        take = np.arange(lengths.sum()) + offsets
        new_items = np.repeat(np.arange(len(rows), dtype=np.int32), lengths)
        return Ratings._from_sorted(
            new_items,
            self._rater[take],
            self._label[take],
            self.item_ids[rows],
            self.rater_ids,
        )

    def to_long(self):
        """The ratings as a long-form DataFrame, one row per rating.

        Returns
        -------
        df : pandas.DataFrame
            Columns ``item``, ``rater``, ``label``, sorted by item.
            ``Ratings.from_long(R.to_long())`` gives back the same ratings
            (items or raters without ratings aside).

        Examples
        --------
        >>> from skcrowd import Ratings
        >>> Ratings(item=["b", "a"], rater=[1, 2], label=["yes", "no"]).to_long()
          item  rater label
        0    a      2    no
        1    b      1   yes
        """
        pd = import_pandas("Ratings.to_long")
        return pd.DataFrame({"item": self.item, "rater": self.rater, "label": self.label})

    def to_dense(self):
        """An ``(n_items, n_raters)`` array with NaN (numbers) or None (strings)
        where there is no rating.  For a repeated rating the last one is kept."""
        if self._label.dtype.kind == "O":
            X = np.full(self.shape, None, dtype=object)
        else:
            X = np.full(self.shape, np.nan)
        X[self._item, self._rater] = self._label
        return X

    def __repr__(self):
        n_items, n_raters = self.shape
        return f"Ratings(n_items={n_items}, n_raters={n_raters}, n_ratings={self.n_ratings})"


class RatingData:
    """The internal form of ratings that every kernel reads.

    Attributes
    ----------
    item : int32 array of shape (n_ratings,)
        Item code of each rating, sorted.
    rater : int32 array of shape (n_ratings,)
        Rater code of each rating (a column of the fitted model).
    label : int32 array of shape (n_ratings,)
        Label code of each rating: an index into ``classes_``.
    item_ptr : int64 array of shape (n_items + 1,)
        Ratings of item ``i`` are ``item_ptr[i]:item_ptr[i + 1]``.
    n_items, n_raters, n_classes : int
    item_ids : ndarray of shape (n_items,) or None
        The user's id of each item (row): the index of a wide DataFrame, the
        item ids of long form, ``0 .. n_items - 1`` for an array.  Results
        are labelled with these, and ``y`` is aligned by them.
    item_name : str or None
        Name of the item ids (the item column of long form, the index name
        of a wide DataFrame).
    form : str or None
        The input form it came from: ``"matrix"`` (array or sparse),
        ``"wide"`` (DataFrame of items x raters), ``"long"`` (long-form
        DataFrame) or ``"ratings"``.
    ratings : Ratings or None
        The user's ratings before label encoding and rater mapping (for
        outputs in the input's form).
    gold : int32 array of shape (n_items,) or None
        The class code of each item's known label (-1: unknown), or None
        when no label is known (``y`` of a fit).
    table : DataFrame or None
        The long-form table it came from (its rows are ratings), to tell
        one of its columns from per-item values.

    Once built it is not changed: the fields cannot be set again, and a
    model keeps what it derives from the ratings in its own prepared state
    (see ``doc/architecture.rst``).  Derived indexes (``rater_ptr``,
    ``cell``, ...) are computed once, on first use.
    """

    def __init__(self, item, rater, label, item_ptr, n_raters, n_classes, *,
                 item_ids=None, item_name=None, form=None, ratings=None, gold=None,
                 table=None):
        fields = self.__dict__
        fields["item"] = item
        fields["rater"] = rater
        fields["label"] = label
        fields["item_ptr"] = item_ptr
        fields["n_items"] = len(item_ptr) - 1
        fields["n_raters"] = int(n_raters)
        fields["n_classes"] = int(n_classes)
        fields["gold"] = gold
        fields["item_ids"] = item_ids
        fields["item_name"] = item_name
        fields["form"] = form
        fields["ratings"] = ratings
        fields["table"] = table

    def __setattr__(self, name, value):
        raise AttributeError(
            f"RatingData is immutable: cannot set {name!r}; keep derived data in the "
            "model's prepared state.")

    def __delattr__(self, name):
        raise AttributeError(f"RatingData is immutable: cannot delete {name!r}.")

    @property
    def n_ratings(self):
        return len(self.item)

    @cached_property
    def rater_order(self):
        """Permutation of the ratings grouping them by rater (stable)."""
        return np.argsort(self.rater, kind="stable").astype(np.int64)

    @cached_property
    def rater_ptr(self):
        """Ratings of rater ``j`` are ``rater_order[rater_ptr[j]:rater_ptr[j + 1]]``."""
        ptr = np.zeros(self.n_raters + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.rater, minlength=self.n_raters), out=ptr[1:])
        return ptr

    @cached_property
    def cell(self):
        """``rater * n_classes + label`` of each rating (int32): one index
        for kernels whose per-rater tables are indexed by (rater, label)."""
        if self.n_raters * self.n_classes >= 2**31:
            raise ValueError("Too many raters x classes for int32 cell indices.")
        cell = np.multiply(self.rater, np.int32(self.n_classes), dtype=np.int32)
        cell += self.label
        return cell

    @cached_property
    def ratings_per_item(self):
        return np.diff(self.item_ptr)

    @property
    def evidence(self):
        """The gold clamp as a per-item log class prior offset, the one
        mechanism every local step adds to log π: 0 for an unknown item,
        0 at the known class and -inf elsewhere for a known one, so the
        posterior of a known item is exactly its class and its log
        marginal the log joint log p(ratings, z = known).  Shape
        ``(n_items, n_classes)``; ``(0, n_classes)`` without gold, which
        the kernels read as "no offsets"."""
        if self.gold is None:
            return np.zeros((0, self.n_classes))
        cached = self.__dict__.get("_evidence")
        if cached is None or cached[0] is not self.gold:
            offsets = np.zeros((self.n_items, self.n_classes))
            known = self.gold >= 0
            offsets[known] = -np.inf
            offsets[np.flatnonzero(known), self.gold[known]] = 0.0
            cached = self.__dict__["_evidence"] = (self.gold, offsets)
        return cached[1]


def missing_any(values):
    """Missing entries of a 1-D array of anything: None, NaN, ``pd.NA``,
    ``pd.NaT`` (pandas' own test when pandas is loaded, since only then can
    its missing markers occur)."""
    if "pandas" in sys.modules:
        return np.asarray(sys.modules["pandas"].isna(values), dtype=bool)
    return is_missing(values)


def gold_per_item(y, item_ids, *, ids_are_rows=False):
    """The known true labels ``y`` of a fit, as (item positions, labels).

    ``y`` is either one entry per item in row order (array-like; missing
    entries - None, NaN, ``pd.NA`` - are the unknown items) or a mapping /
    pandas Series keyed by item id (items absent from it are unknown).  A
    key that is not an item of ``X`` is an error: it is almost always an id
    of another type (``1`` vs ``"1"``), and silently dropping it would fit
    without the gold the user meant to give.

    ``ids_are_rows``: ``X`` is a matrix (array or sparse), whose items are
    its rows and have no ids.  A Series is then one entry per row, in order,
    as scikit-learn reads ``y``: its index is whatever the user's table
    had (rows of ``df.sort_values(...)``, a cross-validation fold), and
    reading it as row numbers clamped gold on other items.  A mapping stays
    keyed by row number (it is explicit).
    """
    item_ids = np.asarray(item_ids)
    if ids_are_rows and not isinstance(y, Mapping) and hasattr(y, "to_numpy"):
        y = y.to_numpy(dtype=object) if getattr(y, "ndim", 1) == 1 else y.to_numpy()
    if isinstance(y, Mapping) or hasattr(y, "index") and hasattr(y, "to_numpy"):
        if isinstance(y, Mapping):
            keys, values = list(y.keys()), list(y.values())
        else:
            if getattr(y, "ndim", 1) != 1:
                raise ValueError("y must be one-dimensional: one known label per item.")
            keys, values = list(y.index), list(y.to_numpy(dtype=object))
        keys = np.asarray(keys)
        values = np.asarray(values, dtype=object)
        if len(keys) == 0:
            return np.zeros(0, dtype=np.int64), values
        try:
            order = np.argsort(item_ids, kind="stable")
            pos = np.minimum(np.searchsorted(item_ids[order], keys), max(len(item_ids) - 1, 0))
            found = item_ids[order][pos] == keys
        except TypeError:
            raise _incomparable("y's item", keys, item_ids, "of X") from None
        if not np.all(found):
            raise ValueError(
                f"y has a label for item {show(keys[np.argmin(found)])}, which is not "
                "an item of X."
            )
        positions = order[pos].astype(np.int64)
        if len(np.unique(positions)) != len(positions):
            raise ValueError("y gives more than one label for an item.")
    else:
        values = np.asarray(y)  # through __array__ for array-likes
        values = values.astype(object) if values.dtype.kind != "O" else values
        if values.ndim != 1:
            raise ValueError(
                f"y must be one-dimensional (one known label per item); got shape "
                f"{values.shape}."
            )
        if len(values) != len(item_ids):
            raise ValueError(
                f"y has {len(values)} entries but X has {len(item_ids)} items; give one "
                "entry per item (missing where unknown) or a mapping keyed by item id."
            )
        positions = np.arange(len(values), dtype=np.int64)
    known = ~missing_any(values)
    labels = (as_label_array(values[known], "the known labels y") if np.any(known)
              else values[known])
    return positions[known], labels


def _integer_offsets(values):
    """``(lowest, values - lowest as intp, highest - lowest + 1)`` for labels
    that are integers in a range no longer than a few times their number
    (integer or boolean dtype, or floats holding whole numbers), else None.

    Labels on a small integer scale are the common case, and for them a
    count and a table lookup replace ``np.unique`` and ``np.searchsorted``
    (hashing and binary search were a third of a 500k-rating DawidSkene fit).
    """
    kind = values.dtype.kind
    if len(values) == 0 or kind not in "biuf":
        return None
    if kind == "b":
        return 0, values.view(np.uint8).astype(np.intp), 2
    lowest, highest = values.min(), values.max()
    limit = max(4 * len(values), 1024)
    if kind == "f":
        if not (-2.0**53 < lowest and highest < 2.0**53 and lowest == np.floor(lowest)
                and highest - lowest <= limit):
            return None
        shifted = values - lowest  # exact: whole numbers below 2**53 apart
        offsets = shifted.astype(np.intp)
        # whole numbers only; and no -0.0, which np.unique would keep as is
        if not np.array_equal(offsets, shifted) or (
                lowest <= 0 <= highest and np.any(np.signbit(values[values == 0]))):
            return None
        return lowest, offsets, int(highest - lowest) + 1
    # beyond 2**53 the classes' float comparison in the lookup is not exact
    if int(highest) - int(lowest) > limit or max(-int(lowest), int(highest)) >= 2**53:
        return None
    # widened first (the subtraction is in intp): in a narrow dtype
    # values - lowest can wrap around
    return lowest, np.subtract(values, np.intp(lowest), dtype=np.intp), \
        int(highest) - int(lowest) + 1


def _unique_labels(labels, codes=False):
    """``np.unique(labels)``, by counting when the labels are small integers;
    with ``codes=True`` also the labels' codes into it (int32), as
    :func:`encode_labels` gives them (None off the counting path)."""
    fast = _integer_offsets(labels)
    if fast is None:
        hashed = _hashed_unique(labels) if labels.dtype.kind == "O" else None
        if hashed is not None:  # string labels: sort the classes, not the ratings
            return hashed if codes else hashed[0]
        return (np.unique(labels), None) if codes else np.unique(labels)
    lowest, offsets, size = fast
    counts = np.zeros(size, dtype=np.int64)
    count_codes(offsets, counts)
    present = np.flatnonzero(counts)
    if labels.dtype.kind == "b":
        classes = present.astype(bool)
    else:
        classes = (present + lowest).astype(labels.dtype)
    if not codes:
        return classes
    table = np.full(size, -1, dtype=np.int32)
    table[present] = np.arange(len(present), dtype=np.int32)
    label_codes = np.empty(len(labels), dtype=np.int32)
    lookup_codes(table, offsets, label_codes)
    return classes, label_codes


def _integer_label_codes(labels, classes):
    """:func:`encode_labels` by table lookup for small integer labels and
    numeric classes; None when that does not apply or some label is not a
    class (the general path then names it)."""
    if classes.dtype.kind not in "biuf" or len(classes) == 0:
        return None
    fast = _integer_offsets(labels)
    if fast is None:
        return None
    lowest, offsets, size = fast
    table = np.full(size, -1, dtype=np.int32)
    # the classes that are whole numbers inside the labels' range
    with np.errstate(invalid="ignore"):
        shifted = classes.astype(np.float64) - float(lowest)
    inside = (shifted >= 0) & (shifted < size) & (shifted == np.floor(shifted))
    table[shifted[inside].astype(np.intp)] = np.flatnonzero(inside).astype(np.int32)
    codes = np.empty(len(labels), dtype=np.int32)
    return codes if lookup_codes(table, offsets, codes) < 0 else None


def encode_labels(labels, classes):
    """Codes of ``labels`` into the sorted array ``classes``.

    Raises a ValueError naming the first label that is not a class.
    """
    classes = np.asarray(classes)
    if len(labels) == 0:
        return np.zeros(0, dtype=np.int32)
    if len(classes) == 0:
        raise ValueError(f"Label {show(labels[0])} is not one of the classes [].")
    codes = _integer_label_codes(labels, classes)
    if codes is not None:
        return codes
    if labels.dtype.kind == "O" and classes.dtype.kind == "O":  # strings
        codes = _hashed_positions(labels, classes)
        if codes is not None and np.all(codes >= 0):
            return codes  # else the general path names the first stranger
    try:
        pos = np.searchsorted(classes, labels)
    except TypeError:
        raise ValueError(
            f"Labels of type {type(labels[0]).__name__} cannot be compared with "
            f"the classes {classes.tolist()!r}."
        ) from None
    pos_clipped = np.minimum(pos, len(classes) - 1)
    bad = classes[pos_clipped] != labels
    if np.any(bad):
        value = labels[np.argmax(bad)]
        raise ValueError(
            f"Label {show(value)} is not one of the classes {classes.tolist()!r}."
        )
    return pos.astype(np.int32)


def check_classes(classes):
    """Validate a user-given ``classes`` parameter; returns a sorted array."""
    classes = np.asarray(classes)
    if classes.ndim != 1:
        # a nested list was flattened into one scale, silently
        raise ValueError(
            f"classes must be a 1-D list of the labels of the scale; got an array of "
            f"shape {classes.shape}: {classes.tolist()!r}."
        )
    if len(classes) and np.any(is_missing(classes)):
        raise ValueError(
            f"classes contains a missing value (NaN or None): {classes.tolist()!r}. "
            "Missing means not rated; list only the labels of the scale."
        )
    try:
        classes = as_label_array(classes, "them")
    except ValueError as error:
        raise ValueError(f"classes: {error}") from None
    try:
        unique = np.unique(classes)
    except TypeError:
        raise ValueError("classes must all be of one type (numbers or strings).") from None
    if len(unique) != len(classes):
        raise ValueError(f"classes has repeated values: {classes.tolist()!r}.")
    if not isinstance(len(unique), Integral) or len(unique) == 0:
        raise ValueError("classes must not be empty.")
    return unique


# -- the input boundary: every form of X, once --------------------------------

#: the column conventions of a long-form DataFrame: (item, rater, label)
LONG_CONVENTIONS = (("item", "rater", "label"), ("task", "worker", "label"))

def default_id_columns(names, item, rater):
    """The item and rater columns to read from a table with the columns
    ``names``: ``item`` and ``rater`` as given, except that the defaults
    ("item", "rater") on a table that has crowd-kit's "task" and "worker"
    and neither "item" nor "rater" read those, as ``fit(df)``'s long-form
    rule does (one rule for ``Ratings.from_long`` and the command line)."""
    default, crowd_kit = LONG_CONVENTIONS[0][:2], LONG_CONVENTIONS[1][:2]
    if ((item, rater) == default and not set(default) & set(names)
            and set(crowd_kit) <= set(names)):
        return crowd_kit
    return item, rater


#: a wide DataFrame whose labels take more values than this is refused
MAX_WIDE_LABELS = 100

HOW_TO_PASS = (
    "Pass a long-form table as Ratings.from_long(df, item=..., rater=..., label=...) "
    "or name its columns item/rater/label (or task/worker/label); pass an "
    "items x raters matrix as df.to_numpy() (or a DataFrame whose columns are "
    "rater ids)."
)


def long_columns(columns):
    """The ``(item, rater, label)`` column names of a long-form table, or
    None for a wide (items x raters) one.

    The rule (doc/data.rst): a DataFrame is long form exactly when its
    columns include all of ``item, rater, label`` or all of crowd-kit's
    ``task, worker, label``.  Including both sets, or only some names of a
    set (``item`` and ``label`` without ``rater``, say), is ambiguous: no
    wide matrix has raters called that, and no long table lacks a column.
    """
    names = {c for c in columns if isinstance(c, str)}
    complete = [cols for cols in LONG_CONVENTIONS if set(cols) <= names]
    if len(complete) > 1:
        raise ValueError(
            f"The DataFrame has the columns of both long-form conventions "
            f"{LONG_CONVENTIONS[0]} and {LONG_CONVENTIONS[1]}; it is ambiguous "
            "which to use. " + HOW_TO_PASS
        )
    if complete:
        return complete[0]
    reserved = sorted(names & {c for cols in LONG_CONVENTIONS for c in cols})
    if reserved:
        raise ValueError(
            f"The DataFrame has the column(s) {reserved} of a long-form table but "
            "not a full set item/rater/label (or task/worker/label), so it is "
            "neither clear long form nor a plausible items x raters matrix. "
            + HOW_TO_PASS
        )
    return None


def input_form(X):
    """``"ratings"``, ``"long"``, ``"wide"`` or ``"matrix"`` (arrays, sparse)."""
    if isinstance(X, Ratings):
        return "ratings"
    if is_dataframe(X):
        return "wide" if long_columns(X.columns) is None else "long"
    return "matrix"


def _wide_frame_matrix(df):
    """A wide DataFrame as a 2-D array, missing markers kept (then read by
    :func:`is_missing`); dates are refused rather than turned into numbers."""
    for column, dtype in zip(df.columns, df.dtypes):
        if getattr(dtype, "kind", "O") in "mM":
            raise _not_a_label(f"dtype {dtype} in column {column!r}")
    return df.to_numpy()


def _check_wide_labels(labels):
    """A wide frame's labels must look like the labels of one scale."""
    n_labels = len(np.unique(labels))
    if n_labels > MAX_WIDE_LABELS:
        raise ValueError(
            f"Read as an items x raters matrix, this DataFrame has {n_labels} distinct "
            f"labels (more than {MAX_WIDE_LABELS}): it looks like a long-form table "
            "of ids rather than a matrix of labels. " + HOW_TO_PASS
        )
    return labels


def label_categories(columns):
    """The union of the categories of pandas categorical columns (they name
    the scale, levels nobody used included), or None unless every column is
    categorical."""
    dtypes = [c.dtype for c in columns]
    if not dtypes or not all(type(d).__name__ == "CategoricalDtype" for d in dtypes):
        return None
    levels = np.concatenate([np.asarray(d.categories) for d in dtypes])
    try:
        return np.unique(as_label_array(levels))
    except TypeError:
        raise ValueError("The categories of the label columns must be of one type.") from None


def gold_levels(y, labels):
    """What the known labels ``y`` of a fit add to the classes: its known
    ``labels`` (from :func:`gold_per_item`) and, when ``y`` is categorical,
    its categories, levels nobody used included: they name the scale as a
    categorical label column's categories do (:func:`label_categories`)."""
    levels = label_categories([y]) if hasattr(y, "dtype") else None
    if levels is None:
        return labels
    return levels if not len(labels) else np.concatenate([labels, levels])


def to_ratings(estimator, X, *, reset):
    """``X`` in any accepted form as ``(Ratings, form, scale)``; ``scale``
    is the categories of categorical label columns (or None).

    Arrays, sparse matrices and wide DataFrames are validated with
    scikit-learn's ``validate_data`` (which sets or checks
    ``n_features_in_`` and ``feature_names_in_``); long form and Ratings
    are not matrices of raters, and map their raters by id instead.
    """
    from sklearn.utils.validation import check_array, validate_data

    form = input_form(X)
    if form == "ratings":
        return X, form, None
    if form == "long":
        columns = long_columns(X.columns)
        return Ratings.from_long(X, *columns), form, label_categories([X[columns[2]]])
    if isinstance(X, (list, tuple)) and len(X) == 0:
        raise ValueError("X is empty: it has no items.")
    options = dict(
        accept_sparse=("csr", "csc", "coo"),
        dtype=None,
        ensure_all_finite="allow-nan",
        ensure_min_samples=1,
        ensure_min_features=1,
    )
    if form == "wide":
        try:
            with warnings.catch_warnings():
                if not reset and not getattr(estimator, "_raters_by_position", True):
                    # checked below against the raters' ids: scikit-learn's
                    # "fitted without feature names" is wrong for a model
                    # fitted on long form or a Ratings
                    warnings.filterwarnings("ignore", message="X has feature names")
                validate_data(estimator, X, reset=reset, skip_check_array=True)
        except TypeError as error:  # column names of mixed types: a user's table
            raise ValueError(" ".join(str(error).split())) from None
        if not reset:
            check_rater_columns(estimator, X.columns)
        if not X.index.is_unique:
            raise ValueError(
                f"The table's index repeats the item id "
                f"{show(X.index[X.index.duplicated()][0])}: in a wide table (items x "
                "raters) each row is one item, named by its index. Give every row its own "
                "id (pd.concat(..., ignore_index=True)), or pass the ratings in long form "
                "(columns item, rater, label), where an item may have several rows."
            )
        matrix = check_array(_wide_frame_matrix(X), **options)
        try:
            # the columns are the raters: their names are the rater ids
            ratings = Ratings.from_matrix(matrix, item_ids=X.index.to_numpy(),
                                          rater_ids=np.asarray(X.columns))
        except ValueError as error:
            raise ValueError(f"{error} (Read as an items x raters matrix.) "
                             + HOW_TO_PASS) from None
        dtype = kept_label_dtype([X.iloc[:, j] for j in range(X.shape[1])])
        if dtype is not None and ratings.label.dtype != dtype:
            # integer (or boolean) columns with missing cells: the matrix
            # held them as floats or objects
            ratings = Ratings._from_sorted(ratings._item, ratings._rater,
                                           ratings.label.astype(dtype), ratings.item_ids,
                                           ratings.rater_ids)
        return ratings, form, label_categories([X.iloc[:, j] for j in range(X.shape[1])])
    if not (sp.issparse(X) or isinstance(X, np.ndarray)):
        X = _sequence_array(X)  # nested lists: labels keep their types
    X = validate_data(estimator, X, reset=reset, **options)
    try:
        return Ratings.from_matrix(X), form, None
    except ValueError as error:
        if "mix strings" not in str(error):
            raise
        # mostly a list of (item, rater, label) rows: long form, not a matrix
        raise ValueError(f"{error} (Read as an items x raters matrix.) " + HOW_TO_PASS
                         + " A list of (item, rater, label) rows is long form: pass "
                         "Ratings(item, rater, label).") from None


def fit_classes(estimator, labels, scale=None, check_count=True):
    """Set ``estimator.classes_`` from its ``classes`` parameter, else the
    ``scale`` (the categories of a categorical label column), else the
    labels seen (any array holding every label); checked against the
    model's ``_min_classes`` (:func:`check_class_count`) unless
    ``check_count=False``: a fit with known labels ``y`` checks once their
    labels have joined the classes.

    Returns the codes of ``labels`` into ``classes_`` when the classes were
    counted from them (small integer labels: found in the same passes),
    else None.
    """
    codes = None
    if estimator.classes is not None:
        estimator.classes_ = check_classes(estimator.classes)
        _check_class_order(estimator)
    elif scale is not None:
        estimator.classes_ = check_classes(scale)
    else:
        try:
            estimator.classes_, codes = _unique_labels(labels, codes=True)
        except TypeError:
            raise ValueError("Labels must all be of one type (numbers or strings).") from None
    if check_count:
        check_class_count(estimator)
    return codes


def check_class_count(estimator):
    """Refuse fewer classes than the model's ``_min_classes``; warn of one."""
    classes = estimator.classes_
    name = type(estimator).__name__
    if len(classes) < estimator._min_classes:
        raise ValueError(
            f"The ratings contain only {len(classes)} class(es) ({classes.tolist()!r}); "
            f"{name} needs at least {estimator._min_classes} classes. "
            "Pass classes=[...] to name the scale."
        )
    if len(classes) == 1:
        warnings.warn(
            f"The ratings contain only one class ({show(classes[0])}); "
            "every item will get it. Pass classes=[...] to name the scale.",
            UserWarning,
        )


def _check_class_order(estimator):
    """``classes_`` is sorted whatever the order of ``classes=``; where that
    order would mean something (a ``class_prior`` or OrdinalMixture's
    ``spam_distribution`` of numbers, which follow ``classes_``; IRT3PL's
    positive class ``classes_[1]``), an unsorted
    ``classes`` is refused rather than silently read in another order."""
    given = np.asarray(estimator.classes)
    if np.array_equal(given, estimator.classes_):
        return
    reasons = []
    pd = loaded_pandas()
    for name in ("class_prior", "spam_distribution"):  # one value per class
        values = getattr(estimator, name, None)
        if pd is not None and isinstance(values, pd.Series):
            continue  # aligned by class label (per_class): the order is not used
        if values is not None and not isinstance(values, str):
            reasons.append(f"{name}={np.asarray(values).tolist()!r} is read in that order")
    if getattr(estimator, "_positive_class_is_last", False):
        reasons.append(f"the positive class is classes_[1] = {show(estimator.classes_[1])}")
    if reasons:
        raise ValueError(
            f"classes={given.tolist()!r} is not sorted; {type(estimator).__name__} sorts "
            f"them (classes_ = {estimator.classes_.tolist()!r}), and "
            + " and ".join(reasons) + ". Pass classes in sorted order (and per-class "
            "values in the same order)."
        )


def set_raters(estimator, rater_ids, *, by_position=False):
    """Record the raters of a fit on ``estimator``: ``rater_ids_``,
    ``n_features_in_``, and whether the raters are only column positions
    (a matrix fit) rather than ids, which the columns of a wide DataFrame
    must then match (:func:`check_rater_columns`)."""
    estimator.rater_ids_ = rater_ids
    estimator.n_features_in_ = len(rater_ids)
    estimator._raters_by_position = by_position


def check_rater_columns(estimator, columns):
    """The columns of a wide DataFrame given to a fitted model are rater
    ids: unless the model's raters are only positions, they must be its
    raters in the order of ``rater_ids_`` (read by position, other columns
    would silently be other raters).  scikit-learn checks string column
    names of a wide fit; this covers the rest (integer and tuple names, a
    fit on long form or a Ratings, a partial_fit stream)."""
    if getattr(estimator, "_raters_by_position", True):
        return
    fitted = list(estimator.rater_ids_)
    given = list(columns)
    if given == fitted:
        return
    j = next((j for j, (a, b) in enumerate(zip(given, fitted)) if a != b),
             min(len(given), len(fitted)))
    found = show(given[j]) if j < len(given) else "missing"
    expected = show(fitted[j]) if j < len(fitted) else "no column"
    raise ValueError(
        f"The columns of a wide DataFrame are rater ids, and these are not the raters "
        f"{type(estimator).__name__} was fitted with, in their order: column {j} is "
        f"{found} where {expected} is expected. Select the columns as "
        "X[model.rater_ids_], or pass long form or a Ratings, which map raters by id."
    )


def map_raters(ratings, fitted_ids, model_name, unknown_raters="error"):
    """Rater codes of a :class:`Ratings` in the columns seen in fit.

    A rater not seen in fit is an error naming it and the option; with
    ``unknown_raters="prior"`` its ratings get the code ``len(fitted_ids)``:
    one extra column that the model fills with its population (prior)
    parameters.
    """
    fitted = np.asarray(fitted_ids)
    ids = ratings.rater_ids
    if len(ids) == len(fitted) and np.array_equal(ids, fitted):
        return ratings._rater
    try:
        order = np.argsort(fitted, kind="stable")
        pos = np.minimum(np.searchsorted(fitted[order], ids), max(len(fitted) - 1, 0))
        unknown = fitted[order][pos] != ids
    except TypeError:
        raise _incomparable("Rater", ids, fitted, "seen in fit") from None
    used = np.zeros(len(ids), dtype=bool)
    used[np.unique(ratings._rater)] = True
    codes = order[pos].astype(np.int32)
    if np.any(unknown & used):
        if unknown_raters != "prior":
            first = ids[np.argmax(unknown & used)]
            raise ValueError(
                f"Rater {show(first)} was not seen in fit; {model_name} has no "
                "parameters for it. Pass unknown_raters='prior' to score new raters "
                "with the model's population (prior) parameters."
            )
        codes[unknown] = len(fitted)
    return codes[ratings._rater]


#: what an empty X of each form is, for the error (arrays and wide frames
#: get scikit-learn's "Found array with 0 sample(s)" from check_array)
_EMPTY_FORMS = {"long": "a long-form table with no rows", "ratings": "a Ratings with no items"}


def encode(estimator, X, *, reset, y=None, allow_empty=False):
    """The input boundary: any accepted ``X`` (and the known labels ``y`` of
    a fit) as one :class:`RatingData`.

    With ``reset=True`` (fit) this sets ``classes_``, ``n_features_in_`` and
    ``rater_ids_`` (and ``feature_names_in_`` for a wide DataFrame) on the
    estimator, as scikit-learn's ``validate_data`` does; otherwise it checks
    ``X`` against them and maps raters by id.  The result has one extra
    rater column (code ``n_features_in_``) when ``unknown_raters="prior"``
    and ``X`` has raters not seen in fit.

    ``y`` (see :func:`gold_per_item`) becomes ``gold``, the class code of
    each item's known label; with ``reset=True`` its labels count among the
    classes (:func:`add_gold_classes`), so they are counted against the
    model's fewest classes only once they have joined.

    An ``X`` without items is a ValueError (``fit`` says it has no ratings);
    ``allow_empty=True`` is for the Dask path, which builds the empty
    results of empty partitions and its meta from the in-memory code.
    """
    ratings, form, scale = to_ratings(estimator, X, reset=reset)
    if not reset and not allow_empty and len(ratings) == 0:
        # predict / score on it returned empty results and score() NaN (the
        # mean of nothing); scikit-learn refuses 0 samples, as check_array
        # does here for arrays and wide frames
        raise ValueError(
            f"X is empty: it has no items ({_EMPTY_FORMS.get(form, form)}), so there is "
            "nothing to predict or score."
        )
    n_raters = None
    codes = None
    if reset:
        if form == "wide":
            # the column names; scikit-learn sets ``feature_names_in_`` only
            # when they are all strings (``pd.DataFrame(matrix)`` has integers)
            set_raters(estimator, getattr(estimator, "feature_names_in_",
                                          np.asarray(X.columns)))
        elif form == "matrix":
            set_raters(estimator, np.arange(ratings.shape[1]), by_position=True)
        else:
            set_raters(estimator, ratings.rater_ids)
            if hasattr(estimator, "feature_names_in_"):
                del estimator.feature_names_in_
        rater = ratings._rater
        if ratings.n_ratings == 0:
            raise ValueError(NO_RATINGS)
        labels = _check_wide_labels(ratings.label) if (
            form == "wide" and estimator.classes is None and scale is None) else ratings.label
        codes = fit_classes(estimator, labels, scale, check_count=y is None)
        if labels is not ratings.label:
            codes = None
    elif form in ("long", "ratings"):
        rater = map_raters(ratings, estimator.rater_ids_, type(estimator).__name__,
                           getattr(estimator, "unknown_raters", "error"))
        if len(rater) and rater.max() >= estimator.n_features_in_:
            n_raters = estimator.n_features_in_ + 1
    else:
        rater = ratings._rater
    if codes is None:
        codes = encode_labels(ratings.label, estimator.classes_)
    # the table (its rows are ratings), to tell one of its columns from
    # per-item values (see check_not_a_rating_column); a reference, not a copy
    table = X if form == "long" else None
    item_name = item_name_of(X, form)
    gold = None
    if y is not None:
        check_not_a_column_of(y, table, len(ratings), item_name, "y")
        positions, labels = gold_per_item(y, ratings.item_ids, ids_are_rows=form == "matrix")
        if reset:
            if add_gold_classes(estimator, y, labels):
                codes = encode_labels(ratings.label, estimator.classes_)
            check_class_count(estimator)
        gold = gold_codes(len(ratings), positions, labels, estimator.classes_)
    return encoded_ratings(ratings, rater, codes, n_raters or estimator.n_features_in_,
                           len(estimator.classes_), form, item_name=item_name, gold=gold,
                           table=table)


def encoded_ratings(ratings, rater, codes, n_raters, n_classes, form=None, **fields):
    """The one place a :class:`RatingData` is built from a :class:`Ratings`
    (its items, in order) and the model's rater and label codes (``fields``:
    ``item_name``, ``gold``, ``table``).  :func:`encode` and
    :func:`encode_batch` call it, and so can the Dask partitions."""
    return RatingData(ratings._item, rater, codes, ratings._item_ptr, n_raters=n_raters,
                      n_classes=n_classes, item_ids=ratings.item_ids, form=form,
                      ratings=ratings, **fields)


def with_gold_labels(labels, gold_labels):
    """The ratings' labels and y's, for the classes: integral gold values
    keep integer ratings' dtype (y arrives as floats when it has NaN)."""
    if (labels.dtype.kind in "iu" and gold_labels.dtype.kind == "f"
            and np.all(gold_labels == np.round(gold_labels))):
        gold_labels = gold_labels.astype(labels.dtype)
    return np.concatenate([labels, gold_labels])


def add_gold_classes(estimator, y, labels):
    """Add what the known labels ``y`` name (:func:`gold_levels`: its known
    ``labels``, and a categorical y's categories) to ``estimator.classes_``
    unless ``classes=`` names the scale; returns whether the classes grew.
    The same for fit and a stream's first batch, whether the classes came
    from the labels or a categorical column's categories."""
    levels = gold_levels(y, labels)
    if estimator.classes is not None or not len(levels):
        return False
    if (estimator.classes_.dtype.kind == "O") != (levels.dtype.kind == "O"):
        raise ValueError("The labels of y and of the ratings are of different types "
                         "(numbers and strings).")
    union = np.unique(with_gold_labels(estimator.classes_, levels))
    if len(union) == len(estimator.classes_):
        return False
    estimator.classes_ = union
    return True


def gold_codes(n_items, positions, labels, classes):
    """The class code of each item's known label (-1: not known), from
    :func:`gold_per_item`'s ``positions`` and ``labels``."""
    gold = np.full(n_items, -1, dtype=np.int32)
    # integral floats (y with NaN) as the classes' integers: an error then
    # names the label 2, not 2.0
    labels = with_gold_labels(classes[:0], labels)
    try:
        gold[positions] = encode_labels(labels, classes)
    except ValueError as error:
        raise ValueError(f"y: {error}") from None
    return gold


def encode_batch(estimator, X, y, *, first):
    """A batch of a ``partial_fit`` stream as :class:`RatingData`: raters
    matched by id to those the stream has seen (``estimator.rater_ids_``),
    raters not seen before appended after them, classes fixed by the
    ``first`` batch (with ``y``'s labels) or by ``classes``.

    Nothing is recorded on ``estimator`` (a refused batch leaves it as it
    was): returns the batch, the number of raters seen before it, the
    stream's rater ids and classes with this batch, and whether the raters
    are still only column positions (every batch an unnamed matrix).
    """
    # Read on a copy: scikit-learn's validation sets n_features_in_.
    reader = copy.copy(estimator)
    # every form read as fit reads it (a long-form DataFrame is ratings,
    # not a matrix whose raters are called item, rater and label)
    ratings, form, scale = to_ratings(reader, X, reset=True)
    if y is not None and form == "long":
        # as fit: a column of the table is one value per rating
        check_not_a_column_of(y, X, len(ratings), long_columns(X.columns)[0], "y")
    if form == "matrix" and not first and ratings.shape[1] != estimator.n_features_in_:
        # Unnamed columns are raters by position: another count
        # cannot be matched (a Ratings or named columns can).
        raise ValueError(
            f"X has {ratings.shape[1]} features, but {type(estimator).__name__} is "
            f"expecting {estimator.n_features_in_} features as input (unnamed columns are "
            "raters by position); pass a Ratings (or a DataFrame with rater names as "
            "columns) for batches with other raters."
        )
    ids = np.asarray(ratings.rater_ids)
    # Every batch, not only the first: a later batch of unrated items
    # would blend in empty statistics with weight eta_t and shrink the
    # stream's rater counts toward the prior.
    if ratings.n_ratings == 0:
        raise ValueError(NO_RATINGS)
    gold = None
    if first:
        gold = None if y is None else gold_per_item(
            y, ratings.item_ids, ids_are_rows=form == "matrix")
        fit_classes(reader, ratings.label, scale, check_count=gold is None)
        if gold is not None:
            # as fit: y's labels join the classes, also a scale's
            add_gold_classes(reader, y, gold[1])
            check_class_count(reader)
        known = ids
    else:
        known = np.asarray(estimator.rater_ids_)
        if estimator.classes is not None:
            declared = check_classes(estimator.classes)
            if declared.tolist() != estimator.classes_.tolist():
                # set_params(classes=...) after the first batch would be
                # ignored by the stream, silently
                raise ValueError(
                    f"classes is {declared.tolist()!r}, but this stream began with the "
                    f"classes {estimator.classes_.tolist()!r}: partial_fit keeps the "
                    "classes of its first batch. Start a new stream (fit, or partial_fit "
                    "on clone(model)) with the new classes."
                )
    classes = reader.classes_
    try:
        order = np.argsort(known, kind="stable")
        pos = np.minimum(np.searchsorted(known[order], ids), len(known) - 1)
        seen = known[order][pos] == ids
    except TypeError:
        raise ValueError("Rater ids are not comparable with those seen before.") from None
    codes = np.where(seen, order[pos], -1)
    new = np.flatnonzero(~seen)
    codes[new] = len(known) + np.arange(len(new))
    rater_ids = known
    if len(new):
        # One type for all rater ids, as in a Ratings (numpy would
        # turn a number into a string here: rater 5 into '5').
        try:
            unique_codes(np.concatenate([known.astype(object), ids[new].astype(object)]),
                         what="rater")
        except ValueError:
            raise ValueError(
                f"The rater ids of this batch ({show(ids[new][0])}, ...) are not of the "
                f"type of those seen before ({show(known[0])}, ...): rater ids must all "
                "be of one type (numbers or strings)."
            ) from None
        rater_ids = np.concatenate([known, ids[new]])
    try:
        label_codes = encode_labels(ratings.label, classes)
    except ValueError as error:
        raise ValueError(f"{error} partial_fit keeps the classes of its first batch: "
                         "declare them all with classes=[...].") from None
    if y is not None:
        gold = gold_codes(len(ratings), *gold_per_item(
            y, ratings.item_ids, ids_are_rows=form == "matrix"), classes)
    data = encoded_ratings(ratings, codes.astype(np.int32)[ratings._rater], label_codes,
                           len(rater_ids), len(classes), "ratings", gold=gold)
    by_position = form == "matrix" and (first or estimator._raters_by_position)
    return data, len(known), rater_ids, classes, by_position


def check_not_a_rating_column(values, data, what):
    """A per-item argument (``y``, ``groups``) that is a column of the long
    table ``X`` holds one value per *rating*, indexed by the table's rows.
    Aligned "by item id", integer item ids that are also row labels would
    read item k's value from row k (another item's rating), silently.

    With one rating per item a per-item Series can have the very index of
    the table's rows (items 0..n-1 in a table with the default row labels),
    so the index alone does not tell; see :func:`_misread_column`."""
    check_not_a_column_of(values, data.table, data.n_items, data.item_name, what)


def check_not_a_column_of(values, table, n_items, item_name, what):
    """:func:`check_not_a_rating_column` for a long ``table`` (or None: not
    long form) of ``n_items`` items whose item column is ``item_name``."""
    pd = loaded_pandas()
    if (table is None or pd is None or not isinstance(values, pd.Series)
            or not values.index.equals(table.index)):
        return
    if len(table) == n_items and not _misread_column(values, table, item_name):
        return
    name = item_name or "item"
    raise ValueError(
        f"{what} is a column of the long table (one value per rating, indexed by the "
        f"table's rows), not one value per item; pass one per item, indexed by item "
        f"id, e.g. df.groupby({name!r})[column].first()."
    )


def _misread_column(values, table, item_column):
    """Whether ``values``, with the index of a long ``table`` that has one
    rating per item, is that table's column and reading it by item id would
    give items other values than their own rows hold.

    Refused only when all of these hold, so that a per-item Series that
    merely shares the table's index is never refused: it has a column's
    name and index name and equals that column value for value (a column
    taken from the table), every item id is a row label (else aligning by id
    names the missing one), and some item's row is not the row its id labels
    (read by id, it would get another item's value).  A column whose values
    come out the same either way is harmless and accepted."""
    pd = loaded_pandas()
    name = values.name
    try:
        column = table[name] if name in table.columns else None
    except TypeError:  # an unhashable name is no column name
        return False
    if (not isinstance(column, pd.Series) or list(values.index.names) != list(table.index.names)
            or not values.equals(column)):
        return False
    items = table[item_column]
    if not items.isin(values.index).all():
        return False
    by_row = values.to_numpy(dtype=object)
    by_id = values.reindex(items.to_numpy()).to_numpy(dtype=object)
    same = (by_row == by_id) | (is_missing(by_row) & is_missing(by_id))
    return not np.all(same)


def item_name_of(X, form):
    if form == "long":
        return long_columns(X.columns)[0]
    if form == "wide":
        return X.index.name
    return "item" if form == "ratings" else None


def check_groups_present(groups, item_ids):
    """A missing group (NaN, None, ``pd.NA``) is no group: an item without
    one is a ValueError naming it (``item_ids`` in the order of ``groups``,
    or None for row numbers).  NaN was fitted as a group of its own before,
    silently, and None was 'groups must all be of one comparable type'."""
    missing = is_missing(groups)
    if np.any(missing):
        row = int(np.argmax(missing))
        item = row if item_ids is None else np.asarray(item_ids)[row]
        raise ValueError(
            f"groups must not be missing (NaN or None): item {show(item)} has no group. "
            "Give it a group (one of its own, say) or drop its ratings."
        )


def encode_groups(groups, item_ids):
    """Codes of per-item ``groups`` (1-D, in item order; ``item_ids`` name
    the items in errors, None for row numbers) into their sorted distinct
    values, as ``(group_ids, codes)``.  A missing group is a ValueError
    (:func:`check_groups_present`), and so are groups that cannot be
    compared (``1`` with ``"a"``, where np.unique raised a TypeError)."""
    check_groups_present(groups, item_ids)
    try:
        ids, codes = np.unique(groups, return_inverse=True)
    except TypeError:
        raise mixed_groups_error(groups) from None
    return ids, codes.astype(np.int32).ravel()


def per_item(values, data, what):
    """Per-item ``values`` in the row order of ``data``: a pandas Series is
    aligned by item id (every item of ``data`` must be in its index); any
    other array-like is taken in row order, as given.  A matrix's items are
    its rows and have no ids: a Series is then in row order too, whatever
    its index (keyed as row numbers, a reordered table's column gave items
    other items' values)."""
    check_not_a_rating_column(values, data, what)
    return aligned_by_id(values, None if data.form == "matrix" else data.item_ids, what)


def aligned_by_id(values, ids, what, kind="item"):
    """``values`` in the order of the item (``kind="rater"``: rater) ids
    ``ids``: a pandas Series is aligned by its index (every id must be in
    it); any other array-like, or any ``values`` when ``ids`` is None, is
    taken in order, as given."""
    pd = loaded_pandas()
    if pd is None or not isinstance(values, pd.Series) or ids is None:
        return np.asarray(values)
    index = values.index
    if not index.is_unique:
        raise ValueError(f"{what} is a Series whose index ({kind} ids) has repeated ids.")
    missing = ~pd.Index(ids).isin(index)
    if missing.any():
        noun = "label" if kind == "class" else "id"
        raise ValueError(
            f"{what} is a Series indexed by {kind} {noun}, but {kind} "
            f"{show(np.asarray(ids)[np.argmax(missing)])} is not in its index."
        )
    return values.loc[ids].to_numpy()


def per_class(values, classes, what):
    """A per-class parameter (``class_prior``, ``spam_distribution``) in
    the order of ``classes_``: a pandas Series is aligned by class label
    (``df["label"].value_counts(normalize=True)`` is ordered by count, and
    read by position it gave each class another class's value); anything
    else is taken in order, as given."""
    return aligned_by_id(values, classes, what, kind="class")


def fixed_class_prior(values, classes, allowed=""):
    """A class prior held fixed, given as numbers (``class_prior``): one
    positive number per class, summing to 1, in the order of ``classes``
    (a pandas Series aligned by class label, see :func:`per_class`); else a
    ValueError whose message names the other accepted values ``allowed``."""
    prior = np.asarray(per_class(values, classes, "class_prior"), dtype=np.float64)
    n_classes = len(classes)
    if prior.shape != (n_classes,) or np.any(prior <= 0) or not np.isclose(prior.sum(), 1):
        raise ValueError(
            f"class_prior must be {allowed}{n_classes} positive numbers summing to 1, "
            f"one per class; got {values!r}."
        )
    return prior

