"""GLAD (Whitehill et al. 2009): rater ability times item difficulty, fitted
by MAP-EM with Newton steps (multi-class form)."""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit, roots_hermite
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import CrowdModel, has_gold, numba_threads
from ._backend import of as backend_of, on_workers
from ._chain import PREVALENCE_MOVES, draw_classes, prevalence_moves
from ._kernels import _glad as kernels
from ._kernels import _uncertainty as uncertainty_kernels
from ._mixins import OnlineEMMixin, PosteriorMixin, WarmStartMixin
from ._ratings import fixed_class_prior

__all__ = ["GLAD"]

#: Newton steps per item and local step from the previous b_i during fit
#: (the warm candidate, which keeps the objective monotone; the outer loop
#: finishes the job).
_ITEM_FIT_STEPS = 1
_ITEM_STEP_TOL = 1e-9
#: The global search over b_i that predict runs, and fit in its final item
#: pass (and wherever an item has no warm start): grid points at the prior
#: mean ± this many prior standard deviations ...
_SEARCH_REACH = 6.0
#: ... this many, spaced 0.75 standard deviations apart.
_SEARCH_POINTS = 17
_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


class GLAD(PosteriorMixin, OnlineEMMixin, WarmStartMixin, CrowdModel):
    """GLAD: each rater has an ability, each item a difficulty.

    Item i has a true class z_i ~ Cat(π) and an inverse difficulty
    β_i = exp(b_i) > 0; rater j has an ability α_j (negative: adversarial,
    0: guessing).  Rater j gives the true class with probability
    σ(α_j β_i) and any other class with probability (1 - σ(α_j β_i)) / (K - 1)
    (Whitehill et al. 2009, in its multi-class form).  Priors:
    α_j ~ N(``alpha_prior_mean``, ``alpha_prior_std ** 2``),
    b_i ~ N(``b_prior_mean``, ``b_prior_std ** 2``), π uniform or Dirichlet.

    Fitting maximises the marginal log posterior
    log p(X | α, b, π) + log p(α) + log p(b) + log p(π), with every z_i summed
    out, by coordinate ascent that never lets it decrease, in one pass over
    the ratings per iteration:

    - local step, per item: a safeguarded Newton step on b_i given α and π
      (backtracking so that the item's term cannot fall), then the
      posterior over z_i, the item's log marginal likelihood and, while its
      ratings are in cache, its share of each rater's gradient and
      curvature of the EM surrogate Q (a weighted logistic regression in
      α_j);
    - global step: one Newton step per α_j, shortened only when neither a
      bound on how fast the logistic curvature can change nor Böhning's
      bound proves that it cannot decrease Q, hence the objective;
      a prior-only move along the ridge (α e^s, b - s) that leaves the
      likelihood unchanged; closed-form π when it is learned.

    Parameters
    ----------
    alpha_prior_mean : float, default=1.0
        Mean of the Gaussian prior on every rater ability α_j.
    alpha_prior_std : float, default=1.0
        Its standard deviation.
    b_prior_mean : float, default=1.0
        Mean of the Gaussian prior on every item's log inverse difficulty
        b_i = log β_i, between -100 and 100.
    b_prior_std : float, default=1.0
        Its standard deviation, at most 100.  :meth:`score_samples`
        integrates over this prior with ``n_quadrature`` Gauss–Hermite
        nodes, which for a wide prior need to be many (:ref:`glad_scores`).
    class_prior : {"uniform", "learn"} or array-like of shape (n_classes,), \
            default="uniform"
        The class prevalence π: held uniform (as in Whitehill et al.'s code
        and crowd-kit), learned (MAP with a Dirichlet prior), or given and
        held fixed.  Uniform is the default because a learned π follows the
        raters' own label skew: on the web and bluebirds data sets it costs
        3 to 13 points of accuracy (:ref:`glad_results`).
    prior_class : float, default=1.0
        With ``class_prior="learn"``: Dirichlet pseudo-count (α - 1) on each
        class of π.
    classes : array-like, default=None
        All labels of the scale, sorted; default the labels seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: score them with the population ability, the mean of the
        fitted α_j weighted by each rater's number of ratings.
    init : {"majority", "random"}, default="majority"
        Start of the first restart: every α_j = 1 and b_i at its prior mean,
        π from the vote shares, so that the first posteriors are the
        majority vote.  ``"random"`` (and every further restart) draws α_j
        uniformly in [0.25, 2] and π from a flat Dirichlet.
    n_quadrature : int, default=40
        Gauss–Hermite nodes used by :meth:`score_samples` (and
        :meth:`sample`) to integrate b_i over its prior.
    max_iter : int, default=500
        EM iterations at most (the shipped data sets need 12 to 25).
    tol : float, default=1e-6
        Stop when the mean log posterior per item changes by less than this.
    n_init : int, default=1
        Restarts; the one with the highest log posterior is kept.
    random_state : int, RandomState instance or None, default=None
    warm_start : bool, default=False
        If True, each ``fit`` after the first starts from the fitted rater
        parameters, matched by rater id (raters not seen before start from
        the prior), as one run (``n_init`` is ignored).  See
        :ref:`warm-start`.
    verbose : int, default=0
    n_jobs : int, default=None
        Numba threads for the kernels (restored afterwards); results do not
        depend on it.
    accelerate : bool, default=True
        Extrapolate the sequence of rater abilities (and a learned π, in
        log coordinates) by SQUAREM (see :doc:`/acceleration`); the items'
        difficulties stay warm-started per item.  The same optimum in fewer
        passes over the data; ``False`` runs plain EM.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
        Prevalence π of each true class.
    rater_ability_ : ndarray of shape (n_raters,)
        α_j, MAP.
    item_difficulty_ : ndarray of shape (n_items,)
        1 / β_i = exp(-b_i) of the training items (MAP b_i at the final
        abilities); larger is harder.  None after a fit on a dask
        DataFrame, whose items stay on the workers.
    n_features_in_ : int
        Number of raters.
    rater_ids_ : ndarray of shape (n_raters,)
    n_iter_, converged_, lower_bound_, objective_history_
        Of the best restart; the objective is the marginal log posterior
        divided by the number of items.  The history's last entry is the
        final item pass of the fit (the global search over each b_i, see
        Notes), one pass after the ``n_iter_`` iterations.

    See Also
    --------
    DawidSkene : a full confusion matrix per rater, no item effect.
    MajorityVote : the unweighted baseline.

    Notes
    -----
    :meth:`predict_proba` on any X (new items or the training items) finds
    the MAP b_i of each item with the abilities fixed, by a search on a grid
    over its prior and Newton steps, and returns the posterior over z_i at
    it; the fit runs that search once, in its final item pass (its
    iterations warm-start each b_i instead), so that ``fit_predict`` equals
    ``fit().predict``.  :meth:`score_samples` integrates b_i over its prior
    by Gauss–Hermite quadrature instead (z_i summed out).

    References
    ----------
    J. Whitehill, P. Ruvolo, T. Wu, J. Bergsma, J. Movellan (2009). Whose
    vote should count more: optimal integration of labels from labelers of
    unknown expertise. NIPS 22.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import GLAD
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, np.nan, 0], [1, 0, 1]])
    >>> GLAD().fit_predict(X)
    array([0., 1., 0., 1.])
    """

    _supports_dask = True
    _rater_params = ("alpha",)
    _shared_params = ("class_prior",)
    #: stepwise EM blends a quadratic model of each rater's Q (its
    #: curvature and its slope at α = 0) and b's sum (for the ridge step)
    _online_stats = ("alpha_hessian", "alpha_linear", "class_counts", "log_beta_dev_sum")
    _online_rater_stats = ("alpha_hessian", "alpha_linear")
    #: Per-item warm starts that stay on the Dask workers between iterations.
    _dask_item_state = ("log_beta",)
    #: Stats combined across partitions by their maximum, not their sum.
    _stats_maxima = ("beta_max",)

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        # The prior's precision 1 / std² and its square (α - mean)² must be
        # finite, non-zero floats: a std of 1e-160 gave a ZeroDivisionError,
        # 1e160 an OverflowError, a mean of 1e200 an objective of -inf.
        "alpha_prior_mean": [Interval(Real, -1e100, 1e100, closed="both")],
        "alpha_prior_std": [Interval(Real, 1e-100, 1e100, closed="both")],
        # Beyond these, β = exp(b) spans e^±600 within 6 prior standard
        # deviations of the mean (the search grid's reach): b is not
        # identified and exp(±b) overflows (a mean of 1e4 gave a NaN ridge
        # step).
        "b_prior_mean": [Interval(Real, -100, 100, closed="both")],
        "b_prior_std": [Interval(Real, 1e-100, 100, closed="both")],
        "prior_class": [Interval(Real, 0, None, closed="left")],
        "class_prior": [StrOptions({"uniform", "learn"}), "array-like"],
        "init": [StrOptions({"majority", "random"})],
        "n_quadrature": [Interval(Integral, 1, None, closed="left")],
    }

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "rater_ability_")
    #: (burn-in sweeps, sweeps per kept draw): covers at its nominal
    #: rates by simulation (doc/uncertainty.rst)
    _chain_defaults = (200, 10)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return gibbs_posterior(self, data, n_samples, n_burnin, thin, rng, keep_labels)

    def __init__(
        self,
        *,
        alpha_prior_mean=1.0,
        alpha_prior_std=1.0,
        b_prior_mean=1.0,
        b_prior_std=1.0,
        class_prior="uniform",
        prior_class=1.0,
        classes=None,
        unknown_raters="error",
        init="majority",
        n_quadrature=40,
        max_iter=500,
        tol=1e-6,
        n_init=1,
        random_state=None,
        warm_start=False,
        verbose=0,
        n_jobs=None,
        accelerate=True,
    ):
        self.alpha_prior_mean = alpha_prior_mean
        self.alpha_prior_std = alpha_prior_std
        self.b_prior_mean = b_prior_mean
        self.b_prior_std = b_prior_std
        self.class_prior = class_prior
        self.prior_class = prior_class
        self.classes = classes
        self.unknown_raters = unknown_raters
        self.init = init
        self.n_quadrature = n_quadrature
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.accelerate = accelerate

    # -- the model's math -------------------------------------------------------
    def _fixed_prior(self, n_classes):
        """The fixed π, or None when it is learned."""
        if isinstance(self.class_prior, str):
            if self.class_prior == "learn":
                return None
            return np.full(n_classes, 1.0 / n_classes)
        prior = fixed_class_prior(self.class_prior, self.classes_, "'uniform', 'learn' or ")
        return prior / prior.sum()

    def _prepare(self, data, **fit_params):
        data = super()._prepare(data, **fit_params)
        self._fixed_prior(data.n_classes)  # validate before any work
        return data

    def _init_params(self, data, rng, restart):
        K = data.n_classes
        if restart == 0 and self.init == "majority":
            alpha = np.ones(data.n_raters)
            if has_gold(data):
                alpha = self._qualification(data)
            counts = backend_of(data).sum_stats(data, _label_counts, K)["counts"]
            shares = counts + 1.0
            prior = shares / shares.sum()
        else:
            alpha = rng.uniform(0.25, 2.0, size=data.n_raters)
            prior = rng.dirichlet(np.ones(K))
        fixed = self._fixed_prior(K)
        params = {"alpha": alpha, "class_prior": prior if fixed is None else fixed}
        if not on_workers(data):  # on Dask the workers hold b
            params["log_beta"] = np.full(data.n_items, float(self.b_prior_mean))
        return params

    def _new_rater_params(self, data, params):
        """A rater not seen before starts at the prior mean ability."""
        return dict(params, alpha=np.full(data.n_raters, float(self.alpha_prior_mean)))

    def _warm_params(self, data, rng, start):
        # The items' b from scratch, Newton to convergence at the earlier
        # abilities (not one step from the prior mean): a warm refit then
        # starts where the earlier fit ended.
        params = super()._warm_params(data, rng, start)
        params.pop("log_beta", None)
        return params

    def _qualification(self, data):
        """Starting abilities from the known items (gold): rater j's share of
        correct answers on them a_j gives σ(α_j β) = a_j at the prior
        β = exp(b_prior_mean).  The share has two pseudo-answers at the prior
        mean ability's accuracy, so one wrong answer on one gold item does
        not start a rater as adversarial; without gold ratings, the prior
        mean.  A crowd that mostly gets a class wrong then cannot outvote
        the gold at the start (EM would stay in that mode)."""
        gold = data.gold[data.item]
        on_gold = gold >= 0
        n = np.bincount(data.rater[on_gold], minlength=data.n_raters)
        right = np.bincount(data.rater[on_gold], weights=data.label[on_gold] == gold[on_gold],
                            minlength=data.n_raters)
        beta = np.exp(float(self.b_prior_mean))
        prior_share = expit(float(self.alpha_prior_mean) * beta)
        share = (right + 2.0 * prior_share) / (n + 2.0)
        return np.log(share / (1.0 - share)) / beta

    def _dask_local_params(self, data, params, state):
        """A partition's local-step parameters: its items' b warm start, kept
        on the worker and moved by the last global update's ridge shift (a
        fresh start, at the prior mean as in memory, when there is none)."""
        if "log_beta_shift" not in params or "log_beta" not in state:
            log_beta = np.full(data.n_items, float(self.b_prior_mean))
        else:
            log_beta = state["log_beta"] - params["log_beta_shift"]
        return dict(params, log_beta=log_beta)

    def _items(self, data, params, rater_stats=None, search=True):
        """Item pass: MAP b_i given α and π, the posterior over z_i and the
        log marginal.

        Without a warm start (predict), b_i is found by a global search on
        a grid over its prior, then Newton.  During fit,
        ``params["log_beta"]`` (one entry per item) gives a warm-started
        candidate, one safeguarded Newton step from the previous b_i, which
        keeps the objective from decreasing; with ``search`` the grid's
        candidates are tried too and kept where strictly better.  The fit
        loop's passes leave the search out (it costs ~17 passes over an
        item's ratings); the final item pass of the fit (:meth:`_final_step`)
        runs it, so the fitted items are searched as predict's are.
        """
        start = params.get("log_beta")
        if start is not None and len(start) == data.n_items:
            log_beta = np.array(start, dtype=np.float64)
            max_steps = _ITEM_FIT_STEPS
        else:
            log_beta = np.full(data.n_items, float(self.b_prior_mean))
            max_steps = 0
            search = True  # no candidate without the search
        half = (_SEARCH_POINTS - 1) // 2
        grid = (float(self.b_prior_mean) + float(self.b_prior_std) * _SEARCH_REACH / half
                * np.arange(-half, half + 1)) if search else np.empty(0)
        beta = np.empty(data.n_items)
        posterior = np.empty((data.n_items, data.n_classes))
        loglik = np.empty(data.n_items)
        with np.errstate(divide="ignore"):
            log_prior = np.log(params["class_prior"])
        kernels.item_step(
            data.item_ptr,
            data.rater,
            data.label,
            np.ascontiguousarray(params["alpha"], dtype=np.float64),
            log_prior,
            data.evidence,
            float(self.b_prior_mean),
            1.0 / float(self.b_prior_std) ** 2,
            max_steps,
            _ITEM_STEP_TOL,
            grid,
            log_beta,
            beta,
            posterior,
            loglik,
            np.empty((0, 0, 4)) if rater_stats is None else rater_stats,
            np.empty(data.n_ratings),
        )
        return {"proba": posterior, "loglik": loglik, "log_beta": log_beta, "beta": beta}

    def _local_step(self, data, params):
        # One pass: each item's Newton steps, posterior and rater terms.
        n_blocks = kernels.n_item_blocks(data.n_items, data.n_raters)
        blocks = np.empty((n_blocks, data.n_raters, 4))
        items = self._items(data, params, blocks, search=False)
        rater_stats = blocks[:, :, :3].sum(axis=0)
        stats = {
            "alpha_gradient": rater_stats[:, 0],
            "alpha_hessian": rater_stats[:, 1],
            "alpha_bound": rater_stats[:, 2],
            "beta_max": blocks[:, :, 3].max(axis=0),
            "class_counts": items["proba"].sum(axis=0),
            "loglik_total": items["loglik"].sum(),
            # b's sums for the ridge step and the objective's prior term
            "log_beta_dev_sum": np.sum(items["log_beta"] - self.b_prior_mean),
            "log_beta_log_kernel": _normal_log_kernel(items["log_beta"], self.b_prior_mean,
                                                      self.b_prior_std),
            # Per-item state, not a sum: the warm start of the next local
            # step (kept on the workers on Dask).
            "log_beta": items["log_beta"],
        }
        return items, stats

    def _final_step(self, data, run):
        """The fitted items: one more item pass at the best run's α and π,
        from the same warm starts as its last pass, with the global search
        over each b_i that predict runs (so fit_predict equals predict).  The warm
        candidate is the last pass's own b_i, so the objective cannot fall;
        its value ends ``objective_history_``.  On Dask the items stay on the
        workers: ``fit_predict`` is ``predict`` there, and no pass is added."""
        if on_workers(data) or run.items is None:
            return run
        items = self._items(data, run.params, search=True)
        stats = {"loglik_total": items["loglik"].sum(),
                 "log_beta_log_kernel": _normal_log_kernel(items["log_beta"],
                                                           self.b_prior_mean, self.b_prior_std)}
        objective = self._objective(data, run.params, items, stats)
        return run._replace(items=items, history=[*run.history, objective])

    def _global_update(self, data, params, stats):
        """M-step: one safeguarded Newton step per α_j, closed-form π.

        Q_j(α) is concave, a weighted logistic regression, with data
        curvature H_j = -Σ σ(1-σ) β² and prior precision p.  Two facts keep a
        step from decreasing Q_j (hence, by the EM inequality, the
        objective):

        - σ(1-σ) changes by at most a factor e^|Δt| when t moves by Δt, so
          along a step |δ| ≤ ln 2 / max β the curvature stays above
          2 H_j - p, and the Newton step, or the Newton step cut to that
          length, cannot decrease Q_j;
        - Q_j'' ≥ -B_j - p everywhere (B_j = Σ β² / 4, Böhning's bound), so
          a step -G / H with |H| ≥ (B_j + p) / 2 cannot either.

        The Newton step is taken when one of them covers it; otherwise the
        longer of the two safe steps.
        """
        precision = 1.0 / float(self.alpha_prior_std) ** 2
        alpha = params["alpha"]
        gradient = stats["alpha_gradient"] - precision * (alpha - self.alpha_prior_mean)
        newton = -gradient / (stats["alpha_hessian"] - precision)
        bohning = -gradient / (0.5 * (-stats["alpha_bound"] - precision))
        with np.errstate(divide="ignore"):
            reach = np.log(2.0) / stats["beta_max"]  # inf without ratings
        covered = (np.abs(newton) <= reach) | (np.abs(newton) <= np.abs(bohning))
        cut = np.sign(newton) * np.maximum(np.minimum(reach, np.abs(newton)), np.abs(bohning))
        alpha = alpha + np.where(covered, newton, cut)
        alpha, shift = self._rescale(alpha, stats["log_beta_dev_sum"], data.n_items)
        prior = self._fixed_prior(data.n_classes)
        if prior is None:
            prior = stats["class_counts"] + self.prior_class
            prior = prior / prior.sum()
        new = {"alpha": alpha, "class_prior": prior, "log_beta_shift": shift}
        if "log_beta" in stats:  # in memory; on Dask the workers apply the shift
            new["log_beta"] = stats["log_beta"] - shift if shift != 0.0 else stats["log_beta"]
        return new

    def _online_batch_stats(self, data, params, stats):
        # Q_j(α) of the batch, to second order about the batch's α_b:
        # G (α - α_b) + H (α - α_b)²/2, i.e. slope G - H α_b at α = 0.  The
        # blend of these quadratics is the running surrogate of Q_j.
        return dict(stats, alpha_linear=stats["alpha_gradient"]
                    - stats["alpha_hessian"] * params["alpha"])

    def _online_update(self, data, params, stats, n_seen):
        """α_j maximising the blended quadratic Q_j plus its Gaussian prior
        (closed form), the ridge step, π from the blended class counts."""
        precision = 1.0 / float(self.alpha_prior_std) ** 2
        alpha = ((stats["alpha_linear"] + precision * float(self.alpha_prior_mean))
                 / (precision - stats["alpha_hessian"]))
        alpha, _ = self._rescale(alpha, float(stats["log_beta_dev_sum"]), n_seen)
        prior = self._fixed_prior(data.n_classes)
        if prior is None:
            prior = stats["class_counts"] + self.prior_class
            prior = prior / prior.sum()
        return {"alpha": alpha, "class_prior": prior}

    def _params_to_vector(self, params):
        """α as it is and, when π is learned, log π (softmax coordinates).
        The items' b are local: an extrapolated step warm-starts them from
        the latest plain update and the item pass re-fits them, in memory
        as on Dask (where the workers hold b)."""
        parts = [np.asarray(params["alpha"], dtype=np.float64)]
        if self._fixed_prior(len(params["class_prior"])) is None:
            with np.errstate(divide="ignore"):
                parts.append(np.log(params["class_prior"]))
        return np.concatenate(parts)

    def _params_from_vector(self, vector, params):
        J = len(params["alpha"])
        new = dict(params, alpha=vector[:J])
        if len(vector) > J:
            logits = vector[J:] - np.max(vector[J:])
            new["class_prior"] = np.exp(logits) / np.exp(logits).sum()
        return new

    def _rescale(self, alpha, b_dev_sum, n_items):
        """Move along the likelihood's ridge: (α e^s, b - s) for the s that
        maximises the priors.

        α_j β_i is unchanged, so is the likelihood; only the priors decide
        the scale, which coordinate-wise updates of α and b reach slowly
        (a zig-zag along the ridge).  A few safeguarded Newton steps on the
        1-D prior log density, no data pass; it can only increase.  Needs of
        b only Σ (b_i - μ) and the item count; returns (new α, s), and b
        moves to b - s.
        """
        a_prec = 1.0 / float(self.alpha_prior_std) ** 2
        b_prec = 1.0 / float(self.b_prior_std) ** 2
        a_mean = float(self.alpha_prior_mean)

        def value(s):
            # The b part up to a constant: Σ (b_i - s - μ)² = const - 2sΣ(b_i - μ) + n s².
            a = alpha * np.exp(s)
            return (-0.5 * a_prec * np.sum((a - a_mean) ** 2)
                    - 0.5 * b_prec * (n_items * s * s - 2 * s * b_dev_sum))

        s, current = 0.0, value(0.0)
        for _ in range(20):
            a = alpha * np.exp(s)
            grad = -a_prec * np.sum((a - a_mean) * a) + b_prec * (b_dev_sum - n_items * s)
            hess = -a_prec * np.sum(2 * a * a - a_mean * a) - b_prec * n_items
            curv = min(hess, -b_prec * n_items)
            step = min(max(-grad / curv, -1.0), 1.0)
            if not np.isfinite(step):  # the priors' scales overflow: stay put
                break
            while abs(step) > 1e-12:
                trial = value(s + step)
                if trial >= current:
                    break
                step *= 0.5
            if abs(step) <= 1e-12:
                break
            s, current = s + step, trial
        if s == 0.0:
            return alpha, 0.0
        return alpha * np.exp(s), s

    def _log_prior(self, params, b_log_kernel, n_items):
        """log p(α) + log p(b) + log p(π) (π's Dirichlet up to a constant);
        b enters through Σ -z²/2 of its prior (``b_log_kernel``)."""
        def log_normal(kernel, n, std):
            return kernel - n * (_LOG_SQRT_2PI + np.log(std))

        alpha = params["alpha"]
        value = log_normal(_normal_log_kernel(alpha, self.alpha_prior_mean, self.alpha_prior_std),
                           len(alpha), self.alpha_prior_std)
        value += log_normal(b_log_kernel, n_items, self.b_prior_std)
        if self._fixed_prior(len(params["class_prior"])) is None and self.prior_class > 0:
            with np.errstate(divide="ignore"):
                value += self.prior_class * np.sum(np.log(params["class_prior"]))
        return value

    def _objective(self, data, params, items, stats):
        """Mean marginal log posterior per item (z summed out, b at its
        current value)."""
        total = stats["loglik_total"] + self._log_prior(params, stats["log_beta_log_kernel"],
                                                        data.n_items)
        return total / data.n_items

    # -- result tables and new raters (the base class uses these) ------------------
    _rater_attributes = ("rater_ability_",)

    def _rater_diagnostics(self):
        return {"ability": self.rater_ability_}

    def _item_diagnostics(self, data, items):
        return {"difficulty": np.exp(-items["log_beta"])}

    def _set_fitted(self, data, params, items):
        self.class_prior_ = params["class_prior"]
        self.rater_ability_ = params["alpha"]
        # Fitted on a dask DataFrame the training items stay on the workers.
        self.item_difficulty_ = None if items is None else np.exp(-items["log_beta"])

    def _fitted_params(self):
        return {"alpha": self.rater_ability_, "class_prior": self.class_prior_}

    def _infer_items(self, data):
        # New items: only the item pass (no rater statistics are needed).
        with numba_threads(self.n_jobs):
            return self._items(data, self._fitted_params())

    def _quadrature(self, data):
        """Per item: log marginal likelihood with b_i integrated over its
        prior, and the posterior weight of each quadrature node."""
        # scipy's rule stays accurate for any number of nodes (numpy's
        # hermgauss returns NaN weights from ~400 nodes);
        # the far nodes whose weights underflow to 0 are left out.
        x, w = roots_hermite(self.n_quadrature)
        x, w = x[w > 0], w[w > 0]
        nodes = self.b_prior_mean + np.sqrt(2.0) * self.b_prior_std * x
        log_weights = np.log(w) - 0.5 * np.log(np.pi)
        loglik = np.empty(data.n_items)
        node_posterior = np.empty((data.n_items, len(nodes)))
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.class_prior_)
        with numba_threads(self.n_jobs):
            kernels.item_marginal(
                data.item_ptr,
                data.rater,
                data.label,
                np.ascontiguousarray(self.rater_ability_, dtype=np.float64),
                log_prior,
                nodes,
                log_weights,
                loglik,
                node_posterior,
            )
        return loglik, nodes, node_posterior

    def _score_items(self, data):
        return self._quadrature(data)[0]

    def _sample_labels(self, data, rng):
        K = data.n_classes
        true_class = rng.choice(K, size=data.n_items, p=self.class_prior_)
        if K == 1:
            return np.zeros(data.n_ratings, dtype=np.int32)
        _, nodes, node_posterior = self._quadrature(data)
        cdf = np.cumsum(node_posterior, axis=1)
        u = rng.random(data.n_items) * cdf[:, -1]
        node = np.minimum((u[:, None] > cdf).sum(axis=1), len(nodes) - 1)
        beta = np.exp(nodes[node])
        t = self.rater_ability_[data.rater] * beta[data.item]
        correct = rng.random(data.n_ratings) < expit(t)
        truth = true_class[data.item]
        # A wrong label is uniform over the K - 1 other classes.
        wrong = (truth + rng.randint(1, K, size=data.n_ratings)) % K
        return np.where(correct, truth, wrong).astype(np.int32)


def _normal_log_kernel(x, mean, std):
    """Σ -z²/2 with z = (x - mean) / std: a normal log density's data part."""
    z = (x - mean) / std
    return np.sum(-0.5 * z * z)


def _label_counts(data, n_classes):
    """The ratings per label (of a partition on Dask; module level: pickled)."""
    return {"counts": np.bincount(data.label, minlength=n_classes)}


# -- the posterior sampler (skcrowd.uncertainty) ------------------------------------
def gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Metropolis-within-Gibbs of GLAD's posterior p(π, α, b, z | X).

    Whitehill et al. (2009), multi-class: rater j gives the true class
    with probability σ(α_j β_i), β_i = exp(b_i), and each other class with
    (1 - σ(α_j β_i)) / (K - 1); α_j ~ N(``alpha_prior_mean``,
    ``alpha_prior_std``²), b_i ~ N(``b_prior_mean``, ``b_prior_std``²),
    π ~ Dirichlet(``prior_class`` + 1) when learned.  A sweep:

    - b_i | α, π with z_i summed out: random-walk Metropolis, every item
      at once (each item's ratings are its own);
    - π | α, b with every z_i summed out (:func:`prevalence_moves`),
      when learned;
    - z_i | α, b_i, π: exact, from the item's posterior;
    - α_j | z, b: random-walk Metropolis on rater j's right and wrong
      ratings, every rater at once;
    - with two classes, relabelling: (-α, 1 - z, π reversed) leaves the
      likelihood unchanged, so the swap is accepted on the prior ratio
      (exp(-2 μ_α Σ α_j / σ_α²) with a symmetric prior on π).  With many
      raters the mirrored mode has no mass; with a few, some adversarial,
      it has, and the chain would not reach it by small steps;
    - the ridge (α e^s, b - s), along which α_j β_i and so the likelihood
      do not change: s by random walk, accepted on the prior ratio times
      the Jacobian e^{Js} (a group move, Liu & Sabatti 2000); without it
      the chain crawls along the direction that only the priors fix;
    - π | z, conjugate.

    Proposal scales adapt during burn-in (target acceptance 0.44) and are
    then fixed.  The chain starts at the fit (its MAP b_i when it kept
    them).
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    rater, label = data.rater, data.label
    mu_a, sd_a = float(model.alpha_prior_mean), float(model.alpha_prior_std)
    mu_b, sd_b = float(model.b_prior_mean), float(model.b_prior_std)
    fixed = model._fixed_prior(K)
    alpha = np.array(model.rater_ability_, dtype=np.float64)
    difficulty = getattr(model, "item_difficulty_", None)
    if difficulty is not None and len(difficulty) == n:
        b = -np.log(np.asarray(difficulty, dtype=np.float64))
    else:
        b = np.full(n, mu_b)
    pi = np.array(model.class_prior_ if fixed is None else fixed, dtype=np.float64)
    evidence = data.evidence if len(data.evidence) else 0.0
    # known items (gold y) hold their class, which a relabelling would not
    can_relabel = K == 2 and not has_gold(data)

    item_ptr = np.asarray(data.item_ptr, dtype=np.int64)
    log_other = float(np.log(K - 1)) if K > 1 else 0.0

    def class_loglik(alpha, b):
        S = np.empty((n, K))
        uncertainty_kernels.glad_class_loglik(item_ptr, data.rater, label, alpha, b, log_other, S)
        return S

    def b_target(S, b, log_pi):
        with np.errstate(invalid="ignore"):
            joint = S + log_pi
        top = joint.max(axis=1)
        return (top + np.log(np.exp(joint - top[:, None]).sum(axis=1))
                - 0.5 * ((b - mu_b) / sd_b) ** 2)

    rater_loglik = np.empty(J)

    def alpha_target(alpha, z, beta):
        uncertainty_kernels.glad_rater_loglik(data.item, data.rater, label, z, alpha, beta,
                                              rater_loglik)
        return rater_loglik - 0.5 * ((alpha - mu_a) / sd_a) ** 2

    counts = np.bincount(rater, minlength=J)
    step = {"b": np.full(n, 0.5), "alpha": 1.0 / np.sqrt(1.0 + 0.25 * counts),
            "ridge": np.array(0.05), "prior": np.array(0.3)}

    def adapt(key, accepted):
        step[key] = step[key] * np.exp(0.1 * (accepted - 0.44))

    draws = {"prior": [], "alpha": []}
    labels, proba_sum = [], np.zeros((n, K))
    S = class_loglik(alpha, b)
    for sweep in range(n_burnin + n_samples * thin):
        adapting = sweep < n_burnin
        with np.errstate(divide="ignore"):
            log_pi = np.log(pi) + evidence
        # b | α, π (z summed out)
        proposal = b + step["b"] * rng.standard_normal(n)
        S_new = class_loglik(alpha, proposal)
        accepted = np.log(rng.random(n)) < b_target(S_new, proposal, log_pi) - b_target(S, b,
                                                                                        log_pi)
        b = np.where(accepted, proposal, b)
        S = np.where(accepted[:, None], S_new, S)
        if adapting:
            adapt("b", accepted)
        joint = S + log_pi
        proba = np.exp(joint - joint.max(axis=1, keepdims=True))
        proba /= proba.sum(axis=1, keepdims=True)
        # π | α, b (z summed out), then z | α, b, π: a blocked draw
        if fixed is None and K > 1:
            pi, proba, moved = prevalence_moves(pi, proba, model.prior_class + 1.0,
                                                 step["prior"], rng)
            if adapting:
                adapt("prior", moved / PREVALENCE_MOVES)
        # z | α, b, π
        z = draw_classes(proba, rng)
        # α | z, b
        beta = np.exp(b)
        proposal = alpha + step["alpha"] * rng.standard_normal(J)
        accepted = (np.log(rng.random(J))
                    < alpha_target(proposal, z, beta) - alpha_target(alpha, z, beta))
        alpha = np.where(accepted, proposal, alpha)
        if adapting:
            adapt("alpha", accepted)
        if can_relabel:
            # with two classes, (-α, 1 - z, π reversed) gives every rating
            # the probability it had: the swap's ratio is the priors'
            swapped_pi = pi if fixed is not None else pi[::-1]
            with np.errstate(divide="ignore"):
                log_ratio = (-2.0 * mu_a * alpha.sum() / sd_a ** 2
                             + np.log(swapped_pi)[1 - z].sum() - np.log(pi)[z].sum())
            if np.log(rng.random()) < log_ratio:
                alpha, z, pi = -alpha, 1 - z, swapped_pi.copy()
        # the ridge (α e^s, b - s)
        shift = float(step["ridge"] * rng.standard_normal())
        moved_alpha, moved_b = alpha * np.exp(shift), b - shift
        log_ratio = (J * shift
                     - 0.5 * np.sum(((moved_alpha - mu_a) / sd_a) ** 2 - ((alpha - mu_a) / sd_a) ** 2)
                     - 0.5 * np.sum(((moved_b - mu_b) / sd_b) ** 2 - ((b - mu_b) / sd_b) ** 2))
        accepted = np.log(rng.random()) < log_ratio
        if accepted:
            alpha, b = moved_alpha, moved_b
        if adapting:
            adapt("ridge", accepted)
        S = class_loglik(alpha, b)
        # π | z
        if fixed is None:
            pi = rng.standard_gamma(np.bincount(z, minlength=K) + model.prior_class + 1.0)
            pi /= pi.sum()
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            draws["prior"].append(pi)
            draws["alpha"].append(alpha)
            proba_sum += proba
            if keep_labels:
                labels.append(z.astype(np.int32))
    samples = {"class_prior_": np.stack(draws["prior"]), "rater_ability_": np.stack(draws["alpha"])}
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
