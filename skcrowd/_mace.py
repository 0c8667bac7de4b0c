"""MACE (Hovy, Berg-Kirkpatrick, Vaswani & Hovy 2013): each rater either
knows the answer or spams from a label distribution of their own; fitted by
variational Bayes (the paper's default) or EM."""

from functools import lru_cache
from numbers import Integral, Real

import numpy as np
from scipy.special import digamma
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import (CrowdModel, apply_evidence, draw_categorical, has_gold, item_chunks,
                    item_ids_of, numba_threads)
from ._chain import PREVALENCE_MOVES, draw_classes, prevalence_moves
from ._item_random import item_dirichlet
from ._kernels import _mace as kernels
from ._kernels import _uncertainty as uncertainty_kernels
from ._kernels._common import vote_counts
from ._mixins import OnlineEMMixin, PosteriorMixin, WarmStartMixin
from ._population import beta_binomial_prior, maximize_population
from ._ratings import fixed_class_prior

__all__ = ["MACE"]

#: rate of the exponential hyperprior on each of the learned prior's a and
#: b (``competence_prior="learn"`` or ``"two_stage"``), as
#: PooledDawidSkene's ``prior_rate``: keeps them finite when the raters are
#: alike
COMPETENCE_PRIOR_RATE = 0.01


class MACE(PosteriorMixin, OnlineEMMixin, WarmStartMixin, CrowdModel):
    """Multi-Annotator Competence Estimation: raters who know or spam.

    Item i has a true class T_i ~ Cat(π).  On each rating, rater j knows the
    answer with probability θ_j (the rater's competence) and then gives
    T_i; otherwise the rater spams and draws the label from a distribution
    ξ_j of their own, whatever T_i (Hovy et al. 2013).  A rater's whole
    behaviour is K parameters, against K(K-1) for a Dawid–Skene confusion
    matrix, and a spammer is told apart by θ_j near 0.

    Each iteration is one pass over the ratings: the posterior over every
    T_i and the expected number of ratings in which each rater knew the
    answer (local step), then θ and ξ in closed form (global step).

    Parameters
    ----------
    method : {"vb", "em"}, default="vb"
        ``"vb"``: the paper's variational Bayes, with Beta(``prior_knowing``,
        ``prior_spamming``) priors on every θ_j and a symmetric
        Dirichlet(``prior_strategy``) prior on every ξ_j; the posteriors
        over θ and ξ are Beta and Dirichlet, and the monitored objective is
        the evidence lower bound (ELBO).  ``"em"``: maximum a posteriori EM
        in which ``smoothing`` pseudo-counts are added to every expected
        count (the paper's EM); the objective is the log posterior.
    prior_knowing, prior_spamming : float, default=0.5
        Beta prior on a rater's competence θ_j (``"vb"`` only).  The paper's
        Beta(0.5, 0.5) puts its mass near 0 and 1: raters are expected to be
        mostly reliable or mostly spamming.  With a learned
        ``competence_prior``, where the learned prior starts.
    competence_prior : {"fixed", "learn", "two_stage"}, default="fixed"
        ``"fixed"``: θ_j ~ Beta(``prior_knowing``, ``prior_spamming``), the
        paper's model.  Otherwise (``"vb"`` only) the Beta prior is the
        crowd's, learned from all the raters by empirical Bayes (the
        population prior of Paun et al. 2018, here on competence), so that
        a rater with a handful of ratings is shrunk towards how competent
        the crowd is rather than towards 0 or 1; with many ratings per
        rater the fits agree.  ``"learn"``: the prior is part of the
        variational objective and moves at every iteration; where the
        raters have few ratings each it can pool them all into one
        competence.  ``"two_stage"``: a fit under the fixed prior, then the
        Beta-binomial maximum likelihood prior of the raters' expected
        knowing and spamming counts, then the fit again from there under
        that prior (a warm start or ``partial_fit`` keeps the prior it
        starts from).  See :ref:`mace-learned-prior`.
    prior_strategy : float, default=10.0
        Symmetric Dirichlet concentration on each spamming distribution ξ_j
        (``"vb"`` only; the paper's 10 keeps ξ_j near uniform unless a rater
        spams a lot).
    smoothing : float, default=None
        Pseudo-count added to each expected count in the EM updates
        (``"em"`` only).  ``None``: 0.01 / n_classes, as in the authors'
        code.
    class_prior : {"uniform", "learn"} or array-like of shape (n_classes,), \
default="learn"
        Prevalence of the true classes: learned (MAP, with ``prior_class``
        pseudo-counts), uniform and fixed (the paper), or given and held
        fixed.  Learned by default: with the prevalence held uniform, on
        imbalanced data (85-90% of the items in one class, 3 ratings per
        item) the spam distributions absorb the majority class, and the
        labels fall 10-25 points below majority vote
        (:ref:`mace-imbalanced`).
    prior_class : float, default=1.0
        Dirichlet pseudo-count on each class when ``class_prior="learn"``.
    classes : array-like, default=None
        All labels of the scale, sorted; default the labels seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: score them with the population rater, the fitted raters'
        competence θ and spam distribution ξ (VB: their Beta / Dirichlet
        posterior parameters) averaged with weights their numbers of ratings.
    init : {"majority", "random"}, default="majority"
        Start of the first restart: the soft majority vote (each item's
        vote shares) or random item posteriors.  Further restarts start from
        random item posteriors.
    max_iter : int, default=200
    tol : float, default=1e-6
        Stop when the objective per item changes by less than this.
    n_init : int, default=10
        Restarts (the paper's 10); the one with the highest objective is
        kept (see ``init_iter``).
    init_iter : int or None, default=5
        Short runs (Biernacki, Celeux & Govaert 2003, "small EM"): every
        restart runs ``init_iter`` iterations, then only the one with the
        highest objective goes on, from there, to convergence; the kept fit
        is that one.  5 is the number of iterations of their Rmixmod's
        small-EM start.  ``None``: every restart runs to convergence and the
        highest final objective is kept.
    random_state : int, RandomState instance or None, default=None
    warm_start : bool, default=False
        If True, each ``fit`` after the first starts from the fitted rater
        parameters (θ_j and ξ_j; VB: their Beta / Dirichlet posteriors),
        matched by rater id (raters not seen before start as in a cold
        fit), as one run (``n_init`` is ignored).  See :ref:`warm-start`.
    verbose : int, default=0
    n_jobs : int, default=None
        Numba threads for the kernels (restored afterwards); results do not
        depend on it.
    accelerate : bool, default=True
        Extrapolate the EM / VB sequence (SQUAREM, in log coordinates of the
        Beta and Dirichlet parameters (EM: of the smoothed counts) and of π;
        see :doc:`/acceleration`): the same optimum in fewer passes over the
        data.  ``False`` runs the plain iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
    rater_competence_ : ndarray of shape (n_raters,)
        θ_j, the probability that rater j knows the answer (``"vb"``: the
        posterior mean).  1 - θ_j is how much rater j spams.
    spam_distribution_ : ndarray of shape (n_raters, n_classes)
        ξ_j, the labels rater j gives when spamming (``"vb"``: posterior
        mean).
    rater_accuracy_ : ndarray of shape (n_raters,)
        P(rater j gives the true label) = θ_j + (1 - θ_j) Σ_k π_k ξ_j[k].
    competence_posterior_ : ndarray of shape (n_raters, 2) or None
        The Beta(a, b) posterior over each θ_j (``"vb"``; None for ``"em"``).
    competence_prior_ : ndarray of shape (2,)
        The Beta prior on competence of the fit: (``prior_knowing``,
        ``prior_spamming``), or the learned one.
    spam_posterior_ : ndarray of shape (n_raters, n_classes) or None
        The Dirichlet posterior over each ξ_j (``"vb"``; None for ``"em"``).
    n_features_in_ : int
        Number of raters.
    rater_ids_ : ndarray of shape (n_raters,)
    n_iter_, converged_, lower_bound_, objective_history_
        Of the best restart; the objective is the ELBO (``"vb"``) or the
        log posterior (``"em"``) divided by the number of items.  With
        ``competence_prior="two_stage"``: of the second fit, ``n_iter_``
        counting the passes of both.

    Notes
    -----
    ``predict_proba`` is the posterior over the true class that the fit
    optimises (for ``"vb"``, the variational factor q(T_i), which weighs
    ratings with exp E[log θ] and exp E[log ξ]).  ``score_samples`` is the
    exact log probability of each item's ratings, the true class summed out,
    with θ, ξ and π plugged in (for ``"vb"``, their posterior means), so it
    compares with the other models' scores.

    References
    ----------
    D. Hovy, T. Berg-Kirkpatrick, A. Vaswani and E. Hovy. Learning Whom to
    Trust with MACE. NAACL-HLT 2013, 1120–1130.

    See Also
    --------
    DawidSkene : a full confusion matrix per rater.
    OrdinalMixture : the same spam component on a graded scale.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MACE
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, np.nan, 0], [1, 0, 1]])
    >>> MACE(random_state=0).fit_predict(X)
    array([0., 1., 0., 1.])
    """

    _supports_dask = True
    #: stepwise EM blends the expected knowing counts, the ratings per
    #: (rater, label) cell (both flat, rater-major) and the class counts
    #: the log weights the local step reads and the Beta / Dirichlet
    #: parameters (EM: smoothed counts) they come from, the coordinates of
    #: the accelerated loop: a warm start carries both, so they agree
    _rater_params = ("log_know", "log_spam", "log_strategy", "knowing", "spamming",
                     "strategy")
    _shared_params = ("log_prior", "competence_prior")
    _online_stats = ("know", "count", "class_counts")
    _online_rater_stats = ("know", "count")

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        "method": [StrOptions({"vb", "em"})],
        "prior_knowing": [Interval(Real, 0, None, closed="neither")],
        "prior_spamming": [Interval(Real, 0, None, closed="neither")],
        "competence_prior": [StrOptions({"fixed", "learn", "two_stage"})],
        "prior_strategy": [Interval(Real, 0, None, closed="neither")],
        "smoothing": [Interval(Real, 0, None, closed="neither"), None],
        "class_prior": [StrOptions({"uniform", "learn"}), "array-like"],
        "prior_class": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"majority", "random"})],
        "init_iter": [Interval(Integral, 0, None, closed="left"), None],
    }

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "rater_competence_", "spam_distribution_",
                             "rater_accuracy_", "competence_posterior_", "spam_posterior_")
    #: (burn-in sweeps, sweeps per kept draw): covers at its nominal
    #: rates by simulation (doc/uncertainty.rst)
    _chain_defaults = (200, 5)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return gibbs_posterior(self, data, n_samples, n_burnin, thin, rng, keep_labels)

    def __init__(
        self,
        *,
        method="vb",
        prior_knowing=0.5,
        prior_spamming=0.5,
        competence_prior="fixed",
        prior_strategy=10.0,
        smoothing=None,
        class_prior="learn",
        prior_class=1.0,
        classes=None,
        unknown_raters="error",
        init="majority",
        max_iter=200,
        tol=1e-6,
        n_init=10,
        init_iter=5,
        random_state=None,
        warm_start=False,
        verbose=0,
        n_jobs=None,
        accelerate=True,
    ):
        self.method = method
        self.prior_knowing = prior_knowing
        self.prior_spamming = prior_spamming
        self.competence_prior = competence_prior
        self.prior_strategy = prior_strategy
        self.smoothing = smoothing
        self.class_prior = class_prior
        self.prior_class = prior_class
        self.classes = classes
        self.unknown_raters = unknown_raters
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init_iter = init_iter
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.accelerate = accelerate

    # -- the model's math -------------------------------------------------------
    def _smoothing(self, n_classes):
        return 0.01 / n_classes if self.smoothing is None else float(self.smoothing)

    def _fixed_prior(self, n_classes):
        """The class prior held fixed, or None when it is learned."""
        if isinstance(self.class_prior, str):
            if self.class_prior == "learn":
                return None
            return np.full(n_classes, 1.0 / n_classes)
        return fixed_class_prior(self.class_prior, self.classes_, "'uniform', 'learn' or ")

    def _prepare(self, data, **fit_params):
        data = super()._prepare(data, **fit_params)
        self._fixed_prior(data.n_classes)  # validate before any work
        if self.competence_prior != "fixed" and self.method == "em":
            raise ValueError(f"competence_prior={self.competence_prior!r} needs method='vb': "
                             "the prior is learned from the raters' posteriors over their "
                             "competence.")
        return data

    def _learns_competence_prior(self):
        return self.competence_prior == "learn" and self.method == "vb"

    def _competence_prior(self, params):
        """The Beta prior (a, b) on competence of the next global step.

        Learned: the population of the raters' current posteriors
        q(θ_j) = Beta(a_j, b_j), the a, b maximizing Σ_j E_q[log Beta(θ_j |
        a, b)] - rate (a + b) (Newton's method to the maximum), which raises the
        evidence lower bound, as the step of q(θ) after it does.
        Two-stage: the prior the fit started from, held fixed."""
        start = np.array([self.prior_knowing, self.prior_spamming], dtype=np.float64)
        if params is not None and self.competence_prior == "two_stage":
            return params["competence_prior"]
        if params is None or not self._learns_competence_prior():
            return start
        expected_log = np.column_stack([params["log_know"], params["log_spam"]])
        return maximize_population(params["competence_prior"], expected_log,
                                   COMPETENCE_PRIOR_RATE)

    def _with_competence_prior(self, params, prior):
        """``params`` with the prior on competence (and, when it is learned,
        its exponential hyperprior in the parameter term)."""
        params["competence_prior"] = prior
        if self._learns_competence_prior():
            params["param_term"] -= COMPETENCE_PRIOR_RATE * float(prior.sum())
        return params

    def _screening_iterations(self):
        return self.init_iter

    def _fit_encoded(self, data, start=None, **fit_params):
        """The fit; with ``competence_prior="two_stage"`` and no start to
        carry, a second one: from the first, under the Beta prior at the
        maximum of the Beta-binomial likelihood of the raters' expected
        counts (the first fit's posteriors less its prior)."""
        items = super()._fit_encoded(data, start, **fit_params)
        if start is not None or self.competence_prior != "two_stage":
            return items
        knowing, spamming = (self.competence_posterior_ - self.competence_prior_).T
        first = self._snapshot(self)
        first["params"]["competence_prior"] = beta_binomial_prior(
            knowing, spamming, self.competence_prior_, COMPETENCE_PRIOR_RATE)
        first_iter = self.n_iter_
        items = super()._fit_encoded(data, first, **fit_params)
        self.n_iter_ += first_iter
        return items

    def _init_params(self, data, rng, restart):
        return self._start_from_counts(data, rng, restart)

    def _init_stats(self, data, seed):
        """Counts of a start: item posteriors q (vote shares or random),
        every rater at θ = 1/2 with uniform ξ, so a rating whose label has
        posterior q knew the answer with probability q · K / (K + 1)."""
        K = data.n_classes
        if seed is None and has_gold(data):
            # with gold, start from the known items alone (see DawidSkene)
            posterior = np.zeros((data.n_items, K))
        elif seed is None:
            posterior = np.empty((data.n_items, K))
            vote_counts.pick(data.n_ratings)(data.item_ptr, data.label, K, posterior)
            posterior += 1e-12  # an item without ratings starts uniform
            posterior /= posterior.sum(axis=1, keepdims=True)
        else:
            posterior = item_dirichlet(item_ids_of(data), seed, K)
        posterior = apply_evidence(posterior, data)
        n_cells = data.n_raters * K
        # count: ratings per (rater, label) cell, fixed, so carried in the
        # parameters from here on rather than recounted every iteration
        stats = {"know": np.empty(n_cells), "count": np.empty(n_cells),
                 "class_counts": np.empty(K)}
        kernels.start_counts(data.item_ptr, data.label, data.cell, posterior, K / (K + 1.0),
                             stats["know"], stats["count"], stats["class_counts"])
        return stats

    def _warm_params(self, data, rng, start):
        # warm start and partial_fit: the earlier θ, ξ, π (VB: the weights
        # exp E[log ·] of their posteriors, what the local step reads); the
        # kernel tables are made from them again
        params = super()._warm_params(data, rng, start)
        for name in ("off", "gain", "know_share"):
            params.pop(name, None)
        # the objective's parameter term of these parameters, not of the
        # cold start whose rows they replaced (its first value would be off)
        J, K = params["strategy"].shape
        competence = self._competence_prior(None)
        if self.competence_prior != "fixed":
            competence = params["competence_prior"]
        scratch = _rater_arrays(J, K, params["count"])
        term = kernels.rater_params(
            params["knowing"], params["spamming"], params["strategy"], self.method == "vb",
            *self._priors(K, competence), scratch["log_know"], scratch["log_spam"],
            scratch["log_strategy"], scratch["off"], scratch["gain"], scratch["know_share"])
        fresh = self._with_class_prior(
            self._with_competence_prior({"param_term": term}, competence),
            np.exp(params["log_prior"]))
        params["param_term"] = fresh["param_term"]
        return params

    def _online_batch_stats(self, data, params, stats):
        # the ratings per cell are a statistic of the batch too
        count = np.bincount(data.cell, minlength=data.n_raters * data.n_classes)
        return dict(stats, count=count.astype(np.float64))

    def _online_update(self, data, params, stats, n_seen):
        # closed form from the blended counts (θ, ξ, π: the batch M-step);
        # a learned prior on competence moves with the stream's raters
        return self._rater_step(data, stats, stats["count"], self._competence_prior(params))

    def _cell_tables(self, params):
        """The kernel's per (rater, label) tables ``off``, ``gain`` and
        ``know_share`` from log θ, log(1 - θ) and log ξ."""
        n_cells = params["log_strategy"].size
        off, gain, know_share = np.empty(n_cells), np.empty(n_cells), np.empty(n_cells)
        kernels.cell_tables(params["log_know"], params["log_spam"], params["log_strategy"],
                            off, gain, know_share)
        return off, gain, know_share

    def _local_step(self, data, params):
        J, K = data.n_raters, data.n_classes
        chunk_ptr = _chunks(data.n_items, J * K)
        n_chunks = len(chunk_ptr) - 1
        posterior = np.empty((data.n_items, K))
        loglik = np.empty(data.n_items)
        partial_know = np.empty((n_chunks, J * K))
        partial_class = np.empty((n_chunks, K))
        if "off" in params:  # tables made by the global step
            tables = params["off"], params["gain"], params["know_share"]
        else:
            tables = self._cell_tables(params)
        kernels.e_step.pick(data.n_ratings)(
            data.item_ptr, data.label, data.cell, params["log_prior"], data.evidence, *tables,
            chunk_ptr, posterior, loglik, partial_know, partial_class,
        )
        items = {"proba": posterior, "loglik": loglik}
        return items, {
            "know": partial_know.sum(axis=0),
            "class_counts": partial_class.sum(axis=0),
            "loglik_total": float(loglik.sum()),
        }

    def _global_update(self, data, params, stats):
        """The prior on competence when it is learned, then θ, ξ (and π)
        from the expected counts, in closed form (one kernel call, which
        also returns the objective's parameter term)."""
        count = stats["count"] if params is None else params["count"]
        return self._rater_step(data, stats, count, self._competence_prior(params))

    def _rater_step(self, data, stats, count, competence):
        J, K = data.n_raters, data.n_classes
        new = _rater_arrays(J, K, count)
        new["param_term"] = kernels.rater_update(
            stats["know"], count, self.method == "vb", *self._priors(K, competence),
            new["log_know"], new["log_spam"], new["log_strategy"],
            new["knowing"], new["spamming"], new["strategy"],
            new["off"], new["gain"], new["know_share"],
        )
        prior = self._fixed_prior(K)
        if prior is None:
            prior = stats["class_counts"] + self.prior_class
            prior = prior / prior.sum()
        return self._with_class_prior(self._with_competence_prior(new, competence), prior)

    def _priors(self, n_classes, competence):
        return (float(competence[0]), float(competence[1]),
                float(self.prior_strategy), self._smoothing(n_classes))

    def _with_class_prior(self, params, prior):
        """``params`` with π (and, when it is learned, its log prior in the
        parameter term)."""
        if self._fixed_prior(prior.shape[0]) is None:
            params["param_term"] += self.prior_class * np.sum(np.log(prior))
        params["log_prior"] = np.log(prior)
        return params

    # -- acceleration hooks (the base loop's SQUAREM) ---------------------------
    def _params_to_vector(self, params):
        """log of the Beta / Dirichlet parameters (VB) or of the smoothed
        counts (EM) of every rater, and log π when it is learned (mapped
        back to the simplex by normalising): every point of these
        coordinates is a valid q(θ, ξ) or θ, ξ."""
        parts = [np.log(params["knowing"]), np.log(params["spamming"]),
                 np.log(params["strategy"]).ravel()]
        if self._fixed_prior(params["strategy"].shape[1]) is None:
            parts.append(params["log_prior"])
        if self._learns_competence_prior():
            parts.append(np.log(params["competence_prior"]))
        return np.concatenate(parts)

    def _params_from_vector(self, vector, params):
        J, K = params["strategy"].shape
        new = _rater_arrays(J, K, params["count"])
        new["knowing"][:] = np.exp(vector[:J])
        new["spamming"][:] = np.exp(vector[J:2 * J])
        new["strategy"][:] = np.exp(vector[2 * J:J * (K + 2)]).reshape(J, K)
        rest = vector[J * (K + 2):]
        competence = params["competence_prior"]
        if self._learns_competence_prior():
            competence, rest = np.exp(rest[-2:]), rest[:-2]
        new["param_term"] = kernels.rater_params(
            new["knowing"], new["spamming"], new["strategy"], self.method == "vb",
            *self._priors(K, competence), new["log_know"], new["log_spam"],
            new["log_strategy"], new["off"], new["gain"], new["know_share"],
        )
        if self._fixed_prior(K) is None:
            prior = np.exp(rest - rest.max())
            prior /= prior.sum()
        else:
            prior = np.exp(params["log_prior"])
        return self._with_class_prior(self._with_competence_prior(new, competence), prior)

    def _objective(self, data, params, items, stats):
        """Per item: the log posterior (EM) or the ELBO (VB).

        With q(T, S) set by the local step, the expected log joint plus its
        entropy is Σ_i log Σ_k π_k Π_n P̃(label_n | k) (the kernel's
        ``loglik``, with the VB weights), so only the parameter terms remain;
        EM: + log p(θ, ξ, π); VB: - KL(q(θ, ξ) || p(θ, ξ)) + log p(π).
        """
        return (stats["loglik_total"] + params["param_term"]) / data.n_items

    # -- result tables and new raters (the base class uses these) ------------------
    _rater_attributes = ("rater_competence_", "spam_distribution_", "rater_accuracy_")

    def _population_rater(self):
        mean = super()._population_rater()
        if self._fitted_vb():
            # Average the posterior parameters; the plug-in values follow.
            weights = self._rating_weights()
            ab = np.average(self.competence_posterior_, axis=0, weights=weights)
            c = np.average(self.spam_posterior_, axis=0, weights=weights)
            mean.update(competence_posterior_=ab, spam_posterior_=c,
                        rater_competence_=ab[0] / ab.sum(), spam_distribution_=c / c.sum())
        theta = mean["rater_competence_"]
        mean["rater_accuracy_"] = theta + (1 - theta) * (mean["spam_distribution_"]
                                                         @ self.class_prior_)
        return mean

    def _rater_diagnostics(self):
        return {"accuracy": self.rater_accuracy_, "competence": self.rater_competence_}

    def _set_fitted(self, data, params, items):
        self.class_prior_ = np.exp(params["log_prior"])
        self.competence_prior_ = np.array(params["competence_prior"], dtype=np.float64)
        if self.method == "em":
            self.rater_competence_ = np.exp(params["log_know"])
            self.spam_distribution_ = np.exp(params["log_strategy"])
            self.competence_posterior_ = None
            self.spam_posterior_ = None
        else:
            a, b, c = params["knowing"], params["spamming"], params["strategy"]
            self.competence_posterior_ = np.column_stack([a, b])
            self.spam_posterior_ = c
            self.rater_competence_ = a / (a + b)
            self.spam_distribution_ = c / c.sum(axis=1, keepdims=True)
        # right when knowing, or when a spammed label hits the true class
        theta = self.rater_competence_
        self.rater_accuracy_ = theta + (1 - theta) * (self.spam_distribution_ @ self.class_prior_)

    def _fitted_vb(self):
        """Whether the fit was variational: its posteriors, not ``method``,
        which may have been set since (a warm refit with method="vb" after an
        EM fit read the absent posteriors: AttributeError 'NoneType' ... 'T')."""
        return self.competence_posterior_ is not None

    def _fitted_params(self):
        """The parameters the local step of the fit used (VB: the weights
        exp E[log ·] of the posteriors) and where they come from: the
        posteriors (VB) or the smoothed counts (EM) that give them."""
        log_prior = np.log(self.class_prior_)
        if not self._fitted_vb():
            theta, xi = self.rater_competence_, self.spam_distribution_
            # the smoothed counts of the last M-step: θ (a + b) and
            # (1 - θ)(a + b) with a + b = the rater's ratings + 2 smoothing,
            # and ξ times the spam count plus K smoothing
            smoothing = self._smoothing(xi.shape[1])
            total = np.asarray(self._rater_counts, dtype=np.float64) + 2 * smoothing
            spamming = (1 - theta) * total
            strategy = xi * (spamming + (xi.shape[1] - 1) * smoothing)[:, None]
            with np.errstate(divide="ignore"):  # θ = 1 or ξ = 0 in float: log 0 = -inf
                return {
                    "log_prior": log_prior,
                    "competence_prior": self.competence_prior_,
                    "log_know": np.log(theta),
                    "log_spam": np.log1p(-theta),
                    "log_strategy": np.log(xi),
                    "knowing": theta * total, "spamming": spamming, "strategy": strategy,
                }
        a, b = self.competence_posterior_.T
        c = self.spam_posterior_
        psi_ab = digamma(a + b)
        return {
            "log_prior": log_prior,
            "competence_prior": self.competence_prior_,
            "log_know": digamma(a) - psi_ab,
            "log_spam": digamma(b) - psi_ab,
            "log_strategy": digamma(c) - digamma(c.sum(axis=1, keepdims=True)),
            "knowing": a.copy(), "spamming": b.copy(), "strategy": c.copy(),
        }

    def _plug_in_params(self):
        """θ, ξ, π as probabilities (VB: posterior means), for likelihoods."""
        with np.errstate(divide="ignore"):  # a probability of 0 in float: -inf
            return {
                "log_prior": np.log(self.class_prior_),
                "log_know": np.log(self.rater_competence_),
                "log_spam": np.log1p(-self.rater_competence_),
                "log_strategy": np.log(self.spam_distribution_),
            }

    def _score_items(self, data):
        with numba_threads(self.n_jobs):
            return self._local_step(data, self._plug_in_params())[0]["loglik"]

    def _sample_labels(self, data, rng):
        true_class = rng.choice(data.n_classes, size=data.n_items, p=self.class_prior_)
        knew = rng.random(data.n_ratings) < self.rater_competence_[data.rater]
        spam = draw_categorical(self.spam_distribution_[data.rater], rng)
        return np.where(knew, true_class[data.item], spam).astype(np.int32)


def _rater_arrays(n_raters, n_classes, count):
    """Empty global parameters (the kernels fill them) with the fixed
    ratings per (rater, label) cell ``count``."""
    new = {"count": count}
    for name in ("log_know", "log_spam", "knowing", "spamming"):
        new[name] = np.empty(n_raters)
    for name in ("off", "gain", "know_share"):
        new[name] = np.empty(n_raters * n_classes)
    new["log_strategy"] = np.empty((n_raters, n_classes))
    new["strategy"] = np.empty((n_raters, n_classes))
    return new


@lru_cache(maxsize=16)
def _chunks(n_items, stats_size):
    """:func:`item_chunks`, computed once per data shape (read-only)."""
    ptr = item_chunks(n_items, stats_size)
    ptr.flags.writeable = False
    return ptr



def _refit_raters(model, data, posterior):
    """MACE's EM M-step from given item posteriors, in place.

    ``model`` is a fitted :class:`MACE` with ``method="em"``, ``data`` its
    encoding of the training ratings (``model._encode(ratings,
    reset=False)``) and ``posterior`` the ``(n_items, n_classes)``
    posteriors of those items, wherever they come from:
    :class:`~skcrowd.CrowdClassifier` passes the posteriors under its
    classifier's per-item prior (Raykar et al. 2010).  The expected counts
    are the local step's: a rating of label l knew the answer with
    probability q_il θ / (θ + (1 - θ) ξ_l) (only a rater who gave the true
    label can have known it); θ, ξ and π follow in closed form.
    """
    _, _, know_share = model._cell_tables(model._fitted_params())
    n_cells = data.n_raters * data.n_classes
    knew = posterior[data.item, data.label] * know_share[data.cell]
    stats = {"know": np.bincount(data.cell, weights=knew, minlength=n_cells),
             "count": np.bincount(data.cell, minlength=n_cells).astype(np.float64),
             "class_counts": posterior.sum(axis=0)}
    model._set_fitted(data, model._global_update(data, None, stats), None)
    return model


# -- the posterior sampler (skcrowd.uncertainty) ------------------------------------
#: θ and ξ are kept this far from 0 and 1 (a Beta(1/2, 1/2) draw can round
#: to either), so that every rating keeps a finite log probability
_EDGE = 1e-12
#: S, θ, ξ steps per pass over the ratings in MACE's sampler (see
#: :func:`gibbs_posterior`): they cost O(raters x classes)
_MACE_INNER = 5


def gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Gibbs sampling of MACE's posterior p(π, θ, ξ, T, S | X).

    Hovy et al. (2013): T_i ~ Cat(π); on each rating the rater knows the
    answer (S = 0, probability θ_j) and gives T_i, or spams (S = 1) a label
    drawn from ξ_j; θ_j ~ Beta(``competence_prior_``: ``prior_knowing``,
    ``prior_spamming`` or the learned prior),
    ξ_j ~ Dirichlet(``prior_strategy``) (the paper's priors, those of the
    variational fit; an EM fit's parameters are sampled under them too),
    π ~ Dirichlet(``prior_class`` + 1) when it is learned (the MAP's
    pseudo-counts).  A sweep draws

    - T | θ, ξ, π with the S summed out: each item's posterior, its class
      drawn from it (one pass over the ratings, in a kernel);
    - S | T, θ, ξ: a rating whose label is not T_i was spammed; one whose
      label l is T_i knew the answer with probability
      θ_j / (θ_j + (1 - θ_j) ξ_jl), so the number of such ratings per
      (rater, label) that knew is binomial;
    - θ_j | S ~ Beta(a + knew_j, b + spammed_j) and
      ξ_j | S ~ Dirichlet(c + spammed labels of j);
    - π | T, conjugate, and before that, when learned, π | θ, ξ with every
      T_i summed out (:func:`prevalence_moves`), T being drawn again
      from its posterior at the new π.

    The S, θ, ξ steps given T need only counts per (rater, label), O(J K),
    so each sweep repeats them ``_MACE_INNER`` times: θ_j and the number of
    a rater's right answers that were lucky spam are strongly coupled
    when the rater has many ratings, and one data-augmentation step per
    pass over the ratings mixes slowly.  The chain starts at the fit.
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    a, b, c, _ = model._priors(K, model.competence_prior_)
    fixed = model._fixed_prior(K)
    theta = np.clip(np.array(model.rater_competence_, dtype=np.float64), _EDGE, 1 - _EDGE)
    xi = np.clip(np.array(model.spam_distribution_, dtype=np.float64), _EDGE, None)
    xi /= xi.sum(axis=1, keepdims=True)
    pi = np.array(model.class_prior_ if fixed is None else fixed, dtype=np.float64)
    count = np.bincount(data.cell, minlength=J * K).reshape(J, K).astype(np.float64)
    item_ptr = np.asarray(data.item_ptr, dtype=np.int64)
    z, post = np.empty(n, dtype=np.int64), np.empty((n, K))
    hits, class_counts = np.empty((J, K)), np.empty(K)
    draws = {"prior": [], "theta": [], "xi": []}
    labels, proba_sum = [], np.zeros((n, K))
    step = 0.3  # of the prevalence moves; adapted during burn-in
    for sweep in range(n_burnin + n_samples * thin):
        adapting = sweep < n_burnin
        spam_share = (1 - theta)[:, None] * xi
        with np.errstate(divide="ignore"):
            log_pi = np.log(pi)
        uncertainty_kernels.mace_sweep(item_ptr, data.rater, data.label, np.log(spam_share),
                                       np.log(theta[:, None] + spam_share), log_pi,
                                       data.evidence, rng.random(n), z, post, hits,
                                       class_counts)
        if fixed is None and K > 1:
            # π | θ, ξ (T summed out), then T again: a blocked draw
            moved_pi, moved_post, moved = prevalence_moves(pi, post, model.prior_class + 1.0,
                                                            step, rng)
            if adapting:
                step *= np.exp(0.1 * (moved / PREVALENCE_MOVES - 0.44))
            if moved:
                pi, post[:] = moved_pi, moved_post
                z[:] = draw_classes(post, rng)
                hits[:] = np.bincount(data.cell[data.label == z[data.item]],
                                      minlength=J * K).reshape(J, K)
                class_counts[:] = np.bincount(z, minlength=K)
        hit_counts = hits.astype(np.int64)
        for _ in range(_MACE_INNER):
            knew = rng.binomial(hit_counts, theta[:, None] / (theta[:, None]
                                                              + (1 - theta)[:, None] * xi))
            spammed = count - knew
            theta = np.clip(rng.beta(a + knew.sum(axis=1), b + spammed.sum(axis=1)),
                            _EDGE, 1 - _EDGE)
            xi = np.maximum(rng.standard_gamma(c + spammed), _EDGE)
            xi /= xi.sum(axis=1, keepdims=True)
        if fixed is None:
            pi = rng.standard_gamma(class_counts + model.prior_class + 1.0)
            pi /= pi.sum()
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            draws["prior"].append(pi)
            draws["theta"].append(theta)
            draws["xi"].append(xi)
            proba_sum += post
            if keep_labels:
                labels.append(z.astype(np.int32))
    prior, theta, xi = (np.stack(draws[k]) for k in ("prior", "theta", "xi"))
    samples = {
        "class_prior_": prior,
        "rater_competence_": theta,
        "spam_distribution_": xi,
        "rater_accuracy_": theta + (1 - theta) * np.einsum("sjk,sk->sj", xi, prior),
        # the draws are of θ and ξ themselves: a model at a draw scores
        # with them, not with a variational posterior's weights
        "competence_posterior_": None,
        "spam_posterior_": None,
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
