"""Dawid–Skene with a population prior on the confusion rows, learned from
the raters (partial pooling; Paun, Carpenter, Chamberlain, Hovy, Kruschwitz &
Poesio 2018, "Comparing Bayesian models of annotation", TACL 6)."""

import warnings
from numbers import Real

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import digamma, gammaln, logsumexp
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import CrowdModel, has_gold, numba_threads
from ._dawid_skene import DawidSkene, _xlogy
from ._kernels import _uncertainty as uncertainty_kernels
from ._population import update_population

__all__ = ["PooledDawidSkene"]

#: where the population's Dirichlet starts: DawidSkene's default prior
#: (pseudo-counts 1 and 0.5, i.e. Dirichlet parameters 2 and 1.5)
_START_CORRECT, _START_WRONG = 2.0, 1.5

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

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "confusion_", "rater_accuracy_",
                             "confusion_posterior_", "population_", "population_confusion_")
    #: (burn-in sweeps, sweeps per kept draw): the population's
    #: concentrations move slowly (doc/uncertainty.rst)
    _chain_defaults = (200, 20)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels)

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
        """α given the raters' current posteriors (``update_population``),
        then q(θ_j[k]) = Dir(α_k + n_j[k]) and π given the items'
        posteriors: each step raises the bound, and the fitted posteriors
        are those of the fitted α."""
        K = data.n_classes
        if params is None:
            pool = self._start_pool(K)
        else:
            pool = update_population(params["pool"], _expected_log(params["posterior"]),
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


# -- posterior sampling (skcrowd.uncertainty) ----------------------------------------
#: Metropolis moves of each population row per sweep (each a move of the
#: log concentration and one of the mean): the population is the slowest
#: part of the chain and its moves cost O(J K²), far less than the items'
#: pass
_POPULATION_MOVES = 3

#: target acceptance rates of the adapted random walks (Roberts, Gelman &
#: Gilks 1997; Roberts & Rosenthal 2001: 0.44 in one dimension, 0.234 in
#: many)
_ACCEPT_ONE, _ACCEPT_MANY = 0.44, 0.234


def concentration_log_prior(concentration):
    """log p(s) of a population row's concentration s = Σ_l α_kl under the
    sampler's hyperprior p(s) = ½ (1 + s)^(-3/2), that is 1/√(1 + s)
    uniform on (0, 1).

    Gelman et al. (2013, Bayesian Data Analysis, 3rd ed., section 5.3)
    make the hierarchical Beta population weakly informative with its mean
    uniform and (α + β)^(-1/2) uniform; the same made proper at s = 0.  It
    is heavy-tailed (median 3, 10% above 99), so the data choose between a
    crowd of alike raters (s large: the rows pooled) and a crowd of
    different ones (s small).
    """
    return np.log(0.5) - 1.5 * np.log1p(concentration)


def dirichlet_multinomial_logpmf(counts, alpha):
    """log DirMult(counts | alpha) over the last axis: the probability of a
    rater's ratings of one true class given the population row α_k, the
    rater's row θ ~ Dir(α_k) integrated out (the multinomial coefficient
    included)."""
    total = counts.sum(axis=-1)
    concentration = alpha.sum(axis=-1)
    return (gammaln(total + 1) - gammaln(counts + 1).sum(axis=-1)
            + gammaln(concentration) - gammaln(concentration + total)
            + (gammaln(alpha + counts) - gammaln(alpha)).sum(axis=-1))


def population_log_target(alpha_row, row_counts):
    """The Metropolis target of one population row α_k given the classes,
    in the coordinates the walk moves (log s, log(m_l / m_K)), with s =
    Σ_l α_kl and m = α_k / s: the hyperprior of s (:func:`concentration_log_prior`),
    the uniform one of m, their Jacobians (s, and Π_l m_l for the
    additive log-ratio) and Σ_j log DirMult(n_j[k] | α_k).  The raters'
    rows θ_j[k] are integrated out, so the population moves do not wait
    for the raters' rows to follow them (a partially collapsed Gibbs
    step: α from p(α | z), then θ from p(θ | α, z); van Dyk & Park 2008).
    ``row_counts``: (n_raters, n_classes), the ratings of every rater on
    the items drawn in class k.  The restriction of m that identifies the
    labelling (:func:`identified`) is checked apart.
    """
    concentration = alpha_row.sum()
    mean = alpha_row / concentration
    return (concentration_log_prior(concentration) + np.log(concentration)
            + np.log(mean).sum()
            + dirichlet_multinomial_logpmf(row_counts, alpha_row).sum())


def identified(mean):
    """Whether the population confusion matrix ``mean`` (rows: true class)
    has the labelling the sampler's hyperprior keeps: of every relabelling
    of the true classes (a permutation of the rows), its own gives the
    largest trace, that is the typical rater agrees with the true class
    more, summed over the classes, than under any other naming of them
    (for two classes: m_00 + m_11 > 1).  The model's likelihood and the
    fit's objective do not change under a relabelling, so without it the
    posterior has n_classes! copies of every mode."""
    rows, cols = linear_sum_assignment(mean, maximize=True)
    return np.trace(mean) >= mean[rows, cols].sum() - 1e-12


def identifying_relabelling(mean):
    """The order of the rows of ``mean`` that makes it :func:`identified`."""
    rows, cols = linear_sum_assignment(mean, maximize=True)
    order = np.empty_like(rows)
    order[cols] = rows
    return order


def dirichlet_log_draw(alpha, rng):
    """log θ for θ ~ Dir(alpha) along the last axis, drawn in logs: a
    shape below 1 as Gamma(a + 1) U^(1/a) (Marsaglia & Tsang 2000), so
    that the small shapes of a spread-out population give log θ finite
    where θ itself would underflow to 0."""
    small = alpha < 1.0
    log_gamma = np.log(rng.standard_gamma(alpha + small))
    log_gamma = log_gamma + np.where(small, np.log(rng.random(alpha.shape)) / alpha, 0.0)
    return log_gamma - logsumexp(log_gamma, axis=-1, keepdims=True)


def relabelling_log_ratio(alpha, counts, order, renamed_alpha=None):
    """log p(X, z' | α') - log p(X, z | α) with the raters' rows integrated
    out, for z' the classes renamed by the involution ``order`` (item of
    class k moved to class order[k]): the rows of every rater's counts
    permuted, each scored by the population row α'_k of its new class
    (``renamed_alpha``; default α itself)."""
    renamed_alpha = alpha if renamed_alpha is None else renamed_alpha
    return np.sum(dirichlet_multinomial_logpmf(counts[:, order], renamed_alpha[None])
                  - dirichlet_multinomial_logpmf(counts, alpha[None]))


def _walk_population(alpha, counts, steps, accepted, rng):
    """One Metropolis move of every population row's log concentration,
    then one of its mean by a random walk on its additive log-ratios; rows
    in turn (the identifying restriction ties them).  ``steps``: (K, 2)
    proposal scales; ``accepted`` (K, 2) counts the accepted moves."""
    K = alpha.shape[0]
    for k in range(K):
        row_counts = counts[:, k, :]
        current = population_log_target(alpha[k], row_counts)
        # the concentration: the mean kept, so the restriction holds
        proposal = alpha[k] * np.exp(steps[k, 0] * rng.standard_normal())
        target = population_log_target(proposal, row_counts)
        if np.log(rng.random()) < target - current:
            alpha[k], current = proposal, target
            accepted[k, 0] += 1
        # the mean: log(m_l / m_K) moved, the concentration kept
        log_mean = np.log(alpha[k] / alpha[k].sum())
        log_mean[:-1] += steps[k, 1] * rng.standard_normal(K - 1)
        mean = np.exp(log_mean - logsumexp(log_mean))
        proposal = alpha[k].sum() * mean
        candidate = alpha / alpha.sum(axis=1, keepdims=True)
        candidate[k] = mean
        if not identified(candidate):
            continue
        target = population_log_target(proposal, row_counts)
        if np.log(rng.random()) < target - current:
            alpha[k] = proposal
            accepted[k, 1] += 1


def posterior_chain(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Metropolis-within-Gibbs of the hierarchical Dawid–Skene posterior
    p(π, α, θ, z | X) (Paun et al. 2018), started at the fit.

    The model: π ~ Dir(prior_class + 1) (the fit's prior), each rater's
    confusion row θ_j[k] ~ Dir(α_k), an item's class z_i ~ π and its
    ratings from the rows of its class.  The population α has no
    posterior in the fit, which maximizes the bound over it (empirical
    Bayes) under an exponential hyperprior of rate ``prior_rate`` on each
    entry; as a prior, that one is far from weak: it is a uniform mean
    times a concentration Gamma(n_classes, prior_rate), mean 200 for two
    classes, so below s = 10 (raters' accuracies spread by more than about
    0.12) it has under 1% of its mass, and with few raters it, not the
    data, would set how alike they are.  The chain uses a weak hyperprior
    instead: each row's mean m_k uniform and its concentration s_k with
    density ½(1 + s)^(-3/2) (:func:`concentration_log_prior`), restricted
    to the labelling in which the typical rater is better than any
    relabelling of the classes (:func:`identified`; the likelihood, and
    so a symmetric prior's posterior, has a copy of each mode per
    labelling).  Where the data fix α the posterior centres at the fit;
    where they do not, it is wider than the fit's point suggests.

    A sweep: z | θ, π for every item (DawidSkene's kernel, the known
    items clamped); π | z ~ Dir(class counts + prior_class + 1); α | z by
    random-walk Metropolis on each row's log concentration and on its
    mean's log-ratios, θ integrated out (:func:`population_log_target`;
    proposal scales adapted in burn-in towards 0.44 and 0.234 acceptance,
    then fixed); without gold labels, a renaming of two classes in the
    items' draws, α kept or its concentrations renamed with them
    (:func:`relabelling_log_ratio`), which moves
    between the namings of the items that a near-chance population
    leaves all probable; θ_j[k] | α, z ~ Dir(α_k + n_j[k]).  Returns the draws,
    the mean over the kept sweeps of the items' posteriors given the
    parameters (Rao-Blackwellised) and, with ``keep_labels``, the classes
    drawn.
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    item_ptr = np.asarray(data.item_ptr, dtype=np.int64)
    fixed = model.class_prior is not None
    # known items hold their class, which a renaming would not
    can_relabel = K > 1 and not has_gold(data)
    alpha = np.array(model.population_, dtype=np.float64)
    log_theta = np.log(np.array(model.confusion_, dtype=np.float64))
    pi = np.array(model.class_prior_, dtype=np.float64)
    if not identified(_mean(alpha)):
        # the fit's labelling is one the hyperprior excludes: start at the
        # same parameters with the classes renamed
        warnings.warn("the fitted population has the typical rater worse than a relabelling "
                      "of the classes; the posterior draws use the labelling in which it is "
                      "better, so their classes are renamed against the fit's.", UserWarning)
        order = identifying_relabelling(_mean(alpha))
        alpha, log_theta = alpha[order], log_theta[:, order]
        if not fixed:
            pi = pi[order]
    steps = np.full((K, 2), 0.5)
    accepted = np.zeros((K, 2))
    target = np.array([_ACCEPT_ONE, _ACCEPT_ONE if K == 2 else _ACCEPT_MANY])
    draws = {"prior": [], "log_theta": [], "alpha": [], "posterior": []}
    labels = []
    proba_sum = np.zeros((n, K))
    z, post = np.empty(n, dtype=np.int64), np.empty((n, K))
    counts, class_counts = np.empty((J, K, K)), np.empty(K)
    for sweep in range(n_burnin + n_samples * thin):
        with np.errstate(divide="ignore"):
            log_pi = np.log(pi)
        uncertainty_kernels.dawid_skene_sweep(item_ptr, data.rater, data.label, log_theta,
                                              log_pi, data.evidence, rng.random(n), z, post,
                                              counts, class_counts)
        if not fixed:
            pi = rng.standard_gamma(class_counts + model.prior_class + 1.0)
            pi /= pi.sum()
        accepted[:] = 0.0
        for _ in range(_POPULATION_MOVES):
            _walk_population(alpha, counts, steps, accepted, rng)
        if can_relabel:
            # Rename two classes in the items' draws, keeping α: the raters'
            # rows are integrated out, so the ratio is that of the
            # Dirichlet-multinomials of the permuted counts (and of the
            # prevalence, when it is fixed).  Near the boundary of the
            # identified labellings the posterior has a mode for each
            # naming of the items; a pass of the items cannot move between
            # them, this move can (it is never taken when the raters fix
            # the naming).
            a, b = rng.choice(K, size=2, replace=False)
            order = np.arange(K)
            order[[a, b]] = [b, a]
            # α kept, or its rows' concentrations renamed with the classes
            # (means kept): both are involutions, the second a permutation
            # of the coordinates (s, m) under a prior symmetric in s, so
            # each ratio is the likelihood's.  The second lets a mode
            # whose rows differ in how alike the raters are be renamed.
            renamed = alpha
            if rng.random() < 0.5:
                concentration = alpha.sum(axis=1, keepdims=True)
                renamed = alpha / concentration * concentration[order]
            ratio = relabelling_log_ratio(alpha, counts, order, renamed)
            if fixed:
                ratio += np.sum((class_counts[order] - class_counts) * log_pi)
            if np.log(rng.random()) < ratio:
                alpha = renamed
                z = order[z]
                counts, class_counts, post = counts[:, order], class_counts[order], post[:, order]
                if not fixed:
                    pi = pi[order]
        if sweep < n_burnin:
            # Robbins–Monro adaptation in burn-in only: the kept chain is
            # a fixed kernel's
            steps *= np.exp(0.1 * (accepted / _POPULATION_MOVES - target))
        posterior = alpha[None] + counts
        log_theta = dirichlet_log_draw(posterior, rng)
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            draws["prior"].append(pi)
            draws["log_theta"].append(log_theta)
            draws["alpha"].append(alpha.copy())
            draws["posterior"].append(posterior.sum(axis=-1))
            proba_sum += post
            if keep_labels:
                labels.append(z.astype(np.int32))
    prior = np.stack(draws["prior"])
    confusion = np.exp(np.stack(draws["log_theta"]))
    population = np.stack(draws["alpha"])
    samples = {
        "class_prior_": prior,
        "confusion_": confusion,
        "rater_accuracy_": np.einsum("sjkk,sk->sj", confusion, prior),
        # a Dirichlet centred on the drawn rows, with the concentration of
        # their conditional: predict_proba at a draw (which uses the
        # posterior's mean) then conditions on the drawn rows
        "confusion_posterior_": confusion * np.stack(draws["posterior"])[..., None],
        "population_": population,
        "population_confusion_": _mean(population),
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
