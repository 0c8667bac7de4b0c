"""A population prior learned from the raters (empirical Bayes), for the
models that pool their raters: the Dirichlet of PooledDawidSkene's confusion
rows and of MACE's learned competence prior from the raters' posteriors
(Minka 2000, "Estimating a Dirichlet distribution"), and MACE's two-stage
Beta prior from the raters' expected counts (a Beta-binomial)."""

import numpy as np
from scipy.special import betaln, digamma, gammaln, polygamma

__all__ = ["update_population", "maximize_population", "inverse_digamma",
           "beta_binomial_prior"]

#: bounds on each of a Beta-binomial prior's a and b: Beta(0.01, 0.01) is
#: already all but two point masses, and past 10^4 the prior is one
#: competence for every rater to four decimals
BETA_BINOMIAL_BOUNDS = (1e-2, 1e4)

#: fixed-point steps per M-step (each one raises the objective)
POPULATION_STEPS = 5


def update_population(pool, expected_log, rate, steps=POPULATION_STEPS):
    """α maximizing Σ_j E_q[log Dir(θ_j[k] | α_k)] - rate Σ α, row by row.

    ``pool``: the current α, rows over the last axis; ``expected_log``: each
    rater's E_q[log θ_j] (the raters on the first axis, then ``pool``'s
    shape).  Minka's (2000) fixed point, with the hyperprior's linear term:
    log Γ(Σα) is convex, so its tangent at the current α bounds it below,
    and the bound is maximized per entry by ψ(α_kl) = ψ(Σ_l α_kl) +
    (s_kl - rate) / J with s_kl = Σ_j E[log θ_j[k, l]].  Each step raises
    the objective (a minorize-maximize step).
    """
    n_raters = expected_log.shape[0]
    mean_log = expected_log.sum(axis=0) / n_raters - rate / n_raters
    alpha = pool.copy()
    for _ in range(steps):
        alpha = inverse_digamma(digamma(alpha.sum(axis=-1, keepdims=True)) + mean_log)
    return alpha


def inverse_digamma(y, steps=5):
    """x with ψ(x) = y (Minka 2000, appendix C: a start, then Newton)."""
    x = np.where(y >= -2.22, np.exp(y) + 0.5, -1.0 / (y - digamma(1.0)))
    for _ in range(steps):
        x = x - (digamma(x) - y) / polygamma(1, x)
    return x


def maximize_population(pool, expected_log, rate, tol=1e-10, max_steps=100):
    """The α of one population Dirichlet (``pool``, 1-D) at the maximum of
    Σ_j E_q[log Dir(θ_j | α)] - rate Σ α: the exact M-step, by Newton's
    method (Minka 2000, section 3: the Hessian is a diagonal plus a rank
    one, so a step costs O(len(α))), each step halved until it keeps α
    positive and raises the objective (which is concave in α).

    Where the raters are hard to tell apart the maximum is at a large
    concentration Σ α, which the fixed point of :func:`update_population`
    approaches only linearly (hundreds of passes of the fit's loop); Newton
    reaches it in a few steps.  ``expected_log``: (n_raters, len(α)).
    """
    n_raters = expected_log.shape[0]
    mean_log = expected_log.sum(axis=0) / n_raters - rate / n_raters

    def objective(alpha):
        return gammaln(alpha.sum()) - gammaln(alpha).sum() + alpha @ mean_log

    alpha = np.array(pool, dtype=np.float64)
    value = objective(alpha)
    for _ in range(max_steps):
        total = alpha.sum()
        gradient = digamma(total) - digamma(alpha) + mean_log
        # H = -diag(q) + z 11ᵀ; H⁻¹g by Sherman-Morrison
        q, z = polygamma(1, alpha), polygamma(1, total)
        shift = (gradient / q).sum() / (1.0 / z - (1.0 / q).sum())
        step = (gradient + shift) / q  # -H⁻¹g: the ascent direction
        scale = 1.0
        while True:
            candidate = alpha + scale * step
            if np.all(candidate > 0):
                new_value = objective(candidate)
                if new_value >= value:
                    break
            scale *= 0.5
            if scale < 1e-12:
                return alpha
        alpha, value = candidate, new_value
        if np.max(np.abs(scale * step) / alpha) < tol:
            break
    return alpha


def beta_binomial_prior(successes, failures, start, rate, tol=1e-10, max_steps=100):
    """The Beta(a, b) maximizing the Beta-binomial marginal likelihood of
    every rater's counts, Σ_j log B(a + k_j, b + s_j) - log B(a, b), minus
    rate (a + b) (type-II maximum likelihood, the exponential hyperprior
    keeping a and b finite when the raters are alike).

    ``successes`` k_j and ``failures`` s_j may be expected counts (MACE's
    ratings in which rater j knew the answer or spammed).  The competences
    θ_j are integrated out exactly, so a rater with few ratings tells the
    prior little, where a variational posterior q(θ_j) would be as sure as
    its expected counts.

    Newton's method on (log a, log b) from ``start`` (a gradient step where
    the Hessian is not negative definite), each step halved until it raises
    the objective, within :data:`BETA_BINOMIAL_BOUNDS`.  Plain scalar code:
    an optimizer calling BLAS would leave its threads spinning on the other
    cores after every call.
    """
    k = np.asarray(successes, dtype=np.float64)
    s = np.asarray(failures, dtype=np.float64)
    n = k + s
    n_raters = k.size
    low, high = np.log(BETA_BINOMIAL_BOUNDS)

    def objective(log_ab):
        a, b = np.exp(log_ab)
        return (betaln(a + k, b + s).sum() - n_raters * betaln(a, b) - rate * (a + b))

    x = np.clip(np.log(np.asarray(start, dtype=np.float64)), low, high)
    value = objective(x)
    for _ in range(max_steps):
        a, b = np.exp(x)
        common = n_raters * digamma(a + b) - digamma(a + b + n).sum()
        common2 = n_raters * polygamma(1, a + b) - polygamma(1, a + b + n).sum()
        grad_a = digamma(a + k).sum() - n_raters * digamma(a) + common - rate
        grad_b = digamma(b + s).sum() - n_raters * digamma(b) + common - rate
        h_aa = polygamma(1, a + k).sum() - n_raters * polygamma(1, a) + common2
        h_bb = polygamma(1, b + s).sum() - n_raters * polygamma(1, b) + common2
        # in log coordinates: d/du = a d/da, d²/du² = a² d²/da² + a d/da
        g = np.array([a * grad_a, b * grad_b])
        h11, h22, h12 = a * a * h_aa + g[0], b * b * h_bb + g[1], a * b * common2
        det = h11 * h22 - h12 * h12
        if h11 < 0 and det > 0:  # negative definite: the Newton step -H⁻¹g
            step = -np.array([h22 * g[0] - h12 * g[1], h11 * g[1] - h12 * g[0]]) / det
        else:
            step = g
        step *= min(1.0, 1.0 / max(np.abs(step).max(), 1e-300))  # at most e-fold
        scale = 1.0
        while True:
            candidate = np.clip(x + scale * step, low, high)
            new_value = objective(candidate)
            if new_value >= value:
                break
            scale *= 0.5
            if scale < 1e-12:
                return np.exp(x)
        moved = np.abs(candidate - x).max()
        x, value = candidate, new_value
        if moved < tol:
            break
    return np.exp(x)
