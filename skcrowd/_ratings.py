"""The data layer: the long-form :class:`Ratings` container and the conversion
of every accepted input into the internal form the kernels read.

A rating is a triple (item, rater, label).  The scikit-learn view is a matrix
with one row per item and one column per rater; the long view keeps every
rating, repeats included.  Both are converted once, at the boundary, into
:class:`RatingData`: int32 item codes sorted by item with a CSR ``item_ptr``
index, int32 rater codes and int32 label codes.  Kernels see only that.
"""

from functools import cached_property
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["Ratings"]


def show(value):
    """``repr`` of a numpy scalar as the plain Python value (for messages)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_missing(values):
    """Boolean mask of missing entries: NaN for floats, None or NaN for objects."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind == "O":
        return np.fromiter(
            (v is None or (isinstance(v, float) and v != v) for v in values.ravel()),
            dtype=bool,
            count=values.size,
        ).reshape(values.shape)
    return np.zeros(values.shape, dtype=bool)


def _as_label_array(labels):
    """Normalise observed labels to float64 (numbers) or object (strings).

    Object arrays holding numbers become float64 so that ``1`` and ``1.0`` are
    one class.  Anything that is neither a number nor a string raises the
    ``TypeError`` that ``float()`` raises for it.
    """
    labels = np.asarray(labels)
    if labels.dtype.kind in "biuf":
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise ValueError("Labels must be finite; found inf among the ratings.")
        return labels
    if labels.dtype.kind == "c":
        raise ValueError("Complex data not supported as labels.")
    if labels.dtype.kind in "US":
        return labels.astype(object)
    if labels.dtype.kind != "O":
        raise ValueError(f"Unsupported label dtype {labels.dtype}.")
    try:
        numeric = labels.astype(np.float64)
    except ValueError:
        # Strings: every label must then be a string, or they cannot be ordered.
        kinds = {type(v) for v in labels}
        if not all(issubclass(k, str) for k in kinds):
            names = sorted(k.__name__ for k in kinds)
            raise ValueError(
                f"Labels mix strings with other types ({', '.join(names)}); "
                "use one type for all labels."
            ) from None
        return labels
    if not np.all(np.isfinite(numeric)):
        raise ValueError("Labels must be finite; found inf among the ratings.")
    return numeric


def _unique_codes(values, ids=None, what="item"):
    """Codes of ``values`` into ``ids`` (the sorted unique values when None)."""
    try:
        if ids is None:
            ids, codes = np.unique(values, return_inverse=True)
            return np.asarray(ids), codes.astype(np.int32).ravel()
        ids = np.asarray(ids)
        order = np.argsort(ids, kind="stable")
    except TypeError:
        raise ValueError(f"{what} ids must all be of one type (numbers or strings).") from None
    sorted_ids = ids[order]
    if len(sorted_ids) > 1 and np.any(sorted_ids[1:] == sorted_ids[:-1]):
        raise ValueError(f"{what}_ids contains duplicates.")
    if len(values) == 0:
        return ids, np.zeros(0, dtype=np.int32)
    if len(ids) == 0:
        raise ValueError(f"{what} {show(values[0])} is not among the given {what}_ids.")
    pos = np.minimum(np.searchsorted(sorted_ids, values), len(ids) - 1)
    bad = sorted_ids[pos] != values
    if np.any(bad):
        raise ValueError(
            f"{what} {show(values[np.argmax(bad)])} is not among the given {what}_ids."
        )
    return ids, order[pos].astype(np.int32)


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
        item = np.asarray(item)
        rater = np.asarray(rater)
        label = np.asarray(label)
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
        if np.any(_is_missing(item)) or np.any(_is_missing(rater)):
            raise ValueError("item and rater ids must not be missing (NaN or None).")
        if np.any(_is_missing(label)):
            raise ValueError(
                "A rating has a missing label (NaN or None); drop unrated "
                "pairs before building Ratings."
            )
        item_ids, item_codes = _unique_codes(item, item_ids, "item")
        rater_ids, rater_codes = _unique_codes(rater, rater_ids, "rater")
        order = np.argsort(item_codes, kind="stable")
        self._set(
            item_codes[order],
            rater_codes[order],
            _as_label_array(label)[order],
            item_ids,
            rater_ids,
        )

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

        Parameters
        ----------
        df : pandas.DataFrame or mapping of str to array-like
            One row per rating.
        item, rater, label : str, default="item", "rater", "label"
            Column names.
        **kwargs
            ``item_ids`` and ``rater_ids``, passed to :class:`Ratings`.
        """
        missing = [c for c in (item, rater, label) if c not in df]
        if missing:
            raise ValueError(f"Columns {missing} are not in the table.")
        return cls(
            np.asarray(df[item]), np.asarray(df[rater]), np.asarray(df[label]), **kwargs
        )

    @classmethod
    def from_matrix(cls, X, *, item_ids=None, rater_ids=None):
        """Ratings from an ``(n_items, n_raters)`` matrix.

        Dense: NaN (or None in an object array) means *not rated*.  Sparse:
        every stored entry is a rating, explicit zeros included.
        """
        if sp.issparse(X):
            coo = sp.coo_matrix(X)
            rows, cols, labels = coo.row, coo.col, coo.data
            keep = ~_is_missing(labels)
            rows, cols, labels = rows[keep], cols[keep], labels[keep]
            order = np.lexsort((cols, rows))
            rows, cols, labels = rows[order], cols[order], labels[order]
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"Expected a 2D matrix of ratings, got {X.ndim}D.")
            rated = ~_is_missing(X)
            rows, cols = np.nonzero(rated)  # row-major: already sorted by item
            labels = X[rows, cols]
        n_items, n_raters = X.shape
        item_ids = np.arange(n_items) if item_ids is None else np.asarray(item_ids)
        rater_ids = np.arange(n_raters) if rater_ids is None else np.asarray(rater_ids)
        if len(item_ids) != n_items or len(rater_ids) != n_raters:
            raise ValueError("item_ids/rater_ids do not match the matrix shape.")
        return cls._from_sorted(rows, cols, _as_label_array(labels), item_ids, rater_ids)

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
        """The ratings as a dict of three columns ``item``, ``rater``, ``label``."""
        return {"item": self.item, "rater": self.rater, "label": self.label}

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
    item_ids : ndarray of shape (n_items,)
        The items' ids (default their positions): what per-item random
        starts are drawn from, so that they do not depend on how the items
        are laid out (in memory, or over Dask partitions).
    """

    def __init__(self, item, rater, label, item_ptr, n_raters, n_classes, item_ids=None):
        self.item = item
        self.rater = rater
        self.label = label
        self.item_ptr = item_ptr
        self.n_items = len(item_ptr) - 1
        self.n_raters = int(n_raters)
        self.n_classes = int(n_classes)
        self.item_ids = np.arange(self.n_items) if item_ids is None else item_ids

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
        return (self.rater.astype(np.int32) * np.int32(self.n_classes) + self.label).astype(
            np.int32
        )

    @cached_property
    def ratings_per_item(self):
        return np.diff(self.item_ptr)


def encode_labels(labels, classes):
    """Codes of ``labels`` into the sorted array ``classes``.

    Raises a ValueError naming the first label that is not a class.
    """
    classes = np.asarray(classes)
    if len(labels) == 0:
        return np.zeros(0, dtype=np.int32)
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
    classes = _as_label_array(np.asarray(classes).ravel())
    try:
        unique = np.unique(classes)
    except TypeError:
        raise ValueError("classes must all be of one type (numbers or strings).") from None
    if len(unique) != len(classes):
        raise ValueError(f"classes has repeated values: {classes.tolist()!r}.")
    if not isinstance(len(unique), Integral) or len(unique) == 0:
        raise ValueError("classes must not be empty.")
    return unique
