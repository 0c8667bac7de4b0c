"""IRT3PL arithmetic: the log-probability table of a rating at each
quadrature node, the per-pattern integral over (z, item effects) that is the
local step, and the per-rater expected log likelihood with its derivatives.
The global step evaluates every (rater, node) term once per trial point
(:func:`rater_node_terms`: the transcendentals) and then only weights and
sums them, per rater (:func:`rater_derivatives`, :func:`rater_values`) and
per node (:func:`node_derivatives`, :func:`node_values`).

Notation (the 3PL lattice of Carpenter's item-difficulty paper).  ``M`` quadrature nodes of the item effects; node
``m`` has a difficulty ``b[m]``, a discrimination ``d[m]`` and a guessing
probability λ_m given by ``log_guess[m]`` = log λ_m and ``log_noguess[m]`` =
log(1 - λ_m).  For a rater with log-odds ability α_z (z = 1: sensitivity,
z = 0: specificity) let x = d[m] (α_z - b[m]); then

    log P(rating = z | z, m)     = logaddexp(log λ_m, log(1-λ_m) + log σ(x))
    log P(rating = 1 - z | z, m) = log(1-λ_m) + log σ(-x).

The joint index of (z, m) is ``z * M + m`` everywhere.
"""

import numpy as np
from numba import prange

from ._common import normalize_log_rows, serial_and_parallel
from ._config import jit


@jit
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@jit
def _logistic(x):
    """exp(-|x|), log σ(x), log σ(-x) and σ(x): one exp and one log1p."""
    e = np.exp(-abs(x))
    l1 = np.log1p(e)
    if x > 0.0:
        return e, -l1, -x - l1, 1.0 / (1.0 + e)
    return e, x - l1, -l1, e / (1.0 + e)


@jit
def _guessed(e, log_s, log_s1, s, log_guess, log_noguess, guess, noguess):
    """:func:`_terms` from the logistic parts of :func:`_logistic`: what
    depends on the guessing probability λ (one log, one division)."""
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


@jit
def _terms(x, log_guess, log_noguess, guess, noguess):
    """log P(correct), log P(wrong), σ(x), d log P(correct) / dx and
    (1-λ) / P(correct), with λ = ``guess`` = exp(``log_guess``) and
    1 - λ = ``noguess``.

    One exp and one log1p give log σ(±x); guessing adds one log:
    P(correct) = λ + (1-λ)σ(x) ≥ λ is a sum of positive terms, so its log
    loses nothing (log space only where both underflow).
    """
    e, log_s, log_s1, s = _logistic(x)
    return _guessed(e, log_s, log_s1, s, log_guess, log_noguess, guess, noguess)


@jit
def _group_terms(g, alpha_sens, alpha_spec, b, d, log_guess, log_noguess, guess, noguess,
                 table, sigma, slope, ratio):
    """Row g of :func:`rater_node_terms` (of :func:`rating_log_table` when
    ``sigma`` has no rows).  Consecutive nodes with the same log-odds x (on
    the tensor grid, the guessing nodes of one difficulty and
    discrimination) share the logistic's exp and log1p: the same bits, a
    third of the transcendentals."""
    n_nodes = b.shape[0]
    derivatives = sigma.shape[0] > 0
    for z in range(2):
        alpha = alpha_sens[g] if z == 1 else alpha_spec[g]
        last = np.nan
        e = log_s = log_s1 = s = 0.0
        for m in range(n_nodes):
            x = d[m] * (alpha - b[m])
            if x != last:
                e, log_s, log_s1, s = _logistic(x)
                last = x
            correct, wrong, sig, sl, ra = _guessed(e, log_s, log_s1, s, log_guess[m],
                                                   log_noguess[m], guess[m], noguess[m])
            k = z * n_nodes + m
            table[g, z, k] = correct
            table[g, 1 - z, k] = wrong
            if derivatives:
                sigma[g, k] = sig
                slope[g, k] = sl
                ratio[g, k] = ra


@serial_and_parallel
def rating_log_table(alpha_sens, alpha_spec, b, d, log_guess, log_noguess, table):
    """``table[j, y, z * M + m]`` = log P(rating y | z, node m, rater j).

    Parameters
    ----------
    alpha_sens, alpha_spec : float64 (n_raters,)
    b, d, log_guess, log_noguess : float64 (M,)
    table : float64 (n_raters, 2, 2 * M), output
    """
    guess, noguess = np.exp(log_guess), np.exp(log_noguess)
    none = np.empty((0, 0))
    for j in prange(alpha_sens.shape[0]):
        # int64 as in the serial variant (a prange index is unsigned), so
        # the helper compiles once for both
        _group_terms(np.int64(j), alpha_sens, alpha_spec, b, d, log_guess, log_noguess, guess,
                     noguess, table, none, none, none)


@serial_and_parallel
def rater_node_terms(alpha_sens, alpha_spec, b, d, log_guess, log_noguess, groups, table,
                     sigma, slope, ratio):
    """Every term of the expected log likelihood of the groups in ``groups``
    at every node, with what its derivatives need: the global step's
    kernels below then only weight and sum them (no transcendentals).

    For group g, class z and node m, with x = d[m] (α_z - b[m]) and
    k = z * M + m: ``table[g, y, k]`` = log P(y | z, m; α_g) (as
    :func:`rating_log_table`, the same bits), ``sigma[g, k]`` = σ(x),
    ``slope[g, k]`` = d log P(correct) / dx and ``ratio[g, k]`` =
    (1 - λ_m) / P(correct) (0 without guessing).  Rows of groups not listed
    are left as they are.

    Parameters
    ----------
    alpha_sens, alpha_spec : float64 (n_groups,)
    b, d, log_guess, log_noguess : float64 (M,)
    groups : int64 (n,)  the rows to compute, distinct
    table : float64 (n_groups, 2, 2 * M), output
    sigma, slope, ratio : float64 (n_groups, 2 * M), output
    """
    guess, noguess = np.exp(log_guess), np.exp(log_noguess)
    for r in prange(groups.shape[0]):
        _group_terms(groups[r], alpha_sens, alpha_spec, b, d, log_guess, log_noguess, guess,
                     noguess, table, sigma, slope, ratio)


@jit
def _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post):
    """Posterior over (z, grid node) of pattern ``p`` into ``post``; returns
    the log marginal likelihood of its ratings."""
    for k in range(log_prior.shape[0]):
        post[k] = log_prior[k]
    # Element indexing, not a view per rating: a view's reference count is an
    # atomic that parallel threads would contend for.
    for n in range(pattern_ptr[p], pattern_ptr[p + 1]):
        j, y = rater[n], label[n]
        for k in range(log_prior.shape[0]):
            post[k] += table[j, y, k]
    return normalize_log_rows(post)


@jit
def _pattern_chunk(
    c, pattern_ptr, rater, label, count, log_prior, table, chunk_ptr, node_values,
    expected_counts, touched, proba_positive, effect_means, loglik,
):
    """The local step on chunk ``c`` of the patterns (see :func:`pattern_posteriors`)."""
    n_joint = log_prior.shape[0]
    n_nodes = n_joint // 2
    out = expected_counts[c]
    seen = touched[c]
    for j in range(seen.shape[0]):
        seen[j] = False
    post = np.empty(n_joint)
    for p in range(chunk_ptr[c], chunk_ptr[c + 1]):
        log_marginal = _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post)
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
            if not seen[j]:
                # a rater's rows are zeroed when the chunk first meets it: a
                # chunk of a sparse design meets few of them
                seen[j] = True
                for yy in range(2):
                    for k in range(n_joint):
                        out[j, yy, k] = 0.0
            for k in range(n_joint):
                out[j, y, k] += weight * post[k]


@serial_and_parallel
def pattern_posteriors(
    pattern_ptr, rater, label, count, log_prior, table, chunk_ptr, node_values,
    expected_counts, touched, proba_positive, effect_means, loglik,
):
    """The local step: integrate (z, item effects) out of each pattern.

    For pattern p (a set of items with the same raters and labels), the log
    joint over (z, m) is ``log_prior[z*M+m] + Σ_n table[rater_n, label_n,
    z*M+m]``; its log-sum is the pattern's log marginal likelihood and its
    normalised exponent the posterior.  Each chunk of patterns adds
    ``count[p] * posterior`` to its own slice ``expected_counts[c, j, y, :]``
    for every rating (j, y) of the pattern, so chunks never share an output;
    :func:`sum_chunks` sums the chunks in order (results do not depend on
    threads).  Only the raters a chunk meets (``touched[c, j]``) have their
    slices written (zeroed first); the others are left as they are.
    The chunks run in parallel; ``pattern_posteriors.serial``
    (``pattern_posteriors_serial``) is the same computation on one thread
    (for small data, where waking threads costs more than the work).

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
    touched : bool (n_chunks, n_raters), output
    proba_positive : float64 (n_patterns,), output  P(z = 1 | ratings)
    effect_means : float64 (n_patterns, 3), output  posterior means of node_values
    loglik : float64 (n_patterns,), output
    """
    for c in prange(chunk_ptr.shape[0] - 1):
        _pattern_chunk(np.int64(c), pattern_ptr, rater, label, count, log_prior, table,
                       chunk_ptr, node_values, expected_counts, touched, proba_positive,
                       effect_means, loglik)


pattern_posteriors_serial = pattern_posteriors.serial


@serial_and_parallel
def sum_chunks(expected_counts, touched, out):
    """``out[j]`` = Σ_c ``expected_counts[c, j]`` over the chunks that met
    rater j (:func:`pattern_posteriors`), in chunk order: the same bits as
    summing every chunk's zeroed slices, for the rows ``j < len(out)``."""
    n_chunks = expected_counts.shape[0]
    n_joint = out.shape[2]
    for j in prange(out.shape[0]):
        for y in range(2):
            for k in range(n_joint):
                out[j, y, k] = 0.0
        for c in range(n_chunks):
            if touched[c, j]:
                for y in range(2):
                    for k in range(n_joint):
                        out[j, y, k] += expected_counts[c, j, y, k]


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
        _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post)
        running = 0.0
        for m in range(n_nodes):
            running += post[m] + post[n_nodes + m]
            cdf[p, m] = running


@jit(inline="always")
def _weighted_log_prob(expected_counts, table, g, z, k):
    """W[g, z, k] log P(correct) + W[g, 1-z, k] log P(wrong) of group g at
    joint node k = z*M+m; 0 for a term of zero weight (whose log
    probabilities may be -inf)."""
    w_correct = expected_counts[g, z, k]
    w_wrong = expected_counts[g, 1 - z, k]
    if w_correct == 0.0 and w_wrong == 0.0:
        return 0.0
    return w_correct * table[g, z, k] + w_wrong * table[g, 1 - z, k]


@jit
def _group_value(expected_counts, table, g, n_nodes):
    """Σ_{y,z,m} W[g, y, z*M+m] log P(y | z, m; α_g), terms of zero weight skipped."""
    total = 0.0
    for z in range(2):
        for m in range(n_nodes):
            total += _weighted_log_prob(expected_counts, table, g, z, z * n_nodes + m)
    return total


@serial_and_parallel
def rater_derivatives(expected_counts, table, sigma, slope, d, value, gradient, hessian):
    """Expected complete-data log likelihood of each group and its derivatives,
    from the terms of :func:`rater_node_terms`.

    ``value[g]`` = Σ_{y,z,m} W[g, y, z*M+m] log P(y | z, m; α_g);
    ``gradient[g, 0]`` / ``hessian[g, 0]`` are the first / second derivative
    in α^spec (the z = 0 terms), index 1 in α^sens (z = 1).  The Hessian in
    (α^spec, α^sens) is diagonal because each term involves one of them.
    With h = log P(correct): dh/dα = d h_x, h_xx = h_x (1 - 2σ) - h_x²; the
    wrong rating's log σ(-x) has derivatives -σ and -σ(1-σ).

    Parameters
    ----------
    expected_counts : float64 (n_groups, 2, 2 * M)  W, summed over chunks
    table, sigma, slope : the terms at the groups' abilities
    d : float64 (M,)  discrimination per node
    value : float64 (n_groups,), output
    gradient, hessian : float64 (n_groups, 2), output
    """
    n_nodes = d.shape[0]
    # Groups are independent (one output row each): parallel and deterministic.
    for g in prange(table.shape[0]):
        value[g] = _group_value(expected_counts, table, np.int64(g), n_nodes)
        for z in range(2):
            grad = 0.0
            hess = 0.0
            for m in range(n_nodes):
                k = z * n_nodes + m
                w_correct = expected_counts[g, z, k]
                w_wrong = expected_counts[g, 1 - z, k]
                if w_correct == 0.0 and w_wrong == 0.0:
                    continue
                s = sigma[g, k]
                h_x = slope[g, k]
                s1 = 1.0 - s
                curv_c = h_x * (1.0 - 2.0 * s) - h_x * h_x
                dm = d[m]
                grad += dm * (w_correct * h_x - w_wrong * s)
                hess += dm * dm * (w_correct * curv_c - w_wrong * s * s1)
            gradient[g, z] = grad
            hessian[g, z] = hess


@serial_and_parallel
def rater_values(expected_counts, table, groups, value):
    """``value[g]`` of :func:`rater_derivatives` alone for the groups in
    ``groups`` (the same bits): what the Newton step's line search compares."""
    n_nodes = table.shape[2] // 2
    for r in prange(groups.shape[0]):
        g = groups[r]
        value[g] = _group_value(expected_counts, table, g, n_nodes)


# Nodes per parallel block of the node kernels (fixed: results do not depend on threads).
NODE_BLOCK = 64


@serial_and_parallel
def node_values(expected_counts, table, value):
    """``value`` of :func:`node_derivatives` alone (the same bits), for the
    line search of the hyperparameter step."""
    n_groups = table.shape[0]
    n_nodes = table.shape[2] // 2
    for block in prange((n_nodes + NODE_BLOCK - 1) // NODE_BLOCK):
        lo = block * NODE_BLOCK
        hi = min(lo + NODE_BLOCK, n_nodes)
        for m in range(lo, hi):
            value[m] = 0.0
        # groups outer, nodes inner: each node sums its groups in order,
        # reading the terms along their rows
        for g in range(n_groups):
            for z in range(2):
                for m in range(lo, hi):
                    value[m] += _weighted_log_prob(expected_counts, table, g, z, z * n_nodes + m)


@serial_and_parallel
def node_derivatives(expected_counts, alpha_sens, alpha_spec, b, d, log_guess, table, sigma,
                     slope, ratio, value, gradient, hessian):
    """Expected log likelihood at each node, summed over groups, with its
    first and second derivatives in the node's item effects, from the terms
    of :func:`rater_node_terms` at these abilities and nodes.

    With t = logit λ, for node m: ``value[m]`` = Σ_{g,y,z} W[g, y, z*M+m]
    log P(y | z, m; α_g); ``gradient[:, m]`` its derivatives in (b[m], d[m],
    t[m]); ``hessian[:, m]`` the second derivatives (bb, dd, tt, bd, bt, dt).
    The item-population hyperparameters set the node values, so these give
    the exact gradient and Hessian of their Newton step from
    one pass.  Blocks of nodes run in parallel, each node summing its groups
    in order, so results do not depend on the number of threads.

    Per term, with x = d (α - b), s = σ(x), P = λ + (1-λ)s and r = (1-λ)/P,
    the correct-rating log probability h = log P has
    h_x = s(1-s) r, h_xx = h_x (1-2s) - h_x², h_t = λ(1-s) r,
    h_tt = h_t ((1-2λ) - λ(1-s) r), h_xt = -s(1-s) λ r (1 + (1-s) r);
    the wrong-rating one h = log(1-λ) + log σ(-x) has h_x = -s,
    h_xx = -s(1-s), h_t = -λ, h_tt = -λ(1-λ), h_xt = 0.  Then
    ∂/∂b = -d ∂/∂x, ∂/∂d = (α - b) ∂/∂x and ∂²/∂b∂d picks up -h_x.
    """
    n_nodes = b.shape[0]
    n_groups = table.shape[0]
    lam = np.zeros(n_nodes)
    for m in range(n_nodes):
        if log_guess[m] > -np.inf:
            lam[m] = np.exp(log_guess[m])
    for block in prange((n_nodes + NODE_BLOCK - 1) // NODE_BLOCK):
        lo = block * NODE_BLOCK
        n = min(NODE_BLOCK, n_nodes - lo)
        # The block's ten sums per node, in the order of the outputs.  No
        # branch in the inner loop, so that it vectorises: a term of zero
        # weight adds ±0 (its terms are finite) and without guessing λ = r
        # = 0 add ±0 to the t-derivatives, neither of which moves a sum.
        acc = np.zeros((10, NODE_BLOCK))
        for g in range(n_groups):
            for z in range(2):
                alpha = alpha_sens[g] if z == 1 else alpha_spec[g]
                base = z * n_nodes + lo
                for i in range(n):
                    k = base + i
                    m = lo + i
                    w_correct = expected_counts[g, z, k]
                    w_wrong = expected_counts[g, 1 - z, k]
                    dm = d[m]
                    e = alpha - b[m]
                    s = sigma[g, k]
                    h_x = slope[g, k]
                    acc[0, i] += w_correct * table[g, z, k] + w_wrong * table[g, 1 - z, k]
                    s1 = 1.0 - s
                    # x-derivatives, weighted sums of the correct and wrong terms
                    hx = w_correct * h_x - w_wrong * s
                    hxx = w_correct * (h_x * (1.0 - 2.0 * s) - h_x * h_x) - w_wrong * s * s1
                    acc[1, i] -= dm * hx
                    acc[2, i] += e * hx
                    acc[4, i] += dm * dm * hxx
                    acc[5, i] += e * e * hxx
                    acc[7, i] -= dm * e * hxx + hx
                    lm = lam[m]
                    r = ratio[g, k]
                    ht_c = lm * s1 * r
                    acc[3, i] += w_correct * ht_c - w_wrong * lm
                    acc[6, i] += (w_correct * ht_c * ((1.0 - 2.0 * lm) - lm * s1 * r)
                                  - w_wrong * lm * (1.0 - lm))
                    hxt = -w_correct * s * s1 * lm * r * (1.0 + s1 * r)
                    acc[8, i] -= dm * hxt
                    acc[9, i] += e * hxt
        for i in range(n):
            m = lo + i
            value[m] = acc[0, i]
            for c in range(3):
                gradient[c, m] = acc[1 + c, i]
            for c in range(6):
                hessian[c, m] = acc[4 + c, i]


# -- numpy twins ---------------------------------------------------------------
# The same arithmetic as the kernels above, vectorised over groups and nodes
# (and, in the local step, over patterns through a sparse incidence matrix):
# a small fit then never waits for numba's compiler.  IRT3PL chooses one path
# for a whole fit (its own limit on the local step's work, not each call's
# size), so these are attached as ``.numpy_twin`` and ``.pick`` stays compiled.
# Results equal the kernels' to rounding (tests/test_irt_numpy_path.py).


def _node_runs(b, d):
    """The length of the runs of consecutive nodes that share (b, d), when
    every run has the same length (on the tensor grid: the guessing nodes
    of one difficulty and discrimination), else 1."""
    n = b.shape[0]
    start = np.flatnonzero(np.r_[True, (b[1:] != b[:-1]) | (d[1:] != d[:-1])])
    run = n // len(start) if len(start) else 1
    if run > 1 and np.array_equal(start, np.arange(0, n, run)):
        return run
    return 1


def _group_terms_numpy(rows, alpha_sens, alpha_spec, b, d, log_guess, log_noguess, table,
                       sigma=None, slope=None, ratio=None):
    """:func:`_group_terms` for the groups ``rows`` (an index or a slice) at
    once; the logistic's exp and log1p once per run of nodes sharing x, as
    there."""
    n_nodes = b.shape[0]
    run = _node_runs(b, d)
    runs = n_nodes // run
    alpha = np.stack([alpha_spec[rows], alpha_sens[rows]], axis=1)  # [g, z]
    # x per run, (n, 2, runs, 1); node arrays per run, (runs, run)
    x = (d[::run] * (alpha[:, :, None] - b[::run]))[..., None]
    e = np.exp(-np.abs(x))
    l1 = np.log1p(e)
    positive = x > 0.0
    log_s = np.where(positive, -l1, x - l1)
    s = np.where(positive, 1.0, e) / (1.0 + e)
    shape = (len(alpha), 2, n_nodes)
    wrong = (log_noguess.reshape(runs, run) + np.where(positive, -x - l1, -l1)).reshape(shape)
    if np.all(log_guess == -np.inf):  # no guessing: λ = 0
        correct = np.broadcast_to(log_s, shape[:2] + (runs, run)).reshape(shape)
        node_slope, node_ratio = 1.0 - s, 0.0
    else:
        node_guess, node_noguess = log_guess.reshape(runs, run), log_noguess.reshape(runs, run)
        noguess = np.exp(node_noguess)
        p = np.exp(node_guess) + noguess * s
        with np.errstate(divide="ignore"):
            correct = np.log(p)
            node_ratio = noguess / p
        if not p.min(initial=np.inf) > 1e-300:
            tiny = ~(p > 1e-300)  # both parts underflow: log space, as the kernel
            exact = np.logaddexp(node_guess, node_noguess + log_s)
            correct = np.where(tiny, exact, correct)
            node_ratio = np.where(tiny, np.exp(node_noguess - exact), node_ratio)
        node_slope = node_ratio * (e / ((1.0 + e) * (1.0 + e)))
        no_guess = node_guess == -np.inf
        if no_guess.any():  # nodes without guessing, as above
            correct = np.where(no_guess, log_s, correct)
            node_slope = np.where(no_guess, 1.0 - s, node_slope)
            node_ratio = np.where(no_guess, 0.0, node_ratio)
        correct = correct.reshape(shape)
    for z in range(2):
        cols = slice(z * n_nodes, (z + 1) * n_nodes)
        table[rows, z, cols] = correct[:, z]
        table[rows, 1 - z, cols] = wrong[:, z]
    if sigma is not None:
        full = shape[:2] + (runs, run)
        for out, values in ((sigma, s), (slope, node_slope), (ratio, node_ratio)):
            if isinstance(rows, slice):  # a view: broadcast in place
                out[rows].reshape(full)[...] = values
            else:
                out[rows] = np.broadcast_to(values, full).reshape(len(alpha), -1)


def rating_log_table_numpy(alpha_sens, alpha_spec, b, d, log_guess, log_noguess, table):
    """:func:`rating_log_table` in numpy."""
    _group_terms_numpy(slice(None), alpha_sens, alpha_spec, b, d, log_guess, log_noguess, table)


def rater_node_terms_numpy(alpha_sens, alpha_spec, b, d, log_guess, log_noguess, groups, table,
                           sigma, slope, ratio):
    """:func:`rater_node_terms` in numpy."""
    rows = slice(None) if len(groups) == table.shape[0] else groups
    _group_terms_numpy(rows, alpha_sens, alpha_spec, b, d, log_guess, log_noguess, table,
                       sigma, slope, ratio)


def _incidence(pattern_ptr, rater, label, n_raters):
    """Pattern-by-(rater, label) counts, a sparse matrix: row p sums the
    table rows of pattern p's ratings in one product."""
    from scipy.sparse import csr_matrix

    n_patterns = pattern_ptr.shape[0] - 1
    codes = rater.astype(np.int64) * 2 + label
    return csr_matrix((np.ones(codes.shape[0]), codes, pattern_ptr),
                      shape=(n_patterns, 2 * n_raters))


def _pattern_posteriors_numpy(incidence, log_prior, table):
    """Every pattern's posterior over (z, node) and log marginal likelihood
    (:func:`_pattern_posterior`): the log joint summed through the
    incidence matrix, normalised as :func:`normalize_log_rows` does."""
    n_joint = log_prior.shape[0]
    joint = incidence @ table.reshape(-1, n_joint)
    joint += log_prior
    top = joint.max(axis=1, initial=-np.inf)
    finite = top > -np.inf
    joint -= np.where(finite, top, 0.0)[:, None]
    np.exp(joint, out=joint)
    total = joint.sum(axis=1)
    with np.errstate(divide="ignore"):
        joint *= (1.0 / np.where(finite, total, 1.0))[:, None]
        log_marginal = np.where(finite, top + np.log(total), -np.inf)
    joint[~finite] = 1.0 / n_joint
    return joint, log_marginal


def pattern_posteriors_numpy(
    pattern_ptr, rater, label, count, log_prior, table, chunk_ptr, node_values,
    expected_counts, touched, proba_positive, effect_means, loglik,
):
    """:func:`pattern_posteriors` in numpy (one product per chunk: the
    model passes one chunk on this path)."""
    n_raters = table.shape[0]
    n_nodes = log_prior.shape[0] // 2
    incidence = _incidence(pattern_ptr, rater, label, n_raters)
    post, log_marginal = _pattern_posteriors_numpy(incidence, log_prior, table)
    loglik[:] = np.where(np.diff(pattern_ptr) > 0, log_marginal, 0.0)
    proba_positive[:] = post[:, n_nodes:].sum(axis=1)
    # einsum, not a BLAS product: OpenBLAS's threads cost more than these
    # small products on a busy machine
    effect_means[:] = np.einsum("pm,em->pe", post[:, :n_nodes] + post[:, n_nodes:], node_values)
    post *= count[:, None]
    for c in range(chunk_ptr.shape[0] - 1):
        lo, hi = chunk_ptr[c], chunk_ptr[c + 1]
        seen = touched[c]
        seen[:] = False
        seen[rater[pattern_ptr[lo]:pattern_ptr[hi]]] = True
        part = incidence if chunk_ptr.shape[0] == 2 else incidence[lo:hi]
        sums = (part.T @ post[lo:hi]).reshape(n_raters, 2, -1)
        np.copyto(expected_counts[c], sums, where=seen[:, None, None])


def sum_chunks_numpy(expected_counts, touched, out):
    """:func:`sum_chunks` in numpy."""
    rows = out.shape[0]
    out[:] = 0.0
    for c in range(expected_counts.shape[0]):
        out += np.where(touched[c, :rows, None, None], expected_counts[c, :rows], 0.0)


def pattern_node_cdf_numpy(pattern_ptr, rater, label, log_prior, table, cdf):
    """:func:`pattern_node_cdf` in numpy."""
    n_nodes = log_prior.shape[0] // 2
    incidence = _incidence(pattern_ptr, rater, label, table.shape[0])
    post, _ = _pattern_posteriors_numpy(incidence, log_prior, table)
    np.cumsum(post[:, :n_nodes] + post[:, n_nodes:], axis=1, out=cdf)


def _correct_wrong(expected_counts):
    """The weights of each group's correct and wrong ratings at k = z*M + m
    (y = z and y = 1 - z), each (n_groups, 2 * M)."""
    n_nodes = expected_counts.shape[2] // 2
    low, high = expected_counts[:, :, :n_nodes], expected_counts[:, :, n_nodes:]
    return (np.concatenate([low[:, 0], high[:, 1]], axis=1),
            np.concatenate([low[:, 1], high[:, 0]], axis=1))


def _weighted_log_probs_numpy(expected_counts, table):
    """:func:`_weighted_log_prob` for every group and joint node k: Σ_y
    W[g, y, k] log P(y | k), (n_groups, 2 * M).  The kernels skip terms of
    zero weight; the groups' log probabilities are finite (the gold row is
    not a group), so adding their zeros changes no sum."""
    return (expected_counts * table).sum(axis=1)


def _per_node(values):
    """(..., 2 * M) sums at k = z*M + m -> their sums over z, (..., M)."""
    n_nodes = values.shape[-1] // 2
    return values[..., :n_nodes] + values[..., n_nodes:]


def rater_derivatives_numpy(expected_counts, table, sigma, slope, d, value, gradient, hessian):
    """:func:`rater_derivatives` in numpy."""
    n_groups = table.shape[0]
    value[:] = _weighted_log_probs_numpy(expected_counts, table).sum(axis=1)
    w_correct, w_wrong = _correct_wrong(expected_counts)
    s, h_x = sigma, slope
    hx = w_correct * h_x - w_wrong * s
    hxx = w_correct * (h_x * (1.0 - 2.0 * s) - h_x * h_x) - w_wrong * s * (1.0 - s)
    gradient[:] = np.einsum("gzm,m->gz", hx.reshape(n_groups, 2, -1), d)
    hessian[:] = np.einsum("gzm,m->gz", hxx.reshape(n_groups, 2, -1), d * d)


def rater_values_numpy(expected_counts, table, groups, value):
    """:func:`rater_values` in numpy."""
    value[groups] = _weighted_log_probs_numpy(expected_counts[groups], table[groups]).sum(axis=1)


def node_values_numpy(expected_counts, table, value):
    """:func:`node_values` in numpy."""
    value[:] = _per_node(_weighted_log_probs_numpy(expected_counts, table).sum(axis=0))


def node_derivatives_numpy(expected_counts, alpha_sens, alpha_spec, b, d, log_guess, table,
                           sigma, slope, ratio, value, gradient, hessian):
    """:func:`node_derivatives` in numpy: the same terms, summed over groups
    and classes per node; in a term's factor e = α - b the group's ability
    is summed against the term, the node's b taken out of the sum."""
    n_nodes = b.shape[0]
    lam = np.tile(np.where(log_guess > -np.inf, np.exp(log_guess), 0.0), 2)
    w_correct, w_wrong = _correct_wrong(expected_counts)
    s, h_x, r = sigma, slope, ratio
    s1 = 1.0 - s
    hx = w_correct * h_x - w_wrong * s
    hxx = w_correct * (h_x * (1.0 - 2.0 * s) - h_x * h_x) - w_wrong * s * s1
    ht_c = lam * s1 * r
    ht = w_correct * ht_c - w_wrong * lam
    htt = w_correct * ht_c * ((1.0 - 2.0 * lam) - lam * s1 * r) - w_wrong * (lam * (1.0 - lam))
    hxt = -w_correct * s * s1 * lam * r * (1.0 + s1 * r)

    def total(x):  # Σ over groups and classes, per node
        return _per_node(x.sum(axis=0))

    def by_ability(x, power=1):  # Σ α^power x, α the group's ability of class z
        return (np.einsum("g,gm->m", alpha_spec**power, x[:, :n_nodes])
                + np.einsum("g,gm->m", alpha_sens**power, x[:, n_nodes:]))

    hx_sum, hxx_sum, hxt_sum = total(hx), total(hxx), total(hxt)
    hxx_alpha = by_ability(hxx)
    value[:] = total(_weighted_log_probs_numpy(expected_counts, table))
    gradient[0] = -d * hx_sum
    gradient[1] = by_ability(hx) - b * hx_sum  # Σ e hx
    gradient[2] = total(ht)
    hessian[0] = d * d * hxx_sum
    hessian[1] = by_ability(hxx, 2) - 2.0 * b * hxx_alpha + b * b * hxx_sum  # Σ e² hxx
    hessian[2] = total(htt)
    hessian[3] = -(d * (hxx_alpha - b * hxx_sum) + hx_sum)  # -Σ (d e hxx + hx)
    hessian[4] = -d * hxt_sum
    hessian[5] = by_ability(hxt) - b * hxt_sum


for _kernel, _twin in (
    (rating_log_table, rating_log_table_numpy),
    (rater_node_terms, rater_node_terms_numpy),
    (pattern_posteriors, pattern_posteriors_numpy),
    (sum_chunks, sum_chunks_numpy),
    (pattern_node_cdf, pattern_node_cdf_numpy),
    (rater_derivatives, rater_derivatives_numpy),
    (rater_values, rater_values_numpy),
    (node_values, node_values_numpy),
    (node_derivatives, node_derivatives_numpy),
):
    _kernel.numpy_twin = _twin
del _kernel, _twin
