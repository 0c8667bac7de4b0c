"""OrdinalMixture arithmetic: truncated-normal moments in log space, the
per-item variational sweep (q(x | y=1), q(y), q(z) and, for per-item
difficulty, q(delta)), the by-rater and by-group sums of the global update,
and the item marginal likelihood by quadrature.

Everything works in log space where a probability can underflow: the mass of
a far bin is ``exp(-1000)`` for a precise rater, and its log is what the
variational updates need.  ``item_sweep`` runs fixed blocks of items
under ``prange``, each summing its own copy of the per-rater sums, and
``item_loglik`` runs items under ``prange`` (disjoint outputs), so results
do not depend on the number of threads; their ``.serial`` variants run
several restarts in threads at once (numba's workqueue layer cannot run
parallel regions from two threads).  The by-group sums are
serial: cheap multiply-adds in a fixed order.
"""

import math

import numpy as np
from numba import prange
from scipy.special import digamma as scipy_digamma
from scipy.special import erfc, gammaln, ndtr

from ._common import digamma, exp_fast, log_fast, serial_and_parallel
from ._config import jit, use_numpy, with_numpy_twin
from ._dawid_skene import rating_items

LOG_2PI = math.log(2.0 * math.pi)
LOG_SQRT_2PI = 0.5 * LOG_2PI
SQRT_HALF = math.sqrt(0.5)


# -- scalar special functions ---------------------------------------------------
@jit
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


@jit
def gamma_kl(shape, rate, prior_shape, prior_rate):
    """KL(Gamma(shape, rate) || Gamma(prior_shape, prior_rate)), rates inverse scales."""
    return ((shape - prior_shape) * digamma(shape) - math.lgamma(shape)
            + math.lgamma(prior_shape)
            + prior_shape * (math.log(rate) - math.log(prior_rate))
            + shape * (prior_rate - rate) / rate)


@jit
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


@jit
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


@jit
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


@jit
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


@jit
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


@jit
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


# -- the normal CDF and density together, vectorisable ------------------------------
# Rational approximations of erf and erfc (Cephes ndtr.c, after Hart et al.,
# "Computer Approximations", 1968): erf(y) = y T(y²)/U(y²) for y < 1,
# erfc(y) = exp(-y²) P(y)/Q(y) for 1 <= y < 8 and exp(-y²) R(y)/S(y) above
# (U, Q, S monic).  With y = |x|/√2, exp(-y²) is √(2π) φ(x), so one
# exponential gives both Φ(x) and φ(x), where erfc and exp from libm take
# two calls that do not vectorise (no SVML here).
SQRT_2PI = math.sqrt(2.0 * math.pi)
INV_SQRT_2PI = 1.0 / SQRT_2PI
DEKKER_SPLIT = 134217729.0  # 2^27 + 1


@jit(inline="always", error_model="numpy")
def ndtr_pdf(x):
    """(Φ(x), φ(x)) within a few ulps, branch-free so that a loop of it
    vectorises; beyond ±40 (inf included) they are (0 or 1, 0) exactly."""
    x = min(max(x, -40.0), 40.0)
    # x² = h + err exactly (Dekker's product): the rounding of x² would
    # otherwise be the density's relative error times x²/2 in the tails
    h = x * x
    split = DEKKER_SPLIT * x
    x_hi = split - (split - x)
    x_lo = x - x_hi
    err = ((x_hi * x_hi - h) + 2.0 * x_hi * x_lo) + x_lo * x_lo
    pdf = INV_SQRT_2PI * exp_fast(-0.5 * h) * (1.0 - 0.5 * err)
    y = abs(x) * SQRT_HALF
    y2 = y * y
    erf = y * ((((9.60497373987051638749E0 * y2 + 9.00260197203842689217E1) * y2
                 + 2.23200534594684319226E3) * y2 + 7.00332514112805075473E3) * y2
               + 5.55923013010394962768E4) / (((((y2 + 3.35617141647503099647E1) * y2
                                               + 5.21357949780152679795E2) * y2
                                              + 4.59432382970980127987E3) * y2
                                             + 2.26290000613890934246E4) * y2
                                            + 4.92673942608635921086E4)
    near = ((((((((2.46196981473530512524E-10 * y + 5.64189564831068821977E-1) * y
                  + 7.46321056442269912687E0) * y + 4.86371970985681366614E1) * y
                + 1.96520832956077098242E2) * y + 5.26445194995477358631E2) * y
              + 9.34528527171957607540E2) * y + 1.02755188689515710272E3) * y
            + 5.57535335369399327526E2) / ((((((((y + 1.32281951154744992508E1) * y
                                                 + 8.67072140885989742329E1) * y
                                                + 3.54937778887819891062E2) * y
                                               + 9.75708501743205489753E2) * y
                                              + 1.82390916687909736289E3) * y
                                             + 2.24633760818710981792E3) * y
                                            + 1.65666309194161350182E3) * y
                                           + 5.57535340817727675546E2)
    far = (((((5.64189583547755073984E-1 * y + 1.27536670759978104416E0) * y
              + 5.01905042251180477414E0) * y + 6.16021097993053585195E0) * y
            + 7.40974269950448939160E0) * y + 2.97886665372100240670E0) / ((((((
                y + 2.26052863220117276590E0) * y + 9.39603524938001434673E0) * y
                + 1.20489539808096656605E1) * y + 1.70814450747565897222E1) * y
                + 9.60896809063285878198E0) * y + 3.36907645100081516050E0)
    # the tail 1 - Φ(|x|) = erfc(y) / 2
    tail = 0.5 * SQRT_2PI * pdf * (near if y < 8.0 else far)
    central = 0.5 + (-0.5 * erf if x < 0.0 else 0.5 * erf)
    outer = tail if x < 0.0 else 1.0 - tail
    return (central if y < 1.0 else outer), pdf


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


@jit(inline="always")
def _item_difficulty(m, items, item_group, groups, item_delta):
    """E δ and E ln δ for item ``m``: its own q(δ_m) or its group's."""
    if item_delta:
        return (items[ITEM_DELTA_SHAPE, m] / items[ITEM_DELTA_RATE, m],
                digamma(items[ITEM_DELTA_SHAPE, m]) - math.log(items[ITEM_DELTA_RATE, m]))
    c = item_group[m]
    return groups[c, GROUP_DELTA], groups[c, GROUP_LOG_DELTA]


@jit(inline="always")
def _clamp_known(m, items):
    """A known item (gold): z_m is observed, q(z_m) a point mass at the value
    (λ_m = ∞), so F gets log N(z_m | μ, 1/λ) instead of -KL(q(z_m) || p).
    Returns whether item ``m`` is known."""
    known = items[ITEM_KNOWN, m]
    if math.isnan(known):
        return False
    items[ITEM_MU, m] = known
    items[ITEM_LAM, m] = np.inf
    return True


@jit(inline="always")
def _unrated_item(m, items, hyper, clamped):
    """Item ``m`` without ratings: q(z_m) is the prior (or the known value)."""
    mu0 = hyper[HYPER_MU]
    lam0 = hyper[HYPER_LAM]
    if clamped:
        dev0 = items[ITEM_KNOWN, m] - mu0
        items[ITEM_ELBO, m] = 0.5 * math.log(lam0) - LOG_SQRT_2PI - 0.5 * lam0 * dev0 * dev0
        return
    items[ITEM_MU, m] = mu0
    items[ITEM_LAM, m] = lam0
    items[ITEM_ELBO, m] = 0.0


@jit(inline="always")
def _update_z(m, items, hyper, clamped, d_mean, weight, weight_x):
    """q(z_m) (eq. 4) from Σ τ̄ ω and Σ τ̄ ω x̄ (a known item keeps its value)."""
    if not clamped:
        lam0 = hyper[HYPER_LAM]
        items[ITEM_LAM, m] = lam0 + d_mean * weight
        items[ITEM_MU, m] = (hyper[HYPER_MU] * lam0 + d_mean * weight_x) / items[ITEM_LAM, m]


@jit(inline="always")
def _squared_error(xbar, xvar, mu_m, inv_lam):
    """E[(x - z)²] of a rating under q(x | y=1) and q(z_m)."""
    dev = xbar - mu_m
    return xvar + dev * dev + inv_lam


@jit(inline="always")
def _update_delta(m, items, hyper, count, total):
    """q(δ_m) from Σ ω and Σ τ̄ ω E[(x - z)²] over the item's ratings;
    returns E δ_m and E ln δ_m."""
    items[ITEM_DELTA_SHAPE, m] = hyper[HYPER_SHAPE] + 0.5 * count
    items[ITEM_DELTA_RATE, m] = hyper[HYPER_RATE] + 0.5 * total
    return (items[ITEM_DELTA_SHAPE, m] / items[ITEM_DELTA_RATE, m],
            digamma(items[ITEM_DELTA_SHAPE, m]) - math.log(items[ITEM_DELTA_RATE, m]))


@jit(inline="always")
def _add_rating_sums(rater_acc, j, omega, omega_c, d_mean, err):
    """A rating's share of the global update's by-rater sums (added in item
    order within the block, so serial and parallel runs agree to the last bit)."""
    rater_acc[j, 0] += omega_c
    rater_acc[j, 1] += omega
    rater_acc[j, 2] += d_mean * omega * err
    rater_acc[j, 3] += omega * err


@jit(inline="always")
def _item_total(m, items, hyper, item_delta, clamped, ratings_part):
    """Item ``m``'s share of F: its ratings' terms ``ratings_part`` plus the
    z term (the Gaussian KL of q(z_m), or log N(z_m | μ, 1/λ) for a known
    item) and, per item, the gamma KL of q(δ_m)."""
    mu0 = hyper[HYPER_MU]
    lam0 = hyper[HYPER_LAM]
    inv_lam = 1.0 / items[ITEM_LAM, m]
    dev0 = items[ITEM_MU, m] - mu0
    if clamped:
        total = ratings_part + 0.5 * math.log(lam0) - LOG_SQRT_2PI - 0.5 * lam0 * dev0 * dev0
    else:
        total = ratings_part + 0.5 * math.log(lam0 * inv_lam) + 0.5 - 0.5 * lam0 * (
            dev0 * dev0 + inv_lam)
    if item_delta:
        total -= gamma_kl(items[ITEM_DELTA_SHAPE, m], items[ITEM_DELTA_RATE, m],
                          hyper[HYPER_SHAPE], hyper[HYPER_RATE])
    items[ITEM_ELBO, m] = total


@jit(inline="always")
def _update_z_delta(m, start, stop, rater, raters, items, out, hyper, item_delta, clamped,
                    d_mean, d_log, weight, weight_x):
    """q(z_m), then, with per-item difficulty, q(δ_m) from the ratings in
    ``out``; returns E δ_m and E ln δ_m (unchanged without)."""
    _update_z(m, items, hyper, clamped, d_mean, weight, weight_x)
    if item_delta:
        count = 0.0
        total = 0.0
        mu_m = items[ITEM_MU, m]
        inv_lam = 1.0 / items[ITEM_LAM, m]
        for n in range(start, stop):
            e = _squared_error(out[n, XBAR], out[n, XVAR], mu_m, inv_lam)
            count += out[n, OMEGA]
            total += raters[rater[n], RATER_TAU] * out[n, OMEGA] * e
        d_mean, d_log = _update_delta(m, items, hyper, count, total)
    return d_mean, d_log


@jit(inline="always")
def _item_elbo(m, start, stop, rater, raters, items, out, d_mean, d_log, ratings_part,
               rater_acc):
    """The z and δ terms of F of the ratings in ``out`` at the final q(z_m)
    and q(δ_m) added to ``ratings_part``, E[(x - z)²] per rating (to
    ``out``) and the by-rater sums; returns the ratings' share of F."""
    mu_m = items[ITEM_MU, m]
    inv_lam = 1.0 / items[ITEM_LAM, m]
    for n in range(start, stop):
        j = rater[n]
        e = _squared_error(out[n, XBAR], out[n, XVAR], mu_m, inv_lam)
        out[n, ERR] = e
        ratings_part += out[n, OMEGA] * (0.5 * d_log - 0.5 * raters[j, RATER_TAU] * d_mean * e)
        _add_rating_sums(rater_acc, j, out[n, OMEGA], out[n, OMEGA_C], d_mean, e)
    return ratings_part


@jit
def _update_item(m, item_ptr, rater, label, item_group, scale, raters, groups, items,
                 out, hyper, ordinal, spam, item_delta, max_sweeps, tol, rater_acc, scratch):
    """Coordinate updates of item ``m``'s factors, ``max_sweeps`` times at most.

    One sweep, with the rater factors fixed: q(x_n | y=1) = TN(μ_m, 1/ρ_n)
    on the rating's bin, ρ_n = τ̄ δ̄ (eq. 4); ω_n by the exact mean-field
    update (Lakshminarayanan & Teh 2013); q(z_m) (eq. 4); with per-item
    difficulty, q(δ_m).
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
    d_mean, d_log = _item_difficulty(m, items, item_group, groups, item_delta)
    clamped = _clamp_known(m, items)
    if stop == start:
        _unrated_item(m, items, hyper, clamped)
        return
    ratings_part = 0.0
    for sweep in range(max_sweeps):
        mu_old = items[ITEM_MU, m]
        d_old = d_mean
        d_sqrt = math.sqrt(d_mean)
        d_ln = math.log(d_mean)
        nu = items[ITEM_MU, m]
        lam_m = items[ITEM_LAM, m]
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
        d_mean, d_log = _update_z_delta(m, start, stop, rater, raters, items, out, hyper,
                                        item_delta, clamped, d_mean, d_log, weight, weight_x)
        if abs(items[ITEM_MU, m] - mu_old) < tol and abs(d_mean - d_old) < tol * d_old:
            break
    ratings_part = _item_elbo(m, start, stop, rater, raters, items, out, d_mean, d_log,
                              ratings_part, rater_acc)
    _item_total(m, items, hyper, item_delta, clamped, ratings_part)


# -- one sweep, vectorised ----------------------------------------------------------
# A fit takes one sweep per iteration (``max_sweeps=1``): every item's
# factors from the same rater factors and the item's current q(z_m).  Then
# no rating waits for another, and the ratings of a whole block run through
# two loops that LLVM vectorises (the special functions above are
# branch-free): one TREC 2010 sweep 59-68 ns per rating, serial, against
# 125-148 for the general kernel with libm's erfc, exp and log1p (doc/ordinal.rst).
# The rare bin that the direct difference of CDFs cannot resolve (far in a
# tail) is redone by the scalar functions.  Columns of the block's
# structure-of-arrays scratch:
(ONCE_LO, ONCE_HI, ONCE_S, ONCE_RHO, ONCE_NU, ONCE_LOGIT, ONCE_ENTROPY, ONCE_GENUINE, ONCE_SPAM,
 ONCE_LOG_Z, ONCE_MEAN, ONCE_VAR, ONCE_XBAR, ONCE_XVAR, ONCE_OMEGA, ONCE_OMEGA_C, ONCE_PART,
 ONCE_SLOW, ONCE_TAU) = range(19)


@jit(inline="always", error_model="numpy")
def _genuine_terms(k, work, log_z, mean, var, spam):
    """Rating ``k``'s factors from its bin's log mass ``log_z`` and the
    standardised truncated-normal moments (written to ``work``): x̄ and
    Var x of q(x | y=1), ω by the exact mean-field update (Lakshminarayanan
    & Teh 2013) and
    the rating's share of F without the z and δ terms.  The parts that do
    not involve the bin are in ``work`` already (:func:`_sweep_block_once`)."""
    second = var + mean * mean
    work[ONCE_XBAR, k] = work[ONCE_NU, k] + mean / work[ONCE_S, k]
    work[ONCE_XVAR, k] = var / work[ONCE_RHO, k]
    # entropy of TN = log √(2π/ρ) + log Z + E[t²]/2
    entropy = work[ONCE_ENTROPY, k] + log_z + 0.5 * second
    if spam:
        t = work[ONCE_LOGIT, k] + log_z
        e = exp_fast(-abs(t))
        # log1p(e) = log(u) e / (u - 1), u = 1 + e (Goldberg 1991, Thm. 4)
        u = 1.0 + e
        log1pe = e if u == 1.0 else log_fast(u) * e / (u - 1.0)
        positive = t >= 0.0
        w = 1.0 / u if positive else e / u
        wc = e / u if positive else 1.0 / u
        log_w = -log1pe if positive else t - log1pe
        log_wc = -t - log1pe if positive else -log1pe
    else:
        w, wc, log_w, log_wc = 1.0, 0.0, 0.0, -np.inf
    work[ONCE_OMEGA, k] = w
    work[ONCE_OMEGA_C, k] = wc
    # E ln p(y), the τ part of E ln p(x | y=1), the spam term, the entropies
    # of q(x | y=1) and q(y)
    part = 0.0
    if w > 0.0:
        part += w * (work[ONCE_GENUINE, k] + entropy - log_w)
    if wc > 0.0:
        part += wc * (work[ONCE_SPAM, k] - log_wc)
    work[ONCE_PART, k] = part


@jit(error_model="numpy")
def _once_bins(count, work):
    """Each rating's bin: log Z and the standardised truncated-normal moments
    (:func:`truncnorm_std`), from Φ and φ at its ends.  Unit-stride columns
    only, and few of them: a gather through the rater index, or more columns
    than LLVM checks for overlap at run time, stops it vectorising."""
    for k in range(count):
        lo = work[ONCE_LO, k]
        hi = work[ONCE_HI, k]
        # the bin flipped to the lower tail, where Φ keeps its precision
        flip = lo + hi > 0.0
        a = -hi if flip else lo
        b = -lo if flip else hi
        cdf_a, pdf_a = ndtr_pdf(a)
        cdf_b, pdf_b = ndtr_pdf(b)
        direct = b > -30.0 and cdf_a < 0.5 * cdf_b
        mass = cdf_b - cdf_a if direct else 1.0
        dens_lo = (pdf_b if flip else pdf_a) / mass
        dens_hi = (pdf_a if flip else pdf_b) / mass
        mean = dens_lo - dens_hi
        var = (1.0 + (lo * dens_lo if lo > -np.inf else 0.0)
               - (hi * dens_hi if hi < np.inf else 0.0) - mean * mean)
        work[ONCE_LOG_Z, k] = log_fast(mass)
        work[ONCE_MEAN, k] = min(max(mean, lo), hi)
        work[ONCE_VAR, k] = min(max(var, 0.0), 0.25 * (hi - lo) * (hi - lo))
        work[ONCE_SLOW, k] = 0.0 if direct else 1.0


@jit(error_model="numpy")
def _once_ratings(count, work, spam):
    """Each rating's factors from its bin's (:func:`_genuine_terms`), vectorised."""
    for k in range(count):
        _genuine_terms(k, work, work[ONCE_LOG_Z, k], work[ONCE_MEAN, k], work[ONCE_VAR, k], spam)


@jit(error_model="numpy")
def _once_far_bins(count, work, spam):
    """Ratings whose bin is far in a tail, again with the scalar functions
    (log Φ by its asymptotic series where Φ underflows)."""
    for k in range(count):
        if work[ONCE_SLOW, k] != 0.0:
            log_z, mean, var, _ = truncnorm_std(work[ONCE_LO, k], work[ONCE_HI, k])
            _genuine_terms(k, work, log_z, mean, var, spam)


@jit
def _sweep_block_once(c, block_ptr, item_ptr, rater, label, item_group, scale, raters, groups,
                      items, out, hyper, spam, item_delta, rater_acc, write_out):
    """One sweep of block ``c``'s items (ordinal link), the ratings vectorised:
    the same updates as :func:`_update_item` with ``max_sweeps=1``; the
    ratings' factors go to ``out`` only with ``write_out``."""
    acc = rater_acc[c]
    acc[:, :] = 0.0
    m0 = block_ptr[c]
    m1 = block_ptr[c + 1]
    first = item_ptr[m0]
    count = item_ptr[m1] - first
    work = np.empty((ONCE_TAU + 1, count))
    item_d = np.empty((m1 - m0, 2))  # E δ, E ln δ of each item
    # √(E δ) and ln E δ of each group once, rather than once per item (the
    # same math calls on the same values, so the same bits)
    group_roots = np.empty((0 if item_delta else groups.shape[0], 2))
    for g in range(group_roots.shape[0]):
        group_roots[g, 0] = math.sqrt(groups[g, GROUP_DELTA])
        group_roots[g, 1] = math.log(groups[g, GROUP_DELTA])
    # Per rating, everything but its bin's mass, in columns (the terms of
    # _update_item's logit and F share that do not involve log Z)
    for m in range(m0, m1):
        _clamp_known(m, items)
        d_mean, d_log = _item_difficulty(m, items, item_group, groups, item_delta)
        item_d[m - m0, 0] = d_mean
        item_d[m - m0, 1] = d_log
        if item_delta:
            d_sqrt = math.sqrt(d_mean)
            d_ln = math.log(d_mean)
        else:
            d_sqrt = group_roots[item_group[m], 0]
            d_ln = group_roots[item_group[m], 1]
        nu = items[ITEM_MU, m]
        inv_lam = 1.0 / items[ITEM_LAM, m]
        for n in range(item_ptr[m], item_ptr[m + 1]):
            # unsigned indices: numba wraps a negative signed index (a compare
            # and an add per access); these are never negative
            k = np.uint64(n - first)
            j = np.uint64(rater[n])
            r = np.uint64(label[n])
            s = raters[j, RATER_SQRT_TAU] * d_sqrt
            work[ONCE_TAU, k] = raters[j, RATER_TAU]
            rho = raters[j, RATER_TAU] * d_mean
            work[ONCE_LO, k] = (scale[SCALE_LOWER, r] - nu) * s
            work[ONCE_HI, k] = (scale[SCALE_UPPER, r] - nu) * s
            work[ONCE_S, k] = s
            work[ONCE_RHO, k] = rho
            work[ONCE_NU, k] = nu
            work[ONCE_LOGIT, k] = (
                raters[j, RATER_LOG_EPS] - raters[j, RATER_LOG_1MEPS] - scale[SCALE_LOG_SPAM, r]
                + 0.5 * (raters[j, RATER_LOG_TAU] + d_log - raters[j, RATER_LN_TAU] - d_ln)
                - 0.5 * rho * inv_lam)
            work[ONCE_ENTROPY, k] = 0.5 * (LOG_2PI - raters[j, RATER_LN_TAU] - d_ln)
            work[ONCE_GENUINE, k] = (raters[j, RATER_LOG_EPS] + 0.5 * raters[j, RATER_LOG_TAU]
                                     - LOG_SQRT_2PI)
            work[ONCE_SPAM, k] = raters[j, RATER_LOG_1MEPS] + scale[SCALE_LOG_SPAM, r]
    _once_bins(count, work)
    _once_ratings(count, work, spam)
    _once_far_bins(count, work, spam)
    for m in range(m0, m1):
        start = item_ptr[m]
        stop = item_ptr[m + 1]
        clamped = not math.isnan(items[ITEM_KNOWN, m])
        if stop == start:
            _unrated_item(m, items, hyper, clamped)
            continue
        # the same updates as _update_z_delta and _item_elbo, each rating's
        # factors read from its columns (``out`` is only written)
        d_mean = item_d[m - m0, 0]
        d_log = item_d[m - m0, 1]
        weight = 0.0   # Σ τ̄ ω
        weight_x = 0.0  # Σ τ̄ ω x̄
        ratings_part = 0.0
        for k in range(np.uint64(start - first), np.uint64(stop - first)):
            tau_w = work[ONCE_TAU, k] * work[ONCE_OMEGA, k]
            ratings_part += work[ONCE_PART, k]
            weight += tau_w
            weight_x += tau_w * work[ONCE_XBAR, k]
        _update_z(m, items, hyper, clamped, d_mean, weight, weight_x)
        mu_m = items[ITEM_MU, m]
        inv_lam = 1.0 / items[ITEM_LAM, m]
        if item_delta:
            count = 0.0
            total = 0.0
            for k in range(np.uint64(start - first), np.uint64(stop - first)):
                e = _squared_error(work[ONCE_XBAR, k], work[ONCE_XVAR, k], mu_m, inv_lam)
                count += work[ONCE_OMEGA, k]
                total += work[ONCE_TAU, k] * work[ONCE_OMEGA, k] * e
            d_mean, d_log = _update_delta(m, items, hyper, count, total)
        for n in range(start, stop):
            k = np.uint64(n - first)
            omega = work[ONCE_OMEGA, k]
            e = _squared_error(work[ONCE_XBAR, k], work[ONCE_XVAR, k], mu_m, inv_lam)
            ratings_part += omega * (0.5 * d_log - 0.5 * work[ONCE_TAU, k] * d_mean * e)
            _add_rating_sums(acc, np.uint64(rater[n]), omega, work[ONCE_OMEGA_C, k], d_mean, e)
            if write_out:
                out[n, OMEGA] = omega
                out[n, OMEGA_C] = work[ONCE_OMEGA_C, k]
                out[n, ERR] = e
                out[n, XBAR] = work[ONCE_XBAR, k]
                out[n, XVAR] = work[ONCE_XVAR, k]
        _item_total(m, items, hyper, item_delta, clamped, ratings_part)


@jit
def _sweep_block(c, block_ptr, item_ptr, rater, label, item_group, scale, raters, groups,
                 items, out, hyper, ordinal, spam, item_delta, max_sweeps, tol, rater_acc,
                 write_out):
    """The items of block ``c``, in order, summing into ``rater_acc[c]``."""
    if ordinal and max_sweeps == 1:
        _sweep_block_once(c, block_ptr, item_ptr, rater, label, item_group, scale, raters,
                          groups, items, out, hyper, spam, item_delta, rater_acc, write_out)
        return
    acc = rater_acc[c]
    acc[:, :] = 0.0
    longest = 0
    for m in range(block_ptr[c], block_ptr[c + 1]):
        longest = max(longest, item_ptr[m + 1] - item_ptr[m])
    scratch = np.empty((longest, PASS_EXP + 1))
    for m in range(block_ptr[c], block_ptr[c + 1]):
        _update_item(m, item_ptr, rater, label, item_group, scale, raters, groups, items,
                     out, hyper, ordinal, spam, item_delta, max_sweeps, tol, acc, scratch)


@serial_and_parallel
def item_sweep(item_ptr, rater, label, item_group, scale, raters, groups, items,
               out, hyper, ordinal, spam, item_delta, max_sweeps, tol, block_ptr,
               rater_acc, write_out):
    """Local step over every item, blocks of items in parallel (see
    ``_update_item``); ``item_sweep.serial`` runs the same blocks in turn
    (for threaded restarts: numba's workqueue layer cannot run parallel
    regions from two threads).

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
    items : float64 (6, n_items), in/out
        μ_m, λ_m of q(z_m) (the sweep starts at μ_m), F share (output),
        q(δ_m)'s shape and rate with ``item_delta``, and the item's known
        value (gold; NaN when unknown), which fixes q(z_m) at it.  One row
        per quantity, so that each is a contiguous array for the caller.
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
        random reads).  On return ``rater_acc[0]`` holds the sums over
        all blocks, added in block order (:func:`_sum_blocks`), so serial
        and parallel runs agree to the last bit.
    write_out : bool
        Whether to fill ``out``.  Without it (the fit loop, whose global
        update needs only ``rater_acc`` unless δ is per group) the one-sweep
        path leaves ``out`` alone, which may then be empty; the general
        kernel (several sweeps, the Gaussian link) needs it full either way.
    """
    for c in prange(block_ptr.shape[0] - 1):
        # int64 as in the serial variant (a prange index is unsigned), so
        # the block kernels compile once for both
        _sweep_block(np.int64(c), block_ptr, item_ptr, rater, label, item_group, scale, raters,
                     groups, items, out, hyper, ordinal, spam, item_delta, max_sweeps, tol,
                     rater_acc, write_out)
    _sum_blocks(rater_acc)


# the names the model picks from
item_sweep_parallel = item_sweep
item_sweep_serial = item_sweep.serial


@jit
def _sum_blocks(rater_acc):
    """``rater_acc[0] += rater_acc[c]`` for c = 1, 2, ... in turn: the sum
    over blocks in the order numpy's ``sum(axis=0)`` adds them, without a
    second array (numpy's took about 90 µs per TREC sweep, the array out
    of cache by then)."""
    total = rater_acc[0]
    for c in range(1, rater_acc.shape[0]):
        block = rater_acc[c]
        for j in range(total.shape[0]):
            for q in range(total.shape[1]):
                total[j, q] += block[j, q]


@jit
def rater_table(raters, tau_shape, tau_rate, tau_digamma, tau_log_rate, eps, eps_c):
    """The sweep's rater table (``raters`` of :func:`item_sweep_parallel`) from
    q(τ_n) (with ψ(shape) and ln rate), ε_n and 1 - ε_n, in one pass (ln 0 is
    -inf: a rater with ε = 0 or 1).  The numpy calls it replaces took about
    115 µs per TREC sweep inside the fit loop (ψ included), this pass 35 µs."""
    for j in range(raters.shape[0]):
        tau_mean = tau_shape[j] / tau_rate[j]
        raters[j, RATER_TAU] = tau_mean
        raters[j, RATER_LOG_TAU] = tau_digamma[j] - tau_log_rate[j]
        raters[j, RATER_SQRT_TAU] = math.sqrt(tau_mean)
        raters[j, RATER_LN_TAU] = math.log(tau_mean)
        raters[j, RATER_LOG_EPS] = math.log(eps[j]) if eps[j] > 0.0 else -np.inf
        raters[j, RATER_LOG_1MEPS] = math.log(eps_c[j]) if eps_c[j] > 0.0 else -np.inf


@jit
def start_items(items, mu, lam, known):
    """The sweep's item table: q(z_m) where the last sweep left it and each
    item's known value (NaN when unknown), in one pass."""
    for m in range(items.shape[1]):
        items[ITEM_MU, m] = mu[m]
        items[ITEM_LAM, m] = lam[m]
        items[ITEM_KNOWN, m] = known[m]


# -- the global update's sums ------------------------------------------------------
@jit
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
@with_numpy_twin(None, size=lambda item_ptr, rater, *rest: rater.shape[0])
@serial_and_parallel
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


# -- numpy twins: OrdinalMixture's fit without the compiler ---------------------------
# Below NUMPY_MAX_WORK ratings x restarts a fit runs these instead of the
# kernels above (the model picks once per fit, :func:`use_numpy_path`): the
# compiled sweep, rater table and group sums cost about 14 s of CPU to
# compile with an empty cache, more than a fit of that size takes in numpy.
# They are the same updates vectorised over ratings, items in chunks; they
# agree with the kernels to rounding (tests/test_ordinal_numpy_path.py).

#: below this many ratings x restarts a fit runs the numpy twins: measured
#: in doc/first_run.rst (a sweep in numpy costs about 1.3 times the compiled
#: one at 100,000 ratings and 3.6 times at 200,000)
NUMPY_MAX_WORK = 200_000

#: ratings per piece of the numpy sweep: its per-rating temporaries (about
#: 40) stay in the processor's cache (a TREC 2010 sweep took 13 ms of CPU in
#: pieces of 16,384 ratings, 27 ms in one piece of 98,453)
NUMPY_PIECE_RATINGS = 2**14


def use_numpy_path(n_ratings, n_runs=1):
    """Whether a fit of ``n_runs`` restarts on ``n_ratings`` ratings (or one
    item pass, ``n_runs=1``) runs the numpy twins (see :func:`use_numpy`)."""
    return use_numpy(n_ratings * max(int(n_runs), 1), NUMPY_MAX_WORK)


def rater_table_numpy(raters, tau_shape, tau_rate, tau_digamma, tau_log_rate, eps, eps_c):
    """:func:`rater_table` in numpy."""
    tau_mean = tau_shape / tau_rate
    raters[:, RATER_TAU] = tau_mean
    raters[:, RATER_LOG_TAU] = tau_digamma - tau_log_rate
    raters[:, RATER_SQRT_TAU] = np.sqrt(tau_mean)
    raters[:, RATER_LN_TAU] = np.log(tau_mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        # ln 0 = -inf, as the kernel (which also gives -inf for a NaN)
        raters[:, RATER_LOG_EPS] = np.where(eps > 0.0, np.log(eps), -np.inf)
        raters[:, RATER_LOG_1MEPS] = np.where(eps_c > 0.0, np.log(eps_c), -np.inf)


def start_items_numpy(items, mu, lam, known):
    """:func:`start_items` in numpy."""
    items[ITEM_MU] = mu
    items[ITEM_LAM] = lam
    items[ITEM_KNOWN] = known


def group_sums_numpy(group_ptr, group_items, item_ptr, rater, out, tau_mean,
                     genuine_sum, error_sum):
    """:func:`group_sums` in numpy (the same sums in the same order: the
    ratings of a group in item order)."""
    n_groups = group_ptr.shape[0] - 1
    item_group = np.empty(group_items.shape[0], dtype=np.int64)
    item_group[group_items] = np.repeat(np.arange(n_groups), np.diff(group_ptr))
    group = item_group[rating_items(item_ptr)]
    omega = out[:item_ptr[-1], OMEGA]
    genuine_sum[:] = np.bincount(group, weights=omega, minlength=n_groups)
    error_sum[:] = np.bincount(
        group, weights=tau_mean[rater[:item_ptr[-1]]] * omega * out[:item_ptr[-1], ERR],
        minlength=n_groups)


def log_ndtr_numpy(x):
    """:func:`log_ndtr` over an array, by the same expressions: in the far
    tail (a bin of a very precise rater, 1e50 standard deviations out) the
    density over Z, exp(-x²/2 - log √(2π) - log Φ(x)), is exp of a
    difference of two numbers near x²/2 that cancel exactly only when both
    round as the kernel's do (``scipy.special.log_ndtr`` rounds otherwise:
    exp(±1e83), then inf - inf)."""
    out = np.empty_like(x)
    upper = x > 0.0
    out[upper] = np.log1p(-0.5 * erfc(x[upper] * SQRT_HALF))
    mid = (x <= 0.0) & (x > -30.0)
    out[mid] = np.log(0.5 * erfc(-x[mid] * SQRT_HALF))
    low = x <= -30.0
    t = x[low]
    inv = 1.0 / (t * t)
    series = 1.0 - inv * (1.0 - 3.0 * inv * (1.0 - 5.0 * inv * (1.0 - 7.0 * inv * (
        1.0 - 9.0 * inv * (1.0 - 11.0 * inv)))))
    out[low] = np.where(t == -np.inf, -np.inf,
                        -0.5 * t * t - np.log(-t) - LOG_SQRT_2PI + np.log(series))
    return out


def truncnorm_std_numpy(lo, hi):
    """:func:`truncnorm_std` over arrays: ``(log_z, mean, var)``.

    A bin whose CDFs differ enough (in the lower tail, after the flip of
    :func:`bin_cdfs`) takes the direct difference and densities over its
    mass; the rest, far in a tail, log Φ by :func:`log_ndtr_numpy` and the
    densities over Z in log space.  Clipped as the kernel clips:
    the mean to [lo, hi], the variance to Popoviciu's [0, (hi - lo)²/4]
    (NaN stays NaN; the bounds are never NaN: lo < hi).
    """
    with np.errstate(all="ignore"):  # IEEE arithmetic: inf and NaN are masked
        return _truncnorm_std_numpy(lo, hi, bool(np.isinf(lo).any() or np.isinf(hi).any()))


def _truncnorm_std_numpy(lo, hi, open_ends):
    # (``open_ends``: whether some bin has an infinite end)
    # the bin flipped to the lower tail (where lo + hi > 0), as bin_cdfs
    a = np.minimum(lo, -hi)
    b = np.minimum(hi, -lo)
    cdf_a = ndtr(a)
    cdf_b = ndtr(b)
    direct = (b > -30.0) & (cdf_a < 0.5 * cdf_b)
    mass = cdf_b - cdf_a  # (a far bin's is replaced below)
    log_z = np.log(mass)
    inv_mass = INV_SQRT_2PI / mass
    # φ(x) / Z
    dens_lo = np.exp(-0.5 * lo * lo)
    dens_lo *= inv_mass
    dens_hi = np.exp(-0.5 * hi * hi)
    dens_hi *= inv_mass
    far = np.flatnonzero(~direct)
    if far.shape[0]:
        a_f, b_f, lo_f, hi_f = a[far], b[far], lo[far], hi[far]
        log_hi = log_ndtr_numpy(b_f)
        log_lo = log_ndtr_numpy(a_f)
        log_z_f = np.where(log_lo == -np.inf, log_hi,
                           log_hi + np.log(-np.expm1(log_lo - log_hi)))
        log_z[far] = log_z_f
        dens_lo[far] = np.exp(-0.5 * lo_f * lo_f - LOG_SQRT_2PI - log_z_f)
        dens_hi[far] = np.exp(-0.5 * hi_f * hi_f - LOG_SQRT_2PI - log_z_f)
    mean = dens_lo - dens_hi
    x_lo = lo * dens_lo
    x_hi = hi * dens_hi
    if open_ends:
        # an infinite end has density 0 and adds nothing to the variance
        x_lo[lo == -np.inf] = 0.0
        x_hi[hi == np.inf] = 0.0
    var = 1.0 + x_lo - x_hi - mean * mean
    width = hi - lo
    bound = 0.25 * width * width
    return (log_z, np.minimum(np.maximum(mean, lo), hi),
            np.minimum(np.maximum(var, 0.0), bound))


def _gamma_kl_numpy(shape, rate, prior_shape, prior_rate):
    """:func:`gamma_kl` over arrays."""
    return ((shape - prior_shape) * scipy_digamma(shape) - gammaln(shape)
            + gammaln(prior_shape) + prior_shape * (np.log(rate) - np.log(prior_rate))
            + shape * (prior_rate - rate) / rate)


# the per-rating columns of the numpy sweep, gathered per piece of ratings
(COL_TAU, COL_SQRT_TAU, COL_GENUINE, COL_ENTROPY, COL_LOGIT, COL_SPAM, COL_LOWER, COL_UPPER,
 COL_VALUE, COL_XVAR) = range(10)


def _rating_tables_numpy(raters, scale, ordinal):
    """The parts of a rating's logit and F share (:func:`_update_item`)
    that come from its rater or its label, tabulated by rater, by label or
    by rater x label (``j * n_classes + r``), in column order; and whether
    some rater has ε exactly 0 or 1 (a term ω ln ε is then 0 x -inf, which
    :func:`_update_item` skips)."""
    tau = raters[:, RATER_TAU]
    log_tau = raters[:, RATER_LOG_TAU]
    ln_tau = raters[:, RATER_LN_TAU]
    log_eps = raters[:, RATER_LOG_EPS]
    log_1meps = raters[:, RATER_LOG_1MEPS]
    log_spam = scale[SCALE_LOG_SPAM]
    if ordinal:
        logit = log_eps - log_1meps + 0.5 * (log_tau - ln_tau)
        entropy = 0.5 * (LOG_2PI - ln_tau)
    else:
        logit = log_eps - log_1meps + 0.5 * (log_tau - LOG_2PI)
        entropy = np.zeros_like(tau)
    width = scale[SCALE_UPPER] - scale[SCALE_LOWER]
    tables = (
        ("rater", tau), ("rater", raters[:, RATER_SQRT_TAU]),
        ("rater", log_eps + 0.5 * log_tau - LOG_SQRT_2PI), ("rater", entropy),
        ("pair", (logit[:, None] - log_spam[None, :]).ravel()),
        ("pair", (log_1meps[:, None] + log_spam[None, :]).ravel()),
        ("label", scale[SCALE_LOWER]), ("label", scale[SCALE_UPPER]),
        ("label", scale[SCALE_VALUE]), ("label", width * width / 12.0),
    )
    extreme = bool(np.any(log_eps == -np.inf) or np.any(log_1meps == -np.inf))
    return tables, extreme


def _rating_columns_numpy(j, r, tables, n_classes):
    """The columns of the ratings by raters ``j`` with labels ``r``, one
    row per quantity, from :func:`_rating_tables_numpy`."""
    j = j.astype(np.intp)
    r = r.astype(np.intp)
    index = {"rater": j, "label": r, "pair": j * n_classes + r}
    cols = np.empty((len(tables), j.shape[0]))
    for row, (by, table) in enumerate(tables):
        np.take(table, index[by], out=cols[row])
    return cols


def _rating_factors_numpy(cols, extreme, it, nu, inv_lam, d_mean, d_log, uniform, ordinal,
                          spam, open_ends):
    """One sweep's factors of each rating (the first part of
    :func:`_update_item`) from its columns ``cols``, its item ``it``'s
    q(z) (mean ``nu``, 1/λ ``inv_lam``) and difficulty (E δ ``d_mean``,
    E ln δ ``d_log``; ``uniform``: the same for every item), each per
    item (``open_ends``: some threshold is infinite): ``(x̄, Var x, ω,
    1 - ω, its share of F without the z and δ terms)``."""
    tau = cols[COL_TAU]
    nu_r = nu[it]
    # one shared δ (difficulty=None): a scalar rather than a gather
    at = (lambda x: x[0]) if d_mean.shape[0] and uniform else (lambda x: x[it])
    rho = tau * at(d_mean)
    if ordinal:
        d_ln = np.log(d_mean)
        s = cols[COL_SQRT_TAU] * at(np.sqrt(d_mean))
        lo = (cols[COL_LOWER] - nu_r) * s
        hi = (cols[COL_UPPER] - nu_r) * s
        log_z, mean, var = _truncnorm_std_numpy(lo, hi, open_ends)
        xbar = nu_r + mean / s
        xvar = var / rho
        # entropy of TN = log √(2π/ρ) + log Z + E[t²]/2
        entropy = cols[COL_ENTROPY] - at(0.5 * d_ln) + log_z + 0.5 * (var + mean * mean)
        t = cols[COL_LOGIT] + at(0.5 * (d_log - d_ln)) - 0.5 * rho * inv_lam[it] + log_z
    else:
        # the value plus a uniform rounding error over its bin (see _update_item)
        xbar = cols[COL_VALUE]
        xvar = cols[COL_XVAR]
        entropy = 0.0
        dev = xbar - nu_r
        t = cols[COL_LOGIT] + at(0.5 * d_log) - 0.5 * rho * (dev * dev + xvar + inv_lam[it])
    genuine = cols[COL_GENUINE] + entropy
    if not spam:
        return xbar, xvar, np.ones_like(t), np.zeros_like(t), genuine
    # ω and 1 - ω each from its own expression, as _bernoulli: with
    # e = exp(-|t|), ω = 1/(1 + e) or e/(1 + e), and e = exp(min(t, 0)) for t < 0
    e = np.exp(-np.abs(t))
    u = 1.0 + e
    log1pe = np.log1p(e)
    t_neg = np.minimum(t, 0.0)
    t_pos = np.minimum(-t, 0.0)
    w = np.exp(t_neg) / u
    wc = np.exp(t_pos) / u
    genuine -= t_neg - log1pe  # - ln ω
    other = cols[COL_SPAM] - (t_pos - log1pe)  # ln(1 - ε) + ln π - ln(1 - ω)
    if extreme:
        part = np.where(w > 0.0, w * genuine, 0.0) + np.where(wc > 0.0, wc * other, 0.0)
    else:
        part = w * genuine + wc * other
    return xbar, xvar, w, wc, part


def _pieces(n):
    """Bounds of consecutive pieces of ``n`` ratings, each of at most
    :data:`NUMPY_PIECE_RATINGS`."""
    bounds = list(range(0, n, NUMPY_PIECE_RATINGS)) + [n]
    return zip(bounds[:-1], bounds[1:])


def _sweep_numpy(item_ptr, rater, label, item_group, scale, raters, groups, items, out,
                 hyper, ordinal, spam, item_delta, max_sweeps, tol, acc, write_out):
    """:func:`_update_item` for every item at once: each item sweeps until it
    stops (μ and δ̄ move less than ``tol``) or ``max_sweeps``; the ratings
    in pieces (:func:`_pieces`), the items' updates over all of them."""
    shape0, rate0, mu0, lam0 = (hyper[HYPER_SHAPE], hyper[HYPER_RATE], hyper[HYPER_MU],
                                hyper[HYPER_LAM])
    n_items = item_ptr.shape[0] - 1
    n_ratings = item_ptr[-1]
    n_classes = scale.shape[1]
    count = np.diff(item_ptr)
    mu = items[ITEM_MU]
    lam = items[ITEM_LAM]
    elbo = items[ITEM_ELBO]
    known = items[ITEM_KNOWN]
    clamped = ~np.isnan(known)
    mu[clamped] = known[clamped]
    lam[clamped] = np.inf
    if item_delta:
        d_shape = items[ITEM_DELTA_SHAPE]
        d_rate = items[ITEM_DELTA_RATE]
        d_mean = d_shape / d_rate
        d_log = scipy_digamma(d_shape) - np.log(d_rate)
    else:
        d_mean = groups[item_group, GROUP_DELTA]
        d_log = groups[item_group, GROUP_LOG_DELTA]
    uniform = not item_delta and groups.shape[0] == 1
    rated = count > 0
    unrated = ~rated
    # an item without ratings: q(z_m) is the prior (or the known value)
    dev0 = known - mu0
    elbo[unrated & clamped] = (0.5 * math.log(lam0) - LOG_SQRT_2PI
                               - 0.5 * lam0 * (dev0 * dev0)[unrated & clamped])
    free = unrated & ~clamped
    mu[free] = mu0
    lam[free] = lam0
    elbo[free] = 0.0
    item = rating_items(item_ptr)
    rater = rater[:n_ratings]
    label = label[:n_ratings]
    tables, extreme = _rating_tables_numpy(raters, scale, ordinal)
    open_ends = not np.all(np.isfinite(scale[SCALE_LOWER:SCALE_UPPER + 1]))
    xbar = np.empty(n_ratings)
    xvar = np.empty(n_ratings)
    w = np.empty(n_ratings)
    wc = np.empty(n_ratings)
    ratings_part = np.zeros(n_items)
    active = np.flatnonzero(rated)  # items still sweeping
    sel = None  # their ratings (None: all)
    for _ in range(max_sweeps):
        inv_lam = 1.0 / lam
        weight = np.zeros(n_items)  # Σ τ̄ ω
        weight_x = np.zeros(n_items)  # Σ τ̄ ω x̄
        part = np.zeros(n_items)
        for p0, p1 in _pieces(n_ratings if sel is None else sel.shape[0]):
            idx = slice(p0, p1) if sel is None else sel[p0:p1]
            it = item[idx]
            cols = _rating_columns_numpy(rater[idx], label[idx], tables, n_classes)
            factors = _rating_factors_numpy(cols, extreme, it, mu, inv_lam, d_mean, d_log,
                                            uniform, ordinal, spam, open_ends)
            xbar[idx], xvar[idx], w[idx], wc[idx] = factors[:4]
            tau_w = cols[COL_TAU] * factors[2]
            weight += np.bincount(it, weights=tau_w, minlength=n_items)
            weight_x += np.bincount(it, weights=tau_w * factors[0], minlength=n_items)
            part += np.bincount(it, weights=factors[4], minlength=n_items)
        ratings_part[active] = part[active]
        mu_old = mu[active]
        d_old = d_mean[active]
        # q(z_m) (eq. 4), a known item keeping its value
        free = ~clamped[active]
        upd = active[free]
        lam[upd] = lam0 + d_old[free] * weight[active][free]
        mu[upd] = (mu0 * lam0 + d_old[free] * weight_x[active][free]) / lam[upd]
        if item_delta:
            # q(δ_m) from Σ ω and Σ τ̄ ω E[(x - z)²] at the new q(z_m)
            idx = slice(None) if sel is None else sel
            it = item[idx]
            w_s = w[idx]
            dev = xbar[idx] - mu[it]
            e = xvar[idx] + dev * dev + 1.0 / lam[it]
            tau_w = raters[rater[idx], RATER_TAU] * w_s
            n_genuine = np.bincount(it, weights=w_s, minlength=n_items)[active]
            total = np.bincount(it, weights=tau_w * e, minlength=n_items)[active]
            d_shape[active] = shape0 + 0.5 * n_genuine
            d_rate[active] = rate0 + 0.5 * total
            d_mean[active] = d_shape[active] / d_rate[active]
            d_log[active] = scipy_digamma(d_shape[active]) - np.log(d_rate[active])
        if max_sweeps == 1:
            break
        going = ~((np.abs(mu[active] - mu_old) < tol)
                  & (np.abs(d_mean[active] - d_old) < tol * d_old))
        if not going.all():
            active = active[going]
            if active.shape[0] == 0:
                break
            still = np.zeros(n_items, dtype=bool)
            still[active] = True
            sel = np.flatnonzero(still[item])
    # the z and δ terms of F at the final q(z_m), q(δ_m); E[(x - z)²] per
    # rating; the by-rater sums (see _item_elbo)
    inv_lam = 1.0 / lam
    half_d_log = 0.5 * d_log
    n_raters = acc.shape[0]
    for p0, p1 in _pieces(n_ratings):
        it = item[p0:p1]
        j = rater[p0:p1]
        w_p = w[p0:p1]
        dev = xbar[p0:p1] - mu[it]
        err = xvar[p0:p1] + dev * dev + inv_lam[it]
        d_r = d_mean[0] if uniform else d_mean[it]
        w_err = w_p * err
        ratings_part += np.bincount(
            it, weights=w_p * (half_d_log[0] if uniform else half_d_log[it])
            - 0.5 * raters[j, RATER_TAU] * d_r * w_err, minlength=n_items)
        acc[:, 0] += np.bincount(j, weights=wc[p0:p1], minlength=n_raters)
        acc[:, 1] += np.bincount(j, weights=w_p, minlength=n_raters)
        acc[:, 2] += np.bincount(j, weights=d_r * w_err, minlength=n_raters)
        acc[:, 3] += np.bincount(j, weights=w_err, minlength=n_raters)
        if write_out:
            block = out[p0:p1]
            block[:, OMEGA] = w_p
            block[:, OMEGA_C] = wc[p0:p1]
            block[:, ERR] = err
            block[:, XBAR] = xbar[p0:p1]
            block[:, XVAR] = xvar[p0:p1]
    # the item's share of F (see _item_total)
    dev0 = mu - mu0
    total = np.where(
        clamped, ratings_part + 0.5 * math.log(lam0) - LOG_SQRT_2PI - 0.5 * lam0 * dev0 * dev0,
        ratings_part + 0.5 * np.log(lam0 * inv_lam) + 0.5 - 0.5 * lam0 * (dev0 * dev0 + inv_lam))
    if item_delta:
        total = total - _gamma_kl_numpy(d_shape, d_rate, shape0, rate0)
    elbo[rated] = total[rated]


def item_sweep_numpy(item_ptr, rater, label, item_group, scale, raters, groups, items,
                     out, hyper, ordinal, spam, item_delta, max_sweeps, tol, block_ptr,
                     rater_acc, write_out):
    """:func:`item_sweep` in numpy (the same arguments; ``block_ptr`` is
    unused), the by-rater sums in ``rater_acc[0]``."""
    acc = rater_acc[0]
    acc[:, :] = 0.0
    # the general kernel (several sweeps, the Gaussian link) fills ``out`` always
    write_out = bool(write_out) or max_sweeps > 1 or not ordinal
    with np.errstate(all="ignore"):  # the kernels' IEEE arithmetic (inf, NaN masked)
        _sweep_numpy(item_ptr, rater, label, item_group, scale, raters, groups, items, out,
                     hyper, ordinal, spam, item_delta, int(max_sweeps), tol, acc, write_out)
