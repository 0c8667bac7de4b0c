"""A population Dirichlet learned from the raters' posteriors (empirical
Bayes; Minka 2000, "Estimating a Dirichlet distribution"), shared by the
models that pool their raters: PooledDawidSkene's confusion rows and MACE's
learned competence prior."""

import numpy as np
from scipy.special import digamma, polygamma

__all__ = ["update_population", "inverse_digamma"]

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
