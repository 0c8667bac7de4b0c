"""GLAD arithmetic: the item pass (Newton steps on each item's log inverse
difficulty b_i, the posterior over its true class, its log marginal
likelihood), the by-rater pass (gradient and curvature of the expected
complete-data log-likelihood in each rater's ability α_j) and the
Gauss–Hermite item marginal used by ``score_samples``.

Notation: rating n of item i by rater j with label l; t_n = α_j β_i,
β_i = exp(b_i); P(l = z_i) = σ(t_n), any other label (1 - σ(t_n)) / (K - 1).
Since log σ(t) - log(1 - σ(t)) = t, the log-likelihood of item i's ratings
given z_i = k is

    ll_k(b) = Σ_n [-softplus(t_n) - log(K-1)] + Σ_{n: l_n = k} [t_n + log(K-1)],

so one pass over an item's ratings gives every class at once, and with
dt/db = t the derivatives in b are

    d ll_k / db   = Σ_n -σ_n t_n + T_k,
    d² ll_k / db² = Σ_n [-σ_n (1 - σ_n) t_n² - σ_n t_n] + T_k,
    T_k = Σ_{n: l_n = k} t_n.

With K = 1 there is nothing to get wrong: every rating has probability 1.
"""

import numpy as np
from numba import njit, prange

from ._common import normalize_log_inplace

#: largest Newton step on b_i (log units: β changes at most by a factor e)
MAX_STEP = 1.0
#: halvings of a Newton step before giving up on an item for this pass
MAX_HALVINGS = 30


@njit(cache=True, nogil=True)
def sigmoid(t):
    """1 / (1 + exp(-t)) without overflow."""
    if t >= 0.0:
        return 1.0 / (1.0 + np.exp(-t))
    e = np.exp(t)
    return e / (1.0 + e)


@njit(cache=True, nogil=True)
def item_terms(start, stop, rater, label, alpha, b, log_km1, class_terms, sigma):
    """Class-independent sums over one item's ratings at log inverse
    difficulty ``b``.

    Writes ``class_terms[k]`` = Σ_{n: l_n = k} t_n and ``sigma[n]`` = σ(t_n)
    (kept for the rater statistics), and returns
    ``(base, slope, curvature)`` = (Σ_n -softplus(t_n) - log(K-1),
    Σ_n -σ_n t_n, Σ_n [-σ_n (1 - σ_n) t_n² - σ_n t_n]).
    """
    beta = np.exp(b)
    # element loops, not ``a[:] = 0``: a slice is a view whose reference
    # count is an atomic the threads contend for
    for k in range(class_terms.shape[0]):
        class_terms[k] = 0.0
    positive = 0.0
    slope = 0.0
    curvature = 0.0
    # Σ log1p(e_n) as the log of a product: one log per item instead of one
    # log1p per rating (each factor is in (1, 2], so 512 of them cannot
    # overflow; a factor's rounding costs < 1.2e-16 absolute, as a log1p's).
    product = 1.0
    factors = 0
    logs = 0.0
    for n in range(start, stop):
        t = alpha[rater[n]] * beta
        # σ(t) and softplus(t) = max(t, 0) + log1p(e) from e = exp(-|t|).
        e = np.exp(-abs(t))
        if t >= 0.0:
            s = 1.0 / (1.0 + e)
            positive += t
        else:
            s = e / (1.0 + e)
        product *= 1.0 + e
        factors += 1
        if factors == 512:
            logs += np.log(product)
            product = 1.0
            factors = 0
        slope -= s * t
        curvature -= s * (1.0 - s) * t * t + s * t
        sigma[n] = s
        class_terms[label[n]] += t
    base = -positive - (logs + np.log(product)) - (stop - start) * log_km1
    return base, slope, curvature


@njit(cache=True, nogil=True)
def item_objective(start, stop, rater, label, alpha, log_prior, b, log_km1,
                   b_mean, b_precision, class_terms, class_counts, weights, sigma):
    """Item i's log posterior in b and its first two derivatives.

    Returns ``(value, gradient, hessian)`` of
    ℓ_i(b) = log Σ_k π_k exp(ll_k(b)) + log N(b; b_mean, 1/b_precision)
    (the Gaussian's constant omitted); ``weights`` receives the posterior
    P(z_i = k | ratings, b).  ``class_counts[k]`` = number of ratings with
    label k.  The Hessian is exact: E_w[ll_k''] + Var_w[ll_k'] (the
    posterior over z mixes the classes).
    """
    n_classes = log_prior.shape[0]
    d = b - b_mean
    value = -0.5 * b_precision * d * d
    gradient = -b_precision * d
    hessian = -b_precision
    if n_classes == 1 or stop == start:
        for k in range(n_classes):
            weights[k] = np.exp(log_prior[k])
        return value, gradient, hessian
    base, slope, curvature = item_terms(start, stop, rater, label, alpha, b,
                                        log_km1, class_terms, sigma)
    for k in range(n_classes):
        weights[k] = log_prior[k] + class_terms[k] + class_counts[k] * log_km1
    log_marginal = normalize_log_inplace(weights)
    mean_t = 0.0
    for k in range(n_classes):
        mean_t += weights[k] * class_terms[k]
    var_t = 0.0
    for k in range(n_classes):
        dev = class_terms[k] - mean_t
        var_t += weights[k] * dev * dev
    value += base + log_marginal
    gradient += slope + mean_t
    hessian += curvature + mean_t + var_t
    return value, gradient, hessian


@njit(cache=True, nogil=True)
def fit_item(start, stop, rater, label, alpha, log_prior, b, log_km1, b_mean,
             b_precision, max_steps, step_tol, class_terms, class_counts,
             weights, sigma):
    """Safeguarded Newton ascent on one item's log posterior in b.

    A step with a non-negative (or tiny) Hessian falls back to a gradient
    step; every step is capped at ``MAX_STEP`` and halved until the item's
    log posterior does not decrease, so the objective can only go up.
    Returns ``(b, value)`` at the last accepted point; ``weights`` holds the
    posterior over z_i there and ``sigma[start:stop]`` the σ(t_n).
    """
    for k in range(class_counts.shape[0]):
        class_counts[k] = 0.0
    for n in range(start, stop):
        class_counts[label[n]] += 1.0
    value, gradient, hessian = item_objective(
        start, stop, rater, label, alpha, log_prior, b, log_km1, b_mean,
        b_precision, class_terms, class_counts, weights, sigma)
    current = True
    for _ in range(max_steps):
        # The prior alone gives curvature -b_precision; when the likelihood
        # makes the item locally non-concave, step as if it were the prior.
        curv = hessian if hessian < -1e-3 * b_precision else -b_precision
        step = -gradient / curv
        if step > MAX_STEP:
            step = MAX_STEP
        elif step < -MAX_STEP:
            step = -MAX_STEP
        if abs(step) < step_tol:
            break
        accepted = False
        current = False  # ``weights`` now hold a trial point's posterior
        for _h in range(MAX_HALVINGS):
            trial = b + step
            t_value, t_gradient, t_hessian = item_objective(
                start, stop, rater, label, alpha, log_prior, trial, log_km1,
                b_mean, b_precision, class_terms, class_counts, weights, sigma)
            if t_value >= value:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        b = trial
        current = True
        value, gradient, hessian = t_value, t_gradient, t_hessian
        if abs(step) < step_tol:
            break
    if not current:
        # The last evaluation was a rejected trial: leave the posterior of
        # the accepted point in ``weights``.
        value, gradient, hessian = item_objective(
            start, stop, rater, label, alpha, log_prior, b, log_km1, b_mean,
            b_precision, class_terms, class_counts, weights, sigma)
    return b, value


@njit(cache=True, nogil=True)
def add_rater_terms(start, stop, rater, label, beta, weights, sigma, out):
    """Add one item's contributions to the α statistics of its raters.

    ``out[j, :3]`` += (Σ_n (c_n - σ_n) β, -Σ_n σ_n (1 - σ_n) β², Σ_n β² / 4)
    over the item's ratings n by rater j, with c_n = ``weights[label_n]``,
    and ``out[j, 3]`` = max(``out[j, 3]``, β): see :func:`rater_step`.
    """
    b2 = beta * beta
    for n in range(start, stop):
        j = rater[n]
        s = sigma[n]
        out[j, 0] += (weights[label[n]] - s) * beta
        out[j, 1] -= s * (1.0 - s) * b2
        out[j, 2] += 0.25 * b2
        if beta > out[j, 3]:
            out[j, 3] = beta


def n_item_blocks(n_items, n_raters):
    """Blocks of items of the fused local step (a function of the data
    only, so that results do not depend on the number of threads); each
    block keeps its own (n_raters, 3) rater statistics, at most ~2e6
    numbers in all."""
    return max(1, min(256, n_items, 2_000_000 // max(n_raters, 1)))


@njit(cache=True, nogil=True, parallel=True)
def item_step(item_ptr, rater, label, alpha, log_prior, b_mean, b_precision,
              max_steps, step_tol, log_beta, beta, posterior, loglik,
              rater_stats, sigma):
    """Local step: Newton on every b_i, then its posterior and log marginal.

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    rater, label : int32 (n_ratings,)
    alpha : float64 (n_raters,)
        Rater abilities, held fixed.
    log_prior : float64 (n_classes,)
        log π.
    b_mean, b_precision : float
        The N(b_mean, 1/b_precision) prior on b_i.
    max_steps : int
        Newton steps per item at most.
    step_tol : float
        Stop an item when its Newton step is below this.
    log_beta : float64 (n_items,), input and output
        b_i: the starting point on entry (warm start), the result on exit.
    beta : float64 (n_items,), output
        β_i = exp(b_i), for the by-rater pass.
    posterior : float64 (n_items, n_classes), output
        P(z_i = k | ratings, α, b_i, π).
    loglik : float64 (n_items,), output
        log p(ratings of i | α, b_i, π) with z_i summed out (0 without
        ratings).
    rater_stats : float64 (n_blocks, n_raters, 4), output
        Per block of items, the by-rater sums (and maximum β) of
        :func:`rater_step` at the final b_i and posterior (while the item's
        ratings are in cache), or ``n_blocks = 0`` to skip them
        (prediction).  Summed (the maximum: maximised) over blocks in order
        by the caller, they equal ``rater_step``'s output up to rounding.
    sigma : float64 (n_ratings,), output
        σ(α_j β_i) of each rating at the final b_i.
    """
    n_items = item_ptr.shape[0] - 1
    n_classes = log_prior.shape[0]
    log_km1 = np.log(n_classes - 1.0) if n_classes > 1 else 0.0
    with_raters = rater_stats.shape[0] > 0 and n_classes > 1
    n_blocks = rater_stats.shape[0] if rater_stats.shape[0] > 0 else min(n_items, 256)
    for block in prange(n_blocks):
        if rater_stats.shape[0] > 0:
            rater_stats[block] = 0.0
        class_terms = np.empty(n_classes)
        class_counts = np.empty(n_classes)
        weights = np.empty(n_classes)
        for i in range(block * n_items // n_blocks, (block + 1) * n_items // n_blocks):
            start, stop = item_ptr[i], item_ptr[i + 1]
            b, value = fit_item(start, stop, rater, label, alpha, log_prior,
                                log_beta[i], log_km1, b_mean, b_precision,
                                max_steps, step_tol, class_terms, class_counts,
                                weights, sigma)
            log_beta[i] = b
            beta[i] = np.exp(b)
            d = b - b_mean
            loglik[i] = value + 0.5 * b_precision * d * d
            for k in range(n_classes):
                posterior[i, k] = weights[k]
            if with_raters:
                add_rater_terms(start, stop, rater, label, beta[i], weights,
                                sigma, rater_stats[block])


@njit(cache=True, nogil=True, parallel=True)
def rater_step(rater_ptr, rater_order, item, label, alpha, beta, posterior,
               gradient, hessian, bound, beta_max):
    """By-rater pass: derivatives of the expected complete-data
    log-likelihood Q in each α_j, one rater per thread.

    For rating n, with c_n = P(z_i = l_n) the posterior that it is correct,
    Q's term is c_n log σ(t_n) + (1 - c_n) log(1 - σ(t_n)) + const: a
    weighted logistic regression in α_j with feature β_i, hence

        gradient[j] = Σ_n (c_n - σ_n) β_i,
        hessian[j]  = -Σ_n σ_n (1 - σ_n) β_i²,
        bound[j]    = Σ_n β_i² / 4  (≥ -Q'' everywhere, since σ(1-σ) ≤ 1/4),
        beta_max[j] = max_n β_i  (0 for a rater without ratings).

    The priors are added by the caller.
    """
    n_classes = posterior.shape[1]
    for j in prange(rater_ptr.shape[0] - 1):
        g = 0.0
        h = 0.0
        c2 = 0.0
        top = 0.0
        if n_classes > 1:
            a = alpha[j]
            for p in range(rater_ptr[j], rater_ptr[j + 1]):
                n = rater_order[p]
                i = item[n]
                beta_i = beta[i]
                s = sigmoid(a * beta_i)
                g += (posterior[i, label[n]] - s) * beta_i
                h -= s * (1.0 - s) * beta_i * beta_i
                c2 += 0.25 * beta_i * beta_i
                if beta_i > top:
                    top = beta_i
        gradient[j] = g
        hessian[j] = h
        bound[j] = c2
        beta_max[j] = top


@njit(cache=True, nogil=True, parallel=True)
def item_marginal(item_ptr, rater, label, alpha, log_prior, nodes, log_weights,
                  loglik, node_posterior):
    """log ∫ p(ratings of i | α, b, π) N(b) db by quadrature, z summed out.

    ``nodes`` are the values of b and ``log_weights`` their log weights
    (Gauss–Hermite rule for the N(b_mean, 1/b_precision) prior, summing to
    one).  ``node_posterior[i, q]`` receives P(b_i = nodes[q] | ratings).
    """
    n_items = item_ptr.shape[0] - 1
    n_classes = log_prior.shape[0]
    n_nodes = nodes.shape[0]
    sigma = np.empty(rater.shape[0])  # scratch, one slot per rating
    log_km1 = np.log(n_classes - 1.0) if n_classes > 1 else 0.0
    n_blocks = min(n_items, 256)
    for block in prange(n_blocks):
        class_terms = np.empty(n_classes)
        class_counts = np.empty(n_classes)
        weights = np.empty(n_classes)
        for i in range(block * n_items // n_blocks, (block + 1) * n_items // n_blocks):
            start, stop = item_ptr[i], item_ptr[i + 1]
            for k in range(n_classes):
                class_counts[k] = 0.0
            for n in range(start, stop):
                class_counts[label[n]] += 1.0
            row = node_posterior[i]
            for q in range(n_nodes):
                # Precision 0: the prior term vanishes, leaving log p(y | b).
                value, _g, _h = item_objective(
                    start, stop, rater, label, alpha, log_prior, nodes[q],
                    log_km1, 0.0, 0.0, class_terms, class_counts, weights, sigma)
                row[q] = log_weights[q] + value
            loglik[i] = normalize_log_inplace(row)
