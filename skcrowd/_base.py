"""The plumbing every model shares: input encoding, the fit loop, the public
methods and the scikit-learn tags.

:class:`CrowdEstimator` turns any accepted ``X`` into :class:`RatingData`
and implements ``predict`` / ``predict_proba`` / ``transform`` /
``score_samples`` / ``score`` / ``sample`` on top of one per-item hook.
:class:`CrowdModel` adds the iterative fit loop of DESIGN §5: a local step over
items, a sum of sufficient statistics, a global update of the rater parameters
and an objective that must never decrease, with restarts and convergence
monitoring in the style of :class:`sklearn.mixture.GaussianMixture`.
"""

import copy
import sys
import threading
import warnings
from abc import abstractmethod
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from numbers import Integral, Real
from time import perf_counter
from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from . import _dask
from ._columns import class_columns
from ._kernels._common import count_codes, row_argmax
from ._ratings import (NO_RATINGS, RatingData, Ratings, _unique_codes, check_class_count,
                       check_classes, check_not_a_column_of, check_not_a_rating_column, encode,
                       encode_labels, fit_classes, gold_levels, gold_per_item, import_pandas,
                       long_columns, set_raters, show, to_ratings)
from ._splits import check_items_not_split, item_ratings

__all__ = ["CrowdEstimator", "CrowdModel", "Progress"]


@contextmanager
def numba_threads(n_jobs):
    """Run the enclosed kernels on ``n_jobs`` numba threads, then restore.

    ``None`` keeps the current setting; negative values count back from the
    number of cores as in joblib (-1 = all).
    """
    if n_jobs is None:
        yield
        return
    available = numba.config.NUMBA_NUM_THREADS
    n = n_jobs if n_jobs > 0 else max(1, available + 1 + n_jobs)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(n, available))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def item_chunks(n_items, stats_size, max_chunks=16, max_bytes=2**28):
    """Boundaries of the fixed blocks of items that parallel kernels sum
    their statistics over.

    Each block writes its own copy of the per-rater statistics
    (``stats_size`` floats), so the count depends only on the data shape and
    a memory budget, never on the number of threads: the serial sum of the
    blocks is then the same for any ``n_jobs``.
    """
    n_chunks = int(max(1, min(max_chunks, n_items, max_bytes // (8 * max(stats_size, 1)))))
    return np.linspace(0, n_items, n_chunks + 1).astype(np.int64)


def _splitmix64(x):
    """The splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def item_keys(item_ids):
    """The items' ids as uint64 keys for :func:`item_uniforms`, the same for
    every seed (hashing text ids is most of the cost: compute them once for
    several seeds).  Integer ids are taken as numbers, others hashed by
    their text (``str``)."""
    ids = np.asarray(item_ids)
    if ids.dtype.kind in "iub":
        return ids.astype(np.int64).view(np.uint64)
    if ids.dtype.kind == "f":
        return ids.astype(np.float64).view(np.uint64)
    text = ids.astype(str)
    codes = text.view(np.uint32).reshape(len(text), -1).astype(np.uint64)
    keys = np.zeros(len(text), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in codes.T:  # the padding (code 0) of shorter ids is skipped
            keys = np.where(column != 0, _splitmix64(keys ^ column), keys)
    return keys


def item_uniforms(item_ids, seed, keys=None):
    """One uniform number in (0, 1) per item, a function of the item's id
    and ``seed`` only: the same for an item wherever it sits (in memory, in
    any Dask partition, in a cross-validation fold), so that random starts
    do not depend on how the items are laid out.  ``keys``: the ids'
    :func:`item_keys`, when already computed."""
    if keys is None:
        keys = item_keys(item_ids)
    with np.errstate(over="ignore"):
        hashed = _splitmix64(keys ^ _splitmix64(np.uint64(seed)))
    return ((hashed >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def item_ids_of(data):
    """The items' ids of encoded ``data`` (their positions when it has none)."""
    return np.arange(data.n_items) if data.item_ids is None else data.item_ids


def item_normals(item_ids, seed, keys=None):
    """One standard normal per item (see :func:`item_uniforms`)."""
    return ndtri(item_uniforms(item_ids, seed, keys))


def item_dirichlet(item_ids, seed, n_classes):
    """One Dirichlet(1, ..., 1) row per item, as normalised exponentials of
    :func:`item_uniforms` (seeds ``seed`` ... ``seed + n_classes - 1``): a
    random start of the items' posteriors that is the same in memory and in
    any Dask partition."""
    keys = item_keys(item_ids)
    rows = -np.log(np.column_stack(
        [item_uniforms(item_ids, seed + k, keys) for k in range(n_classes)]))
    return rows / rows.sum(axis=1, keepdims=True)


def draw_categorical(probabilities, rng):
    """One draw per row of an ``(n, K)`` matrix of probabilities, as int32."""
    cdf = np.cumsum(probabilities, axis=1)
    u = rng.random(len(probabilities)) * cdf[:, -1]
    draws = (u[:, None] > cdf).sum(axis=1)
    return np.minimum(draws, probabilities.shape[1] - 1).astype(np.int32)


def _with_gold_labels(labels, gold_labels):
    """The ratings' labels and y's, for the classes: integral gold values
    keep integer ratings' dtype (y arrives as floats when it has NaN)."""
    if (labels.dtype.kind in "iu" and gold_labels.dtype.kind == "f"
            and np.all(gold_labels == np.round(gold_labels))):
        gold_labels = gold_labels.astype(labels.dtype)
    return np.concatenate([labels, gold_labels])


def _add_gold_classes(estimator, y, labels):
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
    union = np.unique(_with_gold_labels(estimator.classes_, levels))
    if len(union) == len(estimator.classes_):
        return False
    estimator.classes_ = union
    return True


def _set_gold(data, positions, labels, classes):
    """``data.gold``: the class code of each item's known label (-1: not
    known), from :func:`gold_per_item`'s ``positions`` and ``labels``."""
    data.gold = np.full(data.n_items, -1, dtype=np.int32)
    # integral floats (y with NaN) as the classes' integers: an error then
    # names the label 2, not 2.0
    labels = _with_gold_labels(classes[:0], labels)
    try:
        data.gold[positions] = encode_labels(labels, classes)
    except ValueError as error:
        raise ValueError(f"y: {error}") from None


def has_gold(data):
    """Whether ``data`` (a fit's encoded ratings) has any known item."""
    gold = getattr(data, "gold", None)
    return gold is not None and bool(np.any(gold >= 0))


def apply_evidence(posterior, data):
    """Starting posteriors with the known items clamped to their class (in
    place; returned), as the local steps clamp them through
    ``data.evidence``."""
    if data.gold is not None:
        known = np.flatnonzero(data.gold >= 0)
        posterior[known] = 0.0
        posterior[known, data.gold[known]] = 1.0
    return posterior


class _State(NamedTuple):
    """The loop's state after one pass over the data at ``params``."""

    params: dict
    items: dict
    stats: dict
    objective: float


class _Run(NamedTuple):
    """The end of one restart."""

    params: dict
    items: dict
    history: list
    n_iter: int
    converged: bool
    n_extrapolated: int
    seconds: float
    #: where the loop stood (to go on from it: screened restarts) and the
    #: SQUAREM longest step there
    state: object = None
    step_max: float = 1.0


class Progress:
    """Live progress lines of a fit, tagged and safe to call from threads.

    ``verbose=1`` prints a line when each restart starts and ends, and one
    iteration line at most every ``every`` seconds of a restart (a long fit
    is never silent); ``verbose=2`` prints every iteration.  Each line names
    the model and the restart and ends with the seconds since the fit
    started; a lock keeps lines from restarts in different threads whole,
    and each is flushed as soon as it is written.

    Parameters
    ----------
    name : str
        The model's name, the start of every tag.
    verbose : int
        0 prints nothing.
    n_init : int
        Number of restarts (shown in the tag).
    every : float, default=10.0
        With ``verbose=1``: seconds between iteration lines of one restart.
    stream : file-like, default=None
        Where to write; ``None`` is ``sys.stdout`` at the time of writing.

    Examples
    --------
    >>> from skcrowd._base import Progress
    >>> progress = Progress("DawidSkene", verbose=2, n_init=1)
    >>> progress.iteration(0, 3, -1.25, 0.01, None)  # doctest: +ELLIPSIS
    [DawidSkene restart 1/1] iteration 3  objective -1.25  change 0.01  (...s)
    """

    def __init__(self, name, verbose, n_init, every=10.0, stream=None):
        self.name = name
        self.verbose = int(verbose)
        self.n_init = n_init
        self.every = every
        self.stream = stream
        self.started = perf_counter()
        self._lock = threading.Lock()
        self._last = {}

    def _write(self, restart, text):
        line = (f"[{self.name} restart {restart + 1}/{self.n_init}] {text}  "
                f"({perf_counter() - self.started:.2f}s)")
        with self._lock:
            print(line, file=self.stream or sys.stdout, flush=True)

    def begin(self, restart):
        """A restart starts."""
        if self.verbose:
            self._last[restart] = perf_counter()
            self._write(restart, "started")

    def iteration(self, restart, n_iter, objective, change, restart_started,
                  extrapolated=None):
        """Iteration ``n_iter`` (a pass over the data) reached ``objective``;
        ``extrapolated`` is the step length of an accepted SQUAREM step."""
        if not self.verbose:
            return
        now = perf_counter()
        if self.verbose < 2:
            if now - self._last.get(restart, now) < self.every:
                return
            self._last[restart] = now
        kind = "" if extrapolated is None else f"  extrapolated (step {-extrapolated:.3g})"
        self._write(restart, f"iteration {n_iter}  objective {objective:.8g}  "
                             f"change {change:.3g}{kind}")

    def end(self, restart, run, screened=False):
        """A restart ended with ``run`` (``screened``: stopped after the
        screening iterations, not continued)."""
        if self.verbose:
            state = "converged" if run.converged else "did not converge"
            if screened and not run.converged:
                state = "screened"
            extra = (f" ({run.n_extrapolated} extrapolated)" if run.n_extrapolated else "")
            self._write(restart, f"{state} after {run.n_iter} iterations{extra} in "
                                 f"{run.seconds:.2f}s, objective {run.history[-1]:.8g}")


class CrowdEstimator(TransformerMixin, BaseEstimator):
    """Base class of every skcrowd estimator (not to be used directly).

    Rows of ``X`` are items and columns are raters; see :class:`Ratings` for
    the long form.  A subclass implements :meth:`_fit_encoded` (fit on the
    encoded training data, returning its per-item state) and
    :meth:`_infer_items` (per-item inference with the fitted rater parameters
    held fixed), which returns a dict with at least ``"proba"`` (the posterior
    over the true class, ``(n_items, n_classes)``) and ``"loglik"`` (each
    item's log marginal likelihood).
    """

    _parameter_constraints: dict = {
        "classes": ["array-like", None],
        "unknown_raters": [StrOptions({"error", "prior"})],
    }

    #: fewest classes the model can be fitted with
    _min_classes = 1

    # -- input ----------------------------------------------------------------
    def _encode(self, X, reset, y=None, allow_empty=False):
        """``X`` as :class:`RatingData`, through the data layer (every input
        form, missing values, rater ids and label encoding live there).

        With ``reset=True`` (fit) this sets ``classes_``, ``n_features_in_``
        and ``rater_ids_``; otherwise it checks ``X`` against them.  ``y``
        (fit only): the known true labels, stored as ``data.gold`` (see
        :func:`gold_per_item`); their labels count among the classes.
        """
        data = encode(self, X, reset=reset, allow_empty=allow_empty,
                      check_count=y is None or not reset)
        if y is None:
            return data
        # the known labels (fit): their labels count among the classes
        check_not_a_rating_column(y, data, "y")
        positions, labels = gold_per_item(y, data.item_ids if data.item_ids is not None
                                          else np.arange(data.n_items),
                                          ids_are_rows=data.form == "matrix")
        if reset:
            if _add_gold_classes(self, y, labels):
                data.label = encode_labels(data.ratings.label, self.classes_)
                data.n_classes = len(self.classes_)
                data.__dict__.pop("cell", None)
            check_class_count(self)
        _set_gold(data, positions, labels, self.classes_)
        return data

    def _as_output(self, X, data, codes):
        """Ratings with new label codes, in the form of the input ``X``."""
        labels = self.classes_[codes]
        if data.form in ("long", "ratings"):
            source = data.ratings
            sim = Ratings._from_sorted(data.item, source._rater, labels, source.item_ids,
                                       source.rater_ids)
            if data.form == "ratings":
                return sim
            names = dict(zip(("item", "rater", "label"), long_columns(X.columns)))
            return sim.to_long().rename(columns=names)
        shape = (data.n_items, data.n_raters)
        if sp.issparse(X):
            return sp.csr_matrix((labels, (data.item, data.rater)), shape=shape)
        out = np.full(shape, None if labels.dtype.kind == "O" else np.nan,
                      dtype=object if labels.dtype.kind == "O" else np.float64)
        out[data.item, data.rater] = labels
        if data.form == "wide":  # the same table: its item index, its rater columns
            return import_pandas("a wide table").DataFrame(out, index=X.index, columns=X.columns)
        return out

    # -- output: results labelled by item id ------------------------------------
    #: name of the ``predict`` Series (pandas results)
    _prediction_name = "label"

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of :meth:`transform` / :meth:`predict_proba`
        with ``set_output(transform="pandas")``: the classes, as strings
        (without it, a long-form DataFrame's results name their columns by
        the classes themselves).

        Parameters
        ----------
        input_features : array-like of str, default=None
            Checked against the rater columns seen in fit; not used.

        Returns
        -------
        names : ndarray of str objects of shape (n_classes,)
        """
        check_is_fitted(self)
        # scikit-learn's own validation of input_features (length, names).
        _check_feature_names_in(self, input_features)
        return np.asarray([str(c) for c in self.classes_], dtype=object)

    def _pandas_results(self, data):
        """Results as pandas objects indexed by item id: when
        ``set_output(transform="pandas")`` is configured, or when ``X`` was a
        long-form DataFrame (whose rows are ratings, not items, so a bare
        array could only be matched to items by position in the sorted ids)."""
        return data.form == "long" or _get_output_config("transform", self)["dense"] == "pandas"

    def _item_index(self, data):
        pd = import_pandas("pandas output")
        if data.form == "matrix":
            return pd.RangeIndex(data.n_items)
        return pd.Index(data.item_ids, name=data.item_name)

    def _labelled(self, data, values, what):
        """``values`` (per item) as the result of ``X``'s form: a DataFrame
        or Series indexed by item id (see :meth:`_pandas_results`), else as is."""
        if not self._pandas_results(data):
            return values
        pd = import_pandas("pandas output")
        index = self._item_index(data)
        if what == "proba":
            return pd.DataFrame(values, index=index, columns=class_columns(self))
        name = self._prediction_name if what == "label" else "log_likelihood"
        return pd.Series(values, index=index, name=name)

    def _results(self, X, what, **params):
        """Per-item results for ``X``: ``"label"`` (predict), ``"proba"``
        or ``"loglik"`` (score_samples); ``params`` go to the model's
        item inference (e.g. OrdinalMixture's ``groups``)."""
        check_is_fitted(self)
        if _dask.is_dask_frame(X):
            return _dask.infer_frame(self, X, what)
        data = self._encode(X, reset=False)
        model = self._with_unknown_raters(data)
        if what == "loglik":
            check_items_not_split(self, data)
            values = model._score_items(data, **params)
            # Exactly 0 for an item without ratings (not log Σπ rounded).
            values[data.ratings_per_item == 0] = 0.0
        else:
            items = model._infer_items(data, **params)
            values = items["proba"] if what == "proba" else model._predict_from_items(items)
        return self._labelled(data, values, what)

    # -- raters not seen in fit (unknown_raters="prior") ---------------------------
    #: fitted per-rater attributes (first axis: raters) that item inference reads
    _rater_attributes = ()

    def _population_rater(self):
        """The parameters of a rater not seen in fit, one value per name in
        ``_rater_attributes``.  Default: the mean over the fitted raters,
        weighted by their numbers of ratings in fit (a model with a fitted
        population distribution overrides this)."""
        weights = self._rating_weights()
        return {name: np.average(getattr(self, name), axis=0, weights=weights)
                for name in self._rater_attributes}

    def _rating_weights(self):
        """Each fitted rater's number of ratings in fit (all ones if none)."""
        weights = np.asarray(self._rater_counts, dtype=np.float64)
        return weights if weights.sum() > 0 else np.ones_like(weights)

    def _with_unknown_raters(self, data):
        """The model to run on ``data``: itself, or (when ``data`` has raters
        not seen in fit, code ``n_features_in_``) a shallow copy whose
        per-rater attributes have one more rater, the population rater.
        The estimator itself is never changed by predict."""
        if data.n_raters <= self.n_features_in_:
            return self
        model = copy.copy(self)
        for name, value in self._population_rater().items():
            setattr(model, name, np.concatenate([getattr(self, name), np.asarray(value)[None]]))
        return model

    # -- diagnostics tables ----------------------------------------------------------
    def _rater_diagnostics(self):
        """The model's per-rater columns for :meth:`rater_table` (a dict of
        arrays of length ``n_features_in_``)."""
        return {}

    def _item_diagnostics(self, data, items):
        """The model's per-item columns for :meth:`item_table`, from the
        item-level state ``items``."""
        return {}

    def rater_table(self):
        """Per-rater diagnostics of the fitted model, one row per rater.

        Returns
        -------
        table : pandas.DataFrame
            Indexed by rater id (``rater_ids_``); the column ``n_ratings``
            (ratings in fit) and the model's rater parameters, listed in
            :ref:`result_tables`.

        Examples
        --------
        >>> import pandas as pd
        >>> from skcrowd import DawidSkene
        >>> df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": ["ann", "bob"] * 3,
        ...                    "label": ["y", "y", "n", "y", "n", "n"]})
        >>> DawidSkene().fit(df).rater_table().columns.tolist()
        ['n_ratings', 'accuracy', 'recall_n', 'recall_y']
        """
        check_is_fitted(self)
        pd = import_pandas("rater_table")
        table = {"n_ratings": self._rater_counts, **self._rater_diagnostics()}
        return pd.DataFrame(table, index=pd.Index(self.rater_ids_, name="rater"))

    def item_table(self, X, **params):
        """Per-item diagnostics for the items of ``X``, one row per item.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            Ratings of the items, in any form ``fit`` accepts.
        **params
            Passed to the item inference (OrdinalMixture's ``groups``).

        Returns
        -------
        table : pandas.DataFrame
            Indexed by item id (as :meth:`predict` with pandas output):
            ``n_ratings``; the prediction (``label``, or ``mean`` /
            ``median``); for a class prediction its posterior
            ``probability``; the posterior ``entropy`` (nats); the
            ``log_likelihood`` of the item's ratings; and the model's item
            parameters (user guide, :ref:`result_tables`).  For a dask DataFrame
            of ratings: a dask DataFrame of the same table (OrdinalMixture's
            ``groups`` names the group column, as in ``predict``).

        Examples
        --------
        >>> import pandas as pd
        >>> from skcrowd import MajorityVote
        >>> df = pd.DataFrame({"item": ["q1", "q1", "q2"], "rater": [1, 2, 1],
        ...                    "label": [1, 1, 0]})
        >>> MajorityVote().fit(df).item_table(df)[["n_ratings", "label", "probability"]]
              n_ratings  label  probability
        item                               
        q1            2      1          1.0
        q2            1      0          1.0
        """
        check_is_fitted(self)
        pd = import_pandas("item_table")
        if _dask.is_dask_frame(X):
            # the in-memory table of each partition's items, as a dask
            # DataFrame (OrdinalMixture: groups names the group column)
            groups = params.pop("groups", None) if hasattr(self, "_dask_infer") else None
            if params:
                raise TypeError(f"{type(self).__name__}.item_table got unexpected arguments "
                                f"{sorted(params)}.")
            if hasattr(self, "_dask_infer"):
                return self._dask_infer(X, "table", groups)
            return _dask.infer_frame(self, X, "table")
        return self._item_table(X, **params)

    def _item_table(self, X, allow_empty=False, **params):
        """:meth:`item_table` of in-memory ``X``; ``allow_empty`` for the
        Dask path (an empty partition's table, and the meta)."""
        pd = import_pandas("item_table")
        data = self._encode(X, reset=False, allow_empty=allow_empty)
        model = self._with_unknown_raters(data)
        items = model._infer_items(data, **params)
        proba = items["proba"]
        table = {"n_ratings": data.ratings_per_item,
                 self._prediction_name: model._predict_from_items(items)}
        if self._prediction_name == "label":
            table["probability"] = proba.max(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            # 0.0 - : a sure item's entropy prints as 0.0, not -0.0
            # (as skcrowd.metrics.posterior_entropy)
            table["entropy"] = 0.0 - np.sum(np.where(proba > 0, proba * np.log(proba), 0.0),
                                            axis=1)
        loglik = model._score_items(data, **params)
        loglik[data.ratings_per_item == 0] = 0.0
        table["log_likelihood"] = loglik
        table.update(model._item_diagnostics(data, items))
        index = self._item_index(data)
        if data.form in ("matrix", "wide") and index.name is None:
            index = index.rename("item")
        return pd.DataFrame(table, index=index)

    # -- hooks ----------------------------------------------------------------
    @abstractmethod
    def _fit_encoded(self, data, **fit_params):
        """Fit on encoded data; set fitted attributes; return the per-item
        state of the training items (as :meth:`_infer_items` would)."""

    @abstractmethod
    def _infer_items(self, data):
        """Per-item inference with the fitted rater parameters held fixed."""

    @abstractmethod
    def _sample_labels(self, data, rng):
        """Label codes of simulated ratings on the design of ``data``."""

    def _reject_fit_params(self, fit_params):
        """A clear error for fit arguments this model does not take (never a
        private method's name: issue 11, bug 5)."""
        if fit_params:
            raise TypeError(
                f"{type(self).__name__}.fit got unexpected arguments "
                f"{sorted(fit_params)}."
            )

    def _dask_columns(self, **fit_params):
        """The columns a dask DataFrame needs besides item, rater and label,
        as ``(name, column)`` pairs, from the fit parameters (which name
        columns on Dask, e.g. OrdinalMixture's ``groups``; the fit checks
        the parameters themselves, in ``_prepare``)."""
        return ()

    def _predict_from_items(self, items):
        """The point prediction per item from the per-item state."""
        proba = items["proba"]
        if proba.ndim != 2 or proba.shape[1] == 0:
            return self.classes_[np.argmax(proba, axis=1)]
        codes = np.empty(proba.shape[0], dtype=np.intp)
        row_argmax(np.ascontiguousarray(proba, dtype=np.float64), codes)
        return self.classes_[codes]

    # -- public API -----------------------------------------------------------
    def _fit(self, X, y=None, init_params=None, **fit_params):
        """Encode ``X`` (once) and fit; returns ``(data, items)``, the
        encoded data and the per-item state of the training items (both
        None for a dask DataFrame, whose items stay on the workers)."""
        # A fit ends a partial_fit stream: the next partial_fit starts a new
        # one (its running statistics belong to the raters of the old one).
        self.__dict__.pop("_stepwise", None)
        self._fit_item_ratings = None
        if _dask.is_dask_frame(X):
            if y is not None or init_params is not None:
                raise ValueError("Known labels y and init_params are not supported with a "
                                 "dask DataFrame.")
            if self._start_state(None) is not None:
                # (a cold fit would ignore it silently)
                raise ValueError("warm_start=True after a fit is not supported with a dask "
                                 "DataFrame: set warm_start=False (a cold fit).")
            # The fit loop over the workers' partitions (DESIGN §9); the
            # training items' states stay there until the fit ends. The fit
            # parameters name columns on Dask (_dask_columns).
            data = _dask.encode_frame(self, X, **fit_params)
            try:
                self._fit_encoded(data, **fit_params)
            finally:
                data.release()
            self._dask_iterations = data.iterations  # timings, for benchmarks
            return None, None
        start = self._start_state(init_params)  # before _encode resets rater_ids_
        data = self._encode(X, reset=True, y=y)
        self._fit_item_ratings = item_ratings(data)  # score's check of split items
        data.start = start
        # Ratings per rater: the rater table's n_ratings and the weights of
        # the population rater (unknown_raters="prior").
        self._rater_counts = np.zeros(self.n_features_in_, dtype=np.intp)
        count_codes(data.rater, self._rater_counts)
        return data, self._clamp(data, self._fit_encoded(data, **fit_params))

    def _start_state(self, init_params):
        """An earlier fit to start from (warm start), or None."""
        if init_params is not None:
            raise TypeError(f"{type(self).__name__} is not iterative: it takes no init_params.")
        return None

    def _clamp(self, data, items):
        """The known items' fitted state is their known class, exactly.

        The models' local steps already clamp through ``data.evidence``;
        this makes it exact for every estimator (the baselines have no
        local step) and sets a point prediction on the label scale
        (``"value"``, ``"mu"``) to the known value.
        """
        if data.gold is None:
            return items
        known = np.flatnonzero(data.gold >= 0)
        codes = data.gold[known]
        proba = items["proba"]
        proba[known] = 0.0
        proba[known, codes] = 1.0
        for key in ("value", "mu"):
            if key in items:
                items[key][known] = self.classes_.astype(np.float64)[codes]
        return items

    def _fit_predict(self, X, y=None, **fit_params):
        data, items = self._fit(X, y, **fit_params)
        if items is None:
            return self.predict(X)
        return self._labelled(data, self._predict_from_items(items), "label")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, **fit_params):
        """Fit the model to the ratings ``X``.

        Parameters
        ----------
        X : array-like, sparse matrix or DataFrame of shape (n_items, n_raters), \
or Ratings, or a long-form DataFrame
            ``X[i, j]`` is rater ``j``'s label for item ``i``; NaN, None,
            ``pd.NA`` or ``pd.NaT`` means not rated.  In a sparse matrix every
            stored entry is a rating, explicit zeros included.  A DataFrame
            with the columns ``item, rater, label`` (or ``task, worker,
            label``) is long form, one rating per row (:ref:`input_forms`).
        y : array-like of shape (n_items,), mapping or pandas Series, default=None
            Known true labels ("gold") of some items; see :ref:`gold`.  One
            entry per item in row order, missing (None, NaN, ``pd.NA``)
            where unknown, or a mapping / Series keyed by item id (items
            absent from it are unknown).  A known item's posterior is
            clamped to its label during the fit; it still informs the
            rater parameters.  ``None``: no item is known.
        **fit_params : dict
            Model-specific data (for example ``groups``), and for the
            iterative models ``init_params``: a fitted model of the same
            class whose rater parameters (matched by rater id) the fit
            starts from; :class:`DawidSkene` also takes ``prior_params``
            and ``prior_weight``: a fitted model whose rater evidence joins
            the prior (see :ref:`warm-start`).

        Returns
        -------
        self : object
        """
        self._fit(X, y, **fit_params)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, **fit_params):
        """Fit, then return the inferred label of each training item.

        Equal to ``fit(X).predict(X)``; computed from the final local step of
        the fit, without a second pass (a second pass for a dask DataFrame).
        With ``y``, the known items get their known labels (``predict(X)``
        infers every item from its ratings alone).
        """
        return self._fit_predict(X, y, **fit_params)

    def predict(self, X):
        """The most probable true class of each item.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            Ratings of the items, in any form ``fit`` accepts.

        Returns
        -------
        labels : ndarray of shape (n_items,), or Series
            A pandas Series indexed by item id when ``X`` is a long-form
            DataFrame or ``set_output(transform="pandas")`` is set.
        """
        return self._results(X, "label")

    def predict_proba(self, X):
        """Posterior probability of each true class, per item.

        Returns
        -------
        proba : ndarray of shape (n_items, n_classes), or DataFrame
            Columns follow ``classes_``.  An item without ratings gets the
            class prior.  A DataFrame indexed by item id when ``X`` is a
            long-form DataFrame, one column per class named by the class
            itself, its type kept (``proba[1]`` for the class ``1``), or
            when ``set_output(transform="pandas")`` is set: then the
            columns are :meth:`get_feature_names_out`, the classes as
            strings (``proba["1"]``), as scikit-learn names every transform
            output.  For a dask DataFrame of ratings: a dask DataFrame
            indexed by item id, with the same column names.
        """
        return self._results(X, "proba")

    def transform(self, X):
        """Same as :meth:`predict_proba`, so that a model is a pipeline step."""
        return self.predict_proba(X)

    def score_samples(self, X):
        """Log marginal likelihood of each item's ratings, rater parameters
        fixed and item-level latent quantities integrated out.

        Returns
        -------
        log_likelihood : ndarray of shape (n_items,), or Series
            0 for an item with no ratings.  A Series indexed by item id in
            the cases where :meth:`predict` returns one.
        """
        return self._results(X, "loglik")

    def _score_items(self, data, **params):
        return self._infer_items(data, **params)["loglik"]

    def score(self, X, y=None):
        """Mean log marginal likelihood per item (higher is better).

        Because this is a probability of the same observed ratings for every
        model, cross-validated scores compare across models.

        Cross-validation holds out items: the rows of a long-form DataFrame
        are ratings, so split it with a group-aware splitter and the item
        column as ``groups``, e.g. ``cross_val_score(model, df,
        groups=df["item"], cv=GroupKFold(5))`` (the same for
        ``cross_validate`` and ``GridSearchCV(...).fit(df,
        groups=df["item"])``).  A plain splitter (``KFold``) would divide
        each item's ratings between the folds: ``score`` (and
        ``score_samples``) refuse a long-form DataFrame most of whose items
        that were in the training data have none of their training ratings
        there, with a ``ValueError`` naming this route, which scikit-learn's
        model selection reports as a warning and a NaN score
        (``error_score="raise"`` raises it).  Scoring the training data
        itself, new items, or training items with some ratings added or
        changed is not affected.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            Ratings of the items, in any form ``fit`` accepts.
        y : None
            Ignored.

        Returns
        -------
        score : float

        Examples
        --------
        >>> from sklearn.model_selection import GroupKFold, cross_val_score
        >>> from skcrowd import DawidSkene
        >>> from skcrowd.datasets import load_rte
        >>> df = load_rte().ratings.to_long()
        >>> scores = cross_val_score(DawidSkene(), df, groups=df["item"], cv=GroupKFold(5))
        >>> bool(all(scores < -4.5))  # each fold's held-out items, all their ratings
        True
        """
        scores = self.score_samples(X)
        if _dask.is_dask_frame(X):
            return float(scores.mean().compute())
        return float(np.mean(scores))

    def sample(self, X, random_state=None):
        """Simulated ratings on the design of ``X`` (same item/rater pairs).

        The true class of each item is drawn from ``class_prior_`` (item-level
        effects, where the model has them, from each item's posterior); rater
        parameters are plugged in.

        Returns
        -------
        X_sim : same kind as X
            A Ratings for a Ratings, a long-form DataFrame (same column
            names, rows sorted by item) for a long-form DataFrame, a wide
            DataFrame (the same index and columns) for a wide one, a CSR
            matrix for a sparse matrix, else an ndarray; NaN (or None)
            where ``X`` has no rating.
        """
        check_is_fitted(self)
        if _dask.is_dask_frame(X):
            raise ValueError("sample does not take a dask DataFrame; sample a Ratings or "
                             "a matrix (for example one partition).")
        data = self._encode(X, reset=False)
        model = self._with_unknown_raters(data)
        codes = model._sample_labels(data, check_random_state(random_state))
        return self._as_output(X, data, codes)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.sparse = True
        tags.input_tags.string = True
        tags.target_tags.required = False
        return tags


class CrowdModel(CrowdEstimator):
    """Base class of the iterative models: owns the fit loop (DESIGN §5).

    A subclass fills the hooks

    - ``_init_params(data, rng, restart)`` -> global (rater) parameters;
    - ``_local_step(data, params)`` -> ``(items, stats)``: per-item state
      (a dict with ``"proba"`` and ``"loglik"``) and the sufficient statistics
      the items contribute (a dict of arrays that sum over blocks of items);
    - ``_global_update(data, params, stats)`` -> new global parameters;
    - ``_objective(data, params, items, stats)`` -> the objective at the
      current state (log posterior, ELBO ...), which must never decrease;
    - ``_set_fitted(data, params, items)`` and ``_fitted_params()`` to store
      the parameters as public attributes and read them back.

    and, to be accelerated (``accelerate=True``), the pair
    ``_params_to_vector(params)`` / ``_params_from_vector(vector, params)``
    that maps the global parameters to an unconstrained vector and back
    (see :meth:`_run`).

    The loop runs ``local_step`` once after every global update (and after
    every extrapolation), so the per-item state at the end is consistent
    with the final parameters and ``fit_predict(X)`` equals
    ``fit(X).predict(X)``.
    """

    _parameter_constraints: dict = {
        **CrowdEstimator._parameter_constraints,
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        # 0 has no meaning (joblib refuses it); it silently ran on every core
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "warm_start": ["boolean"],
        "accelerate": ["boolean"],
    }

    _step_max0 = 1.0

    #: names of the global parameters that hold one row per rater (axis 0),
    #: and of those shared by every rater: what a warm start carries over
    _rater_params = ()
    _shared_params = ()

    def _start_state(self, init_params):
        """The rater parameters to start from: those of the fitted model
        ``init_params`` (``fit(X, init_params=earlier)``), or this model's
        own with ``warm_start=True`` after a fit (see :ref:`warm-start`)."""
        if init_params is not None:
            source = self._check_earlier_fit(init_params, "init_params")
        elif getattr(self, "warm_start", False) and hasattr(self, "rater_ids_"):
            source = self
        else:
            return None
        return self._snapshot(source)

    def _check_earlier_fit(self, earlier, what):
        """``earlier`` (passed as ``what``) must be a fitted model of this
        class; returned as is."""
        if type(earlier) is not type(self):
            raise ValueError(f"{what} must be a fitted {type(self).__name__}; got "
                             f"{type(earlier).__name__}.")
        check_is_fitted(earlier)
        return earlier

    def _check_earlier_classes(self, classes, what):
        """An earlier fit used by ``what`` must have this fit's classes."""
        if not (len(classes) == len(self.classes_) and np.all(classes == self.classes_)):
            raise ValueError(
                f"{what} needs the classes of the earlier fit ({classes.tolist()!r}); "
                f"these ratings have {self.classes_.tolist()!r}. Pass classes=[...]."
            )

    def _match_raters(self, old_ids):
        """Positions ``now`` in this fit and ``before`` in an earlier fit of
        the raters both have, matched by id (not by column position)."""
        old_ids = np.asarray(old_ids)
        ids = np.asarray(self.rater_ids_)
        try:
            order = np.argsort(old_ids, kind="stable")
            pos = np.minimum(np.searchsorted(old_ids[order], ids), max(len(old_ids) - 1, 0))
            seen = (old_ids[order][pos] == ids) if len(old_ids) else np.zeros(len(ids), bool)
        except TypeError:
            raise ValueError("Rater ids are not comparable with those of the earlier fit.") \
                from None
        return np.flatnonzero(seen), order[pos[seen]]

    def _snapshot(self, source):
        """What a start from the fitted model ``source`` needs."""
        params = source._fitted_params()
        return {
            "rater_ids": np.array(source.rater_ids_, copy=True),
            "classes": np.array(source.classes_, copy=True),
            "params": {k: params[k] for k in (*self._rater_params, *self._shared_params)},
            # the item-level state at the end of the earlier fit, by item id
            # (a model that keeps one: OrdinalMixture)
            "items": getattr(source, "_last_items", None),
        }

    def _warm_params(self, data, rng, start):
        """Global parameters of a warm start: the cold start's (restart 0)
        with every rater seen before taking its earlier parameters, matched
        by rater id, not position; raters not seen before keep
        :meth:`_new_rater_params`.  The shared parameters (class prior ...)
        are carried over as they are."""
        self._check_earlier_classes(start["classes"], "A warm start")
        params = dict(self._new_rater_params(data, self._init_params(data, rng, 0)))
        now, before = self._match_raters(start["rater_ids"])
        for name in self._rater_params:
            rows = np.array(params[name], dtype=np.float64, copy=True)
            rows[now] = start["params"][name][before]
            params[name] = rows
        for name in self._shared_params:
            params[name] = start["params"][name]
        return params

    def _new_rater_params(self, data, params):
        """The parameters of raters that an earlier fit has not seen (hook;
        default: the cold start's)."""
        return params

    # -- stepwise (online) EM -------------------------------------------------
    #: the sufficient statistics that stepwise EM blends (a model that
    #: supports partial_fit names them), and which of them have a rater axis
    _online_stats = ()
    _online_rater_stats = ()
    #: step size η_t = (t + 1)^(-κ) of batch t = 0, 1, ... (Liang & Klein
    #: 2009: κ in (0.5, 1] converges; smaller forgets the early batches
    #: faster)
    _step_decay = 0.7

    def _online_batch_stats(self, data, params, stats):
        """A batch's statistics as stepwise EM blends them (hook)."""
        return stats

    def _online_update(self, data, params, stats, n_seen):
        """The M-step from the blended statistics, scaled to ``n_seen``
        items (hook; default: the batch fit's global update)."""
        return self._global_update(data, params, stats)

    def _encode_batch(self, X, y):
        """Encode a batch for :meth:`partial_fit`: raters matched by id,
        raters not seen before appended (their parameters from the prior),
        classes fixed by the first batch or by ``classes``.

        Returns the encoded batch, the number of raters seen before it, and
        a function that records the batch's raters and classes on the
        model: called once the batch is accepted, so that a refused batch
        leaves the model as it was."""
        if _dask.is_dask_frame(X):
            raise ValueError("partial_fit does not take a dask DataFrame.")
        first = not hasattr(self, "_stepwise")
        # Read on a copy: scikit-learn's validation sets n_features_in_.
        reader = copy.copy(self)
        # every form read as fit reads it (a long-form DataFrame is ratings,
        # not a matrix whose raters are called item, rater and label)
        ratings, form, scale = to_ratings(reader, X, reset=True)
        if y is not None and form == "long":
            # as fit: a column of the table is one value per rating
            check_not_a_column_of(y, X, len(ratings), long_columns(X.columns)[0], "y")
        if form == "matrix" and not first and ratings.shape[1] != self.n_features_in_:
            # Unnamed columns are raters by position: another count
            # cannot be matched (a Ratings or named columns can).
            raise ValueError(
                f"X has {ratings.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input (unnamed columns are raters by "
                "position); pass a Ratings (or a DataFrame with rater names as "
                "columns) for batches with other raters."
            )
        ids = np.asarray(ratings.rater_ids)
        # Every batch, not only the first: a later batch of unrated items
        # was accepted and its empty statistics, blended in with weight
        # eta_t, shrank the stream's rater counts toward the prior.
        if ratings.n_ratings == 0:
            raise ValueError(NO_RATINGS)
        if first:
            gold = None if y is None else gold_per_item(
                y, ratings.item_ids, ids_are_rows=form == "matrix")
            fit_classes(reader, ratings.label, scale, check_count=gold is None)
            if gold is not None:
                # as fit: y's labels join the classes, also a scale's
                _add_gold_classes(reader, y, gold[1])
                check_class_count(reader)
            known = ids
        else:
            known = np.asarray(self.rater_ids_)
            if self.classes is not None:
                declared = check_classes(self.classes)
                if declared.tolist() != self.classes_.tolist():
                    # set_params(classes=...) after the first batch: the
                    # stream ignored it, and a batch with a new class got
                    # "declare them all with classes=[...]", which the user had
                    raise ValueError(
                        f"classes is {declared.tolist()!r}, but this stream began with the "
                        f"classes {self.classes_.tolist()!r}: partial_fit keeps the classes "
                        "of its first batch. Start a new stream (fit, or partial_fit on "
                        "clone(model)) with the new classes."
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
                _unique_codes(np.concatenate([known.astype(object), ids[new].astype(object)]),
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
        data = RatingData(ratings._item, codes.astype(np.int32)[ratings._rater], label_codes,
                          ratings._item_ptr, n_raters=len(rater_ids),
                          n_classes=len(classes), item_ids=ratings.item_ids,
                          form="ratings", ratings=ratings)
        if y is not None:
            _set_gold(data, *gold_per_item(y, ratings.item_ids, ids_are_rows=form == "matrix"),
                      classes)

        def accept():
            self._fit_item_ratings = None  # the training items are no longer fit's
            self.classes_ = classes
            # positions only while every batch is an unnamed matrix
            set_raters(self, rater_ids, by_position=form == "matrix" and (
                first or self._raters_by_position))
            # the raters' names are checked by check_rater_columns (the
            # stream's raters are more than one batch's columns)
            self.__dict__.pop("feature_names_in_", None)
            # ratings per rater over the stream (the rater table's n_ratings
            # and the population rater's weights, as after fit)
            counts = np.zeros(len(rater_ids), dtype=np.intp)
            count_codes(data.rater, counts)
            if not first:
                counts[:len(self._rater_counts)] += self._rater_counts
            self._rater_counts = counts

        return data, len(known), accept

    @available_if(lambda self: bool(self._online_stats))
    def partial_fit(self, X, y=None):
        """One step of stepwise EM on a batch of items (Cappé & Moulines
        2009; Liang & Klein 2009).

        The batch's expected sufficient statistics, per item, are blended
        into the running ones, s ← (1 - η_t) s + η_t s_batch / n_batch with
        η_t = (t + 1)^(-0.7) for batch t = 0, 1, ..., and the rater
        parameters are the M-step of n_seen · s (n_seen: items seen so far,
        so that the priors weigh as in a batch fit of that many items).  The
        E-step of a batch uses the parameters after the previous batch.
        Raters are matched by id; a rater not seen before is added with the
        prior's parameters.  The classes are those of the first batch (with
        ``y``'s labels) or ``classes``: declare every class up front when a
        batch may lack some.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            A batch of items, all their ratings, in any form ``fit``
            accepts.  Columns of a matrix are rater ids 0, 1, ... (a wide
            DataFrame's: its column names).
        y : array-like of shape (n_items,), mapping or Series, default=None
            Known labels of some of the batch's items (see :ref:`gold`).

        Returns
        -------
        self : object
        """
        if not hasattr(self, "_stepwise"):
            self._validate_params()
        data, n_before, accept = self._encode_batch(X, y)
        data = self._prepare(data)
        accept()
        with numba_threads(self.n_jobs):
            if not hasattr(self, "_stepwise"):
                params = self._init_params(data, check_random_state(self.random_state), 0)
                self._stepwise = {"t": 0, "n_seen": 0, "stats": None}
            else:
                start = self._snapshot(self)
                start["rater_ids"] = start["rater_ids"][:n_before]
                params = self._warm_params(data, check_random_state(self.random_state), start)
            items, stats = self._local_step(data, params)
            stats = self._online_batch_stats(data, params, stats)
        state = self._stepwise
        eta = (state["t"] + 1.0) ** -self._step_decay
        old = state["stats"]
        blended = {}
        for key in self._online_stats:
            batch = np.asarray(stats[key], dtype=np.float64) / max(data.n_items, 1)
            if old is None:
                blended[key] = batch
                continue
            previous = old[key]
            if key in self._online_rater_stats and len(previous) < len(batch):
                pad = np.zeros((len(batch) - len(previous),) + previous.shape[1:])
                previous = np.concatenate([previous, pad])
            blended[key] = (1.0 - eta) * previous + eta * batch
        state["t"] += 1
        state["n_seen"] += data.n_items
        state["stats"] = blended
        scaled = {key: value * state["n_seen"] for key, value in blended.items()}
        params = self._online_update(data, params, dict(stats, **scaled), state["n_seen"])
        self.n_iter_ = state["t"]
        self._set_fitted(data, params, None)
        return self

    @abstractmethod
    def _init_params(self, data, rng, restart):
        """Initial global parameters of restart number ``restart``."""

    def _start_from_counts(self, data, rng, restart):
        """:meth:`_init_params` of a model whose start is the global update
        of the counts ``_init_stats(data, seed)`` of some starting item
        posteriors: the majority vote (``seed`` None: restart 0 with
        ``init="majority"``) or random ones drawn from the items' ids and
        ``seed`` (:func:`item_dirichlet`).  On a dask DataFrame each
        partition starts its own items, the same as in memory, and their
        counts are summed like a local step's."""
        seed = None
        if restart > 0 or self.init != "majority":
            seed = int(rng.randint(2**31 - 1 - data.n_classes))
        if isinstance(data, _dask.DaskRatingData):
            n = data.n_partitions
            stats = data.map_sum(_partition_init_stats, [self] * n, [seed] * n)
        else:
            stats = self._init_stats(data, seed)
        return self._global_update(data, None, stats)

    @abstractmethod
    def _local_step(self, data, params):
        """Item-level inference and the statistics it contributes."""

    @abstractmethod
    def _global_update(self, data, params, stats):
        """New global parameters from the summed statistics."""

    @abstractmethod
    def _objective(self, data, params, items, stats):
        """The monitored objective at the current state."""

    @abstractmethod
    def _set_fitted(self, data, params, items):
        """Store the fitted parameters as attributes."""

    @abstractmethod
    def _fitted_params(self):
        """The global parameters, read back from the fitted attributes."""

    def _prepare(self, data, **fit_params):
        """Attach model-specific fit data (e.g. groups) to ``data``."""
        self._reject_fit_params(fit_params)
        return data

    def _step(self, data, params):
        """The local step: in process, or on every partition of a dask
        DataFrame with the stats summed (then there is no item state here)."""
        if isinstance(data, _dask.DaskRatingData):
            return None, data.local_stats(self, params)
        return self._local_step(data, params)

    # -- acceleration hooks (DESIGN §5) ---------------------------------------
    def _params_to_vector(self, params):
        """The global parameters as one unconstrained vector (log, logit or
        log-softmax coordinates), or None when the model is not accelerated.

        Entries may be -inf (a probability of exactly 0); the loop leaves
        those where the plain update puts them.
        """
        return None

    def _params_from_vector(self, vector, params):
        """Global parameters from ``vector``; everything the vector does not
        hold (per-item warm starts, flags) is taken from ``params``, the
        plain update of the latest state."""
        raise NotImplementedError  # pragma: no cover - with _params_to_vector

    def _accelerated(self):
        return bool(getattr(self, "accelerate", False))

    def _threaded_restarts(self, data):
        """Whether the restarts on ``data`` run in parallel threads (serial
        kernels each) when there are several threads and restarts."""
        return False

    def _single_thread(self, params, alone):
        """``params`` for a restart run in its own thread (serial kernels).
        ``alone`` is true once every other restart has ended (see
        :class:`_Alone`): the model's kernels may then use every thread."""
        return params

    # -- the loop ---------------------------------------------------------------
    def _evaluate(self, data, params):
        """One pass over the data at ``params``: the state the loop keeps."""
        items, stats = self._step(data, params)
        return _State(params, items, stats, self._objective(data, params, items, stats))

    def _run(self, data, params, progress=None, restart=0, max_iter=None, resume=None):
        """One restart of the loop from ``params``; returns its end state.

        ``max_iter`` (default ``self.max_iter``) caps the passes; ``resume``,
        a run this method returned, is gone on from where it stopped
        (``params`` is then unused): its history and pass count continue.

        Every pass over the data is a local step at some global parameters;
        ``n_iter`` counts the passes after the first (at most ``max_iter``).
        Plain iteration (``accelerate=False``) alternates global update and
        local step.  Accelerated, the loop runs SQUAREM (Varadhan & Roland
        2008, scheme S3) on the model's unconstrained parameter vector: two
        plain updates θ1 = G(θ0), θ2 = G(θ1), then the extrapolation
        θ' = θ0 - 2a r + a² v with r = θ1 - θ0, v = θ2 - 2θ1 + θ0 and the
        step length a = -|r| / |v| (a = -1 gives back θ2).  θ2 is a global
        update from θ1's statistics, so it costs no pass; θ' costs one and is
        kept only when its objective is at least θ1's.  Otherwise the loop
        evaluates θ2 (a plain step from θ1) and goes on from there, so the
        objective of the kept states never decreases; a cycle whose
        extrapolation is kept costs two passes (θ1 and θ'), not three.  The
        longest step grows fourfold each time it is used in full and shrinks
        back after a rejection (the SQUAREM package's ``step.max`` rule).

        The stopping rule is tested on every step of the kept sequence:
        stop when one pass changes the objective by less than ``tol``.  For
        a plain step that is the plain rule.  A kept extrapolated step θ1 →
        θ' counts when it also went at least as far as the plain step θ1 →
        θ2 that it replaces is forecast to go (:func:`_forecast_plain_gain`):
        then the plain loop would stop after that step (forecast), at a
        point no better than θ'.  A poorer
        extrapolation, which may have traded a gain along the slow
        direction for losses along fast ones, is never the reason to stop.
        ``history`` holds the objective of every kept state (a rejected
        extrapolation is not one), so a converged fit's last difference is
        below ``tol`` either way.
        """
        limit = self.max_iter if max_iter is None else max_iter
        started = perf_counter()
        if resume is None:
            state = self._evaluate(data, params)
            history = [state.objective]
            step_max = self._step_max0
            n_iter = n_extrapolated = 0
        else:
            state, history = resume.state, list(resume.history)
            step_max, n_iter, n_extrapolated = resume.step_max, resume.n_iter, \
                resume.n_extrapolated
            started -= resume.seconds
        accelerate = self._accelerated() and self._params_to_vector(state.params) is not None

        def plain(state, new_params=None):
            nonlocal n_iter
            if new_params is None:
                new_params = self._global_update(data, state.params, state.stats)
            new = self._evaluate(data, new_params)
            n_iter += 1
            change = new.objective - state.objective
            history.append(new.objective)
            if progress is not None:
                progress.iteration(restart, n_iter, new.objective, change, started)
            return new, abs(change) < self.tol

        converged = False
        while n_iter < limit and not converged:
            first, converged = plain(state)
            if converged or not accelerate or n_iter >= limit:
                state = first
                continue
            # θ2 = G(θ1) needs only θ1's statistics: no pass.
            second = self._global_update(data, first.params, first.stats)
            trial, a, at_max, rate = self._extrapolate(state.params, first.params, second,
                                                       second, step_max)
            if trial is not None:
                checkpoint = getattr(data, "checkpoint", lambda: None)()
                candidate = self._evaluate(data, trial)
                n_iter += 1
                if np.isfinite(candidate.objective) and candidate.objective >= first.objective:
                    n_extrapolated += 1
                    change = candidate.objective - first.objective
                    history.append(candidate.objective)
                    if progress is not None:
                        progress.iteration(restart, n_iter, candidate.objective, change,
                                           started, extrapolated=a)
                    # θ' replaces the plain step θ1 -> θ2: that step's rule,
                    # when θ' went at least as far as it is forecast to.
                    forecast = _forecast_plain_gain(first.objective - state.objective, rate)
                    converged = forecast <= change < self.tol
                    state = candidate
                    if at_max:
                        step_max *= 4.0
                    continue
                if checkpoint is not None:
                    data.restore(checkpoint)
                if at_max:
                    step_max = max(1.0, step_max / 4.0)
            elif at_max:
                step_max *= 4.0
            state = first
            if n_iter < limit:
                state, converged = plain(first, second)
        return _Run(state.params, state.items, history, n_iter, converged, n_extrapolated,
                    perf_counter() - started, state, step_max)

    def _extrapolate(self, params0, params1, params2, template, step_max):
        """SQUAREM's extrapolated parameters (None when a = -1), the step
        length a, whether the longest step capped it, and the squared ratio
        |θ2 - θ1|² / |θ1 - θ0|² of the two plain steps' lengths (the
        contraction rate of the objective's gains, for the stopping rule)."""
        x0, x1, x2 = (self._params_to_vector(p) for p in (params0, params1, params2))
        # Coordinates at ±inf (probabilities of exactly 0 or 1) stay put.
        free = np.isfinite(x0) & np.isfinite(x1) & np.isfinite(x2)
        with np.errstate(invalid="ignore"):  # inf - inf where not free, dropped
            r = np.where(free, x1 - x0, 0.0)
            v = np.where(free, x2 - 2.0 * x1 + x0, 0.0)
        rr, vv = float(r @ r), float(v @ v)
        if not (vv > 0.0 and np.isfinite(rr) and np.isfinite(vv)):
            return None, -1.0, False, np.inf
        rate = float((r + v) @ (r + v)) / rr if rr > 0.0 else np.inf
        length = np.sqrt(rr / vv)
        a = -min(max(length, 1.0), step_max)
        if a == -1.0:  # θ' = θ2: nothing to gain
            return None, a, length >= step_max, rate
        x = np.where(free, x0 - 2.0 * a * r + a * a * v, x2)
        return self._params_from_vector(x, template), a, length >= step_max, rate

    def _fit_encoded(self, data, **fit_params):
        start_state = getattr(data, "start", None)
        data = self._prepare(data, **fit_params)
        rng = check_random_state(self.random_state)
        progress = Progress(type(self).__name__, self.verbose, self.n_init)
        with numba_threads(self.n_jobs):
            # A warm start is one run from the earlier state (n_init is
            # ignored, as in scikit-learn's mixtures).
            if start_state is not None:
                starts = [self._warm_params(data, rng, start_state)]
            else:
                starts = [self._init_params(data, rng, r) for r in range(self.n_init)]
            screen = self._screening_iterations()
            if screen is None or len(starts) == 1 or screen >= self.max_iter:
                runs = self._run_restarts(data, starts, progress)
            else:
                # Short runs (Biernacki, Celeux & Govaert 2003): every
                # restart for ``screen`` iterations, then only the best one
                # goes on, from where it stopped, to convergence.
                runs = self._run_restarts(data, starts, progress, screen)
                chosen = int(np.argmax([run.history[-1] for run in runs]))
                if not runs[chosen].converged:
                    runs[chosen] = self._run(data, None, progress, chosen,
                                             resume=runs[chosen])
                    progress.end(chosen, runs[chosen])
        best = runs[0]
        for run in runs[1:]:
            if run.history[-1] > best.history[-1]:
                best = run
        self._restart_histories = [np.asarray(run.history) for run in runs]
        self._restart_n_iter = [run.n_iter for run in runs]
        self._n_extrapolated = best.n_extrapolated
        history = best.history
        if not best.converged and self.max_iter > 0:
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter={self.max_iter} "
                f"iterations (last objective change "
                f"{history[-1] - history[-2]:.3g}, tol={self.tol}). Increase "
                "max_iter or tol.",
                ConvergenceWarning,
            )
        with numba_threads(self.n_jobs):
            best = self._final_step(data, best)
        history = best.history
        self.n_iter_ = best.n_iter
        self.converged_ = best.converged
        self.lower_bound_ = history[-1]
        self.objective_history_ = np.asarray(history)
        with numba_threads(self.n_jobs):
            final = self._set_fitted(data, best.params, best.items)
        return best.items if final is None else final

    def _screening_iterations(self):
        """Iterations every restart runs before only the best goes on to
        convergence (None: every restart runs to convergence).  A model
        exposes this as a parameter; the default keeps the plain scheme."""
        return None

    def _run_restarts(self, data, starts, progress, max_iter=None):
        """:meth:`_run` from every start (at most ``max_iter`` passes each):
        in client threads batched on a dask cluster or in threads with
        serial kernels when the model runs restarts in parallel, else one
        after another."""
        screened = max_iter is not None
        n_threads = numba.get_num_threads()
        dask_data = _dask.dask_data(data)
        parallel = len(starts) > 1 and self._threaded_restarts(data)

        def one(restart, params):
            progress.begin(restart)
            run = self._run(data, params, progress, restart, max_iter)
            progress.end(restart, run, screened)
            return run

        if parallel and dask_data is not None:
            # Restarts in client threads, their local steps batched: one
            # task per partition and iteration serves all of them.
            return dask_data.lockstep(lambda r: one(r, starts[r]), range(len(starts)))
        if parallel and n_threads > 1:
            # One restart per thread with serial (nogil) kernels: numba's
            # workqueue layer cannot run parallel regions from two threads.
            # The last restart, once it runs alone, takes every thread.
            alone = _Alone(len(starts))

            def in_thread(restart):
                numba.set_num_threads(n_threads)  # (per thread: the pool's own)
                try:
                    return one(restart, self._single_thread(starts[restart], alone))
                finally:
                    alone.ended()

            with ThreadPoolExecutor(max_workers=min(n_threads, len(starts))) as pool:
                return list(pool.map(in_thread, range(len(starts))))
        return [one(restart, start) for restart, start in enumerate(starts)]

    def _final_step(self, data, run):
        """After the loop, a last pass at the best run's parameters that
        the model needs for its fitted items (default: none).  Returns the
        run, its items replaced and the pass's objective (which must not be
        below the run's last) appended to its history."""
        return run

    def _infer_items(self, data):
        with numba_threads(self.n_jobs):
            return self._local_step(data, self._fitted_params())[0]


def _forecast_plain_gain(gain, rate):
    """The objective gain forecast for the plain step θ2 = G(θ1) after the
    plain step θ0 -> θ1 that gained ``gain``.

    Near its fixed point EM converges linearly (Dempster, Laird & Rubin
    1977): the error shrinks by a factor λ per step along the slowest
    direction, so step lengths shrink by λ and the objective's gains, which
    are quadratic in the error there, by λ².  ``rate`` is λ² estimated from
    the two steps' lengths, |θ2 - θ1|² / |θ1 - θ0|² (both known after one
    pass: θ2 is a global update from θ1's statistics).  Infinite (no
    forecast, so no stop) unless ``gain`` is positive.
    """
    if not (gain > 0.0 and np.isfinite(rate)):
        return np.inf
    return gain * rate


class _Alone:
    """Whether a restart run in a thread is the only one left: true once
    every other restart of the fit has ended (none running, none waiting).

    Only a running restart asks, so then no other thread runs a kernel and
    the restart's kernels can take every thread (numba's workqueue layer
    cannot run parallel regions from two threads at once).  Results do not
    change: the models' parallel kernels equal their serial twins bit for
    bit (fixed blocks, summed in order).
    """

    def __init__(self, n_restarts):
        self._unfinished = n_restarts
        self._lock = threading.Lock()

    def ended(self):
        with self._lock:
            self._unfinished -= 1

    def __bool__(self):
        return self._unfinished <= 1


def _partition_init_stats(data, model, seed):
    """A dask partition's share of the starting counts (module level: pickled)."""
    return model._init_stats(data, seed)
