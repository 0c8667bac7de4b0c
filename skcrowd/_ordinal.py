"""Lakshminarayanan & Teh (2013): the ordinal mixture model of graded ratings
with spammers, fitted by variational Bayes."""

import math
from functools import cached_property
from numbers import Real

import numpy as np
from scipy.linalg import eigh_tridiagonal
from scipy.special import digamma, expit, gammaln, log_ndtr, ndtr, ndtri, roots_legendre, zeta
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import CrowdModel, item_chunks, item_ids_of, numba_threads
from ._backend import ON_DASK, on_workers
from ._item_random import item_keys, item_normals
from ._kernels import _ordinal as kernels
from ._kernels._common import dot, item_means
from ._mixins import PosteriorMixin, WarmStartMixin
from ._ratings import encode_groups, per_class, per_item

__all__ = ["OrdinalMixture"]

#: ``score_samples``: Gauss–Legendre nodes per panel of the composite rule
#: over z, the panel ends placed around each item's posterior peak (in its
#: posterior standard deviations), and generalized Gauss–Laguerre nodes over
#: a per-item δ.
_N_LEGENDRE = 12
_PEAK_OFFSETS = np.array([-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0])
_N_LAGUERRE = 12
#: item-level inference at predict time (and at the end of fit) iterates
#: each item's coordinate updates until z̄ moves less than this (in units of
#: the scale's step), at most _MAX_LOCAL_SWEEPS times.
_LOCAL_TOL = 1e-10
_MAX_LOCAL_SWEEPS = 1000
#: prior_mean at most this many steps of the scale from the scale's mean: z - b
#: keeps the bins apart in float64 (NaN from 1e20 on the scale 1..5; 1e15 fits).
_MAX_PRIOR_DISTANCE = 1e12
#: difficulty_shape / difficulty_rate at least this: the prior mean of δ sets
#: the start's rating noise 1 / sqrt(τ δ), and below it the bins' normal
#: probabilities cancel to 0 (NaN predictions from 1e-50; 1e-24 fits).
_MIN_DIFFICULTY_MEAN = 1e-24
#: type-II ML of the precision prior: floor of s = ln mean E τ - mean E ln τ
#: (α grows without bound as s -> 0).
_MIN_GAMMA_S = 1e-12
#: acceleration: bound on the extrapolated log shapes and rates
_MAX_LOG_COORDINATE = 50.0


class _Problem:
    """Encoded ratings plus the model's view of them: the scale (bins,
    values, spam log-probabilities) and the difficulty categories."""

    def __init__(self, data, scale, item_group, n_groups):
        self.data = data
        self.n_items = data.n_items
        self.n_raters = data.n_raters
        self.lower, self.upper, self.value, self.log_spam, self.step = scale
        self.mean_value = float(np.mean(self.value))  # μ's default (see _prior)
        self.scale = np.ascontiguousarray(
            np.vstack([self.lower, self.upper, self.value, self.log_spam]))
        self.item_group = item_group
        self.n_groups = n_groups
        order = np.argsort(item_group, kind="stable")
        self.group_items = order.astype(np.int64)
        self.group_ptr = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(item_group, minlength=n_groups), out=self.group_ptr[1:])
        self.rater_counts = np.diff(data.rater_ptr).astype(np.float64)
        self.rated = self.rater_counts > 0
        self.all_rated = bool(np.all(self.rated))
        self.group_rated = np.bincount(
            item_group, weights=np.diff(data.item_ptr), minlength=n_groups) > 0
        # the gold clamp: q(z_m) fixed at the known value (NaN: unknown)
        self.known = np.full(data.n_items, np.nan)
        if data.gold is not None:
            gold = data.gold >= 0
            self.known[gold] = self.value[data.gold[gold]]
        # the kernels' fixed blocks of items (from the data's shape only)
        self.block_ptr = item_chunks(data.n_items, 3 * data.n_raters)
        # the numpy twins or the compiled kernels, for one pass over the
        # items (predict); a fit decides for its restarts (_init_params)
        self.numpy = kernels.use_numpy_path(data.n_ratings)

    def kernel(self, name):
        """The kernel ``name`` of :mod:`._kernels._ordinal` on this
        problem's path: its numpy twin or the compiled one."""
        return getattr(kernels, name + "_numpy" if self.numpy else name)

    @cached_property
    def item_keys(self):
        """The items' ids hashed for the restarts' jitter, once for all of
        them (see ``_item_start``)."""
        return item_keys(item_ids_of(self.data))


class _DaskProblem:
    """The client's view of ratings on Dask workers: sizes, the scale and
    the rated raters (what the global update and F need); each partition
    builds its own :class:`_Problem` on its worker."""

    def __init__(self, data, scale):
        self.data = data
        self.n_items = data.n_items
        self.n_raters = data.n_raters
        self.lower, self.upper, self.value, self.log_spam, self.step = scale
        self.mean_value = float(np.mean(self.value))  # μ's default (see _prior)
        self.rater_counts = np.asarray(data.rater_counts, dtype=np.float64)
        self.rated = self.rater_counts > 0
        self.all_rated = bool(np.all(self.rated))
        # one shared δ (difficulty=None); groups' and items' δ stay on the workers
        self.n_groups = 1
        self.group_rated = np.array([True])


class OrdinalMixture(PosteriorMixin, WarmStartMixin, CrowdModel):
    """Ordinal mixture model of graded ratings with spammers (variational Bayes).

    The model of Lakshminarayanan & Teh (2013).  Each item m has a real
    true value z_m ~ N(μ, 1/λ) on the label scale.  A rating by rater n is,
    with probability ε_n, *genuine*: a latent x ~ N(z_m, 1/(τ_n δ_c(m)))
    thresholded into the bins [b_{k-1}, b_k) of the scale; otherwise it is
    *spam*, drawn from π (uniform) whatever the item.  τ_n ~ Gamma(α, β) is
    the rater's precision, δ_c ~ Gamma(φ, η) the inverse difficulty of the
    item's category.  Variational Bayes (factorisation of eq. 2 of the paper,
    updates of eq. 4 with the exact mean-field update for ω) maximises a
    lower bound F on the log marginal likelihood, computed every iteration;
    ε (eq. 5) and (α, β) are type-II maximum likelihood.

    Parameters
    ----------
    difficulty : {None, "item", "group"}, default=None
        Granularity of δ: one for all items (``None``), one per item, or one
        per group given as ``fit(X, groups=...)``.
    spam : bool, default=True
        Include the spam component; ``False`` makes every rating genuine.
    link : {"ordinal", "gaussian"}, default="ordinal"
        ``"ordinal"``: ratings are thresholded latent Gaussians.
        ``"gaussian"``: the rating value itself is the observed x (the
        ablation of the paper's Fig. 3), with a uniform rounding error over
        its bin (variance width²/12, Sheppard's correction; without it the
        precision of a rater whose integer ratings match the item means
        grows without bound); the spam component is then the uniform
        density π_k / width_k over the bins.
    thresholds : array-like of shape (n_classes + 1,), default=None
        b_0 < b_1 < ... < b_K.  Default: half-way between consecutive scale
        values, with b_0 and b_K half a step outside (0.5, 1.5, ..., 5.5 for
        the scale 1..5).  The outer ones may be infinite (ordinal link).
    classes : array-like, default=None
        The numeric scale values, sorted; default the values seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: score them with the fitted population of raters - the
        precision factor q(τ) = Gamma(α, β) of the type-II ML fit
        (``precision_shape_``, ``precision_rate_``) and the reliability ε
        averaged over the raters, weighted by their numbers of ratings.
    prior_mean : float, default=None
        μ; default the mean of the scale values.  Finite, and at most 1e12
        steps of the scale from that mean (beyond, float64 cannot tell the
        bins apart near μ).
    prior_precision : float, default=0.1
        λ.
    difficulty_shape, difficulty_rate : float, default=10.0, 5.0
        φ and η of the gamma prior on δ (fixed, for identifiability).  Its
        mean φ / η must be finite and at least 1e-24 (a smaller δ makes the
        rating noise span more of the scale than float64 can resolve).
    spam_distribution : array-like of shape (n_classes,), default=None
        π; default uniform.
    init_reliability : float, default=0.99
        ε_n at the start of every restart.  Restarts vary z and τ, never ε:
        on real data the all-spam state can have the higher bound and
        ε = 0 or 1 is absorbing, so a start with low ε ends there.
    max_iter : int, default=1000
    tol : float, default=0.1
        Stop when the lower bound F changes by less than this (absolute).
    n_init : int, default=10
        Restarts; the one with the highest F is kept.
    random_state : int, RandomState instance or None, default=None
    warm_start : bool, default=False
        If True, each ``fit`` after the first starts from the fitted rater
        parameters, matched by rater id (raters not seen before start as in
        a cold fit), as one run (``n_init`` is ignored).  See
        :ref:`warm-start`.
    verbose : int, default=0
    n_jobs : int, default=None
        Threads: with several restarts they run in parallel threads (one
        restart per thread), otherwise the kernels use the threads.
        Results do not depend on it.
    accelerate : bool, default=False
        Extrapolate the rater precisions and their population (and a shared
        difficulty) by SQUAREM (see :doc:`/acceleration`).  Off by default:
        the slow directions of this VB iteration are the raters' ε and the
        items' q(z), so on TREC it saves no passes, and its path stops on
        other plateaus of F (another restart is chosen), so the paper's
        reproduction runs plain VB.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The scale values.
    thresholds_ : ndarray of shape (n_classes + 1,)
    class_prior_ : ndarray of shape (n_classes,)
        Mass of the prior N(μ, 1/λ) in each bin (outer bins open-ended).
    rater_precision_ : ndarray of shape (n_raters,)
        E τ_n, the rater's precision.
    rater_reliability_ : ndarray of shape (n_raters,)
        ε_n, the prior probability that a rating of rater n is genuine
        (1 - ε_n is the rater's spamminess).
    group_difficulty_ : ndarray of shape (n_groups,)
        E δ_c (inverse difficulty: below 1, even precise raters are noisy).
        One entry with ``difficulty=None``, one per training item with
        ``"item"`` (``None`` after a Dask fit), one per ``group_ids_`` entry
        with ``"group"``.
    group_ids_ : ndarray
        The groups seen in fit (``difficulty="group"`` only).
    item_mean_, item_std_ : ndarray of shape (n_training_items,) or None
        Mean and standard deviation 1/√λ_m of q(z_m) for the training items
        (``None`` after a fit on a dask DataFrame: the training items stay on
        the workers; ``predict(frame)`` / ``predict_proba(frame)`` give them
        as dask collections).
    precision_shape_, precision_rate_ : float
        α and β of the gamma prior on τ (type-II ML).
    rater_precision_shape_, rater_precision_rate_ : ndarray of shape (n_raters,)
        q(τ_n) = Gamma(α_n, β_n).
    group_difficulty_shape_, group_difficulty_rate_ : ndarray
        q(δ_c) = Gamma(φ_c, η_c).
    n_features_in_, rater_ids_, n_iter_, converged_, lower_bound_, objective_history_
        As in every model; the objective is F (not divided by anything).

    See Also
    --------
    MeanRating, MedianRating, MajorityVote : baselines.
    DawidSkene : categorical truth (ignores the order of the scale).

    Notes
    -----
    ``predict`` on new items infers q(z_m) (and, with ``difficulty="item"``,
    q(δ_m)) with the rater factors fixed.  With ``difficulty="group"``, pass
    ``groups=`` to ``predict`` / ``predict_proba`` / ``score_samples``: a
    group seen in fit keeps its fitted q(δ_c); an unseen group, or every
    item when ``groups`` is not given, uses the prior Gamma(φ, η).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import OrdinalMixture
    >>> X = np.array([[1, 2, 1], [3, 3, 2], [2, np.nan, 3], [3, 3, 3]])
    >>> model = OrdinalMixture(n_init=2, random_state=0).fit(X)
    >>> model.predict(X).round(2).shape
    (4,)
    """

    _min_classes = 2
    _supports_dask = True
    _predicts_mean = True

    _rater_params = ("tau_shape", "tau_rate", "eps", "eps_c")
    #: (q(δ) too: shared by every item without difficulty categories)
    _shared_params = ("alpha", "beta", "delta_shape", "delta_rate")

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        "difficulty": [StrOptions({"item", "group"}), None],
        "spam": ["boolean"],
        "link": [StrOptions({"ordinal", "gaussian"})],
        "thresholds": ["array-like", None],
        "prior_mean": [Interval(Real, None, None, closed="neither"), None],
        "prior_precision": [Interval(Real, 0, None, closed="neither")],
        "difficulty_shape": [Interval(Real, 0, None, closed="neither")],
        "difficulty_rate": [Interval(Real, 0, None, closed="neither")],
        "spam_distribution": ["array-like", None],
        "init_reliability": [Interval(Real, 0, 1, closed="neither")],
    }

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "rater_precision_", "rater_precision_shape_",
                             "rater_precision_rate_", "rater_reliability_", "_rater_spamminess",
                             "group_difficulty_", "group_difficulty_shape_",
                             "group_difficulty_rate_", "precision_shape_", "precision_rate_")
    #: (burn-in sweeps, sweeps per kept draw): covers at its nominal
    #: rates by simulation (doc/uncertainty.rst)
    _chain_defaults = (200, 5)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return gibbs_posterior(self, data, n_samples, n_burnin, thin, rng, keep_labels)

    def __init__(
        self,
        *,
        difficulty=None,
        spam=True,
        link="ordinal",
        thresholds=None,
        classes=None,
        unknown_raters="error",
        prior_mean=None,
        prior_precision=0.1,
        difficulty_shape=10.0,
        difficulty_rate=5.0,
        spam_distribution=None,
        init_reliability=0.99,
        max_iter=1000,
        tol=0.1,
        n_init=10,
        random_state=None,
        warm_start=False,
        verbose=0,
        n_jobs=None,
        accelerate=False,
    ):
        self.difficulty = difficulty
        self.spam = spam
        self.link = link
        self.thresholds = thresholds
        self.classes = classes
        self.unknown_raters = unknown_raters
        self.prior_mean = prior_mean
        self.prior_precision = prior_precision
        self.difficulty_shape = difficulty_shape
        self.difficulty_rate = difficulty_rate
        self.spam_distribution = spam_distribution
        self.init_reliability = init_reliability
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.accelerate = accelerate

    # -- public API with groups ------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, groups=None, init_params=None):
        """Fit the model to the ratings ``X``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_items, n_raters), or Ratings
            Numeric ratings; NaN means not rated.
        y : array-like of shape (n_items,), mapping or pandas Series, default=None
            Known values of some items (gold), missing where unknown: q(z_m)
            of a known item is fixed at its value (see :ref:`gold`).
        groups : array-like of shape (n_items,) or pandas Series, default=None
            The category of each item (e.g. its query), for
            ``difficulty="group"``; ignored otherwise.  In the row order of
            ``X``, or a Series indexed by item id (aligned by id, e.g.
            ``df.groupby("item")["query"].first()`` for a long frame).  Routed by
            scikit-learn's metadata routing (``set_fit_request(groups=True)``),
            so ``GridSearchCV(..., cv=GroupKFold()).fit(X, groups=q)`` works.
            For a dask DataFrame of ratings: the name of its column holding
            each rating's group (default ``"group"``).
        init_params : OrdinalMixture, default=None
            A fitted model whose rater factors (matched by rater id) the fit
            starts from (see :ref:`warm-start`).

        Returns
        -------
        self : object
        """
        self._fit(X, y, init_params=init_params, groups=groups)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, groups=None, init_params=None):
        """Fit, then return the posterior mean z̄ of each training item (the
        known value for an item given in ``y``)."""
        return self._fit_predict(X, y, init_params=init_params, groups=groups)

    def predict(self, X, groups=None):
        """Posterior mean E[z_m] of each item, on the label scale (float).

        Parameters
        ----------
        X : array-like, sparse matrix or Ratings of shape (n_items, n_raters)
        groups : array-like of shape (n_items,) or pandas Series, default=None
            Groups of the items, for ``difficulty="group"`` (a Series is
            aligned by item id).

        Returns
        -------
        z : ndarray of shape (n_items,)
        """
        return self._results(X, "label", groups=groups)

    def predict_proba(self, X, groups=None):
        """Mass of q(z_m) in each bin of the scale (outer bins open-ended).

        Returns
        -------
        proba : ndarray of shape (n_items, n_classes)
        """
        return self._results(X, "proba", groups=groups)

    def score_samples(self, X, groups=None):
        """log ∫ N(z | μ, 1/λ) Π_n p(r_nm | z) dz per item, by quadrature.

        The rater factors are plugged in at their means (E τ_n, ε_n, and
        E δ_c of the item's group); with ``difficulty="item"``, δ_m is
        integrated out as well (Gauss–Laguerre over its prior).  The z
        integral is a composite Gauss–Legendre rule with panel ends at the
        thresholds and around the item's posterior peak: the spam floor gives
        the posterior a broad prior-shaped part that an adaptive
        Gauss–Hermite rule centred on the peak misses.  The outer
        bins are open-ended here, so that the probabilities of the K levels
        sum to one.  0 for an item without ratings.
        """
        return self._results(X, "loglik", groups=groups)

    def score(self, X, y=None, groups=None):
        """Mean of :meth:`score_samples` (higher is better)."""
        return self._mean_score(X, self.score_samples(X, groups=groups))

    # -- Dask ----------------------------------------------------------------------
    def _dask_columns(self, groups=None, **fit_params):
        """With ``difficulty="group"``, the frame's group column."""
        if self.difficulty != "group":
            return ()
        if groups is None:
            groups = "group"
        if not isinstance(groups, str):
            raise ValueError(
                "For a dask DataFrame of ratings, groups names its column that holds each "
                f"rating's group (default 'group'); got {type(groups).__name__}."
            )
        return (("group", groups),)

    def _infer_distributed(self, X, what, groups=None, **params):
        """Item results for a dask DataFrame; with ``difficulty="group"``, the
        groups from its group column when it has one (else the prior δ)."""
        if params:
            return super()._infer_distributed(X, what, **params)  # the refusal
        extra = ()
        if self.difficulty == "group":
            column = "group" if groups is None else groups
            if groups is not None or column in X.columns:
                extra = self._dask_columns(column)
        return ON_DASK.infer(self, X, what, extra=extra)

    def _partition_problem(self, part):
        """A partition's :class:`_Problem`, built once on its worker."""
        problem = getattr(part, "problem", None)
        if problem is None:
            data = part.data
            if self.difficulty == "group":
                _, item_group = np.unique(part.groups, return_inverse=True)
                n_groups = int(item_group.max()) + 1
            elif self.difficulty == "item":
                item_group, n_groups = np.arange(data.n_items), data.n_items
            else:
                item_group, n_groups = np.zeros(data.n_items), 1
            problem = part.problem = _Problem(data, self._scale(data.n_classes),
                                              item_group.astype(np.int32), n_groups)
        return problem

    def _dask_step(self, part, params, state):
        """The local step on one partition (run on its worker); ``state`` is
        the partition's item state after the restart's previous step, or
        ``None`` at its first.  The items' q(z) (and with ``"item"``, q(δ))
        stay here.  With ``"group"``, the groups' q(δ) - the global update's
        last part, which needs the new τ̄ and each group's ratings - is
        computed here from the previous step's per-rating terms; its KL
        goes to the client with the rater sums."""
        if state is None:
            problem = self._partition_problem(part)
            local = self._item_start(problem, params["seed"])
        else:
            problem = state["problem"]
            local = {key: state[key] for key in ("mu", "lam", "delta_shape", "delta_rate")
                     if key in state}
        stats = {}
        if self.difficulty == "group":
            C = problem.n_groups
            if state is None:
                shape = np.full(C, float(self.difficulty_shape))
                rate = np.full(C, float(self.difficulty_rate))
            else:
                g_genuine, g_error = np.empty(C), np.empty(C)
                data = problem.data
                problem.kernel("group_sums")(problem.group_ptr, problem.group_items,
                                             data.item_ptr, data.rater, state["out"],
                                   params["tau_shape"] / params["tau_rate"], g_genuine, g_error)
                shape = self.difficulty_shape + 0.5 * g_genuine
                rate = self.difficulty_rate + 0.5 * g_error
            local["delta_shape"], local["delta_rate"] = shape, rate
            stats["delta_kl"] = float(np.sum(_gamma_kl(shape, rate, self.difficulty_shape,
                                                       self.difficulty_rate)))
        items = self._sweep(problem, dict(params, **local, parallel=False), 1, 0.0,
                            ratings=self.difficulty == "group")
        stats["rater_acc"] = items["rater_acc"]
        stats["elbo"] = float(np.sum(items["elbo"]))
        state = {"problem": problem, "mu": items["mu"], "lam": items["lam"]}
        if self.difficulty == "item":
            state["delta_shape"], state["delta_rate"] = items["delta_shape"], items["delta_rate"]
        elif self.difficulty == "group":
            state["delta_shape"], state["delta_rate"] = shape, rate
            state["out"] = items["out"]
        return stats, state

    _prediction_name = "mean"

    def _predict_from_items(self, items):
        return items["mu"]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = False
        return tags

    # -- scale and groups ------------------------------------------------------------
    def _scale(self, n_classes):
        """Bins, values and spam log-probabilities of the label codes."""
        if self.classes_.dtype.kind not in "biuf":
            raise ValueError(
                "OrdinalMixture needs numeric labels on an ordinal scale; got "
                f"{self.classes_[:3].tolist()!r}. Map the labels to numbers first."
            )
        values = self.classes_.astype(np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError("The scale values must be finite numbers.")
        if self.thresholds is None:
            with np.errstate(over="ignore", invalid="ignore"):
                mid = 0.5 * (values[1:] + values[:-1])
                b = np.concatenate([[values[0] - (mid[0] - values[0])], mid,
                                    [values[-1] + (values[-1] - mid[-1])]])
            if not (np.all(np.isfinite(b)) and np.all(np.diff(b) > 0)):
                raise self._unusable_scale(values)
        else:
            b = np.asarray(self.thresholds, dtype=np.float64).ravel()
            if b.shape != (n_classes + 1,):
                raise ValueError(
                    f"thresholds must have n_classes + 1 = {n_classes + 1} values "
                    f"b_0 < ... < b_K; got {b.shape[0]}."
                )
            if np.any(np.isnan(b)) or not np.all(np.diff(b) > 0):
                raise ValueError(
                    f"thresholds must be strictly increasing; got {b.tolist()!r}."
                )
            if not np.all(np.isfinite(b[1:-1])):
                raise ValueError("Only the outer thresholds b_0 and b_K may be infinite.")
        if self.link == "gaussian" and not np.all(np.isfinite(b)):
            raise ValueError(
                "link='gaussian' needs finite outer thresholds: its spam component "
                "is the uniform density on [b_0, b_K]."
            )
        if self.spam_distribution is None:
            spam = np.full(n_classes, 1.0 / n_classes)
        else:
            spam = np.asarray(per_class(self.spam_distribution, self.classes_,
                                        "spam_distribution"), dtype=np.float64).ravel()
            if (spam.shape != (n_classes,) or np.any(~np.isfinite(spam))
                    or np.any(spam <= 0) or not np.isclose(spam.sum(), 1)):
                raise ValueError(
                    f"spam_distribution must be {n_classes} positive numbers summing "
                    f"to 1; got {self.spam_distribution!r}."
                )
        log_spam = np.log(spam)
        if self.link == "gaussian":
            log_spam = log_spam - np.log(np.diff(b))
        step = float(np.median(np.diff(values)))
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            squares = np.float64(step) ** 2, 1.0 / np.float64(step) ** 2
        if not all(np.isfinite(v) and v > 0 for v in squares):
            raise self._unusable_scale(values)
        return b[:-1].copy(), b[1:].copy(), values, log_spam, step

    @staticmethod
    def _unusable_scale(values):
        more = " ..." if len(values) > 5 else ""
        return ValueError(
            f"The label values {values[:5].tolist()!r}{more} are too large, too small "
            "or too close together for float64 arithmetic on the scale (its bins and "
            "the square of its step). Rescale the labels, e.g. to 0, 1, ..., K-1."
        )

    def _encode_groups(self, groups, data):
        # A pandas Series is aligned by item id (the data layer's rule).
        groups = per_item(groups, data, "groups")
        n_items = data.n_items
        if groups.ndim != 1 or len(groups) != n_items:
            raise ValueError(
                f"groups must have one entry per item: X has {n_items} items, "
                f"groups has shape {groups.shape}."
            )
        return groups

    def _prepare(self, data, groups=None):
        delta_mean = float(self.difficulty_shape) / float(self.difficulty_rate)
        if not _MIN_DIFFICULTY_MEAN <= delta_mean < np.inf:
            raise ValueError(
                f"difficulty_shape / difficulty_rate = {delta_mean:g} (the prior mean of "
                f"the difficulty δ) must be finite and at least {_MIN_DIFFICULTY_MEAN:g}: "
                "below, the rating noise 1/sqrt(τ δ) spans so many steps of the scale that "
                "float64 cannot tell its bins apart."
            )
        scale = self._scale(data.n_classes)
        if on_workers(data):
            # groups came as a column; each partition builds its own problem
            if hasattr(self, "group_ids_"):
                del self.group_ids_
            return _DaskProblem(data, scale)
        if self.difficulty == "group":
            if groups is None:
                raise ValueError(
                    "difficulty='group' needs the group of each item: "
                    "fit(X, groups=...)."
                )
            ids, codes = encode_groups(self._encode_groups(groups, data), data.item_ids)
            self.group_ids_ = ids
            item_group = codes.astype(np.int32)
            n_groups = len(ids)
        else:
            if hasattr(self, "group_ids_"):
                del self.group_ids_
            if groups is not None:
                self._encode_groups(groups, data)
            item_group = np.zeros(data.n_items, dtype=np.int32)
            n_groups = data.n_items if self.difficulty == "item" else 1
            if self.difficulty == "item":
                item_group = np.arange(data.n_items, dtype=np.int32)
        return _Problem(data, scale, item_group, n_groups)

    def _prior(self, problem):
        mu0 = problem.mean_value if self.prior_mean is None else float(self.prior_mean)
        if abs(mu0 - problem.mean_value) > _MAX_PRIOR_DISTANCE * problem.step:
            # z - b loses every digit of the bins' positions: NaN posteriors
            # from 1e20 on the scale 1..5 (a math domain error from 1e160).
            raise ValueError(
                f"prior_mean={self.prior_mean!r} is more than {_MAX_PRIOR_DISTANCE:g} "
                f"steps of the label scale from its mean {problem.mean_value:g}: "
                "float64 cannot place the scale's bins there."
            )
        return mu0, float(self.prior_precision)

    # -- the fit loop's hooks ----------------------------------------------------------
    def _init_params(self, problem, rng, restart):
        """Restart ``restart``: ε high for every rater; z starts at the item
        means (jittered after the first restart) and τ at 1/step² (with a
        random log-normal factor after the first).  An item's jitter is a
        function of its id and the restart's seed (:func:`item_normals`), so
        that a restart starts the same in memory and over Dask partitions,
        where each worker starts its own items."""
        on_dask = on_workers(problem.data)
        seed = int(rng.randint(2**31 - 1)) if restart > 0 else None
        params = {"restart": restart}
        if on_dask:
            params["seed"] = seed
        else:
            # every restart of the fit on one path: the work is the restarts'
            problem.numpy = kernels.use_numpy_path(problem.data.n_ratings, self.n_init)
            params.update(self._item_start(problem, seed))
        step = problem.step
        n_raters = problem.n_raters
        tau = np.full(n_raters, 1.0 / step**2)
        if restart > 0:
            tau = tau * np.exp(rng.normal(0.0, 0.7, size=n_raters))
        shape = np.full(n_raters, 2.0)
        eps = np.full(n_raters, float(self.init_reliability))
        if not self.spam:
            eps[:] = 1.0
        params.update({
            "tau_shape": shape,
            "tau_rate": shape / tau,
            "eps": eps,
            "eps_c": 1.0 - eps,
            "alpha": 2.0,
            "beta": 2.0 * step**2,
            "parallel": not on_dask,
        })
        if not on_dask or self.difficulty is None:
            params["delta_shape"] = np.full(problem.n_groups, float(self.difficulty_shape))
            params["delta_rate"] = np.full(problem.n_groups, float(self.difficulty_rate))
        return params

    def _item_start(self, problem, seed=None):
        """The items' q(z) at a restart's start: at the item means, jittered
        with ``seed`` when given; with ``difficulty="item"``, q(δ) at the prior."""
        data = problem.data
        mu0, lam0 = self._prior(problem)
        means = np.empty(data.n_items)
        item_means(data.item_ptr, problem.value[data.label], means)
        means[np.isnan(means)] = mu0
        step = problem.step
        if seed is not None:
            means = means + 0.5 * step * item_normals(None, seed, problem.item_keys)
        n_per_item = np.diff(data.item_ptr)
        delta_mean = self.difficulty_shape / self.difficulty_rate
        start = {"mu": means, "lam": lam0 + n_per_item * delta_mean / step**2}
        if self.difficulty == "item":
            start["delta_shape"] = np.full(data.n_items, float(self.difficulty_shape))
            start["delta_rate"] = np.full(data.n_items, float(self.difficulty_rate))
        return start

    def _warm_params(self, problem, rng, start):
        # The items' factors to convergence at the earlier rater factors, so
        # that a warm refit starts where the earlier fit ended.
        params = super()._warm_params(problem, rng, start)
        # per item or group: not carried over; nor a per-item or per-group δ
        # into one shared δ (a fit with difficulty="group" or "item" before
        # difficulty=None: an IndexError in the bound)
        if self.difficulty is not None or np.shape(params["delta_shape"]) != (1,):
            cold = self._init_params(problem, rng, 0)
            params["delta_shape"], params["delta_rate"] = cold["delta_shape"], cold["delta_rate"]
        last = start["items"]
        ids = getattr(problem.data, "item_ids", None)
        if (last is not None and ids is not None and len(ids) == len(last["ids"])
                and np.all(ids == last["ids"])):
            # The same items: their factors where the earlier fit left them
            # (per item, coordinate ascent from the item means can end in
            # another local optimum than the fit's joint path did).
            params.update({k: v for k, v in last.items() if k != "ids"
                           and (k not in ("delta_shape", "delta_rate")
                                or self.difficulty == "item")})
        else:
            items = self._sweep(problem, params, _MAX_LOCAL_SWEEPS, _LOCAL_TOL * problem.step)
            params["mu"], params["lam"] = items["mu"], items["lam"]
            if self.difficulty == "item":
                params["delta_shape"] = items["delta_shape"]
                params["delta_rate"] = items["delta_rate"]
        return params

    def _sweep(self, problem, params, max_sweeps, tol, ratings=True):
        """Run the per-item kernel; returns the new local state, with the
        ratings' factors (ω, E[(x - z)²], ...) only with ``ratings`` (the
        one-sweep kernel then skips the n_ratings x 5 array)."""
        data = problem.data
        mu0, lam0 = self._prior(problem)
        raters = np.empty((data.n_raters, 6))
        problem.kernel("rater_table")(raters, params["tau_shape"], params["tau_rate"],
                                      *_tau_terms(params), params["eps"], params["eps_c"])
        item_delta = self.difficulty == "item"
        items = np.empty((6, data.n_items))  # a row per quantity (see the kernel)
        problem.kernel("start_items")(items, params["mu"], params["lam"], problem.known)
        if item_delta:
            items[kernels.ITEM_DELTA_SHAPE] = params["delta_shape"]
            items[kernels.ITEM_DELTA_RATE] = params["delta_rate"]
            groups = np.ones((1, 2))
        else:
            groups = np.column_stack([
                params["delta_shape"] / params["delta_rate"],
                digamma(params["delta_shape"]) - np.log(params["delta_rate"]),
            ])
        ordinal = self.link == "ordinal"
        ratings = ratings or max_sweeps > 1 or not ordinal  # (the general kernel's scratch)
        out = np.empty((data.n_ratings if ratings else 0, 5))
        hyper = np.array([self.difficulty_shape, self.difficulty_rate, mu0, lam0], dtype=float)
        block_ptr = problem.block_ptr
        rater_acc = np.empty((len(block_ptr) - 1, data.n_raters, 4))
        if problem.numpy:
            sweep = kernels.item_sweep_numpy
        else:
            sweep = kernels.item_sweep_parallel if params["parallel"] else kernels.item_sweep_serial
        sweep(data.item_ptr, data.rater, data.label, problem.item_group, problem.scale,
              raters, groups, items, out, hyper, ordinal, bool(self.spam),
              item_delta, int(max_sweeps), float(tol), block_ptr, rater_acc, ratings)
        state = {
            "mu": items[kernels.ITEM_MU], "lam": items[kernels.ITEM_LAM],
            "elbo": items[kernels.ITEM_ELBO],
            # blocks summed in a fixed order: the same for any n_jobs
            "rater_acc": rater_acc[0],
        }
        if ratings:
            state.update(out=out, omega=out[:, kernels.OMEGA], omega_c=out[:, kernels.OMEGA_C],
                         err=out[:, kernels.ERR])
        if item_delta:
            state["delta_shape"] = items[kernels.ITEM_DELTA_SHAPE]
            state["delta_rate"] = items[kernels.ITEM_DELTA_RATE]
        return state

    def _local_step(self, problem, params):
        """One sweep of the item-level updates (x, y, z and per-item δ); the
        ratings' factors are kept only for the groups' q(δ) update."""
        items = self._sweep(problem, params, 1, 0.0, ratings=self.difficulty == "group")
        return items, items

    def _global_update(self, problem, params, stats):
        """q(τ), then q(δ) (group or global), then ε (eq. 5), then (α, β);
        each maximises F given the rest, so F never decreases."""
        data = problem.data
        new = dict(params)
        # the items' state, the next sweep's start (on Dask it stays on the workers)
        for key in ("mu", "lam") + (("delta_shape", "delta_rate")
                                    if self.difficulty == "item" else ()):
            if key in stats:
                new[key] = stats[key]
        spam_sum, genuine_sum, error_sum, _ = stats["rater_acc"].T  # summed in the sweep
        rated = problem.rated
        alpha, beta = params["alpha"], params["beta"]
        # q(τ_n) (eq. 4); a rater without ratings keeps the prior.
        shape = alpha + 0.5 * genuine_sum
        rate = beta + 0.5 * error_sum
        if not problem.all_rated:
            shape = np.where(rated, shape, alpha)
            rate = np.where(rated, rate, beta)
        new["tau_shape"], new["tau_rate"] = shape, rate
        if self.difficulty is None:
            # One δ: Σ ω and Σ τ̄_n ω E[(x - z)²] over all ratings come from
            # the per-rater sums (no by-group pass; the same on Dask).
            acc = stats["rater_acc"]
            new["delta_shape"] = np.array([self.difficulty_shape + 0.5 * acc[:, 1].sum()])
            new["delta_rate"] = np.array([self.difficulty_rate
                                          + 0.5 * dot(shape / rate, acc[:, 3])])
        elif self.difficulty == "group" and "out" in stats:
            C = problem.n_groups
            g_genuine, g_error = np.empty(C), np.empty(C)
            problem.kernel("group_sums")(problem.group_ptr, problem.group_items, data.item_ptr,
                                         data.rater, stats["out"], shape / rate, g_genuine,
                                         g_error)
            new["delta_shape"] = self.difficulty_shape + 0.5 * g_genuine
            new["delta_rate"] = self.difficulty_rate + 0.5 * g_error
        # (groups on Dask: each partition updates its groups' q(δ) at the
        # start of its next local step, from these τ̄; see _dask_step)
        if self.spam and problem.all_rated:
            # eq. (5), ε and 1 - ε each from its own sum so neither rounds off.
            new["eps"] = genuine_sum / problem.rater_counts
            new["eps_c"] = spam_sum / problem.rater_counts
        elif self.spam:
            # (a rater without ratings gets the crowd's share)
            counts = np.where(rated, problem.rater_counts, 1.0)
            fallback = genuine_sum.sum() / max(problem.rater_counts.sum(), 1.0)
            new["eps"] = np.where(rated, genuine_sum / counts, fallback)
            new["eps_c"] = np.where(rated, spam_sum / counts, 1.0 - fallback)
        # ψ(shape) and ln(rate) of q(τ) serve (α, β) here, then the next
        # sweep's E ln τ and F's gamma KLs: computed once for the three.
        tau_digamma, tau_log_rate = digamma(shape), np.log(rate)
        # Type-II ML of (α, β) from the rated raters' q(τ).
        if problem.all_rated:
            new["alpha"], new["beta"] = _gamma_ml(shape / rate, tau_digamma - tau_log_rate)
        elif np.any(rated):
            e_tau = shape[rated] / rate[rated]
            e_log_tau = tau_digamma[rated] - tau_log_rate[rated]
            new["alpha"], new["beta"] = _gamma_ml(e_tau, e_log_tau)
        if not problem.all_rated:
            # raters without ratings: q(τ) is the new prior
            shape = np.where(rated, shape, new["alpha"])
            rate = np.where(rated, rate, new["beta"])
            tau_digamma = np.where(rated, tau_digamma, digamma(new["alpha"]))
            tau_log_rate = np.where(rated, tau_log_rate, np.log(new["beta"]))
        new["tau_shape"], new["tau_rate"] = shape, rate
        new["tau_terms"] = (shape, rate, tau_digamma, tau_log_rate)
        return new

    def _objective(self, problem, params, items, stats):
        """F: the items' terms from the kernel minus the gamma KLs of the
        rated raters' q(τ) and (shared difficulty) the groups' q(δ)."""
        total = float(np.sum(stats["elbo"]))  # per item, or a partition sum on Dask
        shape, rate = params["tau_shape"], params["tau_rate"]
        tau_digamma, tau_log_rate = _tau_terms(params)
        if not problem.all_rated:
            rated = problem.rated
            shape, rate = shape[rated], rate[rated]
            tau_digamma, tau_log_rate = tau_digamma[rated], tau_log_rate[rated]
        total -= float(np.sum(_gamma_kl(shape, rate, params["alpha"], params["beta"],
                                        tau_digamma, tau_log_rate)))
        if "delta_kl" in stats:  # groups on Dask: summed over the partitions
            total -= stats["delta_kl"]
        elif self.difficulty != "item":
            g = problem.group_rated
            total -= float(np.sum(_gamma_kl(params["delta_shape"][g], params["delta_rate"][g],
                                            self.difficulty_shape, self.difficulty_rate)))
        return total

    # -- acceleration: the variational parameters, unconstrained -----------------------
    def _params_to_vector(self, params):
        """log of the gamma shapes and rates of q(τ), of (α, β) and of a
        shared q(δ).  ε and the items' q(z) are not extrapolated: ε = 0 and
        ε = 1 are absorbing (the update of eq. 5 of Lakshminarayanan & Teh
        2013 keeps them) and an extrapolation in logit ε
        carries raters there or out of there, into another local optimum
        of F; they follow by plain updates from the extrapolated rest."""
        parts = [np.log(params["tau_shape"]), np.log(params["tau_rate"]),
                 np.log([params["alpha"], params["beta"]])]
        if self.difficulty != "item":
            parts += [np.log(params["delta_shape"]), np.log(params["delta_rate"])]
        return np.concatenate(parts)

    def _params_from_vector(self, vector, params):
        # A long extrapolated step can reach log shapes or rates whose exp
        # is 0 or inf (a zero precision divides by zero in the sweep); at
        # ±_MAX_LOG_COORDINATE the gammas stay finite and positive, and such
        # a far point's lower F gets it rejected.
        vector = np.clip(vector, -_MAX_LOG_COORDINATE, _MAX_LOG_COORDINATE)
        new = dict(params)
        J = len(params["tau_shape"])
        new["tau_shape"], new["tau_rate"] = np.exp(vector[:J]), np.exp(vector[J:2 * J])
        new["alpha"], new["beta"] = np.exp(vector[2 * J:2 * J + 2])
        if self.difficulty != "item":
            C = len(params["delta_shape"])
            new["delta_shape"] = np.exp(vector[2 * J + 2:2 * J + 2 + C])
            new["delta_rate"] = np.exp(vector[2 * J + 2 + C:])
        return new

    # -- restarts in threads: the base loop's hooks ------------------------------------
    def _threaded_restarts(self, data):
        return True

    def _single_thread(self, params, alone):
        # serial sweeps while other restarts run, the parallel one (equal
        # to the last bit) once this restart runs alone: ``parallel`` is
        # read as a bool at every sweep
        return dict(params, parallel=alone)

    def _set_fitted(self, problem, params, items):
        """Store the best restart's parameters; return the training items'
        state from a final item pass at them (what predict computes), so
        that ``fit_predict`` equals ``fit().predict``.  After a Dask fit the
        training items stay on the workers (see :meth:`_store_dask`)."""
        if on_workers(problem.data):
            self._store_dask(problem, dict(params, parallel=True), params["restart"])
            return None
        self._store(problem, dict(params, parallel=True))
        # the items' factors where the fit left them, for a warm start on the
        # same items (see _warm_params)
        keep = ("mu", "lam") + (("delta_shape", "delta_rate")
                                if self.difficulty == "item" else ())
        self._last_items = {"ids": getattr(problem.data, "item_ids", None),
                            **{k: params[k] for k in keep}}
        items = self._infer(problem, self._fitted_params())
        self.item_mean_ = items["mu"]
        self.item_std_ = 1.0 / np.sqrt(items["lam"])
        if self.difficulty == "item":
            self.group_difficulty_shape_ = items["delta_shape"]
            self.group_difficulty_rate_ = items["delta_rate"]
            self.group_difficulty_ = items["delta_shape"] / items["delta_rate"]
        return items

    def _store(self, problem, params):
        self.thresholds_ = np.concatenate([problem.lower, problem.upper[-1:]])
        self.rater_precision_shape_ = params["tau_shape"]
        self.rater_precision_rate_ = params["tau_rate"]
        self.rater_precision_ = params["tau_shape"] / params["tau_rate"]
        self.rater_reliability_ = params["eps"]
        self._rater_spamminess = params["eps_c"]
        self.precision_shape_ = float(params["alpha"])
        self.precision_rate_ = float(params["beta"])
        # (on Dask, groups' and items' δ are not the client's: see _store_dask)
        shape, rate = params.get("delta_shape"), params.get("delta_rate")
        self.group_difficulty_shape_, self.group_difficulty_rate_ = shape, rate
        self.group_difficulty_ = None if shape is None else shape / rate
        mu0, lam0 = self._prior(problem)
        self.class_prior_ = self._bin_mass(np.array([mu0]), np.array([lam0]))[0]

    def _store_dask(self, problem, params, restart):
        """:meth:`_store` after a Dask fit of restart ``restart``: the
        training items' attributes are ``None`` (they stay on the workers);
        with ``difficulty="group"`` the groups' q(δ) are gathered from the
        partitions that hold them (one number pair per group)."""
        self._store(problem, params)
        self.item_mean_ = self.item_std_ = None
        if self.difficulty == "group":
            tables = ON_DASK.map_item_state(problem, _group_table, restart)
            ids = np.concatenate([t[0] for t in tables])
            order = np.argsort(ids, kind="stable")
            self.group_ids_ = ids[order]
            self.group_difficulty_shape_ = np.concatenate([t[1] for t in tables])[order]
            self.group_difficulty_rate_ = np.concatenate([t[2] for t in tables])[order]
            self.group_difficulty_ = self.group_difficulty_shape_ / self.group_difficulty_rate_

    # -- result tables and new raters (the base class uses these) ------------------
    _rater_attributes = ("rater_precision_shape_", "rater_precision_rate_",
                         "rater_precision_", "rater_reliability_", "_rater_spamminess")

    def _population_rater(self):
        # τ of a new rater: the fitted population Gamma(α, β) itself (the
        # type-II ML prior of every τ_n); ε: the rating-weighted mean.
        mean = super()._population_rater()
        return dict(mean, rater_precision_shape_=self.precision_shape_,
                    rater_precision_rate_=self.precision_rate_,
                    rater_precision_=self.precision_shape_ / self.precision_rate_)

    def _rater_diagnostics(self):
        return {"precision": self.rater_precision_, "reliability": self.rater_reliability_}

    def _item_diagnostics(self, data, items):
        return {"std": 1.0 / np.sqrt(items["lam"])}

    def _fitted_params(self):
        return {
            "tau_shape": self.rater_precision_shape_,
            "tau_rate": self.rater_precision_rate_,
            "eps": self.rater_reliability_,
            "eps_c": self._rater_spamminess,
            "alpha": self.precision_shape_,
            "beta": self.precision_rate_,
            "delta_shape": self.group_difficulty_shape_,
            "delta_rate": self.group_difficulty_rate_,
            "parallel": True,
        }

    # -- item-level inference -------------------------------------------------------
    def _predict_problem(self, data, groups):
        """The problem and the δ factors of new items (see the class Notes)."""
        params = self._fitted_params()
        scale = self._scale(data.n_classes)
        if self.difficulty == "group":
            n_known = len(self.group_ids_)
            codes = np.full(data.n_items, n_known, dtype=np.int32)  # the prior slot
            if groups is not None:
                groups = self._encode_groups(groups, data)
                try:
                    pos = np.searchsorted(self.group_ids_, groups)
                    pos = np.minimum(pos, n_known - 1)
                    known = self.group_ids_[pos] == groups
                except TypeError:
                    known = np.zeros(data.n_items, dtype=bool)
                codes[known] = pos[known]
            params["delta_shape"] = np.append(params["delta_shape"], self.difficulty_shape)
            params["delta_rate"] = np.append(params["delta_rate"], self.difficulty_rate)
            problem = _Problem(data, scale, codes, n_known + 1)
        elif self.difficulty == "item":
            params["delta_shape"] = np.full(data.n_items, float(self.difficulty_shape))
            params["delta_rate"] = np.full(data.n_items, float(self.difficulty_rate))
            problem = _Problem(data, scale, np.arange(data.n_items, dtype=np.int32),
                               data.n_items)
        else:
            if groups is not None:
                self._encode_groups(groups, data)
            problem = _Problem(data, scale, np.zeros(data.n_items, dtype=np.int32), 1)
        return problem, params

    def _infer(self, problem, params):
        """Item-level inference to convergence, from the item means."""
        data = problem.data
        mu0, lam0 = self._prior(problem)
        if self.difficulty == "item":
            params = dict(params,
                          delta_shape=np.full(data.n_items, float(self.difficulty_shape)),
                          delta_rate=np.full(data.n_items, float(self.difficulty_rate)))
        means = np.empty(data.n_items)
        item_means(data.item_ptr, problem.value[data.label], means)
        means[np.isnan(means)] = mu0
        tau_mean = params["tau_shape"] / params["tau_rate"]
        delta_mean = (params["delta_shape"] / params["delta_rate"])[problem.item_group]
        weight = np.bincount(data.item, weights=tau_mean[data.rater], minlength=data.n_items)
        params = dict(params, mu=means, lam=lam0 + delta_mean * weight)
        items = self._sweep(problem, params, _MAX_LOCAL_SWEEPS, _LOCAL_TOL * problem.step)
        items["proba"] = self._bin_mass(items["mu"], items["lam"])
        items["delta_mean"] = (items["delta_shape"] / items["delta_rate"]
                               if self.difficulty == "item" else delta_mean)
        return items

    def _infer_items(self, data, groups=None):
        problem, params = self._predict_problem(data, groups)
        with numba_threads(self.n_jobs):
            return self._infer(problem, params)

    def _bin_mass(self, mu, lam):
        """Mass of N(mu, 1/lam) in each bin, the outer bins open-ended."""
        inner = self.thresholds_[1:-1]
        # λ = ∞ (a known item): t = ±∞, all mass in the value's bin
        t = (inner[None, :] - mu[:, None]) * np.sqrt(lam)[:, None]
        cdf = np.concatenate(
            [np.zeros((len(mu), 1)), np.exp(log_ndtr(t)), np.ones((len(mu), 1))], axis=1)
        # upper tails from the flipped CDF, so far bins are not 1 - 1
        upper = np.concatenate(
            [np.ones((len(mu), 1)), np.exp(log_ndtr(-t)), np.zeros((len(mu), 1))], axis=1)
        with np.errstate(invalid="ignore"):  # a known item's ±∞ average: either is exact
            mass = np.where(t.mean(axis=1, keepdims=True) > 0, np.diff(cdf, axis=1),
                            -np.diff(upper, axis=1))
        mass = np.clip(mass, 0.0, None)
        return mass / mass.sum(axis=1, keepdims=True)

    def _score_items(self, data, groups=None):
        problem, params = self._predict_problem(data, groups)
        with numba_threads(self.n_jobs):
            items = self._infer(problem, params)
            mu0, lam0 = self._prior(problem)
            nodes, weights = roots_legendre(_N_LEGENDRE)
            scale = 1.0 / np.sqrt(items["lam"])
            breaks = self._quadrature_breaks(mu0, lam0)
            if self.difficulty == "item":
                x, log_delta_weights = _gamma_rule(_N_LAGUERRE, self.difficulty_shape)
                delta_nodes = x / self.difficulty_rate
                item_delta_scale = np.ones(data.n_items)
            else:
                delta_nodes = np.ones(1)
                log_delta_weights = np.zeros(1)
                item_delta_scale = np.asarray(items["delta_mean"], dtype=np.float64)
            lower = problem.lower.copy()
            upper = problem.upper.copy()
            if self.link == "ordinal":
                # open-ended outer bins: a proper distribution over the K levels
                lower[0], upper[-1] = -np.inf, np.inf
            # The Gaussian link keeps the finite outer bins: its probability of
            # a level is density x bin width and its spam density is π_r over
            # the width, so an infinite width would give inf - inf (a NaN score).
            eps = self.rater_reliability_ if self.spam else np.ones(self.n_features_in_)
            loglik = np.empty(data.n_items)
            kernels.item_loglik(
                data.item_ptr, data.rater, data.label, lower, upper, problem.value,
                problem.log_spam, self.link == "ordinal", self.rater_precision_,
                np.ascontiguousarray(eps, dtype=np.float64), items["mu"], scale,
                item_delta_scale, delta_nodes, log_delta_weights, breaks,
                _PEAK_OFFSETS, nodes, weights, mu0, lam0, loglik,
            )
        return loglik

    def _quadrature_breaks(self, mu0, lam0):
        """Panel ends of the z quadrature: ±12 prior standard deviations,
        every finite threshold, and 1, 2, 4, 8 steps beyond the scale."""
        b = self.thresholds_
        step = float(np.median(np.diff(self.classes_.astype(float))))
        reach = 12.0 / np.sqrt(lam0)
        lo, hi = min(mu0 - reach, b[1] - 16 * step), max(mu0 + reach, b[-2] + 16 * step)
        beyond = step * np.array([1.0, 2.0, 4.0, 8.0])
        points = np.concatenate([[lo, hi], b[np.isfinite(b)], b[1] - beyond, b[-2] + beyond])
        return np.unique(np.clip(points, lo, hi))

    def _sample_labels(self, data, rng):
        """z from the prior, y ~ Be(ε_n), x ~ N(z, 1/(τ̄ δ)) binned (outer
        bins open-ended) or a spam draw from π; δ is E δ (no difficulty),
        the prior mean (groups are not known here) or a prior draw (per item)."""
        mu0, lam0 = float(np.mean(self.classes_.astype(float))), float(self.prior_precision)
        if self.prior_mean is not None:
            mu0 = float(self.prior_mean)
        K = len(self.classes_)
        z = rng.normal(mu0, 1.0 / np.sqrt(lam0), size=data.n_items)
        if self.difficulty is None:
            delta = np.full(data.n_items, self.group_difficulty_[0])
        elif self.difficulty == "group":
            delta = np.full(data.n_items, self.difficulty_shape / self.difficulty_rate)
        else:
            delta = rng.gamma(self.difficulty_shape, 1.0 / self.difficulty_rate,
                              size=data.n_items)
        sd = 1.0 / np.sqrt(self.rater_precision_[data.rater] * delta[data.item])
        x = z[data.item] + sd * rng.normal(size=data.n_ratings)
        if self.link == "ordinal":
            codes = np.searchsorted(self.thresholds_[1:-1], x, side="right")
        else:
            values = self.classes_.astype(float)
            codes = np.abs(x[:, None] - values[None, :]).argmin(axis=1)
        if self.spam:
            spam = rng.random(data.n_ratings) >= self.rater_reliability_[data.rater]
            pi = (np.full(K, 1.0 / K) if self.spam_distribution is None
                  else np.asarray(per_class(self.spam_distribution, self.classes_,
                                            "spam_distribution"), dtype=float))
            codes[spam] = rng.choice(K, size=int(spam.sum()), p=pi)
        return codes.astype(np.int32)


def _group_table(part, state):
    """A partition's groups (their ids in the partition's code order) and
    their q(δ) in ``state``, the item state of a Dask fit."""
    return np.unique(part.groups), state["delta_shape"], state["delta_rate"]


def _gamma_kl(shape, rate, prior_shape, prior_rate, shape_digamma=None, log_rate=None):
    """KL(Gamma(shape, rate) || Gamma(prior_shape, prior_rate)), vectorised
    (ψ(shape) and ln(rate) may be passed when already computed)."""
    if shape_digamma is None:
        shape_digamma, log_rate = digamma(shape), np.log(rate)
    return ((shape - prior_shape) * shape_digamma - gammaln(shape) + gammaln(prior_shape)
            + prior_shape * (log_rate - np.log(prior_rate))
            + shape * (prior_rate - rate) / rate)


def _tau_terms(params):
    """ψ(shape) and ln(rate) of every rater's q(τ): those the global update
    left in ``params["tau_terms"]`` when they belong to its q(τ) (the same
    arrays; an extrapolated or a restart's q(τ) is new), else computed."""
    cached = params.get("tau_terms")
    if (cached is not None and cached[0] is params["tau_shape"]
            and cached[1] is params["tau_rate"]):
        return cached[2], cached[3]
    return digamma(params["tau_shape"]), np.log(params["tau_rate"])


def _gamma_rule(n, shape):
    """Generalized Gauss–Laguerre rule for a Gamma(shape, 1) density: n nodes
    and their log weights (summing to one), by Golub–Welsch from the Jacobi
    matrix of the Laguerre polynomials L^(shape-1) (diagonal 2i + shape,
    off-diagonal √(i (i + shape - 1))).  scipy's ``roots_genlaguerre``
    returns weights scaled by Γ(shape), which overflow from shape ≈ 171
    (``score_samples`` would be inf with ``difficulty_shape=1e4``)."""
    i = np.arange(n)
    nodes, vectors = eigh_tridiagonal(2.0 * i + shape, np.sqrt(i[1:] * (i[1:] + shape - 1.0)))
    # For a shape far from 1 (1e-30, 1e200) the rule is one node at the
    # mean with weight 1 and the others exactly 0 in float: log weight -inf.
    with np.errstate(divide="ignore"):
        return nodes, 2.0 * np.log(np.abs(vectors[0]))


def _gamma_ml(mean_values, mean_logs):
    """Gamma MLE (shape, rate) from E τ and E ln τ of each rater: β = α / mean Eτ
    and ln α - ψ(α) = s = ln mean Eτ - mean E ln τ, by Minka's Newton iteration
    on 1/α (converges in a few steps from his closed-form start)."""
    # (np.mean is the pairwise sum over the count: the same bits as sum / n;
    # math on the scalars, as numpy's scalar ufuncs compute them, without
    # their per-call cost)
    mean = float(np.sum(mean_values)) / mean_values.size
    s = max(math.log(mean) - float(np.sum(mean_logs)) / mean_logs.size, _MIN_GAMMA_S)
    a = (3.0 - s + math.sqrt((s - 3.0) ** 2 + 24.0 * s)) / (12.0 * s)
    for _ in range(100):
        g = math.log(a) - float(digamma(a)) - s
        dg = 1.0 / a - float(zeta(2, a))  # trigamma ψ'(a) = ζ(2, a), as polygamma(1, a) does
        a_new = 1.0 / (1.0 / a + g / (a * a * dg))
        if not math.isfinite(a_new) or a_new <= 0:
            break
        done = abs(a_new - a) <= 1e-12 * a
        a = a_new
        if done:
            break
    return float(a), float(a / mean)


# -- the posterior sampler (skcrowd.uncertainty) ------------------------------------
#: OrdinalMixture's sampler: the hyperprior of the precisions' population,
#: α ~ Gamma(2, 0.2) and β ~ Gamma(2, 0.4 / step²) (shape, rate): proper,
#: broad (α around 10, τ around α / β = 2 / step², which with the default
#: δ prior mean 2 puts a rater's latent noise near half a step), and away
#: from α -> 0, where the precisions would spread over decades
_PRECISION_HYPERPRIOR = ((2.0, 0.2), (2.0, 0.4))
#: Metropolis moves of α (each followed by β's conjugate draw) per sweep:
#: they cost O(raters), and α and β are strongly coupled
_HYPER_MOVES = 5
#: Metropolis moves of each rater's (ε_n, τ_n) and each item's z_m per
#: sweep with the spam indicators and latent scores summed out
#: (``_ordinal_log_mass``): each costs three passes over the ratings
_RATER_MOVES = 3


def _truncated_normal(lo, hi, rng):
    """One standard normal draw in [lo, hi) per entry, by inversion of the
    CDF on the bin flipped to the lower tail (where lo + hi > 0), so that
    the CDF differences keep their digits; a bin beyond the CDF's range
    (both ends below -37) takes the exponential tail of its upper end."""
    flip = lo + hi > 0
    a = np.where(flip, -hi, lo)
    b = np.where(flip, -lo, hi)
    cdf_a, cdf_b = ndtr(a), ndtr(b)
    u = rng.random(len(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = ndtri(cdf_a + u * (cdf_b - cdf_a))
        tail = b + np.log(u) / np.abs(b)
    t = np.where(cdf_b > cdf_a, t, tail)
    t = np.clip(t, a, b)
    return np.where(flip, -t, t)


def _bin_probability(lo, hi):
    """Φ(hi) - Φ(lo) per entry, on the bin flipped to the lower tail."""
    flip = lo + hi > 0
    return np.where(flip, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))


def _ordinal_log_mass(eps, tau, z, delta, item, rater, group, lo_r, hi_r, spam_proba):
    """The log-probability of every rating given the true values z, the
    difficulties δ and the raters' (ε, τ), with its spam indicator and
    latent score summed out (Lakshminarayanan & Teh 2013, eq. 1):
    log(ε_n P(k | z_m, τ_n δ) + (1 - ε_n) π_k), P the mass of N(z_m,
    1/(τ_n δ)) in the rating's bin.  ``eps`` None: no spam component."""
    scale = np.sqrt(tau[rater] * delta[group])
    centre = z[item]
    with np.errstate(invalid="ignore"):
        mass = _bin_probability((lo_r - centre) * scale, (hi_r - centre) * scale)
    if eps is not None:
        mass = eps[rater] * mass + (1.0 - eps[rater]) * spam_proba
    with np.errstate(divide="ignore"):
        return np.log(mass)


def gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Gibbs sampling of OrdinalMixture's posterior on the augmented model.

    Lakshminarayanan & Teh (2013), eq. 1: z_m ~ N(μ, 1/λ); a rating of
    rater n is genuine (g = 1) with probability ε_n, then a latent score
    x ~ N(z_m, 1/(τ_n δ_c(m))) falls in the bin [b_{k-1}, b_k) of its
    level k; otherwise (g = 0) the level is drawn from π.  With x and g
    as latent variables every conditional is standard:

    - (g, x) | z, τ, δ, ε: g with odds ε_n P(k | z, τ, δ) : (1 - ε_n) π_k
      (x summed out), then x from N(z_m, 1/(τ_n δ)) truncated to the bin;
    - z_m | x, g: normal, precision λ + δ Σ_genuine τ_n and mean
      (λ μ + δ Σ τ_n x) / precision; a known item (gold y) keeps its value;
    - τ_n | x, z, g: Gamma(α + G_n / 2, β + Σ δ (x - z)² / 2) over its G_n
      genuine ratings;
    - the population (α, β) of the precisions, which the fit estimates by
      type-II maximum likelihood: β | α, τ conjugate, Gamma(a_β + J α,
      b_β + Σ τ_n), and log α by random-walk Metropolis, under the proper
      hyperprior of ``_PRECISION_HYPERPRIOR`` (the type-II ML point is no
      posterior: on simulated data it collapses to α in the hundreds, every
      rater at one precision);
    - δ_c | x, z, g: Gamma(φ + G_c / 2, η + Σ τ (x - z)² / 2);
    - the scale shared by τ and δ (a group move, below);
    - ε_n | g: Beta(1 + G_n, 1 + S_n), under a uniform prior (the fit's
      maximum-likelihood ε is its mode).

    Each sweep starts with Metropolis moves of every rater's (ε_n, τ_n),
    of every item's z_m and of the common scale of δ with g and x summed
    out (``_ordinal_log_mass``): with hundreds of ratings per rater the
    conditionals above alone move these by a small fraction of their
    posterior width per sweep.

    The drawn prevalence is the share of items whose z falls in each bin
    (outer bins open-ended), a function of the latent grades; the item
    probabilities are Rao-Blackwellised, the bin masses of z_m's normal
    conditional.  The chain starts at the fit (the items at their q(z)
    means).
    """
    if model.link != "ordinal":
        raise ValueError("method='gibbs' for OrdinalMixture needs link='ordinal'; "
                         f"got link={model.link!r}.")
    if model.difficulty == "group":
        raise ValueError("method='gibbs' for OrdinalMixture does not take "
                         "difficulty='group' (posterior_samples has no groups).")
    n, J = data.n_items, data.n_raters
    item, rater, label = data.item, data.rater, data.label
    lower, upper, value, log_spam, _ = model._scale(data.n_classes)
    mu0 = float(np.mean(value)) if model.prior_mean is None else float(model.prior_mean)
    lam0 = float(model.prior_precision)
    alpha, beta = float(model.precision_shape_), float(model.precision_rate_)
    (a_alpha, b_alpha), (a_beta, b_beta) = _PRECISION_HYPERPRIOR
    step_scale = float(model._scale(data.n_classes)[4])
    b_beta = b_beta / step_scale ** 2  # β is in units of step² (τ in 1 / step²)
    log_alpha_step = 0.3

    def log_alpha_target(a, beta, sum_log_tau):
        return (J * (a * np.log(beta) - gammaln(a)) + a * sum_log_tau
                + a_alpha * np.log(a) - b_alpha * a)  # (Jacobian of log α included)
    phi, eta = float(model.difficulty_shape), float(model.difficulty_rate)
    spam_proba = np.exp(log_spam)[label]
    rater_counts = np.bincount(rater, minlength=J)
    lo_r, hi_r = lower[label], upper[label]
    per_item = model.difficulty == "item"
    if per_item and (model.group_difficulty_ is None or len(model.group_difficulty_) != n):
        raise ValueError("difficulty='item': X must be the ratings the model was fitted to.")
    group = item if per_item else np.zeros(len(item), dtype=np.int64)
    n_groups = n if per_item else 1
    known = np.full(n, np.nan)
    if data.gold is not None:
        gold = data.gold >= 0
        known[gold] = value[data.gold[gold]]
    is_known = ~np.isnan(known)
    # the start: the fit
    tau = np.array(model.rater_precision_, dtype=np.float64)
    eps = (np.array(model.rater_reliability_, dtype=np.float64) if model.spam
           else np.ones(J))
    delta = np.array(model.group_difficulty_, dtype=np.float64)
    mean = model.item_mean_
    z = (np.array(mean, dtype=np.float64) if mean is not None and len(mean) == n
         else np.array(model._infer_items(data)["mu"], dtype=np.float64))
    z = np.where(is_known, known, z)
    inner = model.thresholds_[1:-1]
    K = len(value)
    draws = {k: [] for k in ("prior", "tau", "tau_shape", "tau_rate", "eps", "delta",
                             "delta_shape", "delta_rate", "alpha", "beta")}
    labels, proba_sum = [], np.zeros((n, K))
    if model.spam:
        # the fit's ε can sit at 0 or 1, where the logit move has no scale
        eps = np.clip(eps, 1e-9, 1.0 - 1e-9)
    log_eps_step, log_tau_step, z_step = np.full(J, 0.5), np.full(J, 0.3), np.full(n, 0.3)
    log_delta_step = np.full(1, 0.1)

    def log_mass(eps, tau, z, delta):
        return _ordinal_log_mass(eps if model.spam else None, tau, z, delta, item, rater,
                                 group, lo_r, hi_r, spam_proba)

    def metropolis(current, proposal, log_ratio, step, adapt):
        accepted = np.log(rng.random(len(current))) < log_ratio
        if adapt:
            step *= np.exp(0.1 * (accepted - 0.44))
        return np.where(accepted, proposal, current), accepted

    for sweep in range(n_burnin + n_samples * thin):
        # Metropolis moves with every rating's spam indicator and latent
        # score summed out: the Gibbs draws below alone mix in tens to
        # hundreds of sweeps when a rater has hundreds of ratings, as
        # ε | g and g | ε, τ | x and x | τ, z | x and x | z are each nearly
        # deterministic given the other (the slow data augmentation of Liu
        # & Wu 1999), and 200 draws thinned by 5 then under-covered.  The
        # indicators and scores are drawn afresh from their conditional
        # right after, so nothing reads a stale one (a partially collapsed
        # sampler, van Dyk & Park 2008).  Proposal scales adapt during
        # burn-in only.
        adapt = sweep < n_burnin
        current = log_mass(eps, tau, z, delta)  # per rating
        for _ in range(_RATER_MOVES):
            # (ε_n, τ_n) | z, δ, α, β: logit ε_n and log τ_n by random walk,
            # every rater at once (they are independent given z and δ)
            if model.spam:
                logit = np.log(eps) - np.log1p(-eps)
                proposal = np.clip(expit(logit + log_eps_step * rng.standard_normal(J)),
                                   1e-12, 1.0 - 1e-12)
                moved = log_mass(proposal, tau, z, delta)
                # uniform prior; the Jacobian of the logit, ε (1 - ε)
                log_ratio = (np.bincount(rater, weights=moved - current, minlength=J)
                             + np.log(proposal) + np.log1p(-proposal)
                             - np.log(eps) - np.log1p(-eps))
                eps, accepted = metropolis(eps, proposal, log_ratio, log_eps_step, adapt)
                current = np.where(accepted[rater], moved, current)
            proposal = tau * np.exp(log_tau_step * rng.standard_normal(J))
            moved = log_mass(eps, proposal, z, delta)
            # Gamma(α, β) prior times the Jacobian of log τ
            log_ratio = (np.bincount(rater, weights=moved - current, minlength=J)
                         + alpha * (np.log(proposal) - np.log(tau)) - beta * (proposal - tau))
            tau, accepted = metropolis(tau, proposal, log_ratio, log_tau_step, adapt)
            current = np.where(accepted[rater], moved, current)
            # every δ_c times one factor c, by random walk on log c: the
            # precisions' common scale, which the per-rater moves shift only
            # against the pull of their population (α, β)
            c = np.exp(log_delta_step[0] * rng.standard_normal())
            moved = log_mass(eps, tau, z, delta * c)
            # Gamma(φ, η) prior times the Jacobian c^G of the group move
            log_ratio = (np.sum(moved - current) + phi * n_groups * np.log(c)
                         - eta * (c - 1.0) * delta.sum())
            _, accepted = metropolis(np.zeros(1), np.zeros(1), np.array([log_ratio]),
                                     log_delta_step, adapt)
            if accepted[0]:
                delta, current = delta * c, moved
            # z_m | ε, τ, δ under N(μ, 1/λ), every item at once; a known
            # item keeps its value
            proposal = np.where(is_known, z, z + z_step * rng.standard_normal(n))
            moved = log_mass(eps, tau, proposal, delta)
            with np.errstate(invalid="ignore"):
                log_ratio = (np.bincount(item, weights=moved - current, minlength=n)
                             - 0.5 * lam0 * ((proposal - mu0) ** 2 - (z - mu0) ** 2))
            z, accepted = metropolis(z, proposal, log_ratio, z_step, adapt)
            current = np.where(accepted[item], moved, current)
        # (g, x) | z, τ, δ, ε
        scale = np.sqrt(tau[rater] * delta[group])
        centre = z[item]
        with np.errstate(invalid="ignore"):
            lo, hi = (lo_r - centre) * scale, (hi_r - centre) * scale
        if model.spam:
            genuine_mass = eps[rater] * _bin_probability(lo, hi)
            total = genuine_mass + (1.0 - eps[rater]) * spam_proba
            with np.errstate(invalid="ignore", divide="ignore"):
                p_genuine = np.where(total > 0, genuine_mass / total, eps[rater] > 0)
            genuine = rng.random(len(item)) < p_genuine
        else:
            genuine = np.ones(len(item), dtype=bool)
        x = centre + _truncated_normal(lo, hi, rng) / scale
        # z | x, g
        w = np.where(genuine, tau[rater] * delta[group], 0.0)
        precision = lam0 + np.bincount(item, weights=w, minlength=n)
        post_mean = (lam0 * mu0 + np.bincount(item, weights=w * x, minlength=n)) / precision
        z = post_mean + rng.standard_normal(n) / np.sqrt(precision)
        z = np.where(is_known, known, z)
        post_precision = np.where(is_known, np.inf, precision)
        post_mean = np.where(is_known, known, post_mean)
        # τ | x, z, g, δ and δ | x, z, g, τ
        sq = np.where(genuine, (x - z[item]) ** 2, 0.0)
        n_genuine = np.bincount(rater, weights=genuine, minlength=J)
        tau_shape = alpha + 0.5 * n_genuine
        tau_rate = beta + 0.5 * np.bincount(rater, weights=sq * delta[group], minlength=J)
        tau = rng.gamma(tau_shape, 1.0 / tau_rate)
        # (α, β) | τ
        sum_log_tau = float(np.sum(np.log(tau)))
        for _ in range(_HYPER_MOVES):
            proposal = alpha * np.exp(log_alpha_step * rng.standard_normal())
            accepted = (np.log(rng.random()) < log_alpha_target(proposal, beta, sum_log_tau)
                        - log_alpha_target(alpha, beta, sum_log_tau))
            if accepted:
                alpha = proposal
            if sweep < n_burnin:
                log_alpha_step *= np.exp(0.1 * (accepted - 0.44))
            beta = rng.gamma(a_beta + J * alpha, 1.0 / (b_beta + tau.sum()))
        delta_shape = phi + 0.5 * np.bincount(group, weights=genuine, minlength=n_groups)
        delta_rate = eta + 0.5 * np.bincount(group, weights=sq * tau[rater], minlength=n_groups)
        delta = rng.gamma(delta_shape, 1.0 / delta_rate)
        # the ridge (τ c, β / c, δ / c), along which every τ_n δ_c and so
        # the likelihood do not change: c drawn from its conditional under
        # the scaling group (Liu & Sabatti 2000), 1 / c ~ Gamma(a_β + G φ,
        # b_β β + η Σ δ_c); without it the chain crawls along the one
        # direction that only the priors of β and δ fix
        c = 1.0 / rng.gamma(a_beta + n_groups * phi, 1.0 / (b_beta * beta + eta * delta.sum()))
        tau, beta, delta = tau * c, beta / c, delta / c
        # ε | g
        if model.spam:
            eps = rng.beta(1.0 + n_genuine, 1.0 + rater_counts - n_genuine)
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            codes = np.searchsorted(inner, z, side="right")
            draws["prior"].append(np.bincount(codes, minlength=K) / n)
            for key, val in (("tau", tau), ("tau_shape", tau_shape), ("tau_rate", tau_rate),
                             ("eps", eps), ("delta", delta), ("delta_shape", delta_shape),
                             ("delta_rate", delta_rate), ("alpha", alpha), ("beta", beta)):
                draws[key].append(val)
            proba_sum += model._bin_mass(post_mean, post_precision)
            if keep_labels:
                labels.append(codes.astype(np.int32))
    eps_draws = np.stack(draws["eps"])
    samples = {
        "class_prior_": np.stack(draws["prior"]),
        "rater_precision_": np.stack(draws["tau"]),
        "rater_precision_shape_": np.stack(draws["tau_shape"]),
        "rater_precision_rate_": np.stack(draws["tau_rate"]),
        "rater_reliability_": eps_draws,
        "_rater_spamminess": 1.0 - eps_draws,
        "group_difficulty_": np.stack(draws["delta"]),
        "group_difficulty_shape_": np.stack(draws["delta_shape"]),
        "group_difficulty_rate_": np.stack(draws["delta_rate"]),
        "precision_shape_": np.array(draws["alpha"]),
        "precision_rate_": np.array(draws["beta"]),
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
