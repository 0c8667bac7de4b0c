"""EBCC (Li, Rubinstein & Cohn 2019): enhanced Bayesian classifier
combination, in which the raters' errors are correlated through latent
subtypes of each true class; fitted by mean-field variational inference."""

from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import (CrowdModel, apply_evidence, draw_categorical, has_gold, item_chunks,
                    item_ids_of, numba_threads)
from ._item_random import item_dirichlet
from ._kernels import _ebcc as kernels
from ._kernels._common import vote_counts
from ._mixins import PosteriorMixin

__all__ = ["EBCC"]


class EBCC(PosteriorMixin, CrowdModel):
    """Enhanced Bayesian Classifier Combination: correlated raters.

    Each item i has a true class z_i ~ Cat(τ) and, within its class, a
    subtype g_i ~ Cat(π_k) out of ``n_subtypes``; rater j labels an item of
    class k and subtype m from a distribution v_jkm of their own (the
    generative model of Li, Rubinstein & Cohn 2019).  Raters who err alike
    on the same subtypes of a class (the same hard cases, the same confusions) are
    correlated given the true class, which Dawid–Skene's independent raters
    cannot express: a subtype that many raters call wrongly is learned as
    one, instead of outvoting the true class.  Every distribution has a
    Dirichlet prior: τ ~ Dir(``prior_class``), π_k ~ Dir(``prior_subtype`` /
    M, ...), and each row v_jkm ~ Dir(β_k) with β_kk = ``prior_correct``
    and β_kl = ``prior_wrong`` (l ≠ k).

    The fit is the paper's mean-field variational inference:
    q(z_i, g_i) per item (local step) and Dirichlet posteriors over τ, π
    and v (global step), each update in closed form; the monitored
    objective is the evidence lower bound (ELBO), which never decreases.

    Parameters
    ----------
    n_subtypes : int, default=10
        Subtypes M per true class (the authors' 10).  1 is Bayesian
        Dawid–Skene with variational inference (independent raters).
    prior_subtype : float, default=0.1
        Total concentration a_π of the symmetric Dirichlet prior on each
        class's subtype proportions π_k (each subtype gets a_π / M; the
        authors' 0.1: few subtypes of a class in use).
    prior_correct : float, default=4.0
        β_kk, the Dirichlet prior on a rater's correct label (the authors' 4).
    prior_wrong : float, default=1.0
        β_kl, k ≠ l, on each wrong label (the authors' 1).
    prior_class : float or "empirical", default="empirical"
        Dirichlet prior α on the class prevalence τ: one pseudo-count per
        class, or ``"empirical"``: one plus the items' vote shares summed per
        class (the authors' published runs, without the one).  The
        empirical prior weighs as much as the items themselves, so
        ``class_prior_`` then lies between the vote shares and the
        prevalence the model infers; give a number to estimate the
        prevalence itself.
    classes : array-like, default=None
        All labels of the scale, sorted; default the labels seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the
        rater), or ``"prior"``: the fitted raters' Dirichlet posteriors over
        v averaged with weights their numbers of ratings.
    max_iter : int, default=500
        The authors' 500.
    tol : float, default=1e-6
        Stop when the ELBO per item changes by less than this.
    n_init : int, default=1
        Restarts; each starts from the soft majority vote over the classes
        and a random split of every item over the subtypes, drawn from the
        item's id and ``random_state`` (the authors' start), so restarts
        differ only in the subtypes.  The restart with the highest ELBO is
        kept.  One by default: on the shipped sets ten restarts moved the
        gold accuracy by at most 0.002, at ten times the cost
        (:doc:`/ebcc`).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    n_jobs : int, default=None
        Numba threads for the kernels (restored afterwards); results do not
        depend on it.
    accelerate : bool, default=True
        Extrapolate the variational updates (SQUAREM in the logs of the
        Dirichlet parameters; see :doc:`/acceleration`); an extrapolated
        state is kept only when the ELBO does not fall.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
        Posterior mean of the class prevalence τ.
    subtype_prior_ : ndarray of shape (n_classes, n_subtypes)
        Posterior mean of each class's subtype proportions π_k.
    subtype_confusion_ : ndarray of shape (n_raters, n_classes, n_subtypes, n_classes)
        Posterior mean of v: ``[j, k, m, l]`` = P(rater j says l | class k,
        subtype m).
    confusion_ : ndarray of shape (n_raters, n_classes, n_classes)
        ``[j, k, l]`` = Σ_m π_km v_jkm[l]: rater j's confusion matrix, the
        subtypes averaged out.
    rater_accuracy_ : ndarray of shape (n_raters,)
        Σ_k τ_k ``confusion_[j, k, k]``.
    class_posterior_ : ndarray of shape (n_classes,)
    subtype_posterior_ : ndarray of shape (n_classes, n_subtypes)
    rater_posterior_ : ndarray of shape (n_raters, n_classes, n_subtypes, n_classes)
        The Dirichlet parameters of q(τ), q(π_k) and q(v_jkm).
    n_features_in_ : int
    rater_ids_ : ndarray of shape (n_raters,)
    n_iter_, converged_, lower_bound_, objective_history_
        Of the kept restart; the objective is the ELBO per item.

    Notes
    -----
    ``predict_proba`` is the variational posterior q(z_i) = Σ_m q(z_i, g_i =
    m) that the fit optimises.  ``score_samples`` is the log probability of
    each item's ratings with τ, π and v at their posterior means, the
    class and subtype summed out.

    ``posterior_samples``, ``predict_proba_integrated``, ``sample_labels``
    and ``rater_table(X, interval=...)`` draw from the model's posterior
    by Gibbs sampling under the fit's priors (:ref:`uncertainty`); read
    the class-level draws (``class_prior_``, ``confusion_``,
    ``rater_accuracy_``): the subtypes' numbering may change between draws.

    References
    ----------
    Y. Li, B. I. P. Rubinstein and T. Cohn. Exploiting Worker Correlation
    for Label Aggregation in Crowdsourcing. ICML 2019, PMLR 97, 3886–3895.

    See Also
    --------
    DawidSkene : independent raters, one confusion matrix each.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import EBCC
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, np.nan, 0], [1, 0, 1]])
    >>> EBCC(random_state=0).fit_predict(X)
    array([0., 1., 0., 1.])
    """

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        "n_subtypes": [Interval(Integral, 1, None, closed="left")],
        "prior_subtype": [Interval(Real, 0, None, closed="neither")],
        "prior_correct": [Interval(Real, 0, None, closed="neither")],
        "prior_wrong": [Interval(Real, 0, None, closed="neither")],
        "prior_class": [Interval(Real, 0, None, closed="neither"), StrOptions({"empirical"})],
    }

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "subtype_prior_", "subtype_confusion_", "confusion_",
                             "rater_accuracy_", "class_posterior_", "subtype_posterior_",
                             "rater_posterior_")
    #: (burn-in sweeps, sweeps per kept draw): covers at its nominal
    #: rates by simulation (doc/uncertainty.rst)
    _chain_defaults = (200, 5)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return gibbs_posterior(self, data, n_samples, n_burnin, thin, rng, keep_labels)

    def __init__(
        self,
        *,
        n_subtypes=10,
        prior_subtype=0.1,
        prior_correct=4.0,
        prior_wrong=1.0,
        prior_class="empirical",
        classes=None,
        unknown_raters="error",
        max_iter=500,
        tol=1e-6,
        n_init=1,
        random_state=None,
        verbose=0,
        n_jobs=None,
        accelerate=True,
    ):
        self.n_subtypes = n_subtypes
        self.prior_subtype = prior_subtype
        self.prior_correct = prior_correct
        self.prior_wrong = prior_wrong
        self.prior_class = prior_class
        self.classes = classes
        self.unknown_raters = unknown_raters
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.accelerate = accelerate

    # -- the model's math -------------------------------------------------------
    def _vote_shares(self, data):
        """Each item's vote shares (uniform without ratings), known items at
        their class: the class half of the start."""
        K = data.n_classes
        shares = np.empty((data.n_items, K))
        vote_counts.pick(data.n_ratings)(data.item_ptr, data.label, K, shares)
        shares += 1e-12
        shares /= shares.sum(axis=1, keepdims=True)
        return apply_evidence(shares, data)

    def _class_concentration(self, data):
        """α, the Dirichlet prior of the prevalence τ on ``data``."""
        if self.prior_class == "empirical":
            # the authors' empirical Bayes prior, α_k = Σ_i (vote share of
            # k), plus one: the flat prior's posterior given the vote shares,
            # proper for a class that no rating gives
            return self._vote_shares(data).sum(axis=0) + 1.0
        return np.full(data.n_classes, float(self.prior_class))

    def _label_concentration(self, n_classes):
        """β, ``[k, l]``: the Dirichlet prior of every rater's row v_jkm."""
        beta = np.full((n_classes, n_classes), float(self.prior_wrong))
        np.fill_diagonal(beta, float(self.prior_correct))
        return beta

    def _prepare(self, data, **fit_params):
        data = super()._prepare(data, **fit_params)
        K, M = data.n_classes, int(self.n_subtypes)
        alpha = self._class_concentration(data)
        beta = self._label_concentration(K)
        # the fit's priors, in the kernels' layouts (see _dirichlet)
        self._fit_priors = {
            "nu": alpha.reshape(1, K, 1),
            "eta": np.full((K, M, 1), float(self.prior_subtype) / M),
            # [rater, label, class * M + subtype]: β_k[label]
            "mu": np.broadcast_to(np.repeat(beta.T, M, axis=1)[None],
                                  (data.n_raters, K, K * M)).copy(),
        }
        return data

    def _init_params(self, data, rng, restart):
        """The authors' start: q(z_i, g_i = m) = (vote share of z_i) times a
        Dirichlet(1, ..., 1) split over the subtypes, drawn from the item's
        id (the random split breaks the symmetry between subtypes: with
        equal ones they would stay equal), then one global update."""
        seed = int(rng.randint(2**31 - 1 - int(self.n_subtypes)))
        split = item_dirichlet(item_ids_of(data), seed, int(self.n_subtypes))
        joint = (self._vote_shares(data)[:, :, None] * split[:, None, :]).reshape(data.n_items, -1)
        counts = np.empty((data.n_raters * data.n_classes, joint.shape[1]))
        kernels.joint_counts(data.item_ptr, data.cell, joint, counts)
        return self._global_update(data, None, {"counts": counts, "joint": joint.sum(axis=0)})

    def _local_step(self, data, params):
        J, K = data.n_raters, data.n_classes
        width = K * int(self.n_subtypes)
        chunk_ptr = item_chunks(data.n_items, J * K * width)
        n_chunks = len(chunk_ptr) - 1
        posterior = np.empty((data.n_items, K))
        loglik = np.empty(data.n_items)
        partial_counts = np.empty((n_chunks, J * K, width))
        partial_joint = np.empty((n_chunks, width))
        kernels.e_step.pick(data.n_ratings)(
            data.item_ptr, data.cell, params["log_prior"], data.evidence, params["log_table"],
            K, chunk_ptr, posterior, loglik, partial_counts, partial_joint,
        )
        return {"proba": posterior, "loglik": loglik}, {
            "counts": partial_counts.sum(axis=0),
            "joint": partial_joint.sum(axis=0),
            "loglik_total": float(loglik.sum()),
        }

    def _global_update(self, data, params, stats):
        """The Dirichlet posteriors from the expected counts of q(z, g) (Li
        et al. 2019, the mean-field updates): ν_k = α_k + Σ_i q(z_i = k), η_km = a_π / M
        + Σ_i q(z_i = k, g_i = m), μ_jkm[l] = β_k[l] + Σ_{i: y_ij = l}
        q(z_i = k, g_i = m)."""
        K, M = data.n_classes, int(self.n_subtypes)
        priors = self._fit_priors
        joint = stats["joint"].reshape(K, M)
        return self._dirichlet(
            priors["nu"] + joint.sum(axis=1).reshape(1, K, 1),
            priors["eta"] + joint.reshape(K, M, 1),
            priors["mu"] + stats["counts"].reshape(data.n_raters, K, K * M),
        )

    def _dirichlet(self, nu, eta, mu, priors=None):
        """Global parameters from the Dirichlet posteriors: ``nu`` (1, K, 1)
        over the classes, ``eta`` (K, M, 1) over each class's subtypes,
        ``mu`` (J, K, K M) over the labels (axis 1) of each (rater, class,
        subtype).  The local step reads E[log τ_k] + E[log π_km] and E[log
        v_jkm[l]] (the q(z, g) update); ``param_term`` is -Σ KL(q || p) of
        the three, the ELBO's part beyond the items' log normalisers
        (``priors``: those of the fit, by default)."""
        priors = self._fit_priors if priors is None else priors
        log_tau, log_pi, log_v = np.empty_like(nu), np.empty_like(eta), np.empty_like(mu)
        kl = (kernels.dirichlet_terms(nu, priors["nu"], log_tau)
              + kernels.dirichlet_terms(eta, priors["eta"], log_pi)
              + kernels.dirichlet_terms(mu, priors["mu"], log_v))
        K = nu.shape[1]
        return {
            "nu": nu, "eta": eta, "mu": mu,
            "log_prior": (log_tau.reshape(K, 1) + log_pi.reshape(K, -1)).ravel(),
            "log_table": log_v.reshape(-1, log_v.shape[2]),
            "param_term": -kl,
        }

    def _objective(self, data, params, items, stats):
        """The ELBO of the mean-field q (Li et al. 2019), per item.  With q(z, g) set
        by the local step, the expected log joint of the items plus their
        entropy is Σ_i log Σ_km exp(E log τ_k + E log π_km + Σ_j E log
        v_jkm[y_ij]), the kernel's ``loglik``; the rest is -KL of the
        Dirichlet posteriors from their priors."""
        return (stats["loglik_total"] + params["param_term"]) / data.n_items

    # -- acceleration hooks (the base loop's SQUAREM) ---------------------------
    def _params_to_vector(self, params):
        """The logs of the Dirichlet parameters: every point is a valid
        q(τ, π, v)."""
        return np.log(np.concatenate([params["nu"].ravel(), params["eta"].ravel(),
                                      params["mu"].ravel()]))

    def _params_from_vector(self, vector, params):
        nu, eta, mu = params["nu"], params["eta"], params["mu"]
        values = np.exp(vector)
        a, b = nu.size, nu.size + eta.size
        return self._dirichlet(values[:a].reshape(nu.shape), values[a:b].reshape(eta.shape),
                               values[b:].reshape(mu.shape))

    # -- result tables and new raters (the base class uses these) ------------------
    _rater_attributes = ("rater_posterior_", "subtype_confusion_", "confusion_",
                         "rater_accuracy_")

    def _population_rater(self):
        # the average Dirichlet posterior; the means follow from it
        posterior = np.average(self.rater_posterior_, axis=0, weights=self._rating_weights())
        return {name: value[0] for name, value in self._rater_means(posterior[None]).items()}

    def _rater_means(self, rater_posterior):
        """The per-rater attributes from Dirichlet posteriors ``[j, k, m, l]``."""
        v = rater_posterior / rater_posterior.sum(axis=3, keepdims=True)
        confusion = np.einsum("km,jkml->jkl", self.subtype_prior_, v)
        accuracy = np.diagonal(confusion, axis1=1, axis2=2) @ self.class_prior_
        return {"rater_posterior_": rater_posterior, "subtype_confusion_": v,
                "confusion_": confusion, "rater_accuracy_": accuracy}

    def _rater_diagnostics(self):
        recall = np.diagonal(self.confusion_, axis1=1, axis2=2)
        return {"accuracy": self.rater_accuracy_,
                **{f"recall_{c}": recall[:, k] for k, c in enumerate(self.classes_)}}

    def _set_fitted(self, data, params, items):
        J, K, M = data.n_raters, data.n_classes, int(self.n_subtypes)
        self.class_posterior_ = params["nu"].ravel().copy()
        self.subtype_posterior_ = params["eta"].reshape(K, M).copy()
        self.class_prior_ = self.class_posterior_ / self.class_posterior_.sum()
        self.subtype_prior_ = self.subtype_posterior_ / self.subtype_posterior_.sum(
            axis=1, keepdims=True)
        # [rater, label, class, subtype] -> [rater, class, subtype, label]
        posterior = params["mu"].reshape(J, K, K, M).transpose(0, 2, 3, 1)
        for name, value in self._rater_means(np.ascontiguousarray(posterior)).items():
            setattr(self, name, value)
        # the fit's priors (a rater table's size) are not kept with the model
        self.__dict__.pop("_fit_priors", None)

    def _kernel_table(self, rater_values):
        """``[j, k, m, l]`` values in the kernels' layout ``[j l, k M + m]``."""
        J, K, M = rater_values.shape[:3]
        return np.ascontiguousarray(rater_values.transpose(0, 3, 1, 2)).reshape(J, K, K * M)

    def _fitted_params(self):
        if self.class_posterior_ is None:
            # a posterior draw (skcrowd.uncertainty.model_at): τ, π and v
            # themselves, no Dirichlet posteriors around them
            return self._plug_in_params()
        K = self.class_posterior_.shape[0]
        posteriors = {"nu": self.class_posterior_.reshape(1, K, 1),
                      "eta": self.subtype_posterior_.reshape(K, -1, 1),
                      "mu": self._kernel_table(self.rater_posterior_)}
        # predict reads only the expectations: the KL terms are taken from
        # the posteriors themselves (0), not from the fit's priors, whose
        # raters may differ from these (a population rater)
        return self._dirichlet(**posteriors, priors=posteriors)

    def _plug_in_params(self):
        """The local step's tables at τ, π and v themselves (the posterior
        means of a fit, or a posterior draw)."""
        with np.errstate(divide="ignore"):
            return {
                "log_prior": (np.log(self.class_prior_)[:, None]
                              + np.log(self.subtype_prior_)).ravel(),
                "log_table": self._kernel_table(np.log(self.subtype_confusion_)).reshape(
                    -1, self.class_prior_.shape[0] * self.subtype_prior_.shape[1]),
            }

    def _score_items(self, data):
        """log Σ_km τ_k π_km Π_j v_jkm[y_ij] at the posterior means."""
        params = self._plug_in_params()
        with numba_threads(self.n_jobs):
            return self._local_step(data, params)[0]["loglik"]

    def _sample_labels(self, data, rng):
        true_class = rng.choice(data.n_classes, size=data.n_items, p=self.class_prior_)
        subtype = draw_categorical(self.subtype_prior_[true_class], rng)
        rows = self.subtype_confusion_[data.rater, true_class[data.item], subtype[data.item]]
        return draw_categorical(rows, rng)


# -- the posterior sampler (skcrowd.uncertainty) ------------------------------------
def log_dirichlet(concentration, rng):
    """The log of one Dirichlet draw per row (last axis) of ``concentration``.

    Each Gamma(a) variate is drawn as Gamma(a + 1) U^(1/a) (Marsaglia &
    Tsang 2000, the boost for a < 1) and kept in logs: the subtype weights'
    concentrations a_π / M + counts are 0.01 for an empty subtype, whose
    Gamma variates underflow to 0 in floating point (a row of zeros when
    every subtype of a class is empty), while their logs stay finite.
    """
    concentration = np.asarray(concentration, dtype=np.float64)
    # 1 - U is in (0, 1]: its log is finite
    log_gamma = (np.log(rng.standard_gamma(concentration + 1.0))
                 + np.log1p(-rng.random_sample(concentration.shape)) / concentration)
    return log_gamma - logsumexp(log_gamma, axis=-1, keepdims=True)


def conditional_concentrations(alpha, subtype_concentration, beta, pair_counts, counts):
    """The Dirichlet parameters of τ, π and v given every item's (class,
    subtype) pair (Li et al. 2019's generative model; each prior is
    conjugate to its counts).

    Parameters
    ----------
    alpha : (K,) prior of τ
    subtype_concentration : float, a_π / M, the prior of each π_km
    beta : (K, K) prior of each row v_jkm (row k: the class)
    pair_counts : (K M,) items drawn in each (class, subtype), at k M + m
    counts : (J K, K M) ratings in each cell j K + l on items drawn in
        each pair k M + m (:func:`~skcrowd._kernels._ebcc.gibbs_sweep`)

    Returns
    -------
    (K,), (K, M), (J, K, M, K): α_k + n_k, a_π / M + n_km and
    β_k[l] + n_jkml, the last ``[rater, class, subtype, label]`` as
    ``subtype_confusion_``.
    """
    K = alpha.shape[0]
    M = pair_counts.shape[0] // K
    J = counts.shape[0] // K
    per_pair = pair_counts.reshape(K, M)
    # [j, l, k, m] -> [j, k, m, l]
    per_rater = counts.reshape(J, K, K, M).transpose(0, 2, 3, 1)
    return (alpha + per_pair.sum(axis=1), subtype_concentration + per_pair,
            beta[None, :, None, :] + per_rater)


def _log_prior_ratio_of_swap(log_tau, log_v, alpha, beta, a, b):
    """log p(swapped) - log p(current) when classes a and b trade their
    prevalence, subtype weights and every rater's rows (the prior of π is
    the same for every class: its term cancels)."""
    perm = np.arange(len(log_tau))
    perm[[a, b]] = [b, a]
    tau_term = np.sum((alpha - 1.0) * (log_tau[perm] - log_tau))
    v_term = np.sum((beta[None, :, None, :] - 1.0) * (log_v[:, perm] - log_v))
    return tau_term + v_term, perm


def gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Gibbs sampling of EBCC's posterior p(τ, π, v, z, g | X).

    The generative model of Li, Rubinstein & Cohn (2019) under the priors
    of the variational fit: τ ~ Dirichlet(α) (``prior_class``, or the
    empirical α_k = 1 + Σ_i vote share of k that the fit used), each
    class's subtype weights π_k ~ Dirichlet(a_π / M, ..., a_π / M)
    (``prior_subtype`` = a_π, M = ``n_subtypes``: the finite symmetric
    Dirichlet of the authors' code, which the fit uses, not the paper's
    stick-breaking prior), each row v_jkm ~ Dirichlet(β_k) with β_kk =
    ``prior_correct`` and β_kl = ``prior_wrong``; z_i ~ Cat(τ), g_i ~
    Cat(π_{z_i}), rating y_ij ~ Cat(v_{j z_i g_i}).  A sweep draws

    - every item's pair (z_i, g_i) jointly given (τ, π, v), from
      τ_k π_km Π_j v_jkm[y_ij] (a known item, gold ``y``, keeps its class:
      only its subtype is drawn);
    - τ, each π_k and each v_jkm from their Dirichlet conditionals given
      the pairs (:func:`conditional_concentrations`), in logs
      (:func:`log_dirichlet`);
    - without gold, a Metropolis swap of two classes (their τ, π_k and
      every rater's rows v_j k ·): the likelihood is unchanged, so the
      ratio is the prior's, as in DawidSkene's sampler.

    The chain starts at the fit's posterior means.  The subtypes of a
    class are exchangeable (the same prior for each): their indices may
    permute between draws, which leaves every class-level quantity (τ, the
    subtype-marginal confusion Σ_m π_km v_jkm, the accuracies, the item
    classes) unchanged; ``subtype_prior_`` and ``subtype_confusion_`` are
    drawn so that a model at a draw (:func:`~skcrowd.uncertainty.model_at`)
    predicts with them, not for reading one subtype across draws.

    Returns the draws, the running mean of the items' class probabilities
    given each draw (Rao-Blackwellised), and with ``keep_labels`` the
    classes drawn.
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    M = model.subtype_prior_.shape[1]
    alpha = model._class_concentration(data)
    beta = model._label_concentration(K)
    subtype_concentration = float(model.prior_subtype) / M
    item_ptr = np.asarray(data.item_ptr, dtype=np.int64)
    cell = np.asarray(data.cell)
    evidence = data.evidence
    can_relabel = K > 1 and not has_gold(data)
    log_tau = np.log(np.asarray(model.class_prior_, dtype=np.float64))
    log_pi = np.log(np.asarray(model.subtype_prior_, dtype=np.float64))
    log_v = np.log(np.asarray(model.subtype_confusion_, dtype=np.float64))
    pair, post = np.empty(n, dtype=np.int64), np.empty((n, K))
    counts, pair_counts = np.empty((J * K, K * M)), np.empty(K * M)
    draws = {"tau": [], "pi": [], "v": []}
    labels, proba_sum = [], np.zeros((n, K))
    for sweep in range(n_burnin + n_samples * thin):
        # (z, g) | τ, π, v: every item's pair, and the counts of the pairs
        log_table = model._kernel_table(log_v).reshape(J * K, K * M)
        kernels.gibbs_sweep(item_ptr, cell, (log_tau[:, None] + log_pi).ravel(), evidence,
                            log_table, K, rng.random_sample(n), pair, post, counts, pair_counts)
        # τ, π, v | z, g
        tau_c, pi_c, v_c = conditional_concentrations(alpha, subtype_concentration, beta,
                                                      pair_counts, counts)
        log_tau = log_dirichlet(tau_c, rng)
        log_pi = log_dirichlet(pi_c, rng)
        log_v = log_dirichlet(v_c, rng)
        if can_relabel:
            a, b = rng.choice(K, size=2, replace=False)
            ratio, perm = _log_prior_ratio_of_swap(log_tau, log_v, alpha, beta, a, b)
            if np.log(rng.random_sample()) < ratio:
                log_tau, log_pi, log_v = log_tau[perm], log_pi[perm], log_v[:, perm]
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            draws["tau"].append(np.exp(log_tau))
            draws["pi"].append(np.exp(log_pi))
            draws["v"].append(np.exp(log_v))
            proba_sum += post
            if keep_labels:
                labels.append((pair // M).astype(np.int32))
    tau, pi, v = (np.stack(draws[k]) for k in ("tau", "pi", "v"))
    confusion = np.einsum("skm,sjkml->sjkl", pi, v)
    samples = {
        "class_prior_": tau,
        "subtype_prior_": pi,
        "subtype_confusion_": v,
        "confusion_": confusion,
        "rater_accuracy_": np.einsum("sjkk,sk->sj", confusion, tau),
        # the draws are of τ, π and v themselves: a model at a draw
        # predicts with them, not with the fit's Dirichlet posteriors
        "class_posterior_": None,
        "subtype_posterior_": None,
        "rater_posterior_": None,
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
