"""IRT3PL arithmetic: the log-probability table of a rating at each
quadrature node, the per-pattern integral over (z, item effects) that is the
local step, and the per-rater expected log likelihood with its derivatives.

Notation (DESIGN §6.5).  ``M`` quadrature nodes of the item effects; node
``m`` has a difficulty ``b[m]``, a discrimination ``d[m]`` and a guessing
probability λ_m given by ``log_guess[m]`` = log λ_m and ``log_noguess[m]`` =
log(1 - λ_m).  For a rater with log-odds ability α_z (z = 1: sensitivity,
z = 0: specificity) let x = d[m] (α_z - b[m]); then

    log P(rating = z | z, m)     = logaddexp(log λ_m, log(1-λ_m) + log σ(x))
    log P(rating = 1 - z | z, m) = log(1-λ_m) + log σ(-x).

The joint index of (z, m) is ``z * M + m`` everywhere.
"""

import numpy as np
from numba import njit, prange

from ._common import normalize_log_rows, serial_and_parallel


@njit(cache=True, nogil=True)
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True, nogil=True)
def _log_correct_wrong(x, log_guess, log_noguess, guess, noguess):
    """(log P(correct), log P(wrong)) at discrimination-scaled log-odds x."""
    correct, wrong, _, _, _ = _terms(x, log_guess, log_noguess, guess, noguess)
    return correct, wrong


@njit(cache=True, nogil=True)
def _terms(x, log_guess, log_noguess, guess, noguess):
    """log P(correct), log P(wrong), σ(x), d log P(correct) / dx and
    (1-λ) / P(correct), with λ = ``guess`` = exp(``log_guess``) and
    1 - λ = ``noguess``.

    One exp and one log1p give log σ(±x); guessing adds one log:
    P(correct) = λ + (1-λ)σ(x) ≥ λ is a sum of positive terms, so its log
    loses nothing (log space only where both underflow).
    """
    e = np.exp(-abs(x))
    l1 = np.log1p(e)
    if x > 0.0:
        log_s, log_s1, s = -l1, -x - l1, 1.0 / (1.0 + e)
    else:
        log_s, log_s1, s = x - l1, -l1, e / (1.0 + e)
    wrong = log_noguess + log_s1
    if log_guess == -np.inf:
        return log_s, wrong, s, 1.0 - s, 0.0
    p = guess + noguess * s
    if p > 1e-300:
        correct = np.log(p)
        ratio = noguess / p
    else:
        correct = _logaddexp(log_guess, log_noguess + log_s)
        ratio = np.exp(log_noguess - correct)
    # d/dx log(λ + (1-λ)σ) = (1-λ)σ(1-σ) / P(correct), σ(1-σ) = e / (1+e)²
    slope = ratio * e / ((1.0 + e) * (1.0 + e))
    return correct, wrong, s, slope, ratio


@serial_and_parallel
def rating_log_table(alpha_sens, alpha_spec, b, d, log_guess, log_noguess, table):
    """``table[j, y, z * M + m]`` = log P(rating y | z, node m, rater j).

    Parameters
    ----------
    alpha_sens, alpha_spec : float64 (n_raters,)
    b, d, log_guess, log_noguess : float64 (M,)
    table : float64 (n_raters, 2, 2 * M), output
    """
    n_nodes = b.shape[0]
    guess, noguess = np.exp(log_guess), np.exp(log_noguess)
    for j in prange(alpha_sens.shape[0]):
        for z in range(2):
            alpha = alpha_sens[j] if z == 1 else alpha_spec[j]
            for m in range(n_nodes):
                x = d[m] * (alpha - b[m])
                correct, wrong = _log_correct_wrong(x, log_guess[m], log_noguess[m], guess[m],
                                                    noguess[m])
                table[j, z, z * n_nodes + m] = correct
                table[j, 1 - z, z * n_nodes + m] = wrong


@njit(cache=True, nogil=True)
def _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post, work):
    """Posterior over (z, grid node) of pattern ``p`` into ``post``; returns
    the log marginal likelihood of its ratings.  ``work``: scratch like ``post``."""
    for k in range(log_prior.shape[0]):
        post[k] = log_prior[k]
    # Element indexing, not a view per rating: a view's reference count is an
    # atomic that parallel threads would contend for.
    for n in range(pattern_ptr[p], pattern_ptr[p + 1]):
        j, y = rater[n], label[n]
        for k in range(log_prior.shape[0]):
            post[k] += table[j, y, k]
    return normalize_log_rows(post, work)


@njit(cache=True, nogil=True)
def _pattern_chunk(
    c, pattern_ptr, rater, label, count, log_prior, table, chunk_ptr, node_values,
    expected_counts, proba_positive, effect_means, loglik,
):
    """The local step on chunk ``c`` of the patterns (see :func:`pattern_posteriors`)."""
    n_joint = log_prior.shape[0]
    n_nodes = n_joint // 2
    out = expected_counts[c]
    out[:, :, :] = 0.0
    post = np.empty(n_joint)
    work = np.empty(n_joint, dtype=np.int64)
    for p in range(chunk_ptr[c], chunk_ptr[c + 1]):
        log_marginal = _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post,
                                          work)
        # An item without ratings has likelihood 1 exactly (the prior sums to 1).
        loglik[p] = log_marginal if pattern_ptr[p + 1] > pattern_ptr[p] else 0.0
        positive = 0.0
        for k in range(n_nodes, n_joint):
            positive += post[k]
        proba_positive[p] = positive
        for e in range(3):
            mean = 0.0
            for m in range(n_nodes):
                mean += (post[m] + post[n_nodes + m]) * node_values[e, m]
            effect_means[p, e] = mean
        weight = count[p]
        for n in range(pattern_ptr[p], pattern_ptr[p + 1]):
            j, y = rater[n], label[n]
            for k in range(n_joint):
                out[j, y, k] += weight * post[k]


@njit(cache=True, nogil=True, parallel=True)
def pattern_posteriors(
    pattern_ptr, rater, label, count, log_prior, table, chunk_ptr, node_values,
    expected_counts, proba_positive, effect_means, loglik,
):
    """The local step: integrate (z, item effects) out of each pattern.

    For pattern p (a set of items with the same raters and labels), the log
    joint over (z, m) is ``log_prior[z*M+m] + Σ_n table[rater_n, label_n,
    z*M+m]``; its log-sum is the pattern's log marginal likelihood and its
    normalised exponent the posterior.  Each chunk of patterns adds
    ``count[p] * posterior`` to its own slice ``expected_counts[c, j, y, :]``
    for every rating (j, y) of the pattern, so chunks never share an output;
    the caller sums the chunks in order (results do not depend on threads).
    The chunks run in parallel; :func:`pattern_posteriors_serial` is the
    same computation on one thread (for small data, where waking threads
    costs more than the work).

    Parameters
    ----------
    pattern_ptr : int64 (n_patterns + 1,)
    rater, label : int32 (n_pattern_ratings,)
    count : float64 (n_patterns,)  items sharing the pattern
    log_prior : float64 (2 * M,)  log π_z + log w_m
    table : float64 (n_raters, 2, 2 * M)  from :func:`rating_log_table`
    chunk_ptr : int64 (n_chunks + 1,)  patterns of chunk c
    node_values : float64 (3, M)  difficulty, discrimination, guessing per node
    expected_counts : float64 (n_chunks, n_raters, 2, 2 * M), output
    proba_positive : float64 (n_patterns,), output  P(z = 1 | ratings)
    effect_means : float64 (n_patterns, 3), output  posterior means of node_values
    loglik : float64 (n_patterns,), output
    """
    for c in prange(chunk_ptr.shape[0] - 1):
        _pattern_chunk(c, pattern_ptr, rater, label, count, log_prior, table, chunk_ptr,
                       node_values, expected_counts, proba_positive, effect_means, loglik)


@njit(cache=True, nogil=True)
def pattern_posteriors_serial(
    pattern_ptr, rater, label, count, log_prior, table, chunk_ptr, node_values,
    expected_counts, proba_positive, effect_means, loglik,
):
    """:func:`pattern_posteriors` on one thread (identical results)."""
    for c in range(chunk_ptr.shape[0] - 1):
        _pattern_chunk(c, pattern_ptr, rater, label, count, log_prior, table, chunk_ptr,
                       node_values, expected_counts, proba_positive, effect_means, loglik)


@serial_and_parallel
def pattern_node_cdf(pattern_ptr, rater, label, log_prior, table, cdf):
    """Cumulative posterior over the nodes (z summed out), per pattern.

    ``cdf[p, m]`` = P(node <= m | ratings of pattern p); used to draw each
    item's effects from its posterior when simulating ratings.
    """
    n_joint = log_prior.shape[0]
    n_nodes = n_joint // 2
    for p in prange(pattern_ptr.shape[0] - 1):
        post = np.empty(n_joint)
        work = np.empty(n_joint, dtype=np.int64)
        _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post, work)
        running = 0.0
        for m in range(n_nodes):
            running += post[m] + post[n_nodes + m]
            cdf[p, m] = running


@njit(cache=True, nogil=True)
def _weights(expected_counts, alpha_sens, alpha_spec, g, z, m, n_nodes):
    """Group g's ability for class z and its expected numbers of correct
    and wrong ratings at node m of that class."""
    alpha = alpha_sens[g] if z == 1 else alpha_spec[g]
    return (alpha, expected_counts[g, z, z * n_nodes + m],
            expected_counts[g, 1 - z, z * n_nodes + m])


@serial_and_parallel
def rater_expected_loglik(
    expected_counts, alpha_sens, alpha_spec, b, d, log_guess, log_noguess,
    value, gradient, hessian,
):
    """Expected complete-data log likelihood of each rater and its derivatives.

    ``value[g]`` = Σ_{y,z,m} W[g, y, z*M+m] log P(y | z, m; α_g);
    ``gradient[g, 0]`` / ``hessian[g, 0]`` are the first / second derivative
    in α^spec (the z = 0 terms), index 1 in α^sens (z = 1).  The Hessian in
    (α^spec, α^sens) is diagonal because each term involves one of them.

    Parameters
    ----------
    expected_counts : float64 (n_groups, 2, 2 * M)  W, summed over chunks
    alpha_sens, alpha_spec : float64 (n_groups,)
    value : float64 (n_groups,), output
    gradient, hessian : float64 (n_groups, 2), output
    """
    n_nodes = b.shape[0]
    guess, noguess = np.exp(log_guess), np.exp(log_noguess)
    # Groups are independent (one output row each): parallel and deterministic.
    for g in prange(alpha_sens.shape[0]):
        total = 0.0
        for z in range(2):
            alpha = alpha_sens[g] if z == 1 else alpha_spec[g]
            grad = 0.0
            hess = 0.0
            for m in range(n_nodes):
                w_correct = expected_counts[g, z, z * n_nodes + m]
                w_wrong = expected_counts[g, 1 - z, z * n_nodes + m]
                if w_correct == 0.0 and w_wrong == 0.0:
                    continue
                x = d[m] * (alpha - b[m])
                correct, wrong, s, slope, _ = _terms(x, log_guess[m], log_noguess[m], guess[m],
                                                     noguess[m])
                total += w_correct * correct + w_wrong * wrong
                s1 = 1.0 - s
                # d/dx log σ(-x) = -σ(x); d²/dx² = -σ(1-σ).
                curv_c = slope * (1.0 - 2.0 * s) - slope * slope
                dm = d[m]
                grad += dm * (w_correct * slope - w_wrong * s)
                hess += dm * dm * (w_correct * curv_c - w_wrong * s * s1)
            gradient[g, z] = grad
            hessian[g, z] = hess
        value[g] = total


@serial_and_parallel
def rater_expected_loglik_value(expected_counts, alpha_sens, alpha_spec, b, d, log_guess,
                                log_noguess, value):
    """``value`` of :func:`rater_expected_loglik` alone, summed in the same
    order (the same bits): what the Newton step's line search compares,
    without the derivatives' arithmetic."""
    n_nodes = b.shape[0]
    guess, noguess = np.exp(log_guess), np.exp(log_noguess)
    for g in prange(alpha_sens.shape[0]):
        total = 0.0
        for z in range(2):
            alpha = alpha_sens[g] if z == 1 else alpha_spec[g]
            for m in range(n_nodes):
                w_correct = expected_counts[g, z, z * n_nodes + m]
                w_wrong = expected_counts[g, 1 - z, z * n_nodes + m]
                if w_correct == 0.0 and w_wrong == 0.0:
                    continue
                correct, wrong = _log_correct_wrong(d[m] * (alpha - b[m]), log_guess[m],
                                                    log_noguess[m], guess[m], noguess[m])
                total += w_correct * correct + w_wrong * wrong
        value[g] = total


@serial_and_parallel
def node_expected_loglik_value(expected_counts, alpha_sens, alpha_spec, b, d, log_guess,
                               log_noguess, value, table):
    """``value`` of :func:`node_derivatives` alone, summed in the same order
    (the same bits), for the line search of the hyperparameter step.

    With ``table`` of shape ``(n_groups, 2, 2 * M)`` (not ``(0, 2, 0)``),
    also every term log P(y | z, m; α_g) into it, as
    :func:`rating_log_table` would (the same bits): when the step is
    accepted, these are the next local step's table.
    """
    n_nodes = b.shape[0]
    fill = table.shape[0] > 0
    for m in prange(n_nodes):
        dm = d[m]
        guess, noguess = np.exp(log_guess[m]), np.exp(log_noguess[m])
        total = 0.0
        for g in range(alpha_sens.shape[0]):
            for z in range(2):
                alpha, w_correct, w_wrong = _weights(expected_counts, alpha_sens, alpha_spec,
                                                     g, z, m, n_nodes)
                if w_correct == 0.0 and w_wrong == 0.0 and not fill:
                    continue
                correct, wrong = _log_correct_wrong(dm * (alpha - b[m]), log_guess[m],
                                                    log_noguess[m], guess, noguess)
                if fill:
                    table[g, z, z * n_nodes + m] = correct
                    table[g, 1 - z, z * n_nodes + m] = wrong
                if w_correct == 0.0 and w_wrong == 0.0:
                    continue
                total += w_correct * correct + w_wrong * wrong
        value[m] = total


@serial_and_parallel
def node_derivatives(expected_counts, alpha_sens, alpha_spec, b, d, log_guess, log_noguess,
                     value, gradient, hessian):
    """Expected log likelihood at each node, summed over groups, with its
    first and second derivatives in the node's item effects.

    With t = logit λ, for node m: ``value[m]`` = Σ_{g,y,z} W[g, y, z*M+m]
    log P(y | z, m; α_g); ``gradient[:, m]`` its derivatives in (b[m], d[m],
    t[m]); ``hessian[:, m]`` the second derivatives (bb, dd, tt, bd, bt, dt).
    The item-population hyperparameters set the node values, so these give
    the exact gradient and Hessian of their Newton step (DESIGN §6.5) from
    one pass.  Nodes run in parallel, each summing its groups in order, so
    results do not depend on the number of threads.

    Per term, with x = d (α - b), s = σ(x), P = λ + (1-λ)s and r = (1-λ)/P,
    the correct-rating log probability h = log P has
    h_x = s(1-s) r, h_xx = h_x (1-2s) - h_x², h_t = λ(1-s) r,
    h_tt = h_t ((1-2λ) - λ(1-s) r), h_xt = -s(1-s) λ r (1 + (1-s) r);
    the wrong-rating one h = log(1-λ) + log σ(-x) has h_x = -s,
    h_xx = -s(1-s), h_t = -λ, h_tt = -λ(1-λ), h_xt = 0.  Then
    ∂/∂b = -d ∂/∂x, ∂/∂d = (α - b) ∂/∂x and ∂²/∂b∂d picks up -h_x.
    """
    n_nodes = b.shape[0]
    for m in prange(n_nodes):
        dm = d[m]
        guessing = log_guess[m] > -np.inf
        lam = np.exp(log_guess[m]) if guessing else 0.0
        noguess = np.exp(log_noguess[m])
        total = 0.0
        g_b = g_d = g_t = 0.0
        h_bb = h_dd = h_tt = h_bd = h_bt = h_dt = 0.0
        for g in range(alpha_sens.shape[0]):
            for z in range(2):
                alpha, w_correct, w_wrong = _weights(expected_counts, alpha_sens, alpha_spec,
                                                     g, z, m, n_nodes)
                if w_correct == 0.0 and w_wrong == 0.0:
                    continue
                e = alpha - b[m]
                correct, wrong, s, slope, r = _terms(dm * e, log_guess[m], log_noguess[m], lam,
                                                     noguess)
                total += w_correct * correct + w_wrong * wrong
                s1 = 1.0 - s
                # x-derivatives, weighted sums of the correct and wrong terms
                hx = w_correct * slope - w_wrong * s
                hxx = w_correct * (slope * (1.0 - 2.0 * s) - slope * slope) - w_wrong * s * s1
                g_b -= dm * hx
                g_d += e * hx
                h_bb += dm * dm * hxx
                h_dd += e * e * hxx
                h_bd -= dm * e * hxx + hx
                if guessing:
                    ht_c = lam * s1 * r
                    g_t += w_correct * ht_c - w_wrong * lam
                    h_tt += (w_correct * ht_c * ((1.0 - 2.0 * lam) - lam * s1 * r)
                             - w_wrong * lam * (1.0 - lam))
                    hxt = -w_correct * s * s1 * lam * r * (1.0 + s1 * r)
                    h_bt -= dm * hxt
                    h_dt += e * hxt
        value[m] = total
        gradient[0, m] = g_b
        gradient[1, m] = g_d
        gradient[2, m] = g_t
        hessian[0, m] = h_bb
        hessian[1, m] = h_dd
        hessian[2, m] = h_tt
        hessian[3, m] = h_bd
        hessian[4, m] = h_bt
        hessian[5, m] = h_dt
