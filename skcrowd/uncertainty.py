"""Posterior uncertainty of a fitted model's global parameters, and item
labels and probabilities that integrate it.

Every skcrowd model is fitted to a point: a MAP estimate (DawidSkene,
GLAD, IRT3PL's raters), a marginal-likelihood estimate (IRT3PL's item
population) or variational means.  Carpenter (item-difficulty paper) answers
the five tasks of crowdsourcing with posterior distributions instead: the
prevalence with its interval, each rater's sensitivity and specificity with
theirs, and gold-standard labels *sampled* from the posterior rather than
chosen as the most probable.  This module adds that layer on top of a
fitted model:

- :func:`posterior_samples` draws the global parameters (prevalence, rater
  parameters, item-population hyperparameters) by

  * ``"gibbs"`` (every model, the default): Markov chain Monte Carlo of the
    model's own posterior, started at the fit.  DawidSkene's Dirichlet
    priors are conjugate, so a sweep draws every true class given the
    parameters, then every confusion row and the prevalence given the
    classes (Dawid & Skene 1979's complete-data likelihood, sampled
    instead of maximised).  IRT3PL's sweep draws every item's class and
    quadrature node, then the prevalence, and the raters and item
    population by Metropolis steps (Carpenter, item-difficulty paper).
    MACE's sweep draws the classes, the spam indicators, then the
    competences and spam distributions from their Beta and Dirichlet
    conditionals (Hovy et al. 2013); GLAD's moves the item difficulties,
    the classes and the abilities by Metropolis-within-Gibbs (Whitehill
    et al. 2009); EBCC's draws every item's (class, subtype) pair, then
    the prevalence, subtype weights and raters' rows from their Dirichlet
    conditionals (Li, Rubinstein & Cohn 2019); OrdinalMixture's draws the
    spam indicators and the
    latent scores truncated to their ratings' bins, then the true values,
    the precisions, difficulties and reliabilities from their conjugate
    conditionals (Lakshminarayanan & Teh 2013);
  * ``"bootstrap"``: the fit repeated on items
    resampled with replacement, each refit started from the fitted model
    (``init_params``), so it takes a few passes instead of a cold fit.
    The spread of the refits approximates the posterior when every rater
    has many ratings; it is too narrow when raters have few (see
    :ref:`uncertainty`).

- :func:`interval` turns draws into equal-tailed intervals;
  :func:`prevalence_interval` and :func:`rater_table` give the prevalence
  and the rater table with interval columns;
- :func:`predict_proba` averages the item posteriors over the draws
  (posterior predictive class probabilities), and :func:`sample_labels`
  draws labels from the full posterior: parameters first, then each item's
  class given them.
"""

import copy
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, gammaln, ndtr, ndtri
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import has_gold
from ._dask import is_dask_frame
from ._kernels import _irt as irt_kernels
from ._kernels import _uncertainty as uncertainty_kernels
from ._pooled import posterior_chain as pooled_posterior_chain
from ._ratings import Ratings

__all__ = [
    "effective_sample_size",
    "interval",
    "model_at",
    "posterior_samples",
    "predict_proba",
    "prevalence_interval",
    "rater_table",
    "sample_labels",
]

#: The fitted attributes that hold each model's global parameters (the
#: prevalence, the rater parameters, population hyperparameters): what a
#: draw replaces.  Derived attributes (``rater_accuracy_``,
#: ``sensitivity_``) are drawn too, so that tables read them consistently.
GLOBAL_ATTRIBUTES = {
    "DawidSkene": ("class_prior_", "confusion_", "rater_accuracy_"),
    "EBCC": ("class_prior_", "subtype_prior_", "subtype_confusion_", "confusion_",
             "rater_accuracy_", "class_posterior_", "subtype_posterior_", "rater_posterior_"),
    "IRT3PL": ("class_prior_", "alpha_sens_", "alpha_spec_", "sensitivity_",
               "specificity_", "item_prior_"),
    "GLAD": ("class_prior_", "rater_ability_"),
    "MACE": ("class_prior_", "rater_competence_", "spam_distribution_", "rater_accuracy_",
             "competence_posterior_", "spam_posterior_"),
    "OrdinalMixture": ("class_prior_", "rater_precision_", "rater_precision_shape_",
                       "rater_precision_rate_", "rater_reliability_", "_rater_spamminess",
                       "group_difficulty_", "group_difficulty_shape_",
                       "group_difficulty_rate_", "precision_shape_", "precision_rate_"),
    "PooledDawidSkene": ("class_prior_", "confusion_", "rater_accuracy_", "confusion_posterior_",
                         "population_", "population_confusion_"),
}

_METHODS = ("auto", "gibbs", "bootstrap")


# -- input --------------------------------------------------------------------
def _check_model(model):
    name = type(model).__name__
    if name not in GLOBAL_ATTRIBUTES:
        raise ValueError(f"posterior uncertainty is available for {sorted(GLOBAL_ATTRIBUTES)}; "
                         f"got {name}.")
    check_is_fitted(model)
    return name


def _check_count(value, name, low=1):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    return int(value)


def _check_level(level):
    if isinstance(level, bool) or not isinstance(level, Real) or not 0 < level < 1:
        raise ValueError(f"the interval level must be a number in (0, 1); got {level!r}.")
    return float(level)


def _reject_unknown(options):
    if options:
        raise TypeError(f"unexpected arguments {sorted(options)}.")


def _encoded(model, X, y=None):
    """``X`` (and the fit's known labels ``y``) encoded against the fitted
    model (raters and classes of the fit); raters the fit has not seen are
    refused: their parameters have no posterior."""
    if is_dask_frame(X):
        raise ValueError("posterior uncertainty does not take a dask DataFrame: the chain "
                         "needs the ratings in memory (pass a Ratings or a matrix).")
    data = model._encode(X, reset=False, y=y)
    if data.n_raters > model.n_features_in_:
        raise ValueError("X has raters the model was not fitted on; posterior uncertainty "
                         "needs the ratings the model was fitted to.")
    return data


# -- draws and the model at one draw -----------------------------------------------
def _attribute_names(model):
    names = GLOBAL_ATTRIBUTES[type(model).__name__]
    return tuple(n for n in names if getattr(model, n, None) is not None)


def _stack(values):
    """Draws of one attribute stacked on a leading axis (a dict attribute,
    such as IRT3PL's ``item_prior_``, as a dict of stacked values)."""
    if isinstance(values[0], dict):
        return {k: np.array([v[k] for v in values]) for k in values[0]}
    return np.stack([np.asarray(v, dtype=np.float64) for v in values])


def _n_draws(samples):
    """The number of draws in ``samples`` (the length of the leading axis)."""
    return len(samples["class_prior_"])


def model_at(model, samples, s):
    """The fitted model at one posterior draw of its global parameters.

    Parameters
    ----------
    model : fitted model
    samples : dict
        Draws from :func:`posterior_samples`.
    s : int
        Which draw.

    Returns
    -------
    model_s : estimator
        A shallow copy of ``model`` whose global attributes are those of
        draw ``s``: its ``predict_proba``, ``rater_table`` and ``sample``
        condition on that draw.  ``model`` itself is not changed.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import model_at, posterior_samples
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> draws = posterior_samples(model, ratings, 10, random_state=0)
    >>> at = model_at(model, draws, 3)
    >>> bool((at.confusion_ == draws["confusion_"][3]).all())
    True
    """
    at = copy.copy(model)
    for name, values in samples.items():
        if values is None:
            setattr(at, name, None)
        elif isinstance(values, dict):
            setattr(at, name, {k: float(v[s]) for k, v in values.items()})
        else:
            setattr(at, name, values[s])
    return at


# -- the samplers ------------------------------------------------------------------
def _dawid_skene_gibbs(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Gibbs sampling of DawidSkene's posterior p(π, θ, z | X).

    The model's priors are Dirichlet with pseudo-counts α - 1 (that is what
    MAP-EM's M-step adds), so given the true classes z the posterior of
    each confusion row θ_{j,k} is Dirichlet(counts + pseudo + 1) and that
    of π is Dirichlet(class counts + prior_class + 1) (Dawid & Skene 1979's
    complete-data likelihood); given (π, θ) the items' classes are
    independent, each from its E-step posterior.  The chain starts at the
    MAP, inside the mode the fit chose, so it does not wander to a
    label-permuted mode.  Returns the draws, the running sum of the item
    posteriors given each draw (Rao-Blackwellised integrated
    probabilities) and, with ``keep_labels``, the classes z drawn jointly.
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    item_ptr = np.asarray(data.item_ptr, dtype=np.int64)
    rater, label = data.rater, data.label
    one_coin = model.confusion == "one_coin"
    pseudo = model._pseudo_counts(K)
    fixed = model.class_prior is not None
    theta = np.array(model.confusion_, dtype=np.float64)
    pi = np.array(model.class_prior_, dtype=np.float64)
    # known items (gold y) hold their class, which a relabelling would not
    can_relabel = not one_coin and not fixed and K > 1 and not has_gold(data)
    confusion, prior, labels = [], [], []
    proba_sum = np.zeros((n, K))
    z, post = np.empty(n, dtype=np.int64), np.empty((n, K))
    counts, class_counts = np.empty((J, K, K)), np.empty(K)
    for sweep in range(n_burnin + n_samples * thin):
        # z | π, θ: every item's E-step posterior, its class drawn from it,
        # and the counts of the drawn classes (one pass over the ratings)
        with np.errstate(divide="ignore"):
            log_theta, log_pi = np.log(theta), np.log(pi)
        uncertainty_kernels.dawid_skene_sweep(item_ptr, rater, label, log_theta, log_pi,
                                              data.evidence, rng.random(n), z, post, counts,
                                              class_counts)
        # θ, π | z: conjugate Dirichlet (Beta for one coin) draws
        if one_coin:
            right = np.trace(counts, axis1=1, axis2=2)
            wrong = counts.sum(axis=(1, 2)) - right
            accuracy = rng.beta(right + model.prior_correct + 1, wrong + model.prior_wrong + 1)
            off = (1 - accuracy) / max(K - 1, 1)
            theta = np.repeat(np.repeat(off[:, None, None], K, 1), K, 2)
            theta[:, np.arange(K), np.arange(K)] = accuracy[:, None]
        else:
            theta = rng.standard_gamma(counts + pseudo + 1.0)
            theta /= theta.sum(axis=2, keepdims=True)
        if not fixed:
            pi = rng.standard_gamma(class_counts + model.prior_class + 1.0)
            pi /= pi.sum()
        if can_relabel:
            # Relabelling the true classes (two confusion rows, two
            # prevalences and the items' classes swapped together) leaves
            # the likelihood unchanged, so the Metropolis ratio of the swap
            # is the prior ratio.  With many raters the prior makes the
            # permuted mode negligible and the swap is never taken; with
            # few, the posterior has both modes and the chain visits both.
            a, b = rng.choice(K, size=2, replace=False)
            swapped = theta.copy()
            swapped[:, [a, b]] = theta[:, [b, a]]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.sum(np.where(pseudo > 0, pseudo * (np.log(swapped) - np.log(theta)),
                                        0.0))
            if np.log(rng.random()) < ratio:
                theta = swapped
                pi = pi.copy()
                pi[[a, b]] = pi[[b, a]]
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            confusion.append(theta)
            prior.append(pi)
            proba_sum += post
            if keep_labels:
                labels.append(z.astype(np.int32))
    confusion, prior = np.stack(confusion), np.stack(prior)
    samples = {
        "class_prior_": prior,
        "confusion_": confusion,
        "rater_accuracy_": np.einsum("sjkk,sk->sj", confusion, prior),
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)


def _irt_log_table(model, sens, spec, hyper, grid):
    """``table[g, y, z * M + m]`` = log P(rating y | class z, node m; group g)
    of the IRT-3PL rating model (Carpenter, item-difficulty paper): correct
    with probability λ_m + (1 - λ_m) σ(δ_m (α^z_g - β_m)); the fit's own
    kernel."""
    b, d, log_guess, log_noguess = model._node_values(grid, hyper)
    table = np.empty((len(sens), 2, 2 * len(b)))
    irt_kernels.rating_log_table.pick(table.size)(
        np.ascontiguousarray(sens, dtype=np.float64), np.ascontiguousarray(spec, dtype=np.float64),
        np.ascontiguousarray(b, dtype=np.float64), np.ascontiguousarray(d, dtype=np.float64),
        np.ascontiguousarray(log_guess, dtype=np.float64),
        np.ascontiguousarray(log_noguess, dtype=np.float64), table)
    return table


def _irt_group_loglik(W, table):
    """Each group's log likelihood of its ratings given every item's class
    and node, from ``W[g, y, z * M + m]``, the number of ratings y of group
    g on items in cell (z, m), and the log table of the rating model (the
    augmented likelihood of the rater and hyperparameter steps)."""
    return np.einsum("gyk,gyk->g", W, table)


def _irt_gibbs(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Metropolis-within-Gibbs of IRT3PL's posterior on its quadrature grid.

    The fit integrates each item's class z_i and effects (β_i, δ_i, λ_i)
    over a Gauss–Hermite grid; the same model with the item's grid node
    m_i as a discrete latent variable (prior: the quadrature weights) has
    conjugate-like conditionals: (z_i, m_i) | α, π is the item's posterior
    over the 2M grid cells (drawn exactly, by pattern); π | z is
    Beta(2 + Σz, 2 + Σ(1 - z)) (under the model's Beta(2, 2) prior);
    each rater's α^sens (items with z = 1) and α^spec (z = 0) are
    updated by random-walk Metropolis on its own ratings, vectorised over
    raters, with their normal priors and the spam-line constraint
    α^sens + α^spec > 0; the item-population hyperparameters (when
    learned) by random-walk Metropolis on every rating.  Proposal scales
    adapt during burn-in (target acceptance 0.44) and are then fixed.  The
    chain starts at the fitted MAP.
    """
    from ._irt import (ALPHA_ACC_PRIOR, ALPHA_SENS_PRIOR, ALPHA_SPEC_PRIOR,
                       _hyper_from_vector, _hyper_log_prior, _hyper_vector, _patterns)

    mode = model._rater_mode()
    grid = model._grid()
    M = len(grid[1])
    fitted = model._fitted_params()
    hyper = dict(fitted["hyper"])
    names = model._hyper_names() if model.learn_item_prior else []
    hvec = _hyper_vector(names, hyper)
    J = data.n_raters
    n_groups = J if model.rater_effects else 1
    sens = np.array(fitted["alpha_sens"], dtype=np.float64)[:n_groups].copy()
    spec = np.array(fitted["alpha_spec"], dtype=np.float64)[:n_groups].copy()
    pi = float(fitted["prior"])
    item, label = data.item, data.label.astype(np.int64)
    group = data.rater.astype(np.int64) if model.rater_effects else np.zeros(len(item), np.int64)
    # patterns: items with the same ratings share their posterior over cells
    pat = _patterns(data)
    of_item, p_ptr, n_patterns = pat["of_item"], pat["ptr"], pat["n_patterns"]
    p_rating_label = pat["label"]
    p_rating_group = (pat["rater"] if model.rater_effects
                      else np.zeros(len(p_rating_label), pat["rater"].dtype))
    gold_row = None
    if data.gold is not None:
        # a known item's class is one more rating, by a perfect rater
        # (rater J of the patterns, as in the fit): a table row after the
        # groups', 0 where the rating is the class and -inf elsewhere
        p_rating_group = np.where(pat["rater"] == J, n_groups, p_rating_group)
        gold_row = np.full((1, 2, 2 * M), -np.inf)
        gold_row[0, 0, :M] = gold_row[0, 1, M:] = 0.0
    counts = np.bincount(group, minlength=n_groups).astype(np.float64)
    step = {"sens": 2.0 / np.sqrt(1.0 + 0.25 * counts), "spec": 2.0 / np.sqrt(1.0 + 0.25 * counts),
            "hyper": np.full(len(names), 0.1)}
    (ms, ss), (mp, sp), (ma, sa) = ALPHA_SENS_PRIOR, ALPHA_SPEC_PRIOR, ALPHA_ACC_PRIOR

    def log_prior_alpha(which, value):
        if mode == "one":
            return -0.5 * ((value - ma) / sa) ** 2
        m, s = (ms, ss) if which == "sens" else (mp, sp)
        return -0.5 * ((value - m) / s) ** 2

    draws = {"prior": [], "sens": [], "spec": [], "hyper": []}
    labels, proba_sum = [], np.zeros((data.n_items, 2))
    table = _irt_log_table(model, sens, spec, hyper, grid)
    for sweep in range(n_burnin + n_samples * thin):
        adapting = sweep < n_burnin
        # (z_i, m_i) | α, π, hyper: exact draw from each pattern's cells
        with np.errstate(divide="ignore"):
            log_cell = np.concatenate([np.log(1 - pi) + grid[1], np.log(pi) + grid[1]])
        cdf = np.empty((n_patterns, 2 * M))
        uncertainty_kernels.pattern_cell_cdf.pick(len(p_rating_label) * 2 * M)(
            p_ptr, p_rating_group, p_rating_label, log_cell,
            table if gold_row is None else np.concatenate([table, gold_row]), cdf)
        cdf /= cdf[:, -1:]
        class_proba = np.column_stack([cdf[:, M - 1], 1 - cdf[:, M - 1]])[of_item]
        flat = (cdf + np.arange(n_patterns)[:, None]).ravel()
        cell = np.searchsorted(flat, of_item + rng.random(data.n_items) * (1 - 1e-12))
        cell = np.clip(cell - of_item * 2 * M, 0, 2 * M - 1)
        z = cell // M
        # π | z
        if mode != "none":
            n1 = int(z.sum())
            pi = float(rng.beta(2 + n1, 2 + data.n_items - n1))
        # ratings per (group, label, cell): the sufficient statistics of α
        # and the hyperparameters given the cells
        W = np.bincount((group * 2 + label) * (2 * M) + cell[item],
                        minlength=n_groups * 4 * M).reshape(n_groups, 2, 2 * M).astype(float)
        # α | z, m: random-walk Metropolis per group.  ``table`` stays the
        # table at the current parameters: its rows are per group, so after
        # a step it is the proposal's rows where accepted.
        if mode != "none":
            loglik = _irt_group_loglik(W, table)
            for which in (("sens", "spec") if mode == "sens_spec" else ("one",)):
                current = sens if which in ("sens", "one") else spec
                key = "sens" if which == "one" else which
                proposal = current + step[key] * rng.standard_normal(n_groups)
                new_sens = proposal if which in ("sens", "one") else sens
                new_spec = proposal if which in ("spec", "one") else spec
                trial_table = _irt_log_table(model, new_sens, new_spec, hyper, grid)
                trial_loglik = _irt_group_loglik(W, trial_table)
                log_ratio = (trial_loglik - loglik
                             + log_prior_alpha(key, proposal) - log_prior_alpha(key, current))
                valid = (new_sens + new_spec > 0) if mode == "sens_spec" else proposal > 0
                with np.errstate(invalid="ignore"):
                    accept = valid & (np.log(rng.random(n_groups)) < log_ratio)
                current = np.where(accept, proposal, current)
                table = np.where(accept[:, None, None], trial_table, table)
                loglik = np.where(accept, trial_loglik, loglik)
                if which in ("sens", "one"):
                    sens = current
                if which in ("spec", "one"):
                    spec = current
                if adapting:
                    step[key] *= np.exp(0.1 * (accept - 0.44))
        # item-population hyperparameters | z, m (learned ones only)
        for h in range(len(names)):
            old = _irt_group_loglik(W, table).sum() + _hyper_log_prior(names, hvec)
            trial = hvec.copy()
            trial[h] += step["hyper"][h] * rng.standard_normal()
            trial_hyper = _hyper_from_vector(names, trial)
            trial_table = _irt_log_table(model, sens, spec, trial_hyper, grid)
            new = _irt_group_loglik(W, trial_table).sum() + _hyper_log_prior(names, trial)
            accept = np.log(rng.random()) < new - old
            if accept:
                hvec, hyper, table = trial, trial_hyper, trial_table
            if adapting:
                step["hyper"][h] *= np.exp(0.1 * (accept - 0.44))
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            draws["prior"].append(pi)
            draws["sens"].append(np.broadcast_to(sens, (J,)).copy())
            draws["spec"].append(np.broadcast_to(spec, (J,)).copy())
            draws["hyper"].append({n: hyper[n] for n in names})
            proba_sum += class_proba
            if keep_labels:
                labels.append(z.astype(np.int32))
    prior = np.array(draws["prior"])
    alpha_sens, alpha_spec = np.stack(draws["sens"]), np.stack(draws["spec"])
    samples = {
        "class_prior_": np.column_stack([1 - prior, prior]),
        "alpha_sens_": alpha_sens,
        "alpha_spec_": alpha_spec,
        "sensitivity_": expit(alpha_sens),
        "specificity_": expit(alpha_spec),
        "item_prior_": {n: np.array([h[n] for h in draws["hyper"]]) for n in names},
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)


#: θ and ξ are kept this far from 0 and 1 (a Beta(1/2, 1/2) draw can round
#: to either), so that every rating keeps a finite log probability
_EDGE = 1e-12
#: S, θ, ξ steps per pass over the ratings in MACE's sampler (see
#: :func:`_mace_gibbs`): they cost O(raters x classes)
_MACE_INNER = 5


def _mace_gibbs(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Gibbs sampling of MACE's posterior p(π, θ, ξ, T, S | X).

    Hovy et al. (2013): T_i ~ Cat(π); on each rating the rater knows the
    answer (S = 0, probability θ_j) and gives T_i, or spams (S = 1) a label
    drawn from ξ_j; θ_j ~ Beta(``prior_knowing``, ``prior_spamming``),
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
      T_i summed out (:func:`_prevalence_moves`), T being drawn again
      from its posterior at the new π.

    The S, θ, ξ steps given T need only counts per (rater, label), O(J K),
    so each sweep repeats them ``_MACE_INNER`` times: θ_j and the number of
    a rater's right answers that were lucky spam are strongly coupled
    when the rater has many ratings, and one data-augmentation step per
    pass over the ratings mixes slowly.  The chain starts at the fit.
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    a, b, c, _ = model._priors(K)
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
            moved_pi, moved_post, moved = _prevalence_moves(pi, post, model.prior_class + 1.0,
                                                            step, rng)
            if adapting:
                step *= np.exp(0.1 * (moved / _PREVALENCE_MOVES - 0.44))
            if moved:
                pi, post[:] = moved_pi, moved_post
                z[:] = _draw_classes(post, rng)
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


#: Metropolis moves of the prevalence per sweep with the classes summed out
#: (:func:`_prevalence_moves`); each costs O(items x classes)
_PREVALENCE_MOVES = 5


def _draw_classes(proba, rng):
    """One class per row of ``proba``, by inversion of its cumulative sum."""
    u = rng.random(len(proba))[:, None]
    return np.minimum((u > np.cumsum(proba, axis=1)).sum(axis=1), proba.shape[1] - 1)


def _prevalence_moves(pi, proba, concentration, step, rng):
    """Random-walk Metropolis on the prevalence π with every item's class
    summed out, from ``proba``, the items' class posteriors at ``pi``.

    Changing π to π' multiplies item i's marginal likelihood by
    Σ_k proba_ik π'_k / π_k, so no pass over the ratings is needed.  The
    walk is on the additive log-ratios log(π_k / π_K), under the
    Dirichlet(``concentration``) prior (its density there gains the
    Jacobian Π_k π_k).  Drawing π given the classes alone mixes slowly
    when the ratings say little about the classes: π and the class counts
    then pin each other down (lag-one autocorrelation about
    n / (n + Σ concentration)).  Returns π, the item posteriors at it
    (to draw the classes from next: the blocked draw of π and the
    classes) and the number of moves accepted.
    """
    def target(p):
        with np.errstate(divide="ignore"):
            return (np.sum(concentration * np.log(p))
                    + np.sum(np.log(proba @ (p / pi))))

    current, value, accepted = pi, target(pi), 0
    for _ in range(_PREVALENCE_MOVES):
        logits = np.log(current[:-1] / current[-1]) + step * rng.standard_normal(len(pi) - 1)
        proposal = np.exp(np.append(logits, 0.0) - max(logits.max(), 0.0))
        proposal /= proposal.sum()
        new = target(proposal)
        if np.log(rng.random()) < new - value:
            current, value, accepted = proposal, new, accepted + 1
    proba = proba * (current / pi)
    return current, proba / proba.sum(axis=1, keepdims=True), accepted


def _glad_gibbs(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Metropolis-within-Gibbs of GLAD's posterior p(π, α, b, z | X).

    Whitehill et al. (2009), multi-class: rater j gives the true class
    with probability σ(α_j β_i), β_i = exp(b_i), and each other class with
    (1 - σ(α_j β_i)) / (K - 1); α_j ~ N(``alpha_prior_mean``,
    ``alpha_prior_std``²), b_i ~ N(``b_prior_mean``, ``b_prior_std``²),
    π ~ Dirichlet(``prior_class`` + 1) when learned.  A sweep:

    - b_i | α, π with z_i summed out: random-walk Metropolis, every item
      at once (each item's ratings are its own);
    - π | α, b with every z_i summed out (:func:`_prevalence_moves`),
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
            pi, proba, moved = _prevalence_moves(pi, proba, model.prior_class + 1.0,
                                                 step["prior"], rng)
            if adapting:
                adapt("prior", moved / _PREVALENCE_MOVES)
        # z | α, b, π
        z = _draw_classes(proba, rng)
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


def _ordinal_gibbs(model, data, n_samples, n_burnin, thin, rng, keep_labels):
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


def _bootstrap(model, data, n_samples, rng):
    """Refits of ``model`` to items resampled with replacement, each started
    from the fitted model (``init_params``) and run to its tolerance.

    Every rater stays in each refit (a rater none of whose items were
    drawn keeps its prior-only estimate), so draws line up with the fit's
    raters.  Known items (gold ``y``) keep their labels in every refit."""
    if "warm_start" not in model.get_params():
        raise ValueError(f"method='bootstrap' refits warm-started at the fit, which "
                         f"{type(model).__name__} does not support; use method='gibbs'.")
    ratings = Ratings._from_sorted(data.item, data.rater, model.classes_[data.label],
                                   np.arange(data.n_items), model.rater_ids_)
    names = _attribute_names(model)
    refit = clone(model).set_params(warm_start=False, verbose=0)
    if "classes" in refit.get_params():
        refit.set_params(classes=model.classes_)
    draws = {name: [] for name in names}
    for _ in range(n_samples):
        rows = np.sort(rng.randint(0, data.n_items, size=data.n_items))
        sample = ratings[rows]
        sample.item_ids = np.arange(data.n_items)
        with warnings.catch_warnings():
            # a refit's tolerance from a warm start is the fit's own
            warnings.simplefilter("ignore", ConvergenceWarning)
            known = {} if data.gold is None else {
                k: model.classes_[g] for k, g in enumerate(data.gold[rows]) if g >= 0}
            refit.fit(sample, y=known or None, init_params=model)
        for name in names:
            draws[name].append(copy.deepcopy(getattr(refit, name)))
    return {name: _stack(values) for name, values in draws.items()}


def _ebcc_gibbs(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """EBCC's sampler, in its own module (``skcrowd._ebcc.gibbs_posterior``)."""
    from ._ebcc import gibbs_posterior

    return gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels)


_GIBBS = {"DawidSkene": _dawid_skene_gibbs, "EBCC": _ebcc_gibbs,
          "IRT3PL": _irt_gibbs, "MACE": _mace_gibbs,
          "GLAD": _glad_gibbs, "OrdinalMixture": _ordinal_gibbs,
          "PooledDawidSkene": pooled_posterior_chain}
#: (burn-in sweeps, sweeps per kept draw) when not given: DawidSkene's
#: chain mixes slowly when raters are close to guessing, and reaches its
#: nominal coverage by simulation with thin=5 (it under-covers with thin=1;
#: see doc/uncertainty.rst); IRT3PL's abilities move by Metropolis given
#: every item's class and grid node, and its rater intervals cover 85-87%
#: at 90% with thin=1, nominally with thin=5
_CHAIN_DEFAULTS = {"DawidSkene": (200, 5), "EBCC": (200, 5),
                   "IRT3PL": (100, 5), "MACE": (200, 5),
                   "GLAD": (200, 10), "OrdinalMixture": (200, 5),
                   "PooledDawidSkene": (200, 20)}


def _resolve_method(name, method):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {list(_METHODS)}; got {method!r}.")
    if method == "auto":
        return "gibbs" if name in _GIBBS else "bootstrap"
    if method == "gibbs" and name not in _GIBBS:
        raise ValueError(f"method='gibbs' is for {sorted(_GIBBS)}; use method='bootstrap' "
                         f"for {name}.")
    return method


def _draw(model, X, n_samples, method, random_state, n_burnin, thin, keep_labels, y=None):
    name = _check_model(model)
    n_samples = _check_count(n_samples, "n_samples")
    method = _resolve_method(name, method)
    default_burnin, default_thin = _CHAIN_DEFAULTS.get(name, (0, 1))
    n_burnin = _check_count(default_burnin if n_burnin is None else n_burnin, "n_burnin", low=0)
    thin = _check_count(default_thin if thin is None else thin, "thin")
    data = _encoded(model, X, y)
    rng = check_random_state(random_state)
    if method == "gibbs":
        return (data, *_GIBBS[name](model, data, n_samples, n_burnin, thin, rng, keep_labels))
    return data, _bootstrap(model, data, n_samples, rng), None, None


# -- public functions --------------------------------------------------------------
def posterior_samples(model, X, n_samples=200, *, y=None, method="auto", random_state=None,
                      n_burnin=None, thin=None):
    """Draws of a fitted model's global parameters from their posterior.

    Parameters
    ----------
    model : DawidSkene, PooledDawidSkene, EBCC, IRT3PL, GLAD, MACE or OrdinalMixture
        A fitted model.
    X : array-like, sparse matrix, DataFrame or Ratings
        The ratings the model was fitted to, in any form ``fit`` takes.
    n_samples : int, default=200
        Number of draws.
    y : array-like, mapping or Series, default=None
        The known labels the model was fitted with (``fit(X, y)``, see
        :ref:`gold`): the draws condition on them, every known item
        keeping its class.
    method : {"auto", "gibbs", "bootstrap"}, default="auto"
        ``"gibbs"``: MCMC of the model's posterior (DawidSkene and MACE:
        Gibbs sampling, their priors are conjugate; IRT3PL:
        Metropolis-within-Gibbs on its quadrature grid; GLAD:
        Metropolis-within-Gibbs over abilities, item difficulties and
        labels; OrdinalMixture: Gibbs sampling with the latent scores
        drawn, ``link="ordinal"`` and ``difficulty`` None or ``"item"``;
        EBCC: Gibbs sampling of (class, subtype) pairs and Dirichlet
        conditionals; PooledDawidSkene: Gibbs sampling with its population
        Dirichlet drawn by Metropolis); ``"bootstrap"``: refits to items resampled with
        replacement, warm-started at the fit (too narrow when raters have
        few ratings; not EBCC, which has no warm start).  ``"auto"``: Gibbs.
    random_state : int, RandomState instance or None, default=None
    n_burnin : int, default=None
        Gibbs sweeps discarded before the first draw (the chain starts at
        the fit); None: 200 (IRT3PL: 100).
    thin : int, default=None
        Gibbs sweeps per kept draw; None: 5 for DawidSkene, EBCC, IRT3PL,
        MACE and OrdinalMixture, 10 for GLAD, 20 for PooledDawidSkene,
        which cover at the nominal rates in simulation-based calibration
        (see :ref:`uncertainty`).

    Returns
    -------
    samples : dict
        One entry per fitted global attribute (``class_prior_``,
        ``confusion_``, ``sensitivity_``, ...), each an array whose leading
        axis has ``n_samples`` draws (IRT3PL's ``item_prior_``: a dict of
        such arrays, one per hyperparameter).

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import posterior_samples, interval
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> draws = posterior_samples(model, ratings, n_samples=100, random_state=0)
    >>> draws["confusion_"].shape
    (100, 5, 2, 2)
    >>> low, high = interval(draws["class_prior_"][:, 1], 0.9)
    >>> bool(low < model.class_prior_[1] < high)
    True
    """
    return _draw(model, X, n_samples, method, random_state, n_burnin, thin, False, y)[1]


def interval(draws, level=0.9):
    """Equal-tailed posterior interval of each entry of ``draws``.

    Parameters
    ----------
    draws : array-like of shape (n_samples, ...)
        Draws along the leading axis.
    level : float, default=0.9
        Posterior mass inside the interval.

    Returns
    -------
    lower, upper : ndarray of shape draws.shape[1:]
        The (1 - level) / 2 and (1 + level) / 2 quantiles.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.uncertainty import interval
    >>> interval(np.arange(101.0), 0.5)
    (np.float64(25.0), np.float64(75.0))
    """
    level = _check_level(level)
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 0 or len(draws) == 0:
        raise ValueError("draws must have at least one draw along the first axis.")
    tail = (1 - level) / 2
    lower, upper = np.quantile(draws, [tail, 1 - tail], axis=0)
    return lower, upper


def effective_sample_size(draws):
    """Effective sample size of a chain of draws, per entry.

    Geyer's initial positive sequence estimate: n / (1 + 2 Σ ρ_t), summing
    the autocorrelations in pairs while the pair sums stay positive.  A
    Gibbs chain whose effective size is a small fraction of its draws
    mixes slowly (raters close to guessing, few raters): raise ``thin``.

    Parameters
    ----------
    draws : array-like of shape (n_samples, ...)
        Consecutive draws of a chain along the leading axis.

    Returns
    -------
    ess : ndarray of shape draws.shape[1:]
        n_samples for independent draws; smaller for autocorrelated ones
        (a constant entry gets n_samples).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.uncertainty import effective_sample_size
    >>> rng = np.random.default_rng(0)
    >>> chain = np.zeros(2000)
    >>> for t in range(1, 2000):
    ...     chain[t] = 0.9 * chain[t - 1] + rng.normal()
    >>> bool(50 < effective_sample_size(chain) < 250)  # about 2000 / 19
    True
    """
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 0 or len(draws) < 4:
        raise ValueError("effective_sample_size needs at least 4 draws along the first axis.")
    n = len(draws)
    flat = draws.reshape(n, -1)
    centred = flat - flat.mean(axis=0)
    spectrum = np.fft.rfft(centred, 2 * n, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), axis=0)[:n] / n
    ess = np.full(flat.shape[1], float(n))
    for c in range(flat.shape[1]):
        if acov[0, c] <= 0:
            continue
        rho = acov[:, c] / acov[0, c]
        total = 0.0
        for t in range(0, n - 1, 2):
            pair = rho[t] + rho[t + 1]
            if pair <= 0:
                break
            total += pair
        ess[c] = n / max(2 * total - 1, 1e-12)
    return ess.reshape(draws.shape[1:]) if draws.ndim > 1 else ess[0]


def prevalence_interval(model, X, level=0.9, *, samples=None, **kwargs):
    """Posterior interval of each class's prevalence (``class_prior_``).

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    level : float, default=0.9
    samples : dict, default=None
        Draws from :func:`posterior_samples`; drawn here when None (the
        further keyword arguments go to it).

    Returns
    -------
    table : pandas.DataFrame
        Indexed by class: ``estimate`` (the fitted prevalence;
        OrdinalMixture: the mean of its item probabilities), ``mean``
        (posterior mean of the draws), ``lower`` and ``upper``.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import prevalence_interval
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> prevalence_interval(model, ratings, random_state=0).columns.tolist()
    ['estimate', 'mean', 'lower', 'upper']
    """
    import pandas as pd

    if samples is None:
        samples = posterior_samples(model, X, **kwargs)
    draws = samples["class_prior_"]
    lower, upper = interval(draws, level)
    estimate = model.class_prior_
    if type(model).__name__ == "OrdinalMixture":
        # its class_prior_ is the mass of the fixed prior N(μ, 1/λ) in each
        # bin; the draws are of the items' share in each bin, whose plug-in
        # estimate is the mean of the items' posteriors
        estimate = np.asarray(model.predict_proba(X), dtype=np.float64).mean(axis=0)
    return pd.DataFrame({"estimate": estimate, "mean": draws.mean(axis=0),
                         "lower": lower, "upper": upper},
                        index=pd.Index(model.classes_, name="class"))


def rater_table(model, X, interval_level=0.9, *, samples=None, **kwargs):
    """The model's :meth:`rater_table` with posterior interval columns.

    Every parameter column ``c`` of the table (all but ``n_ratings``) gets
    ``c_lower`` and ``c_upper``: the equal-tailed interval of the column
    computed at each draw (the model's own table, evaluated at the drawn
    parameters, so derived columns such as accuracy are intervals of the
    derived quantity).

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    interval_level : float, default=0.9
    samples : dict, default=None
        Draws from :func:`posterior_samples`; drawn here when None (the
        further keyword arguments go to it).

    Returns
    -------
    table : pandas.DataFrame

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import rater_table
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> table = rater_table(model, ratings, 0.9, n_samples=50, random_state=0)
    >>> bool((table["recall_1_lower"] <= table["recall_1"]).all())
    True
    """
    level = _check_level(interval_level)
    if samples is None:
        samples = posterior_samples(model, X, **kwargs)
    table = model.rater_table()
    columns = [c for c in table.columns if c != "n_ratings"]
    per_draw = np.stack([model_at(model, samples, s).rater_table()[columns].to_numpy()
                         for s in range(_n_draws(samples))])
    lower, upper = interval(per_draw, level)
    for i, c in enumerate(columns):
        table[f"{c}_lower"] = lower[:, i]
        table[f"{c}_upper"] = upper[:, i]
    return table


def predict_proba(model, X, *, samples=None, **kwargs):
    """Item posteriors averaged over the posterior of the global parameters.

    ``model.predict_proba`` conditions on the fitted parameters (a
    plug-in estimate); this averages ``p(z_i | X, draw)`` over the draws,
    so an item rated by raters with few ratings gets the spread of their
    parameters, not only their estimate.

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    samples : dict, default=None
        Draws from :func:`posterior_samples`; drawn here when None (the
        further keyword arguments, ``y`` among them, go to it).  With a
        Gibbs sampler, drawing here averages the posteriors inside the
        chain (Rao-Blackwellised).  With given draws, a keyword ``y``
        (the fit's known labels) holds the known items at their class.

    Returns
    -------
    proba : ndarray of shape (n_items, n_classes)

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import predict_proba
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> predict_proba(model, ratings, n_samples=50, random_state=0).shape
    (3869, 2)
    """
    if samples is None:
        options = dict(kwargs)
        method = options.pop("method", "auto")
        if _resolve_method(_check_model(model), method) == "gibbs":
            chain = [options.pop(k, d) for k, d in (("n_samples", 200), ("random_state", None),
                                                    ("n_burnin", None), ("thin", None),
                                                    ("y", None))]
            _reject_unknown(options)
            return _draw(model, X, chain[0], "gibbs", chain[1], chain[2], chain[3], False,
                         chain[4])[2]
        samples = posterior_samples(model, X, method=method, **options)
    total = None
    for proba in _probas_at_draws(model, X, samples, kwargs.get("y")):
        total = proba if total is None else total + proba
    return total / _n_draws(samples)


def _probas_at_draws(model, X, samples, y):
    """The item posteriors at each draw, known items (``y``) at their
    class."""
    gold = None if y is None else _encoded(model, X, y).gold
    for s in range(_n_draws(samples)):
        proba = np.array(model_at(model, samples, s).predict_proba(X), dtype=np.float64)
        if gold is not None:
            known = np.flatnonzero(gold >= 0)
            proba[known] = 0.0
            proba[known, gold[known]] = 1.0
        yield proba


def sample_labels(model, X, n_samples=100, *, samples=None, random_state=None, **kwargs):
    """True labels drawn from the full posterior: parameters, then labels.

    For each draw of the global parameters, every item's class is drawn
    from its posterior given that draw: the joint posterior of the labels,
    with the raters' uncertainty in it, as Carpenter (item-difficulty
    paper) recommends for building a training set (rather than each
    item's most probable label).  A Gibbs sampler draws the labels inside
    the chain.

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    n_samples : int, default=100
        Label sets to draw (ignored when ``samples`` is given: one per draw).
    samples : dict, default=None
        Draws from :func:`posterior_samples`.
    random_state : int, RandomState instance or None, default=None
    **kwargs
        Passed to :func:`posterior_samples` (``y``, ``method``,
        ``n_burnin``, ...).

    Returns
    -------
    labels : ndarray of shape (n_samples, n_items)
        One label set per row, on the scale of ``classes_``.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import sample_labels
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> sample_labels(model, ratings, 20, random_state=0).shape
    (20, 3869)
    """
    rng = check_random_state(random_state)
    if samples is None:
        method = kwargs.pop("method", "auto")
        if _resolve_method(_check_model(model), method) == "gibbs":
            n_burnin, thin = kwargs.pop("n_burnin", None), kwargs.pop("thin", None)
            y = kwargs.pop("y", None)
            _reject_unknown(kwargs)
            labels = _draw(model, X, n_samples, "gibbs", rng, n_burnin, thin, True, y)[3]
            return model.classes_[labels]
        samples = posterior_samples(model, X, n_samples, method=method, random_state=rng,
                                    **kwargs)
    codes = []
    for proba in _probas_at_draws(model, X, samples, kwargs.get("y")):
        cdf = np.cumsum(proba, axis=1)
        u = rng.random(len(proba))[:, None] * cdf[:, -1:]
        codes.append(np.minimum((u > cdf).sum(axis=1), proba.shape[1] - 1))
    return model.classes_[np.stack(codes)]
