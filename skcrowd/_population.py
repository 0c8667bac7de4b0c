"""A population Dirichlet learned from the raters' posteriors (empirical
Bayes; Minka 2000, "Estimating a Dirichlet distribution"), shared by the
models that pool their raters: PooledDawidSkene's confusion rows and MACE's
learned competence prior."""

import numpy as np
from scipy.special import digamma, gammaln, polygamma

__all__ = ["update_population", "maximize_population", "inverse_digamma"]

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
