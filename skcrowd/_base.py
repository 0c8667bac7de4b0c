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
import warnings
from abc import abstractmethod
from contextlib import contextmanager
from numbers import Integral, Real
from time import perf_counter

import numba
import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from . import _dask
from ._ratings import Ratings, encode, import_pandas, long_columns

__all__ = ["CrowdEstimator", "CrowdModel"]


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


def draw_categorical(probabilities, rng):
    """One draw per row of an ``(n, K)`` matrix of probabilities, as int32."""
    cdf = np.cumsum(probabilities, axis=1)
    u = rng.random(len(probabilities)) * cdf[:, -1]
    draws = (u[:, None] > cdf).sum(axis=1)
    return np.minimum(draws, probabilities.shape[1] - 1).astype(np.int32)


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
    def _encode(self, X, reset):
        """``X`` as :class:`RatingData`, through the data layer (every input
        form, missing values, rater ids and label encoding live there).

        With ``reset=True`` (fit) this sets ``classes_``, ``n_features_in_``
        and ``rater_ids_``; otherwise it checks ``X`` against them.
        """
        return encode(self, X, reset=reset)

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
        return out

    # -- output: results labelled by item id ------------------------------------
    #: name of the ``predict`` Series (pandas results)
    _prediction_name = "label"

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of :meth:`transform` / :meth:`predict_proba`:
        the classes, as strings.

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
            return pd.DataFrame(values, index=index, columns=self.get_feature_names_out())
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
            (ratings in fit) and the model's rater parameters, listed in the
            user guide ("Result tables").

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
            parameters (user guide, "Result tables").

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
            raise ValueError("item_table does not take a dask DataFrame; use predict_proba "
                             "and score_samples, which return dask collections.")
        data = self._encode(X, reset=False)
        model = self._with_unknown_raters(data)
        items = model._infer_items(data, **params)
        proba = items["proba"]
        table = {"n_ratings": data.ratings_per_item,
                 self._prediction_name: model._predict_from_items(items)}
        if self._prediction_name == "label":
            table["probability"] = proba.max(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            table["entropy"] = -np.sum(np.where(proba > 0, proba * np.log(proba), 0.0), axis=1)
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

    def _predict_from_items(self, items):
        """The point prediction per item from the per-item state."""
        return self.classes_[np.argmax(items["proba"], axis=1)]

    # -- public API -----------------------------------------------------------
    def _fit(self, X, **fit_params):
        """Encode ``X`` (once) and fit; returns ``(data, items)``, the
        encoded data and the per-item state of the training items (both
        None for a dask DataFrame, whose items stay on the workers)."""
        if _dask.is_dask_frame(X):
            # The fit loop over the workers' partitions (DESIGN §9).
            self._fit_encoded(_dask.encode_frame(self, X), **fit_params)
            return None, None
        data = self._encode(X, reset=True)
        # Ratings per rater: the rater table's n_ratings and the weights of
        # the population rater (unknown_raters="prior").
        self._rater_counts = np.bincount(data.rater, minlength=self.n_features_in_)
        return data, self._fit_encoded(data, **fit_params)

    def _fit_predict(self, X, **fit_params):
        data, items = self._fit(X, **fit_params)
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
            label``) is long form, one rating per row (see the user guide,
            "Input forms").
        y : None
            Ignored; there is no supervision.
        **fit_params : dict
            Model-specific data (for example ``groups``).

        Returns
        -------
        self : object
        """
        self._fit(X, **fit_params)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, **fit_params):
        """Fit, then return the inferred label of each training item.

        Equal to ``fit(X).predict(X)``; computed from the final local step of
        the fit, without a second pass (a second pass for a dask DataFrame).
        """
        return self._fit_predict(X, **fit_params)

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
            class prior.  A DataFrame indexed by item id (one column per
            class, named by :meth:`get_feature_names_out`) when ``X`` is a
            long-form DataFrame or ``set_output(transform="pandas")`` is
            set.  For a dask DataFrame of ratings: a dask DataFrame indexed by
            item, one column per class.
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
            names, rows sorted by item) for a long-form DataFrame, a CSR
            matrix for a sparse matrix, else an ndarray with NaN (or None)
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

    The loop runs ``local_step`` once after every global update, so the
    per-item state at the end is consistent with the final parameters and
    ``fit_predict(X)`` equals ``fit(X).predict(X)``.
    """

    _parameter_constraints: dict = {
        **CrowdEstimator._parameter_constraints,
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [Integral, None],
    }

    @abstractmethod
    def _init_params(self, data, rng, restart):
        """Initial global parameters of restart number ``restart``."""

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
        if fit_params:
            raise TypeError(
                f"{type(self).__name__}.fit got unexpected arguments "
                f"{sorted(fit_params)}."
            )
        return data

    def _step(self, data, params):
        """The local step: in process, or on every partition of a dask
        DataFrame with the stats summed (then there is no item state here)."""
        if isinstance(data, _dask.DaskRatingData):
            return None, data.local_stats(self, params)
        return self._local_step(data, params)

    def _run(self, data, params):
        """One restart of the loop from ``params``; returns its end state."""
        items, stats = self._step(data, params)
        history = [self._objective(data, params, items, stats)]
        converged = False
        n_iter = 0
        for n_iter in range(1, self.max_iter + 1):
            params = self._global_update(data, params, stats)
            items, stats = self._step(data, params)
            history.append(self._objective(data, params, items, stats))
            change = history[-1] - history[-2]
            self._print_iteration(n_iter, history[-1], change)
            if abs(change) < self.tol:
                converged = True
                break
        return params, items, history, n_iter, converged

    def _fit_encoded(self, data, **fit_params):
        data = self._prepare(data, **fit_params)
        rng = check_random_state(self.random_state)
        best = None
        with numba_threads(self.n_jobs):
            for restart in range(self.n_init):
                self._print_restart(restart)
                start = perf_counter()
                run = self._run(data, self._init_params(data, rng, restart))
                self._print_restart_end(run, perf_counter() - start)
                if best is None or run[2][-1] > best[2][-1]:
                    best = run
        params, items, history, n_iter, converged = best
        if not converged and self.max_iter > 0:
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter={self.max_iter} "
                f"iterations (last objective change "
                f"{history[-1] - history[-2]:.3g}, tol={self.tol}). Increase "
                "max_iter or tol.",
                ConvergenceWarning,
            )
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.lower_bound_ = history[-1]
        self.objective_history_ = np.asarray(history)
        self._set_fitted(data, params, items)
        return items

    def _infer_items(self, data):
        with numba_threads(self.n_jobs):
            return self._local_step(data, self._fitted_params())[0]

    # -- verbose output (sklearn.mixture style) -------------------------------
    def _print_restart(self, restart):
        if self.verbose:
            print(f"Restart {restart}")

    def _print_iteration(self, n_iter, objective, change):
        if self.verbose >= 2:
            print(f"  Iteration {n_iter}\t objective {objective:.6g}\t change {change:.3g}")

    def _print_restart_end(self, run, seconds):
        if self.verbose:
            _, _, history, n_iter, converged = run
            state = "converged" if converged else "did not converge"
            print(
                f"  {state} after {n_iter} iterations in {seconds:.2f}s, "
                f"objective {history[-1]:.6g}"
            )
