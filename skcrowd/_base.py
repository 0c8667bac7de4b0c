"""The plumbing every model shares: input encoding, the fit loop, the public
methods and the scikit-learn tags.

:class:`CrowdEstimator` turns any accepted ``X`` into :class:`RatingData`
and implements ``predict`` / ``predict_proba`` / ``transform`` /
``score_samples`` / ``score`` / ``sample`` on top of one per-item hook.
:class:`CrowdModel` adds the iterative fit loop (``doc/architecture.rst``): a local step over
items, a sum of sufficient statistics, a global update of the rater parameters
and an objective that must never decrease, with restarts and convergence
monitoring in the style of :class:`sklearn.mixture.GaussianMixture`.
"""

import copy
import warnings
from abc import abstractmethod
from numbers import Integral, Real
from time import perf_counter

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from . import _backend
from ._kernels._common import count_codes, row_argmax
from ._kernels._config import numba_threads
from ._loop import ConvergenceMonitor, Progress, Squarem, em_loop, run_restarts
from ._loop import Run as _Run
from ._loop import State as _State
from ._columns import class_columns
from ._ratings import Ratings, check_class_count, encode, import_pandas, long_columns
from ._splits import check_items_not_split, item_ratings

__all__ = ["CrowdEstimator", "CrowdModel", "Progress"]

#: What the input boundary sets on a model in its fit (:func:`encode`): its
#: classes and raters, and a wide table's column names.
ENCODING_ATTRIBUTES = ("classes_", "rater_ids_", "n_features_in_", "_raters_by_position",
                       "feature_names_in_")


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


def item_ids_of(data):
    """The items' ids of encoded ``data`` (their positions when it has none)."""
    return np.arange(data.n_items) if data.item_ids is None else data.item_ids


def draw_categorical(probabilities, rng):
    """One draw per row of an ``(n, K)`` matrix of probabilities, as int32."""
    cdf = np.cumsum(probabilities, axis=1)
    u = rng.random(len(probabilities)) * cdf[:, -1]
    draws = (u[:, None] > cdf).sum(axis=1)
    return np.minimum(draws, probabilities.shape[1] - 1).astype(np.int32)


def fit_encoded(model, data):
    """``model`` fitted on ratings already encoded for another model's fit
    (``data``, with that fit's raters, classes and known labels): the start
    of one model from another's fit, e.g. IRT3PL from Dawid–Skene.  The
    estimator's public ``fit`` would encode the ratings again, possibly with
    other codes."""
    model._fit_encoded(data)
    return model


# -- the base's protocol for the tools on fitted models (metrics, checks,
# active learning, agreement): what predict does, step by step ------------
def encode_for(model, X, *, fit=False):
    """``X`` encoded as the fitted ``model``'s ``predict`` encodes it (with
    ``fit=True``: as its ``fit`` does, setting ``classes_`` and the raters),
    and the model to run on it: itself, or a copy with the population rater
    when ``X`` has raters not seen in fit."""
    data = model._encode(X, reset=fit)
    return data, (model if fit else with_population_rater(model, data))


def with_population_rater(model, data):
    """``model``, or (when the encoded ``data`` has raters not seen in fit)
    a copy whose per-rater attributes have the population rater appended."""
    return model._with_unknown_raters(data)


def sample_label_codes(model, data, rng):
    """Label codes of ratings simulated by ``model`` on the design of the
    encoded ``data`` (:meth:`CrowdEstimator.sample` without the output)."""
    return model._sample_labels(data, rng)


def rating_weights(model):
    """Each fitted rater's number of ratings in fit (the weights of the
    population rater)."""
    return model._rating_weights()


def per_item_result(model, data, values, name, by_rater=False):
    """Per-item (``by_rater``: per-rater) ``values`` as ``model`` returns
    results for the input ``data`` was encoded from: a Series named
    ``name`` indexed by item (rater) id for long-form input or pandas
    output, else the array."""
    if not model._pandas_results(data):
        return values
    pd = import_pandas("pandas output")
    index = pd.Index(model.rater_ids_, name="rater") if by_rater else model._item_index(data)
    return pd.Series(values, index=index, name=name)


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
        """``X`` (and a fit's known labels ``y``) as :class:`RatingData`,
        through the input boundary :func:`~skcrowd._ratings.encode`."""
        return encode(self, X, reset=reset, y=y, allow_empty=allow_empty)

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
        if _backend.for_input(X).distributed:
            return self._infer_distributed(X, what, **params)
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
        if _backend.for_input(X).distributed:
            # the in-memory table of each partition's items, as a dask
            # DataFrame (OrdinalMixture: groups names the group column)
            return self._infer_distributed(X, "table", **params)
        return self._item_table(X, **params)

    def _infer_distributed(self, X, what, **params):
        """Hook: per-item results ``what`` (``"label"``, ``"proba"``,
        ``"loglik"``, ``"table"``) of a dask DataFrame ``X``, as dask
        collections, through the backend.  ``params``: the model's per-item
        arguments, which name columns of the frame there (OrdinalMixture's
        ``groups``); a model without any refuses them."""
        if params:
            method = "item_table" if what == "table" else "predict"
            raise TypeError(f"{type(self).__name__}.{method} got unexpected arguments "
                            f"{sorted(params)}.")
        return _backend.for_input(X).infer(self, X, what)

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
        """A clear error for fit arguments this model does not take, naming
        the public ``fit`` (an unknown keyword must not surface as a
        TypeError from some private method it was passed on to)."""
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
        backend = _backend.for_input(X)
        if backend.distributed:
            if y is not None or init_params is not None:
                raise ValueError("Known labels y and init_params are not supported with a "
                                 "dask DataFrame.")
            if self._start_state(None) is not None:
                # (a cold fit would ignore it silently)
                raise ValueError("warm_start=True after a fit is not supported with a dask "
                                 "DataFrame: set warm_start=False (a cold fit).")
            # The fit loop over the workers' partitions; the
            # training items' states stay there until the fit ends. The fit
            # parameters name columns on Dask (_dask_columns).
            data = backend.encode(self, X, **fit_params)
            try:
                self._fit_encoded(data, **fit_params)
            finally:
                backend.release(data)
            self._dask_iterations = data.iterations  # timings, for benchmarks
            return None, None
        start = self._start_state(init_params)  # before _encode resets rater_ids_
        data = self._encode(X, reset=True, y=y)
        return data, self._fit_data(data, start, fit_params)

    def _fit_data(self, data, start, fit_params):
        """Fit on ``data``, encoded with this model's classes and raters;
        returns the training items' state, known items at their class."""
        self._fit_item_ratings = item_ratings(data)  # score's check of split items
        # Ratings per rater: the rater table's n_ratings and the weights of
        # the population rater (unknown_raters="prior").
        self._rater_counts = np.zeros(self.n_features_in_, dtype=np.intp)
        count_codes(data.rater, self._rater_counts)
        if start is not None:  # (only an iterative model has one)
            fit_params["start"] = start
        return self._clamp(data, self._fit_encoded(data, **fit_params))

    def _fit_shared(self, data, encoder):
        """Fit on ``data``, the ratings and known labels as the fitted model
        ``encoder`` encoded them in its fit: its classes and raters become
        this model's, as this model's own fit on the same input would set
        them when neither names its ``classes``.  Several models fitted to
        one input cross the input boundary once (AutoCrowd's candidates).
        Returns the training items' state, as :meth:`_fit` does."""
        self.__dict__.pop("_stepwise", None)
        for name in ENCODING_ATTRIBUTES:
            if hasattr(encoder, name):
                setattr(self, name, getattr(encoder, name))
            else:
                self.__dict__.pop(name, None)
        check_class_count(self)
        return self._fit_data(data, self._start_state(None), {})

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
        return self._mean_score(X, self.score_samples(X))

    @staticmethod
    def _mean_score(X, scores):
        """The mean of ``score_samples(X)`` (computed, for a dask DataFrame)."""
        if _backend.for_input(X).distributed:
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
        if _backend.for_input(X).distributed:
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
    """Base class of the iterative models: owns the fit loop.

    The loop (:func:`~skcrowd._loop.em_loop`, one restart) alternates a
    local step over the items and a global update of the rater parameters
    from the summed statistics, monitors an objective that must never
    decrease, and ends every restart with a local step at its final
    parameters, so that ``fit_predict(X)`` equals ``fit(X).predict(X)``.
    A subclass implements the abstract hooks below; each hook's docstring
    is its contract (inputs, outputs, invariants), and ``doc/architecture.rst``
    lists them with a checklist for adding a model.

    Required: :meth:`_init_params`, :meth:`_local_step`,
    :meth:`_global_update`, :meth:`_objective`, :meth:`_set_fitted`,
    :meth:`_fitted_params`, :meth:`_sample_labels`.  Optional, with
    defaults: :meth:`_prepare`, :meth:`_init_stats` (with
    :meth:`_start_from_counts`), :meth:`_final_step`,
    :meth:`_params_to_vector` / :meth:`_params_from_vector` (acceleration),
    :meth:`_screening_iterations`, :meth:`_threaded_restarts` /
    :meth:`_single_thread`, and the diagnostics and unknown-rater hooks of
    :class:`CrowdEstimator`.
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

    @abstractmethod
    def _init_params(self, data, rng, restart):
        """Global parameters to start restart number ``restart`` from.

        ``data``: what :meth:`_prepare` returned; ``rng``: the fit's
        RandomState, drawn from in restart order (restart 0 first), so
        the starts depend on ``random_state`` only.  Returns the dict the
        other hooks take as ``params``.  Random per-item starts must come
        from the items' ids (:func:`item_dirichlet`, :func:`item_normals`),
        not from ``rng`` draws per item: then a start is the same in
        memory and in any Dask partition.
        """

    def _init_stats(self, data, seed):
        """Sufficient statistics of starting item posteriors, for
        :meth:`_start_from_counts` (a model whose start is one global update
        from counts implements this).

        ``seed`` None: the model's deterministic start (majority vote, or
        the known items alone when ``data`` has gold); an int: random
        posteriors from :func:`item_dirichlet` with that seed.  Returns a
        dict of arrays like :meth:`_local_step`'s ``stats``, which sum over
        items (on Dask, over partitions); known items are clamped
        (:func:`apply_evidence`).
        """
        raise NotImplementedError(
            f"{type(self).__name__} starts from counts but has no _init_stats.")

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
        stats = _backend.of(data).sum_stats(data, _init_stats_of, self, seed)
        return self._global_update(data, None, stats)

    @abstractmethod
    def _local_step(self, data, params):
        """Item-level inference at fixed global ``params``.

        Returns ``(items, stats)``: ``items`` a dict with at least
        ``"proba"`` (``(n_items, n_classes)``, rows summing to one; a known
        item's row is its class, through ``data.evidence``) and
        ``"loglik"`` (each item's log marginal likelihood); ``stats`` a dict
        of arrays that are sums over items, so that the sums over blocks
        of items (threads, Dask partitions) add up to the whole.  Must not
        modify ``params``; its result may not depend on the number of
        threads.
        """

    @abstractmethod
    def _global_update(self, data, params, stats):
        """New global parameters from the summed ``stats`` (the M-step, or
        a Newton step on the rater parameters).  ``params`` is the current
        state (None when called from :meth:`_start_from_counts`).  Returns
        a new dict; with the next local step, the objective must not
        decrease.
        """

    @abstractmethod
    def _objective(self, data, params, items, stats):
        """The monitored objective (log posterior, ELBO, ...) at the state
        a local step at ``params`` reached: a float that never decreases
        from one kept state to the next (up to rounding)."""

    @abstractmethod
    def _set_fitted(self, data, params, items):
        """Store ``params`` as the public fitted attributes (``items``: the
        training items' final state, None after ``partial_fit``).  May
        return replaced per-item state for the fit's result (else None)."""

    @abstractmethod
    def _fitted_params(self):
        """The global parameters read back from the fitted attributes: the
        inverse of :meth:`_set_fitted`, used by predict and warm starts."""

    def _prepare(self, data, **fit_params):
        """The model's own prepared state for a fit on ``data``: ``data``
        itself, or an object that holds it with model-specific fit data
        (OrdinalMixture's groups and scale, DawidSkene's prior counts from
        an earlier fit).  Checks ``fit_params`` (unknown ones are a
        TypeError naming ``fit``).  Never writes on ``data``: the encoded
        ratings are shared with the caller."""
        self._reject_fit_params(fit_params)
        return data

    def _step(self, data, params):
        """The local step: in process, or on every partition of a dask
        DataFrame with the stats summed (then there is no item state here)."""
        return _backend.of(data).local_step(self, data, params)

    # -- acceleration hooks -------------------------------------------------
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
        :class:`~skcrowd._loop.Alone`): the model's kernels may then use every
        thread."""
        return params

    # -- the loop ---------------------------------------------------------------
    def _evaluate(self, data, params):
        """One pass over the data at ``params``: the state the loop keeps."""
        items, stats = self._step(data, params)
        return _State(params, items, stats, self._objective(data, params, items, stats))

    def _run(self, data, params, progress=None, restart=0, max_iter=None, resume=None):
        """One restart of the loop (:func:`~skcrowd._loop.em_loop`) from
        ``params``; returns its end (a :class:`~skcrowd._loop.Run`).

        ``max_iter`` (default ``self.max_iter``) caps the passes; ``resume``,
        a run this method returned, is gone on from where it stopped
        (``params`` is then unused): its history and pass count continue.
        With ``accelerate=True`` and a model that maps its parameters to a
        vector, the loop extrapolates by SQUAREM (:class:`~skcrowd._loop.Squarem`).
        """
        limit = self.max_iter if max_iter is None else max_iter
        started = perf_counter()
        if resume is None:
            state = self._evaluate(data, params)
            monitor = ConvergenceMonitor(self.tol, limit, [state.objective])
            step_max = self._step_max0
        else:
            state, step_max = resume.state, resume.step_max
            monitor = ConvergenceMonitor(self.tol, limit, resume.history, resume.n_iter,
                                         resume.n_extrapolated)
            started -= resume.seconds
        accelerator = None
        if self._accelerated() and self._params_to_vector(state.params) is not None:
            accelerator = Squarem(self._params_to_vector, self._params_from_vector, step_max)

        def report(n_iter, objective, change, extrapolated):
            if progress is not None:
                progress.iteration(restart, n_iter, objective, change, started,
                                   extrapolated=extrapolated)

        backend = _backend.of(data)
        state = em_loop(lambda params: self._evaluate(data, params),
                        lambda state: self._global_update(data, state.params, state.stats),
                        state, monitor, accelerator,
                        checkpoint=lambda: backend.checkpoint(data),
                        restore=lambda saved: backend.restore(data, saved), report=report)
        return _Run(state.params, state.items, monitor.history, monitor.n_iter,
                    monitor.converged, monitor.n_extrapolated, perf_counter() - started,
                    state, step_max if accelerator is None else accelerator.step_max)

    def _fit_encoded(self, data, start=None, **fit_params):
        """The fit: prepare, start every restart (or one warm start from
        ``start``), run the loop, keep the best run, a final step, store."""
        data = self._prepare(data, **fit_params)
        rng = check_random_state(self.random_state)
        progress = Progress(type(self).__name__, self.verbose, self.n_init)
        with numba_threads(self.n_jobs):
            # A warm start is one run from the earlier state (n_init is
            # ignored, as in scikit-learn's mixtures).
            if start is not None:
                starts = [self._warm_params(data, rng, start)]
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
        """:meth:`_run` from every start (at most ``max_iter`` passes each),
        by :func:`~skcrowd._loop.run_restarts`: batched on a dask cluster or
        in threads with serial kernels when the model runs restarts in
        parallel (:meth:`_threaded_restarts`), else one after another."""
        screened = max_iter is not None

        def one(restart, params):
            progress.begin(restart)
            run = self._run(data, params, progress, restart, max_iter)
            progress.end(restart, run, screened)
            return run

        return run_restarts(one, starts, parallel=self._threaded_restarts(data),
                            lockstep=_backend.of(data).lockstep(data),
                            single_thread=self._single_thread)

    def _final_step(self, data, run):
        """Hook: after the loop, a last pass at the best run's parameters that
        the model needs for its fitted items (default: none).  Returns the
        run, its items replaced and the pass's objective (which must not be
        below the run's last) appended to its history."""
        return run

    def _infer_items(self, data):
        with numba_threads(self.n_jobs):
            return self._local_step(data, self._fitted_params())[0]


def _init_stats_of(data, model, seed):
    """``model``'s starting counts on ``data`` (one partition on Dask;
    module level: pickled to the workers)."""
    return model._init_stats(data, seed)
