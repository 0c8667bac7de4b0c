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

import warnings
from abc import abstractmethod
from contextlib import contextmanager
from numbers import Integral, Real
from time import perf_counter

import numba
import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _dask
from ._ratings import RatingData, Ratings, check_classes, encode_labels, show

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


def _splitmix64(x):
    """The splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def item_uniforms(item_ids, seed):
    """One uniform number in (0, 1) per item, a function of the item's id
    and ``seed`` only: the same for an item wherever it sits (in memory, in
    any Dask partition, in a cross-validation fold), so that random starts
    do not depend on how the items are laid out.

    Integer ids are hashed as numbers, others by their text (``str``).
    """
    ids = np.asarray(item_ids)
    with np.errstate(over="ignore"):
        if ids.dtype.kind in "iub":
            keys = ids.astype(np.int64).view(np.uint64)
        elif ids.dtype.kind == "f":
            keys = ids.astype(np.float64).view(np.uint64)
        else:
            text = ids.astype(str)
            codes = text.view(np.uint32).reshape(len(text), -1).astype(np.uint64)
            keys = np.zeros(len(text), dtype=np.uint64)
            for column in codes.T:  # the padding (code 0) of shorter ids is skipped
                keys = np.where(column != 0, _splitmix64(keys ^ column), keys)
        hashed = _splitmix64(keys ^ _splitmix64(np.uint64(seed)))
    return ((hashed >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def item_normals(item_ids, seed):
    """One standard normal per item (see :func:`item_uniforms`)."""
    return ndtri(item_uniforms(item_ids, seed))


def item_dirichlet(item_ids, seed, n_classes):
    """One Dirichlet(1, ..., 1) row per item, as normalised exponentials of
    :func:`item_uniforms` (seeds ``seed`` ... ``seed + n_classes - 1``): a
    random start of the items' posteriors that is the same in memory and in
    any Dask partition."""
    rows = -np.log(np.column_stack(
        [item_uniforms(item_ids, seed + k) for k in range(n_classes)]))
    return rows / rows.sum(axis=1, keepdims=True)


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

    _parameter_constraints: dict = {"classes": ["array-like", None]}

    #: fewest classes the model can be fitted with
    _min_classes = 1

    # -- input ----------------------------------------------------------------
    def _encode(self, X, reset):
        """Validate ``X`` and convert it to :class:`RatingData`.

        With ``reset=True`` (fit) this sets ``classes_``, ``n_features_in_``
        and ``rater_ids_``; otherwise it checks ``X`` against them.
        """
        if isinstance(X, Ratings):
            ratings = X
            if reset:
                self.n_features_in_ = ratings.shape[1]
                self.rater_ids_ = ratings.rater_ids
                if hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
                rater = ratings._rater
            else:
                rater = self._map_raters(ratings)
        else:
            if isinstance(X, (list, tuple)) and len(X) == 0:
                raise ValueError("X is empty: it has no items.")
            X = validate_data(
                self,
                X,
                reset=reset,
                accept_sparse=("csr", "csc", "coo"),
                dtype=None,
                ensure_all_finite="allow-nan",
                ensure_min_samples=1,
                ensure_min_features=1,
            )
            ratings = Ratings.from_matrix(X)
            if reset:
                self.rater_ids_ = getattr(
                    self, "feature_names_in_", np.arange(ratings.shape[1])
                )
            rater = ratings._rater

        labels = ratings.label
        if reset:
            if ratings.n_ratings == 0:
                raise ValueError(
                    "X has no ratings: every entry is missing, nothing to fit."
                )
            self._set_classes(labels)
        codes = encode_labels(labels, self.classes_)
        return RatingData(
            ratings._item,
            rater,
            codes,
            ratings._item_ptr,
            n_raters=self.n_features_in_,
            n_classes=len(self.classes_),
            item_ids=ratings.item_ids,
        )

    def _set_classes(self, labels):
        """``classes_`` from the ``classes`` parameter or the labels seen
        (any array holding every label), checked against ``_min_classes``."""
        if self.classes is not None:
            self.classes_ = check_classes(self.classes)
        else:
            try:
                self.classes_ = np.unique(labels)
            except TypeError:
                raise ValueError(
                    "Labels must all be of one type (numbers or strings)."
                ) from None
        if len(self.classes_) < self._min_classes:
            raise ValueError(
                f"The ratings contain only {len(self.classes_)} class(es) "
                f"({self.classes_.tolist()!r}); "
                f"{type(self).__name__} needs at least {self._min_classes} "
                "classes. Pass classes=[...] to name the scale."
            )
        if len(self.classes_) == 1:
            warnings.warn(
                f"The ratings contain only one class ({show(self.classes_[0])}); "
                "every item will get it. Pass classes=[...] to name the scale.",
                UserWarning,
            )

    def _map_raters(self, ratings):
        """Rater codes of a :class:`Ratings` in the columns seen in fit."""
        fitted = np.asarray(self.rater_ids_)
        ids = ratings.rater_ids
        if len(ids) == len(fitted) and np.array_equal(ids, fitted):
            return ratings._rater
        try:
            order = np.argsort(fitted, kind="stable")
            pos = np.minimum(np.searchsorted(fitted[order], ids), len(fitted) - 1)
        except TypeError:
            raise ValueError("Rater ids are not comparable with those seen in fit.") from None
        unknown = fitted[order][pos] != ids
        used = np.zeros(len(ids), dtype=bool)
        used[np.unique(ratings._rater)] = True
        if np.any(unknown & used):
            first = ids[np.argmax(unknown & used)]
            raise ValueError(
                f"Rater {show(first)} was not seen in fit; {type(self).__name__} has no "
                "parameters for it."
            )
        return order[pos].astype(np.int32)[ratings._rater]

    def _as_output(self, X, data, codes):
        """Ratings with new label codes, in the form of the input ``X``."""
        labels = self.classes_[codes]
        if isinstance(X, Ratings):
            return Ratings._from_sorted(data.item, X._rater, labels, X.item_ids, X.rater_ids)
        shape = (data.n_items, data.n_raters)
        if sp.issparse(X):
            return sp.csr_matrix((labels, (data.item, data.rater)), shape=shape)
        out = np.full(shape, None if labels.dtype.kind == "O" else np.nan,
                      dtype=object if labels.dtype.kind == "O" else np.float64)
        out[data.item, data.rater] = labels
        return out

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

    def _dask_columns(self, **fit_params):
        """The columns a dask DataFrame needs besides item, rater and label,
        as ``(name, column)`` pairs, from the fit parameters (which name
        columns on Dask, e.g. OrdinalMixture's ``groups``)."""
        if fit_params:
            raise TypeError(
                f"{type(self).__name__}.fit got unexpected arguments "
                f"{sorted(fit_params)}."
            )
        return ()

    def _predict_from_items(self, items):
        """The point prediction per item from the per-item state."""
        return self.classes_[np.argmax(items["proba"], axis=1)]

    # -- public API -----------------------------------------------------------
    def _fit(self, X, **fit_params):
        if _dask.is_dask_frame(X):
            # The fit loop over the workers' partitions (DESIGN §9); the
            # training items' states stay there until the fit ends.
            data = _dask.encode_frame(self, X, **fit_params)
            try:
                self._fit_encoded(data)
            finally:
                data.release()
            self._dask_iterations = data.iterations  # timings, for benchmarks
            return None
        data = self._encode(X, reset=True)
        return self._fit_encoded(data, **fit_params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, **fit_params):
        """Fit the model to the ratings ``X``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_items, n_raters), or Ratings
            ``X[i, j]`` is rater ``j``'s label for item ``i``; NaN (or None)
            means not rated.  In a sparse matrix every stored entry is a
            rating, explicit zeros included.
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
        items = self._fit(X, **fit_params)
        if items is None:
            return self.predict(X)
        return self._predict_from_items(items)

    def predict(self, X):
        """The most probable true class of each item.

        Parameters
        ----------
        X : array-like, sparse matrix or Ratings of shape (n_items, n_raters)

        Returns
        -------
        labels : ndarray of shape (n_items,)
        """
        check_is_fitted(self)
        if _dask.is_dask_frame(X):
            return _dask.infer_frame(self, X, "label")
        return self._predict_from_items(self._infer_items(self._encode(X, reset=False)))

    def predict_proba(self, X):
        """Posterior probability of each true class, per item.

        Returns
        -------
        proba : ndarray of shape (n_items, n_classes)
            Columns follow ``classes_``.  An item without ratings gets the
            class prior.  For a dask DataFrame of ratings (DawidSkene,
            IRT3PL): a dask DataFrame indexed by item, one column per class.
        """
        check_is_fitted(self)
        if _dask.is_dask_frame(X):
            return _dask.infer_frame(self, X, "proba")
        return self._infer_items(self._encode(X, reset=False))["proba"]

    def transform(self, X):
        """Same as :meth:`predict_proba`, so that a model is a pipeline step."""
        return self.predict_proba(X)

    def score_samples(self, X):
        """Log marginal likelihood of each item's ratings, rater parameters
        fixed and item-level latent quantities integrated out.

        Returns
        -------
        log_likelihood : ndarray of shape (n_items,)
            0 for an item with no ratings.
        """
        check_is_fitted(self)
        if _dask.is_dask_frame(X):
            return _dask.infer_frame(self, X, "loglik")
        data = self._encode(X, reset=False)
        loglik = self._score_items(data)
        # Exactly 0 for an item without ratings (not log Σπ rounded).
        loglik[data.ratings_per_item == 0] = 0.0
        return loglik

    def _score_items(self, data):
        return self._infer_items(data)["loglik"]

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
            A Ratings for a Ratings, a CSR matrix for a sparse matrix, else an
            ndarray with NaN (or None) where ``X`` has no rating.
        """
        check_is_fitted(self)
        if _dask.is_dask_frame(X):
            raise ValueError("sample does not take a dask DataFrame; sample a Ratings or "
                             "a matrix (for example one partition).")
        data = self._encode(X, reset=False)
        codes = self._sample_labels(data, check_random_state(random_state))
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
