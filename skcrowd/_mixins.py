"""What some models add to the fit loop: warm starts and stepwise (online)
EM, as mixins placed before :class:`~skcrowd._base.CrowdModel` in a model's
bases (``class DawidSkene(OnlineEMMixin, WarmStartMixin, CrowdModel)``),
and the posterior draws of :mod:`skcrowd.uncertainty` as methods.
"""

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._backend import for_input
from ._base import numba_threads
from ._kernels._common import count_codes
from ._ratings import encode_batch, set_raters

__all__ = ["OnlineEMMixin", "PosteriorMixin", "WarmStartMixin"]


class WarmStartMixin:
    """Start a fit from an earlier fit's rater parameters, matched by rater
    id: ``warm_start=True`` after a fit, or ``fit(X, init_params=earlier)``
    (:ref:`warm-start`).

    A model names its global parameters with one row per rater
    (``_rater_params``) and those shared by every rater
    (``_shared_params``); raters not seen before start from
    :meth:`_new_rater_params`.  The fit loop calls :meth:`_warm_params`
    instead of ``_init_params`` and runs one restart.
    """

    #: names of the global parameters that hold one row per rater (axis 0),
    #: and of those shared by every rater: what a warm start carries over
    _rater_params = ()
    _shared_params = ()
    #: whether the rater and shared parameters, with
    #: :meth:`_warm_extra_params`, are all of a start's parameters (then a
    #: warm start that knows every rater needs no cold start)
    _warm_params_complete = False

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
        now, before = self._match_raters(start["rater_ids"])
        if self._warm_params_complete and len(now) == len(self.rater_ids_):
            # every rater seen before, and nothing else in the parameters:
            # the cold start would be overwritten entirely (a pass saved)
            params = {name: np.array(start["params"][name][before], dtype=np.float64)
                      for name in self._rater_params}
            return dict(params, **{name: start["params"][name]
                                   for name in self._shared_params},
                        **self._warm_extra_params(data))
        params = dict(self._new_rater_params(data, self._init_params(data, rng, 0)))
        for name in self._rater_params:
            rows = np.array(params[name], dtype=np.float64, copy=True)
            rows[now] = start["params"][name][before]
            params[name] = rows
        for name in self._shared_params:
            params[name] = start["params"][name]
        return params

    def _warm_extra_params(self, data):
        """The start's parameters that are neither the raters' nor shared,
        for a warm start that knows every rater (hook; default: none)."""
        return {}

    def _new_rater_params(self, data, params):
        """The parameters of raters that an earlier fit has not seen (hook;
        default: the cold start's)."""
        return params


class OnlineEMMixin:
    """``partial_fit``: stepwise EM over batches of items (Cappé & Moulines
    2009; Liang & Klein 2009).

    A model names the sufficient statistics that are blended
    (``_online_stats``) and those with a rater axis
    (``_online_rater_stats``, padded when a batch brings new raters); the
    hooks :meth:`_online_batch_stats` and :meth:`_online_update` adapt a
    batch's statistics and the M-step.  Needs :class:`WarmStartMixin` (a
    batch after the first starts from the stream's parameters).
    """

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
        """Encode a batch for :meth:`partial_fit` (:func:`encode_batch`).

        Returns the encoded batch, the number of raters seen before it, and
        a function that records the batch's raters and classes on the
        model: called once the batch is accepted, so that a refused batch
        leaves the model as it was."""
        if for_input(X).distributed:
            raise ValueError("partial_fit does not take a dask DataFrame.")
        first = not hasattr(self, "_stepwise")
        data, n_before, rater_ids, classes, by_position = encode_batch(self, X, y, first=first)

        def accept():
            self._fit_item_ratings = None  # the training items are no longer fit's
            self.classes_ = classes
            set_raters(self, rater_ids, by_position=by_position)
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

        return data, n_before, accept

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


class PosteriorMixin:
    """Posterior draws of the fitted global parameters, and what integrates
    them, as methods: each delegates to :mod:`skcrowd.uncertainty`
    (:ref:`uncertainty`), whose functions take the model as their first
    argument.  Every method needs the ratings ``X`` the model was fitted to
    (and its known labels ``y``, if it had any): the model does not keep
    them.

    A model with a sampler sets the hooks below: ``_posterior_attributes``,
    the fitted attributes that hold its global parameters (the
    prevalence, the rater parameters, population hyperparameters; derived
    ones such as ``rater_accuracy_`` too, so that the tables read a draw
    consistently), ``_chain_defaults`` and ``_posterior_chain``.
    """

    #: the fitted attributes a posterior draw replaces
    _posterior_attributes = ()
    #: the chain's (burn-in sweeps, sweeps per kept draw) when not given
    _chain_defaults = (200, 5)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        """The model's Gibbs sampler on its encoded ratings ``data``: the
        draws (a dict of arrays with a leading draw axis), the item
        posteriors averaged over them and, with ``keep_labels``, the
        classes drawn jointly (else None)."""
        raise NotImplementedError

    def posterior_samples(self, X, n_samples=200, *, y=None, method="auto",
                          random_state=None, n_burnin=None, thin=None):
        """Draws of the fitted global parameters from their posterior.

        See :func:`skcrowd.uncertainty.posterior_samples`.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            The ratings the model was fitted to.
        n_samples : int, default=200
        y : array-like, mapping or Series, default=None
            The known labels of the fit: the draws condition on them.
        method : {"auto", "gibbs", "bootstrap"}, default="auto"
        random_state : int, RandomState instance or None, default=None
        n_burnin, thin : int, default=None
            The chain's burn-in sweeps and sweeps per draw (None: the
            model's defaults).

        Returns
        -------
        samples : dict
            One array per global attribute, draws along the leading axis.
        """
        from .uncertainty import posterior_samples

        return posterior_samples(self, X, n_samples, y=y, method=method,
                                 random_state=random_state, n_burnin=n_burnin, thin=thin)

    def predict_proba_integrated(self, X, *, y=None, samples=None, **kwargs):
        """Item posteriors averaged over the posterior of the global
        parameters (``predict_proba`` plugs the fitted ones in).

        See :func:`skcrowd.uncertainty.predict_proba`.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            The ratings the model was fitted to.
        y : array-like, mapping or Series, default=None
            The known labels of the fit.
        samples : dict, default=None
            Draws from :meth:`posterior_samples`; drawn here when None,
            with the further keyword arguments.
        **kwargs
            ``n_samples``, ``method``, ``random_state``, ``n_burnin``,
            ``thin``.

        Returns
        -------
        proba : ndarray of shape (n_items, n_classes)
        """
        from .uncertainty import predict_proba

        return predict_proba(self, X, samples=samples, y=y, **kwargs)

    def sample_labels(self, X, n_samples=100, *, y=None, samples=None, random_state=None,
                      **kwargs):
        """True labels drawn from the full posterior: parameters, then
        labels (one label set per row).

        See :func:`skcrowd.uncertainty.sample_labels`.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            The ratings the model was fitted to.
        n_samples : int, default=100
        y : array-like, mapping or Series, default=None
            The known labels of the fit.
        samples : dict, default=None
            Draws from :meth:`posterior_samples`.
        random_state : int, RandomState instance or None, default=None
        **kwargs
            ``method``, ``n_burnin``, ``thin``.

        Returns
        -------
        labels : ndarray of shape (n_samples, n_items)
        """
        from .uncertainty import sample_labels

        return sample_labels(self, X, n_samples, samples=samples, random_state=random_state,
                             y=y, **kwargs)

    def rater_table(self, X=None, *, interval=None, y=None, samples=None, **kwargs):
        """Per-rater diagnostics of the fitted model, one row per rater;
        with ``interval``, posterior interval columns beside every
        parameter column.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings, default=None
            The ratings the model was fitted to (needed with ``interval``
            unless ``samples`` is given).
        interval : float in (0, 1), default=None
            Posterior mass of the intervals: each parameter column ``c``
            gets ``c_lower`` and ``c_upper`` (see
            :func:`skcrowd.uncertainty.rater_table`).  None: the table of
            the fitted parameters alone.
        y : array-like, mapping or Series, default=None
            The known labels of the fit.
        samples : dict, default=None
            Draws from :meth:`posterior_samples`; drawn here when None,
            with the further keyword arguments.
        **kwargs
            ``n_samples``, ``method``, ``random_state``, ``n_burnin``,
            ``thin``.

        Returns
        -------
        table : pandas.DataFrame
            One row per rater, the columns of :ref:`result_tables`, and
            with ``interval`` the ``_lower`` and ``_upper`` ones.
        """
        if interval is None:
            if X is not None or samples is not None or kwargs or y is not None:
                raise ValueError("rater_table takes ratings, samples or sampler options "
                                 "only with interval=...")
            return super().rater_table()
        if X is None and samples is None:
            raise ValueError("rater_table(interval=...) needs the ratings the model was "
                             "fitted to: rater_table(X, interval=...).")
        from .uncertainty import rater_table

        if samples is None:
            kwargs["y"] = y
        return rater_table(self, X, interval, samples=samples, **kwargs)
