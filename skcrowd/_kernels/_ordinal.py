"""OrdinalMixture arithmetic: truncated-normal moments in log space, the
per-item variational sweep (q(x | y=1), q(y), q(z) and, for per-item
difficulty, q(delta)), the by-rater and by-group sums of the global update,
and the item marginal likelihood by quadrature.

Everything works in log space where a probability can underflow: the mass of
a far bin is ``exp(-1000)`` for a precise rater, and its log is what the
variational updates need.  ``item_sweep_parallel`` runs fixed blocks of
items under ``prange``, each summing its own copy of the per-rater sums, and
``item_loglik`` runs items under ``prange`` (disjoint outputs), so results
do not depend on the number of threads; ``item_sweep_serial`` is the twin
for running several restarts in threads at once (numba's workqueue layer
cannot run parallel regions from two threads).  The by-group sums are
serial: cheap multiply-adds in a fixed order.
"""

import math

import numpy as np
from numba import njit, prange

LOG_2PI = math.log(2.0 * math.pi)
LOG_SQRT_2PI = 0.5 * LOG_2PI
SQRT_HALF = math.sqrt(0.5)


# -- scalar special functions ---------------------------------------------------
@njit(cache=True, nogil=True)
def log_ndtr(x):
    """log Φ(x), accurate in both tails (as ``scipy.special.log_ndtr``).

    Above -30 the complementary error function keeps full relative precision
    (erfc(21) ≈ 1e-197 is still a normal double); below, the asymptotic
    series log Φ(x) = -x²/2 - log(-x) - log √(2π) + log(1 - 1/x² + 3/x⁴ - ...)
    has a relative error below 1e-15 with six terms.
    """
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x * SQRT_HALF))
    if x > -30.0:
        return math.log(0.5 * math.erfc(-x * SQRT_HALF))
    if x == -np.inf:
        return -np.inf
    inv = 1.0 / (x * x)
    series = 1.0 - inv * (1.0 - 3.0 * inv * (1.0 - 5.0 * inv * (1.0 - 7.0 * inv * (
        1.0 - 9.0 * inv * (1.0 - 11.0 * inv)))))
    return -0.5 * x * x - math.log(-x) - LOG_SQRT_2PI + math.log(series)


@njit(cache=True, nogil=True)
def digamma(x):
    """ψ(x) for x > 0: recurrence up to x ≥ 10, then the asymptotic series."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return result + math.log(x) - 0.5 * inv - inv2 * (
        1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (
            1.0 / 240.0 - inv2 * (1.0 / 132.0)))))


@njit(cache=True, nogil=True)
def gamma_kl(shape, rate, prior_shape, prior_rate):
    """KL(Gamma(shape, rate) || Gamma(prior_shape, prior_rate)), rates inverse scales."""
    return ((shape - prior_shape) * digamma(shape) - math.lgamma(shape)
            + math.lgamma(prior_shape)
            + prior_shape * (math.log(rate) - math.log(prior_rate))
            + shape * (prior_rate - rate) / rate)


@njit(cache=True, nogil=True)
def log_bin_mass(lo, hi):
    """log(Φ(hi) - Φ(lo)) for lo < hi, without underflow in either tail.

    A bin above the mean is flipped to the lower tail (Φ(hi) - Φ(lo) =
    Φ(-lo) - Φ(-hi)), where log Φ keeps its precision; the difference is
    then log Φ(hi) + log(-expm1(log Φ(lo) - log Φ(hi))).  In two halves
    (:func:`bin_cdfs`, :func:`log_bin_mass_from`) so that the sweep can
    call each half for all of an item's ratings in turn.
    """
    a, b, cdf_a, cdf_b = bin_cdfs(lo, hi)
    return log_bin_mass_from(a, b, cdf_a, cdf_b)


@njit(cache=True, nogil=True)
def bin_cdfs(lo, hi):
    """The bin flipped to the lower tail, ``(a, b)``, and Φ(a), Φ(b) when
    their direct difference is the bin's mass (b > -30); else Φ(b) = -1."""
    if lo == -np.inf and hi == np.inf:
        return lo, hi, 0.0, 1.0
    if lo + hi > 0.0:
        lo, hi = -hi, -lo
    if hi > -30.0:
        cdf_hi = 0.5 * math.erfc(-hi * SQRT_HALF)
        cdf_lo = 0.0 if lo == -np.inf else 0.5 * math.erfc(-lo * SQRT_HALF)
        return lo, hi, cdf_lo, cdf_hi
    return lo, hi, 0.0, -1.0


@njit(cache=True, nogil=True)
def log_bin_mass_from(lo, hi, cdf_lo, cdf_hi):
    """The second half of :func:`log_bin_mass`, from :func:`bin_cdfs`."""
    # Direct difference of CDFs: one log instead of three when the two
    # CDFs differ enough that the subtraction loses nothing.
    if cdf_hi >= 0.0 and cdf_lo < 0.5 * cdf_hi:
        return math.log(cdf_hi - cdf_lo)
    log_hi = log_ndtr(hi)
    log_lo = log_ndtr(lo)
    if log_lo == -np.inf:
        return log_hi
    return log_hi + math.log(-math.expm1(log_lo - log_hi))


@njit(cache=True, nogil=True)
def truncnorm_std(lo, hi):
    """Moments of a standard normal truncated to [lo, hi) (bounds may be ±inf).

    Returns ``(log_z, mean, var, second)``: the log mass of the interval, the
    mean, the variance and E[t²] of the truncated variable.  The densities
    are divided by Z in log space (φ(a)/Z = exp(log φ(a) - log Z)) so that a
    bin 40 standard deviations away is as exact as a central one; the
    variance, a difference of nearly equal numbers in the far tails, is
    clipped to Popoviciu's bound [0, (hi - lo)²/4] and the mean to [lo, hi].
    """
    log_z = log_bin_mass(lo, hi)
    mean, var, second = truncnorm_moments(lo, hi, log_z)
    return log_z, mean, var, second


@njit(cache=True, nogil=True)
def truncnorm_moments(lo, hi, log_z):
    """:func:`truncnorm_std`'s ``(mean, var, second)`` from the bin's log mass."""
    if lo == -np.inf:
        dens_lo = 0.0
        xdens_lo = 0.0
    else:
        dens_lo = math.exp(-0.5 * lo * lo - LOG_SQRT_2PI - log_z)
        xdens_lo = lo * dens_lo
    if hi == np.inf:
        dens_hi = 0.0
        xdens_hi = 0.0
    else:
        dens_hi = math.exp(-0.5 * hi * hi - LOG_SQRT_2PI - log_z)
        xdens_hi = hi * dens_hi
    mean = dens_lo - dens_hi
    var = 1.0 + xdens_lo - xdens_hi - mean * mean
    if mean < lo:
        mean = lo
    elif mean > hi:
        mean = hi
    bound = 0.25 * (hi - lo) * (hi - lo)
    if var > bound:
        var = bound
    elif var < 0.0:
        var = 0.0
    return mean, var, var + mean * mean


@njit(cache=True, nogil=True)
def _bernoulli(t, e):
    """(ω, 1-ω, log ω, log(1-ω)) of the logit ``t``, given ``e = exp(-|t|)``,
    each from its own expression so that neither ω nor 1-ω rounds to 0 or 1
    prematurely."""
    if t == np.inf:
        return 1.0, 0.0, 0.0, -np.inf
    if t == -np.inf:
        return 0.0, 1.0, -np.inf, 0.0
    log1pe = math.log1p(e)
    if t >= 0.0:
        return 1.0 / (1.0 + e), e / (1.0 + e), -log1pe, -t - log1pe
    return e / (1.0 + e), 1.0 / (1.0 + e), t - log1pe, -log1pe


# -- the per-item variational sweep ----------------------------------------------
# Column layouts of the packed arrays (packed so that the per-item function
# takes few arguments: each array argument of a call costs a reference-count
# increment and decrement, per item, which cost more than the arithmetic).
SCALE_LOWER, SCALE_UPPER, SCALE_VALUE, SCALE_LOG_SPAM = 0, 1, 2, 3
RATER_TAU, RATER_LOG_TAU, RATER_SQRT_TAU, RATER_LN_TAU, RATER_LOG_EPS, RATER_LOG_1MEPS = range(6)
GROUP_DELTA, GROUP_LOG_DELTA = 0, 1
ITEM_MU, ITEM_LAM, ITEM_ELBO, ITEM_DELTA_SHAPE, ITEM_DELTA_RATE, ITEM_KNOWN = range(6)
OMEGA, OMEGA_C, ERR, XBAR, XVAR = range(5)
HYPER_SHAPE, HYPER_RATE, HYPER_MU, HYPER_LAM = range(4)
#: the sweep's per-rating scratch columns (see _update_item)
(PASS_LO, PASS_HI, PASS_A, PASS_B, PASS_CDF_A, PASS_CDF_B, PASS_LOG_Z, PASS_T, PASS_ENTROPY,
 PASS_EXP) = range(10)


@njit(cache=True, nogil=True)
def _update_item(m, item_ptr, rater, label, item_group, scale, raters, groups, items,
                 out, hyper, ordinal, spam, item_delta, max_sweeps, tol, rater_acc, scratch):
    """Coordinate updates of item ``m``'s factors, ``max_sweeps`` times at most.

    One sweep, with the rater factors fixed: q(x_n | y=1) = TN(μ_m, 1/ρ_n)
    on the rating's bin, ρ_n = τ̄ δ̄ (eq. 4); ω_n by the exact mean-field
    update (DESIGN §6.4); q(z_m) (eq. 4); with per-item difficulty, q(δ_m).
    Each step maximises the lower bound over one factor, so F never falls.
    Stops early when μ_m (and δ̄_m) move by less than ``tol``.  Then writes
    the item's share of F: its ratings' terms, the Gaussian KL of z_m and,
    per item, the gamma KL of δ_m; and per rating E[(x - z)²].  ``scratch``
    holds the per-rating intermediates of one sweep (at least the item's
    number of ratings rows).
    """
    # Element indexing throughout: a view per rating (raters[j], out[n])
    # costs an atomic reference count, which threads contend for.
    start = item_ptr[m]
    stop = item_ptr[m + 1]
    mu0 = hyper[HYPER_MU]
    lam0 = hyper[HYPER_LAM]
    if item_delta:
        d_mean = items[m, ITEM_DELTA_SHAPE] / items[m, ITEM_DELTA_RATE]
        d_log = digamma(items[m, ITEM_DELTA_SHAPE]) - math.log(items[m, ITEM_DELTA_RATE])
    else:
        c = item_group[m]
        d_mean = groups[c, GROUP_DELTA]
        d_log = groups[c, GROUP_LOG_DELTA]
    # A known item (gold): z_m is observed, q(z_m) a point mass at the value
    # (λ_m = ∞), so F gets log N(z_m | μ, 1/λ) instead of -KL(q(z_m) || p).
    known = items[m, ITEM_KNOWN]
    clamped = not math.isnan(known)
    if clamped:
        items[m, ITEM_MU] = known
        items[m, ITEM_LAM] = np.inf
    if stop == start:
        if clamped:
            dev0 = known - mu0
            items[m, ITEM_ELBO] = 0.5 * math.log(lam0) - LOG_SQRT_2PI - 0.5 * lam0 * dev0 * dev0
            return
        items[m, ITEM_MU] = mu0
        items[m, ITEM_LAM] = lam0
        items[m, ITEM_ELBO] = 0.0
        return
    ratings_part = 0.0
    for sweep in range(max_sweeps):
        mu_old = items[m, ITEM_MU]
        d_old = d_mean
        d_sqrt = math.sqrt(d_mean)
        d_ln = math.log(d_mean)
        nu = items[m, ITEM_MU]
        lam_m = items[m, ITEM_LAM]
        weight = 0.0   # Σ τ̄ ω
        weight_x = 0.0  # Σ τ̄ ω x̄
        ratings_part = 0.0
        # The special functions run in passes over the item's ratings, each
        # pass a run of independent calls (the processor overlaps one
        # rating's erfc or exp with the next one's; in one pass per rating
        # each waits for the last): the ordinal bins' CDFs, their logs, then
        # the moments and logits, then ω.  The arithmetic is the same.
        if ordinal:
            for n in range(start, stop):
                k = n - start
                s = raters[rater[n], RATER_SQRT_TAU] * d_sqrt
                r = label[n]
                lo = (scale[SCALE_LOWER, r] - nu) * s
                hi = (scale[SCALE_UPPER, r] - nu) * s
                a, b, cdf_a, cdf_b = bin_cdfs(lo, hi)
                scratch[k, PASS_LO] = lo
                scratch[k, PASS_HI] = hi
                scratch[k, PASS_A] = a
                scratch[k, PASS_B] = b
                scratch[k, PASS_CDF_A] = cdf_a
                scratch[k, PASS_CDF_B] = cdf_b
            for k in range(stop - start):
                scratch[k, PASS_LOG_Z] = log_bin_mass_from(
                    scratch[k, PASS_A], scratch[k, PASS_B], scratch[k, PASS_CDF_A],
                    scratch[k, PASS_CDF_B])
        for n in range(start, stop):
            k = n - start
            j = rater[n]
            r = label[n]
            tau = raters[j, RATER_TAU]
            rho = tau * d_mean
            if ordinal:
                s = raters[j, RATER_SQRT_TAU] * d_sqrt
                log_z = scratch[k, PASS_LOG_Z]
                m1, v1, m2 = truncnorm_moments(scratch[k, PASS_LO], scratch[k, PASS_HI], log_z)
                out[n, XBAR] = nu + m1 / s
                out[n, XVAR] = v1 / rho
                # entropy of TN = log √(2π/ρ) + log Z + E[t²]/2
                entropy = 0.5 * (LOG_2PI - raters[j, RATER_LN_TAU] - d_ln) + log_z + 0.5 * m2
                t = (raters[j, RATER_LOG_EPS] - raters[j, RATER_LOG_1MEPS] - scale[SCALE_LOG_SPAM, r]
                     + 0.5 * (raters[j, RATER_LOG_TAU] + d_log - raters[j, RATER_LN_TAU] - d_ln)
                     - 0.5 * rho / lam_m + log_z)
            else:
                # x = the value plus a uniform rounding error over its bin
                # (variance width²/12, Sheppard's correction): without it a
                # rater whose integer ratings match the item means exactly
                # drives τ to infinity.
                width = scale[SCALE_UPPER, r] - scale[SCALE_LOWER, r]
                out[n, XBAR] = scale[SCALE_VALUE, r]
                out[n, XVAR] = width * width / 12.0
                entropy = 0.0
                dev = scale[SCALE_VALUE, r] - nu
                t = (raters[j, RATER_LOG_EPS] - raters[j, RATER_LOG_1MEPS] - scale[SCALE_LOG_SPAM, r]
                     + 0.5 * (raters[j, RATER_LOG_TAU] + d_log - LOG_2PI)
                     - 0.5 * rho * (dev * dev + out[n, XVAR] + 1.0 / lam_m))
            scratch[k, PASS_T] = t
            scratch[k, PASS_ENTROPY] = entropy
            if spam:
                scratch[k, PASS_EXP] = math.exp(-abs(t))
        for n in range(start, stop):
            k = n - start
            j = rater[n]
            r = label[n]
            tau = raters[j, RATER_TAU]
            entropy = scratch[k, PASS_ENTROPY]
            if spam:
                w, wc, log_w, log_wc = _bernoulli(scratch[k, PASS_T], scratch[k, PASS_EXP])
            else:
                w, wc, log_w, log_wc = 1.0, 0.0, 0.0, -np.inf
            out[n, OMEGA] = w
            out[n, OMEGA_C] = wc
            # F terms that do not involve z or δ: E ln p(y), the τ part of
            # E ln p(x | y=1), the spam term, entropies of q(x | y=1), q(y).
            if w > 0.0:
                ratings_part += w * (raters[j, RATER_LOG_EPS] + 0.5 * raters[j, RATER_LOG_TAU]
                                     - LOG_SQRT_2PI + entropy - log_w)
            if wc > 0.0:
                ratings_part += wc * (raters[j, RATER_LOG_1MEPS] + scale[SCALE_LOG_SPAM, r] - log_wc)
            weight += tau * w
            weight_x += tau * w * out[n, XBAR]
        if not clamped:
            items[m, ITEM_LAM] = lam0 + d_mean * weight
            items[m, ITEM_MU] = (mu0 * lam0 + d_mean * weight_x) / items[m, ITEM_LAM]
        if item_delta:
            count = 0.0
            total = 0.0
            for n in range(start, stop):
                dev = out[n, XBAR] - items[m, ITEM_MU]
                e = out[n, XVAR] + dev * dev + 1.0 / items[m, ITEM_LAM]
                count += out[n, OMEGA]
                total += raters[rater[n], RATER_TAU] * out[n, OMEGA] * e
            items[m, ITEM_DELTA_SHAPE] = hyper[HYPER_SHAPE] + 0.5 * count
            items[m, ITEM_DELTA_RATE] = hyper[HYPER_RATE] + 0.5 * total
            d_mean = items[m, ITEM_DELTA_SHAPE] / items[m, ITEM_DELTA_RATE]
            d_log = digamma(items[m, ITEM_DELTA_SHAPE]) - math.log(items[m, ITEM_DELTA_RATE])
        if abs(items[m, ITEM_MU] - mu_old) < tol and abs(d_mean - d_old) < tol * d_old:
            break
    # Terms with z and δ, at the final q(z_m), q(δ_m).
    mu_m = items[m, ITEM_MU]
    inv_lam = 1.0 / items[m, ITEM_LAM]
    for n in range(start, stop):
        j = rater[n]
        dev = out[n, XBAR] - mu_m
        e = out[n, XVAR] + dev * dev + inv_lam
        out[n, ERR] = e
        ratings_part += out[n, OMEGA] * (0.5 * d_log - 0.5 * raters[j, RATER_TAU] * d_mean * e)
        # the global update's by-rater sums, in item order within the
        # block, so serial and parallel runs agree to the last bit
        rater_acc[j, 0] += out[n, OMEGA_C]
        rater_acc[j, 1] += out[n, OMEGA]
        rater_acc[j, 2] += d_mean * out[n, OMEGA] * e
        rater_acc[j, 3] += out[n, OMEGA] * e
    dev0 = mu_m - mu0
    if clamped:
        total = ratings_part + 0.5 * math.log(lam0) - LOG_SQRT_2PI - 0.5 * lam0 * dev0 * dev0
    else:
        total = ratings_part + 0.5 * math.log(lam0 * inv_lam) + 0.5 - 0.5 * lam0 * (
            dev0 * dev0 + inv_lam)
    if item_delta:
        total -= gamma_kl(items[m, ITEM_DELTA_SHAPE], items[m, ITEM_DELTA_RATE],
                          hyper[HYPER_SHAPE], hyper[HYPER_RATE])
    items[m, ITEM_ELBO] = total


@njit(cache=True, nogil=True)
def _sweep_block(c, block_ptr, item_ptr, rater, label, item_group, scale, raters, groups,
                 items, out, hyper, ordinal, spam, item_delta, max_sweeps, tol, rater_acc):
    """The items of block ``c``, in order, summing into ``rater_acc[c]``."""
    acc = rater_acc[c]
    acc[:, :] = 0.0
    longest = 0
    for m in range(block_ptr[c], block_ptr[c + 1]):
        longest = max(longest, item_ptr[m + 1] - item_ptr[m])
    scratch = np.empty((longest, PASS_EXP + 1))
    for m in range(block_ptr[c], block_ptr[c + 1]):
        _update_item(m, item_ptr, rater, label, item_group, scale, raters, groups, items,
                     out, hyper, ordinal, spam, item_delta, max_sweeps, tol, acc, scratch)


@njit(cache=True, nogil=True, parallel=True)
def item_sweep_parallel(item_ptr, rater, label, item_group, scale, raters, groups, items,
                        out, hyper, ordinal, spam, item_delta, max_sweeps, tol, block_ptr,
                        rater_acc):
    """Local step over every item, blocks of items in parallel (see ``_update_item``).

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    rater, label : int32 (n_ratings,)
    item_group : int32 (n_items,)
        Difficulty category of each item (ignored with ``item_delta``).
    scale : float64 (4, n_classes)
        Per label code: bin [b_{k-1}, b_k), the scale value (the observed x
        of the Gaussian link) and log π_k (over the bin width for the
        Gaussian link).
    raters : float64 (n_raters, 6)
        E τ, E ln τ, √(E τ), ln E τ, ln ε, ln(1 - ε).
    groups : float64 (n_groups, 2)
        E δ_c, E ln δ_c.
    items : float64 (n_items, 6), in/out
        μ_m, λ_m of q(z_m) (the sweep starts at μ_m), F share (output),
        q(δ_m)'s shape and rate with ``item_delta``, and the item's known
        value (gold; NaN when unknown), which fixes q(z_m) at it.
    out : float64 (n_ratings, 5), output
        ω, 1 - ω, E[(x - z)²], E x and Var x of q(x | y=1).
    hyper : float64 (4,)
        φ, η, μ, λ.
    ordinal, spam, item_delta : bool
    max_sweeps : int
    tol : float
    block_ptr : int64 (n_blocks + 1,)
        Fixed blocks of items (from the data shape, not the thread count).
    rater_acc : float64 (n_blocks, n_raters, 4), output
        Per block and rater, Σ 1 - ω, Σ ω, Σ δ̄ ω E[(x - z)²] and
        Σ ω E[(x - z)²] over the block's ratings (the last gives the one
        shared δ's update without a by-group pass), summed in item order while the ratings are in
        cache (the global update's by-rater sums, without a second pass of
        random reads).  The caller sums the blocks in order, so serial and
        parallel runs agree to the last bit.
    """
    for c in prange(block_ptr.shape[0] - 1):
        _sweep_block(c, block_ptr, item_ptr, rater, label, item_group, scale, raters, groups,
                     items, out, hyper, ordinal, spam, item_delta, max_sweeps, tol, rater_acc)


@njit(cache=True, nogil=True)
def item_sweep_serial(item_ptr, rater, label, item_group, scale, raters, groups, items,
                      out, hyper, ordinal, spam, item_delta, max_sweeps, tol, block_ptr,
                      rater_acc):
    """Serial twin of :func:`item_sweep_parallel`, the same blocks in turn
    (for threaded restarts: numba's workqueue layer cannot run parallel
    regions from two threads)."""
    for c in range(block_ptr.shape[0] - 1):
        _sweep_block(c, block_ptr, item_ptr, rater, label, item_group, scale, raters, groups,
                     items, out, hyper, ordinal, spam, item_delta, max_sweeps, tol, rater_acc)


# -- the global update's sums ------------------------------------------------------
@njit(cache=True, nogil=True)
def group_sums(group_ptr, group_items, item_ptr, rater, out, tau_mean,
               genuine_sum, error_sum):
    """Per group c: Σ ω and Σ τ̄_n ω E[(x - z)²] over the ratings of its items
    (the statistics of q(δ_c)); items of group c are
    ``group_items[group_ptr[c]:group_ptr[c + 1]]``.  Serial, in a fixed order."""
    for c in range(group_ptr.shape[0] - 1):
        genuine = 0.0
        error = 0.0
        for p in range(group_ptr[c], group_ptr[c + 1]):
            m = group_items[p]
            for n in range(item_ptr[m], item_ptr[m + 1]):
                genuine += out[n, OMEGA]
                error += tau_mean[rater[n]] * out[n, OMEGA] * out[n, ERR]
        genuine_sum[c] = genuine
        error_sum[c] = error


# -- marginal likelihood by quadrature ------------------------------------------------
@njit(cache=True, nogil=True, parallel=True)
def item_loglik(item_ptr, rater, label, lower, upper, value, log_spam, ordinal,
                tau_mean, eps, center, scale, item_delta_scale, delta_nodes,
                log_delta_weights, breaks, offsets, gl_nodes, gl_weights, mu0, lam0,
                loglik):
    """log ∫∫ N(z | μ, 1/λ) p(δ) Π_n p(r_n | z, δ) dz dδ per item, by quadrature.

    z: composite Gauss–Legendre (nodes ``gl_nodes``, weights ``gl_weights``
    on [-1, 1]) on the panels between the sorted break points ``breaks``
    (the range ends, the thresholds, points beyond the scale) merged with the
    item's own ``center[m] + scale[m] * offsets``.  Panels end where the
    integrand can bend sharply: at each bin edge (a precise rater's
    likelihood is a step there) and around the posterior peak, which can be
    much narrower than a bin; between them it is smooth.  The spam floor
    leaves a broad, prior-shaped part of the posterior that a rule centred
    on the peak alone (adaptive Gauss–Hermite) misses by several percent.
    δ: the nodes ``item_delta_scale[m] * delta_nodes`` with log weights that
    sum to 0 in linear space (one node of weight 1 for a plugged-in δ̄).
    p(r | z, δ) = ε Φ-mass of r's bin under N(z, 1/(τ̄ δ)) + (1 - ε) π_r; for
    the Gaussian link the Gaussian density of the value times the bin width
    (``log_spam`` is then log π_r minus the log width, as in the fit).
    """
    n_items = item_ptr.shape[0] - 1
    n_gl = gl_nodes.shape[0]
    n_d = delta_nodes.shape[0]
    n_b = breaks.shape[0]
    n_o = offsets.shape[0]
    log_norm0 = 0.5 * math.log(lam0) - LOG_SQRT_2PI
    for m in prange(n_items):
        start = item_ptr[m]
        stop = item_ptr[m + 1]
        if stop == start:
            loglik[m] = 0.0
            continue
        points = np.empty(n_b + n_o)
        for k in range(n_b):
            points[k] = breaks[k]
        for k in range(n_o):
            p = center[m] + scale[m] * offsets[k]
            points[n_b + k] = min(max(p, breaks[0]), breaks[n_b - 1])
        points.sort()
        n_panels = n_b + n_o - 1
        terms = np.empty(n_panels * n_gl * n_d)
        top = -np.inf
        idx = 0
        for q in range(n_panels):
            half = 0.5 * (points[q + 1] - points[q])
            mid = 0.5 * (points[q + 1] + points[q])
            for k in range(n_gl):
                if half <= 0.0:
                    for d in range(n_d):
                        terms[idx] = -np.inf
                        idx += 1
                    continue
                z = mid + half * gl_nodes[k]
                dz = z - mu0
                base = math.log(half * gl_weights[k]) + log_norm0 - 0.5 * lam0 * dz * dz
                for d in range(n_d):
                    delta = item_delta_scale[m] * delta_nodes[d]
                    total = base + log_delta_weights[d]
                    for n in range(start, stop):
                        j = rater[n]
                        r = label[n]
                        rho = tau_mean[j] * delta
                        log_spam_mass = log_spam[r]
                        if ordinal:
                            s = math.sqrt(rho)
                            log_lik = log_bin_mass((lower[r] - z) * s, (upper[r] - z) * s)
                        else:
                            # densities times the bin width: the midpoint-rule
                            # mass of the bin, so the K levels' masses sum to ~1
                            dev = value[r] - z
                            log_width = math.log(upper[r] - lower[r])
                            log_lik = (0.5 * (math.log(rho) - LOG_2PI) - 0.5 * rho * dev * dev
                                       + log_width)
                            log_spam_mass += log_width
                        if eps[j] < 1.0:
                            a = math.log(eps[j]) + log_lik if eps[j] > 0.0 else -np.inf
                            b = math.log1p(-eps[j]) + log_spam_mass
                            h = max(a, b)
                            log_lik = h + math.log(math.exp(a - h) + math.exp(b - h))
                        total += log_lik
                    terms[idx] = total
                    idx += 1
                    if total > top:
                        top = total
        if top == -np.inf:
            loglik[m] = -np.inf
            continue
        acc = 0.0
        for k in range(idx):
            acc += math.exp(terms[k] - top)
        loglik[m] = top + math.log(acc)
