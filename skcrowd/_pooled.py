"""Dawid–Skene with a population prior on the confusion rows, learned from
the raters (partial pooling; Paun, Carpenter, Chamberlain, Hovy, Kruschwitz &
Poesio 2018, "Comparing Bayesian models of annotation", TACL 6)."""

from numbers import Real

import numpy as np
from scipy.special import digamma, gammaln, polygamma
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import CrowdModel, numba_threads
from ._dawid_skene import DawidSkene, _xlogy

__all__ = ["PooledDawidSkene"]

#: where the population's Dirichlet starts: DawidSkene's default prior
#: (pseudo-counts 1 and 0.5, i.e. Dirichlet parameters 2 and 1.5)
_START_CORRECT, _START_WRONG = 2.0, 1.5

#: fixed-point steps of the population update per M-step (each one raises
#: the objective: Minka 2000, "Estimating a Dirichlet distribution")
_POOL_STEPS = 5


class PooledDawidSkene(DawidSkene):
    """Dawid–Skene with a learned population prior on the confusion rows.

    Paun et al. (2018) compare annotation models with and without pooling:
    in the hierarchical Dawid–Skene model every rater's confusion row for a
    true class k is drawn from one population distribution whose
    parameters are learned from all the raters, so a rater with few
    ratings is shrunk towards how the crowd behaves, not towards a fixed
    prior.  Here the population distribution of row k is a Dirichlet,
    θ_j[k] ~ Dir(α_k), fitted by empirical Bayes with variational EM: each
    rater's rows keep a Dirichlet posterior q(θ_j[k]) = Dir(α_k + n_j[k])
    (n: the expected confusion counts), the items' posteriors use the
    weights exp E[log θ] (as MACE's variational Bayes does), and α_k
    maximizes the bound given the raters' posteriors, under an
    exponential hyperprior of rate ``prior_rate`` on each entry.  A point
    estimate of θ with α learned jointly would not do: the joint maximum
    pools every rater into one (α grows without bound).

    The objective, per item, is the evidence lower bound Σ_i log Σ_k π_k
    Π_n exp E[log θ_j[k, l]] - Σ_jk KL(q(θ_j[k]) || Dir(α_k)) + log p(π)
    + log p(α); the item step, the update of q(θ) and π, and the update of
    α (fixed-point steps, each raising it) never decrease it.  α starts at
    :class:`DawidSkene`'s default prior (Dirichlet 2 on the diagonal, 1.5
    elsewhere).  ``predict``, ``predict_proba`` and ``score_samples`` use
    the posterior predictive of an item's ratings (each rater's rows at
    their posterior mean, ``confusion_``), so held-out scores compare with
    the other models'.

    Parameters
    ----------
    prior_rate : float, default=0.01
        Rate of the exponential hyperprior on each entry of α (> 0): keeps
        α finite when the raters look alike.
    prior_class : float, default=1.0
        Dirichlet pseudo-count on each class of the prior π.
    class_prior : array-like of shape (n_classes,), default=None
        Known class prevalence, held fixed; ``None`` learns it.
    classes : array-like, default=None
        All labels of the scale, sorted; default the labels seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error, or ``"prior"``:
        a rater drawn from the learned population (its rows Dir(α_k)).
    init : {"majority", "random"}, default="majority"
    max_iter : int, default=100
    tol : float, default=1e-6
    n_init : int, default=1
    random_state : int, RandomState instance or None, default=None
    warm_start : bool, default=False
        Start from the fitted raters' posteriors and the population (see
        :ref:`warm-start`).
    verbose : int, default=0
    n_jobs : int, default=None
    accelerate : bool, default=True
        SQUAREM on the logs of the raters' Dirichlet parameters, of π and
        of α (:doc:`/acceleration`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
    confusion_ : ndarray of shape (n_raters, n_classes, n_classes)
        Each rater's posterior mean confusion matrix.
    rater_accuracy_ : ndarray of shape (n_raters,)
    confusion_posterior_ : ndarray of shape (n_raters, n_classes, n_classes)
        The Dirichlet parameters of each rater's rows, α_k + n_j[k].
    population_ : ndarray of shape (n_classes, n_classes)
        The learned α: row k is the population Dirichlet of a rater's
        confusion row for true class k.
    population_confusion_ : ndarray of shape (n_classes, n_classes)
        Its mean, α_k / Σ_l α_kl: the confusion matrix of a typical rater.
    confusion_counts_ : ndarray of shape (n_raters, n_classes, n_classes)
    n_features_in_, rater_ids_, n_iter_, converged_, lower_bound_, objective_history_

    See Also
    --------
    DawidSkene : the same model with a fixed prior.

    Examples
    --------
    >>> from skcrowd import PooledDawidSkene
    >>> from skcrowd.datasets import load_rte
    >>> model = PooledDawidSkene().fit(load_rte().ratings)
    >>> model.population_.shape
    (2, 2)
    """

    #: the full confusion matrix (the one-coin model has one number a rater)
    confusion = "full"
    _supports_dask = False
    _rater_params = ("posterior",)
    _shared_params = ("class_prior", "pool")
    _rater_attributes = ("confusion_", "rater_accuracy_", "confusion_posterior_")

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        "prior_rate": [Interval(Real, 0, None, closed="neither")],
        "prior_class": [Interval(Real, 0, None, closed="left")],
        "class_prior": ["array-like", None],
        "init": [StrOptions({"majority", "random"})],
    }

    def __init__(
        self,
        *,
        prior_rate=0.01,
        prior_class=1.0,
        class_prior=None,
        classes=None,
        unknown_raters="error",
        init="majority",
        max_iter=100,
        tol=1e-6,
        n_init=1,
        random_state=None,
        warm_start=False,
        verbose=0,
        n_jobs=None,
        accelerate=True,
    ):
        self.prior_rate = prior_rate
        self.prior_class = prior_class
        self.class_prior = class_prior
        self.classes = classes
        self.unknown_raters = unknown_raters
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.accelerate = accelerate

    # -- the model's math -------------------------------------------------------
    @staticmethod
    def _start_pool(n_classes):
        pool = np.full((n_classes, n_classes), _START_WRONG)
        np.fill_diagonal(pool, _START_CORRECT)
        return pool

    def _prepare(self, data, prior_params=None, prior_weight=1.0, **fit_params):
        if prior_params is not None:
            raise ValueError("prior_params is a DawidSkene option: PooledDawidSkene learns "
                             "its prior from the raters.")
        return super()._prepare(data, **fit_params)

    def _local_step(self, data, params):
        """The fit's item step: the weights exp E[log θ] of the raters'
        Dirichlet posteriors (Dawid & Skene's step otherwise)."""
        weights = {"class_prior": params["class_prior"],
                   "confusion": np.exp(_expected_log(params["posterior"]))}
        return super()._local_step(data, weights)

    def _predictive_step(self, data, params):
        """The items' posteriors and log marginals under the posterior
        predictive of their ratings: each rater's rows at their posterior
        mean (the raters' rows are independent under q, so a product of
        means is the predictive of an item's ratings by distinct raters).
        What predict, predict_proba and score_samples answer."""
        means = {"class_prior": params["class_prior"],
                 "confusion": _mean(params["posterior"])}
        return DawidSkene._local_step(self, data, means)

    def _final_step(self, data, run):
        """The fitted items from the predictive step, so that fit_predict
        equals predict.  The objective stays the bound of the last pass:
        the predictive step is not a step of the fit."""
        if run.items is None:
            return run
        return run._replace(items=self._predictive_step(data, run.params)[0])

    def _infer_items(self, data):
        with numba_threads(self.n_jobs):
            return self._predictive_step(data, self._fitted_params())[0]

    def _global_update(self, data, params, stats):
        """α given the raters' current posteriors (:func:`_update_pool`),
        then q(θ_j[k]) = Dir(α_k + n_j[k]) and π given the items'
        posteriors: each step raises the bound, and the fitted posteriors
        are those of the fitted α."""
        K = data.n_classes
        if params is None:
            pool = self._start_pool(K)
        else:
            pool = _update_pool(params["pool"], _expected_log(params["posterior"]),
                                self.prior_rate)
        posterior = stats["confusion_counts"] + pool
        prior = self._fixed_prior(K)
        if prior is None:
            prior = stats["class_counts"] + self.prior_class
            prior = prior / prior.sum()
        return {"class_prior": prior, "posterior": posterior, "pool": pool}

    def _objective(self, data, params, items, stats):
        """The bound per item: the items' term (the local step's), minus
        the raters' KL divergences from the population, plus the
        hyperpriors of π and α."""
        posterior, pool = params["posterior"], params["pool"]
        value = stats["loglik_total"] - np.sum(_dirichlet_kl(posterior, pool))
        value -= self.prior_rate * pool.sum()
        if self.class_prior is None:
            value += np.sum(_xlogy(self.prior_class, params["class_prior"]))
        return value / data.n_items

    def _params_to_vector(self, params):
        parts = [np.log(params["posterior"]).ravel(), np.log(params["pool"]).ravel()]
        if self.class_prior is None:
            parts.append(np.log(params["class_prior"]))
        return np.concatenate(parts)

    def _params_from_vector(self, vector, params):
        J, K = params["posterior"].shape[:2]
        n = J * K * K
        new = dict(params)
        new["posterior"] = np.exp(vector[:n]).reshape(J, K, K)
        new["pool"] = np.exp(vector[n:n + K * K]).reshape(K, K)
        if self.class_prior is None:
            logits = vector[n + K * K:]
            new["class_prior"] = np.exp(logits - logits.max())
            new["class_prior"] /= new["class_prior"].sum()
        return new

    # -- fitted attributes --------------------------------------------------------
    def _set_fitted(self, data, params, items):
        self.confusion_posterior_ = params["posterior"]
        self.population_ = params["pool"]
        self.population_confusion_ = _mean(self.population_)
        super()._set_fitted(data, {"class_prior": params["class_prior"],
                                   "confusion": _mean(self.confusion_posterior_)}, items)

    def _fitted_params(self):
        return {"class_prior": self.class_prior_, "posterior": self.confusion_posterior_,
                "pool": self.population_}

    def _new_rater_params(self, data, params):
        """A rater not seen before starts from the population: q(θ) = Dir(α)."""
        pool = params["pool"]
        return dict(params, posterior=np.array(
            np.broadcast_to(pool, params["posterior"].shape)))

    def _population_rater(self):
        """A rater not seen in fit: no ratings, its rows the population's."""
        mean = self.population_confusion_
        return {"confusion_": mean, "rater_accuracy_": np.diagonal(mean) @ self.class_prior_,
                "confusion_posterior_": self.population_}


def _mean(alpha):
    """The mean of Dirichlet rows."""
    return alpha / alpha.sum(axis=-1, keepdims=True)


def _expected_log(alpha):
    """E[log θ] under Dirichlet rows ``alpha``."""
    return digamma(alpha) - digamma(alpha.sum(axis=-1, keepdims=True))


def _log_normalizer(alpha):
    """log Γ(Σα) - Σ log Γ(α) of Dirichlet rows."""
    return gammaln(alpha.sum(axis=-1)) - gammaln(alpha).sum(axis=-1)


def _dirichlet_kl(posterior, pool):
    """KL(Dir(posterior_j[k]) || Dir(pool_k)) for every rater and row."""
    return (_log_normalizer(posterior) - _log_normalizer(pool)
            + np.sum((posterior - pool) * _expected_log(posterior), axis=-1))


def _update_pool(pool, expected_log, rate, steps=_POOL_STEPS):
    """α maximizing Σ_j E_q[log Dir(θ_j[k] | α_k)] - rate Σ α, row by row.

    Minka's (2000) fixed point, with the hyperprior's linear term: log Γ(Σα)
    is convex, so its tangent at the current α bounds it below, and the
    bound is maximized per entry by ψ(α_kl) = ψ(Σ_l α_kl) + (s_kl - rate) / J
    with s_kl = Σ_j E[log θ_j[k, l]].  Each step raises the objective (a
    minorize-maximize step).
    """
    n_raters = expected_log.shape[0]
    mean_log = expected_log.sum(axis=0) / n_raters - rate / n_raters
    alpha = pool.copy()
    for _ in range(steps):
        alpha = _inverse_digamma(digamma(alpha.sum(axis=-1, keepdims=True)) + mean_log)
    return alpha


def _inverse_digamma(y, steps=5):
    """x with ψ(x) = y (Minka 2000, appendix C: a start, then Newton)."""
    x = np.where(y >= -2.22, np.exp(y) + 0.5, -1.0 / (y - digamma(1.0)))
    for _ in range(steps):
        x = x - (digamma(x) - y) / polygamma(1, x)
    return x
