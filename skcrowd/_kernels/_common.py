"""Small numerical helpers shared by the kernels."""

import types

import numba
import numpy as np
from llvmlite import ir
from numba import prange
from numba.core import types as nb_types
from numba.extending import intrinsic

from ._config import jit, start_threads, use_numpy, with_numpy_twin

#: below this many ratings a parallel kernel costs more to launch than it saves
PARALLEL_MIN_RATINGS = 100_000

#: below this many ratings the input's one-pass helpers (:func:`count_codes`,
#: :func:`lookup_codes`, :func:`item_means`) run their numpy twins, which
#: give the same numbers to the last bit.  At a million ratings a twin costs
#: at most 2.2 ms more than its compiled kernel (item_means; count_codes 1.0,
#: lookup_codes 0.5), about what loading one compiled kernel from a warm
#: cache takes (2-3 ms), while each compiles in 0.1 s and the first numba
#: call of a process costs 0.3 s more: a fit whose other kernels have numpy
#: twins then never starts numba (doc/first_run.rst).
BOUNDARY_NUMPY_MAX_RATINGS = 1_000_000


def dot(a, b):
    """The sum of products of two vectors, without BLAS.

    OpenBLAS runs a dot product of more than 10,000 terms on its threads,
    which then spin on the other cores for a while after it, so a fit that
    takes a few such products per pass (the SQUAREM step over every
    parameter, IRT3PL's expected counts over the items, OrdinalMixture's
    difficulty rate over the raters) used up to twice its wall time in
    CPU on large data.  einsum sums in one thread, at a cost too small to
    matter in a few calls per pass."""
    return float(np.einsum("i,i->", a, b))


def serial_and_parallel(func=None, *, numpy=None, parallel_min=None):
    """Compile ``func`` (lazily, each on its first call) with ``parallel=True``
    (its ``prange`` loops run on numba's threads) and serially; returns the
    parallel dispatcher, which carries the serial one as ``.serial``.

    Call ``kernel.pick(n_ratings)`` for the variant to run: small data runs
    serially because waking threads costs more than the work, and below
    :data:`~._config.NUMPY_MAX_RATINGS` the vectorised ``numpy`` twin runs
    where one is given (``.numpy``), so that nothing waits for the compiler.
    All variants give the same results: parallel loops only write disjoint
    outputs, and the twin the same sums (to rounding).  The serial copy gets
    its own name so the on-disk caches do not collide.
    """
    if func is None:
        return lambda f: serial_and_parallel(f, numpy=numpy, parallel_min=parallel_min)
    parallel = jit(parallel=True)(func)
    copy = types.FunctionType(func.__code__, func.__globals__, func.__name__ + "_serial",
                              func.__defaults__, func.__closure__)
    copy.__qualname__ = func.__qualname__ + "_serial"
    copy.__doc__ = func.__doc__
    serial = jit(copy)

    def pick(n_ratings):
        if numpy is not None and use_numpy(n_ratings):
            return numpy
        threshold = PARALLEL_MIN_RATINGS if parallel_min is None else parallel_min
        if n_ratings < threshold:
            return serial
        start_threads()
        if numba.get_num_threads() > 1:
            return parallel
        return serial

    parallel.serial = serial
    parallel.numpy = numpy
    parallel.pick = pick
    return parallel


def normalize_log_rows_numpy(joint):
    """Rows of log weights (an array it overwrites) to probabilities, as
    :func:`normalize_log_block` does: returns ``(probabilities, log
    normalisers)``; an all ``-inf`` row turns uniform with normaliser
    ``-inf``."""
    top = joint.max(axis=1)
    finite = top > -np.inf
    joint -= np.where(finite, top, 0.0)[:, None]
    joint[~finite] = 0.0
    np.exp(joint, out=joint)
    total = joint.sum(axis=1)
    return joint / total[:, None], top + np.log(total)


def chunk_sums_numpy(values, chunk_ptr, out):
    """``out[c]`` = the sum of the rows of chunk c of ``values`` (rows
    ``chunk_ptr[c]:chunk_ptr[c + 1]``)."""
    for c in range(chunk_ptr.shape[0] - 1):
        out[c] = values[chunk_ptr[c]:chunk_ptr[c + 1]].sum(axis=0)


@jit
def digamma(x):
    """ψ(x) for x > 0: the recurrence ψ(x) = ψ(x + 1) - 1/x up to x >= 10,
    then the asymptotic series (error below 1e-14 there)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return result + np.log(x) - 0.5 * inv - inv2 * (
        1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (
            1.0 / 240.0 - inv2 * (1.0 / 132.0)))))


@jit
def normalize_log_inplace(log_p):
    """Turn the log-weights ``log_p`` into probabilities in place.

    Returns the log normaliser (``logsumexp(log_p)``).  The maximum is shifted
    out before exponentiating so that nothing underflows to 0/0; when every
    weight is ``-inf`` the result is uniform and the normaliser ``-inf``.
    """
    n = log_p.shape[0]
    top = -np.inf
    best = 0
    for k in range(n):
        if log_p[k] > top:
            top = log_p[k]
            best = k
    if top == -np.inf:
        for k in range(n):
            log_p[k] = 1.0 / n
        return -np.inf
    total = 0.0
    for k in range(n):
        # exp(0) = 1 exactly: one exp fewer per row (half of them for K = 2)
        log_p[k] = 1.0 if k == best else np.exp(log_p[k] - top)
        total += log_p[k]
    for k in range(n):
        log_p[k] /= total
    return top + np.log(total)


def count_codes_numpy(codes, counts):
    """:func:`count_codes` in numpy."""
    counts += np.bincount(codes, minlength=counts.shape[0])


@with_numpy_twin(count_codes_numpy, size=lambda codes, counts: codes.shape[0],
                 limit=BOUNDARY_NUMPY_MAX_RATINGS)
@jit
def count_codes(codes, counts):
    """``counts[c]`` += 1 for each code ``c`` in ``codes`` (every code in
    ``0 .. len(counts) - 1``); ``np.bincount`` without its checks and casts."""
    for n in range(codes.shape[0]):
        counts[codes[n]] += 1


def lookup_codes_numpy(table, offsets, codes):
    """:func:`lookup_codes` in numpy."""
    codes[:] = table[offsets]
    bad = np.flatnonzero(codes < 0)
    return int(bad[0]) if bad.shape[0] else -1


@with_numpy_twin(lookup_codes_numpy, size=lambda table, offsets, codes: offsets.shape[0],
                 limit=BOUNDARY_NUMPY_MAX_RATINGS)
@jit
def lookup_codes(table, offsets, codes):
    """``codes[n] = table[offsets[n]]`` (every offset in the table); returns
    the first ``n`` whose entry is negative (not a class), or -1."""
    bad = -1
    for n in range(offsets.shape[0]):
        code = table[offsets[n]]
        codes[n] = code
        if code < 0 and bad < 0:
            bad = n
    return bad


def vote_counts_numpy(item_ptr, label, n_classes, counts):
    """:func:`vote_counts` in numpy."""
    n_items = item_ptr.shape[0] - 1
    item = np.repeat(np.arange(n_items), np.diff(item_ptr))
    counts[:] = np.bincount(item * n_classes + label, minlength=n_items * n_classes
                            ).reshape(n_items, n_classes)


@serial_and_parallel(numpy=vote_counts_numpy)
def vote_counts(item_ptr, label, n_classes, counts):
    """``counts[i, k]`` = number of ratings of item ``i`` with label ``k``."""
    for i in prange(item_ptr.shape[0] - 1):
        for k in range(n_classes):
            counts[i, k] = 0.0
        for n in range(item_ptr[i], item_ptr[i + 1]):
            counts[i, label[n]] += 1.0


def item_means_numpy(item_ptr, values, means):
    """:func:`item_means` in numpy."""
    n_items = item_ptr.shape[0] - 1
    size = np.diff(item_ptr)
    total = np.bincount(np.repeat(np.arange(n_items), size), weights=values[:item_ptr[-1]],
                        minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        means[:] = np.where(size > 0, total / size, np.nan)


@with_numpy_twin(item_means_numpy, size=lambda item_ptr, values, means: item_ptr[-1],
                 limit=BOUNDARY_NUMPY_MAX_RATINGS)
@serial_and_parallel
def item_means(item_ptr, values, means):
    """``means[i]`` = mean of the values of item ``i``'s ratings (NaN if none)."""
    for i in prange(item_ptr.shape[0] - 1):
        start, stop = item_ptr[i], item_ptr[i + 1]
        if stop == start:
            means[i] = np.nan
            continue
        total = 0.0
        for n in range(start, stop):
            total += values[n]
        means[i] = total / (stop - start)


def item_medians_numpy(item_ptr, values, medians):
    """:func:`item_medians` in numpy."""
    n_items = item_ptr.shape[0] - 1
    size = np.diff(item_ptr)
    item = np.repeat(np.arange(n_items), size)
    ordered = values[:item_ptr[-1]][np.lexsort((values[:item_ptr[-1]], item))]
    rated = size > 0
    start, m = item_ptr[:-1][rated], size[rated]
    low = ordered[start + (m - 1) // 2]
    high = ordered[start + m // 2]
    medians[:] = np.nan
    medians[rated] = np.where(m % 2 == 1, high, 0.5 * (low + high))


@with_numpy_twin(item_medians_numpy, size=lambda item_ptr, values, medians: item_ptr[-1])
@serial_and_parallel
def item_medians(item_ptr, values, medians):
    """``medians[i]`` = median of item ``i``'s rating values (NaN if none);
    with an even count, the mean of the two middle values (as numpy)."""
    for i in prange(item_ptr.shape[0] - 1):
        start, stop = item_ptr[i], item_ptr[i + 1]
        m = stop - start
        if m == 0:
            medians[i] = np.nan
            continue
        ordered = np.sort(values[start:stop])
        if m % 2 == 1:
            medians[i] = ordered[m // 2]
        else:
            medians[i] = 0.5 * (ordered[m // 2 - 1] + ordered[m // 2])


def row_argmax_numpy(values, out):
    """:func:`row_argmax` in numpy."""
    if values.shape[0]:
        out[:] = np.argmax(values, axis=1)


@with_numpy_twin(row_argmax_numpy, size=lambda values, out: values.size)
@jit
def row_argmax(values, out):
    """``out[i] = np.argmax(values[i])`` for every row (first maximum; a NaN
    counts as the maximum, as in numpy): numpy's axis-1 argmax costs a
    per-row dispatch that dominates for a handful of classes."""
    for i in range(values.shape[0]):
        best = 0
        top = values[i, 0]
        if top == top:
            for k in range(1, values.shape[1]):
                v = values[i, k]
                if v != v:
                    best = k
                    break
                if v > top:
                    top = v
                    best = k
        out[i] = best


# exp for whole rows, written so that LLVM vectorises it: numba calls libm's
# scalar exp otherwise (no SVML here), and the exponentials of a long
# posterior row were ~65% of IRT3PL's local step (1,470 per pattern).
# exp(t) = 2^n exp(r), n = round(t / ln 2), r = t - n ln 2 with ln 2 split in
# two (Cody–Waite) so r is exact, |r| <= ln 2 / 2; exp(r) by its Taylor
# series to degree 13 (truncation < 5e-18 relative); 2^n is
# built in the exponent bits.  Within 2 ulp of np.exp (tests/test_kernels.py).
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2**52: t / ln 2 + _ROUND holds round(t / ln 2) in its low bits
_EXP_MIN = -708.0  # exp(-708) = 3.3e-307, the smallest power of two kept normal
_C2, _C3, _C4, _C5, _C6, _C7 = 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040
_C8, _C9, _C10, _C11 = 1 / 40320, 1 / 362880, 1 / 3628800, 1 / 39916800
_C12, _C13 = 1 / 479001600, 1 / 6227020800


@intrinsic
def float_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 ``bits`` (a bit cast, which
    LLVM vectorises; numba has no scalar ``view``)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return nb_types.float64(nb_types.int64), codegen


@intrinsic
def bits_from_float(typingctx, x):
    """The IEEE bits of the float64 ``x`` as an int64 (a bit cast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return nb_types.int64(nb_types.float64), codegen


@jit(inline="always")
def _exp_reduced(t):
    """exp(t) = p 2^whole for ``_EXP_MIN <= t <= 709``: returns (p, whole)."""
    whole = (t * _LOG2E + _ROUND) - _ROUND
    r = (t - whole * _LN2_HI) - whole * _LN2_LO
    # Estrin's scheme: a shallow dependency chain, so vector lanes overlap
    r2 = r * r
    r4 = r2 * r2
    q01 = 1.0 + r
    q23 = _C2 + _C3 * r
    q45 = _C4 + _C5 * r
    q67 = _C6 + _C7 * r
    q89 = _C8 + _C9 * r
    q1011 = _C10 + _C11 * r
    q1213 = _C12 + _C13 * r
    q03 = q01 + q23 * r2
    q47 = q45 + q67 * r2
    q811 = q89 + q1011 * r2
    q813 = q811 + q1213 * r4
    return q03 + (q47 + q813 * r4) * r4, whole


@jit(inline="always")
def exp_fast(t):
    """exp(t) for t <= 0 within 2 ulp of numpy's (tested), branch-free so that
    a loop of it vectorises; below exp(-708) (and at -inf) it gives 0."""
    keep = t >= _EXP_MIN
    p, whole = _exp_reduced(t if keep else _EXP_MIN)
    # the float 2^whole (whole in [-1022, 0]) from its exponent bits
    return p * float_from_bits(np.int64(np.int32(whole) + 1023) << 52) if keep else 0.0


# log(x) = n ln 2 + log(m), x = m 2^n with m in [sqrt(2)/2, sqrt(2)); log(m) =
# log(1 + f) = 2 atanh(s), s = f / (2 + f), with a degree-7 polynomial in s²
# (fdlibm's e_log.c, its coefficients and reduction): within 1 ulp.
_LG1, _LG2, _LG3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
_LG4, _LG5 = 2.222219843214978396e-01, 1.818357216161805012e-01
_LG6, _LG7 = 1.531383769920937332e-01, 1.479819860511658591e-01
_MANTISSA = (1 << 52) - 1
_ONE_BITS = 1023 << 52
_TWO52_BITS = 0x4330000000000000  # the bits of 2^52
_SQRT2 = 1.4142135623730951


@jit(inline="always", error_model="numpy")
def log_fast(x):
    """log(x) for a finite, normal x > 0 within 1 ulp, branch-free so that
    a loop of it vectorises (no check of the domain: the caller's)."""
    bits = bits_from_float(x)
    # the biased exponent as a float without an int64 -> float conversion
    # (AVX2 has none): 2^52 + e carries e in its low mantissa bits
    n = float_from_bits(((bits >> 52) & 0x7FF) | _TWO52_BITS) - (4503599627370496.0 + 1023.0)
    m = float_from_bits((bits & _MANTISSA) | _ONE_BITS)
    big = m > _SQRT2
    m = 0.5 * m if big else m
    n = n + 1.0 if big else n
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    half_f2 = 0.5 * f * f
    return n * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + n * _LN2_LO)) - f)


# Contraction (a * b + c as one FMA) is the only fast-math flag: no
# assumptions about inf or NaN.
@jit(fastmath={"contract"})
def exp_shifted_inplace(x, top):
    """``x[k] = exp(x[k] - top)`` in place for ``x[k] <= top``; returns the sum.

    Vectorisable replacement for a loop of ``np.exp`` (:func:`exp_fast`);
    values below exp(-708) (and ``-inf``) give 0.
    """
    n = x.shape[0]
    for k in range(n):
        x[k] = exp_fast(x[k] - top)
    # the sum in a loop of its own: an ordered float sum would keep the
    # exponentials' loop from vectorising
    total = 0.0
    for k in range(n):
        total += x[k]
    return total


@jit
def normalize_log_rows(log_p):
    """:func:`normalize_log_inplace` for a long row, with :func:`exp_shifted_inplace`.

    Returns the log normaliser.
    """
    n = log_p.shape[0]
    # Four running maxima: a single one is a serial chain of compares.
    t0 = t1 = t2 = t3 = -np.inf
    k = 0
    while k + 4 <= n:
        if log_p[k] > t0:
            t0 = log_p[k]
        if log_p[k + 1] > t1:
            t1 = log_p[k + 1]
        if log_p[k + 2] > t2:
            t2 = log_p[k + 2]
        if log_p[k + 3] > t3:
            t3 = log_p[k + 3]
        k += 4
    while k < n:
        if log_p[k] > t0:
            t0 = log_p[k]
        k += 1
    top = max(max(t0, t1), max(t2, t3))
    if top == -np.inf:
        for k in range(n):
            log_p[k] = 1.0 / n
        return -np.inf
    total = exp_shifted_inplace(log_p, top)
    scale = 1.0 / total
    for k in range(n):
        log_p[k] *= scale
    return top + np.log(total)


@jit
def normalize_log_block(rows, n_rows, n_classes, log_norm):
    """:func:`normalize_log_inplace` for ``n_rows`` short rows stored one
    after another in ``rows`` (row r at ``r * n_classes``), with one
    vectorised :func:`exp_shifted_inplace` over them all: a libm exp per
    class and item was the larger part of the item-level steps.

    ``log_norm[r]`` gets row r's log normaliser (an all ``-inf`` row turns
    uniform with normaliser ``-inf``).
    """
    for r in range(n_rows):
        base = r * n_classes
        top = -np.inf
        for k in range(n_classes):
            if rows[base + k] > top:
                top = rows[base + k]
        log_norm[r] = top
        for k in range(n_classes):
            rows[base + k] = rows[base + k] - top if top > -np.inf else 0.0
    size = n_rows * n_classes
    exp_shifted_inplace(rows[:size], 0.0)
    for r in range(n_rows):
        base = r * n_classes
        total = 0.0
        for k in range(n_classes):
            total += rows[base + k]
        log_norm[r] += np.log(total)
        scale = 1.0 / total
        for k in range(n_classes):
            rows[base + k] *= scale


@jit
def start_log_rows(rows, first, last, log_prior, evidence):
    """The rows of items ``first:last`` in a block of :func:`normalize_log_block`
    set to log π plus each item's evidence (the gold clamp; ``evidence`` with
    no rows: none)."""
    n_classes = log_prior.shape[0]
    for i in range(first, last):
        base = (i - first) * n_classes
        for k in range(n_classes):
            rows[base + k] = log_prior[k]
        if evidence.shape[0] > 0:
            for k in range(n_classes):
                rows[base + k] += evidence[i, k]


@jit
def store_posterior_rows(rows, first, last, item_ptr, clamped, log_norm, posterior, loglik,
                         class_total):
    """Items ``first:last`` of a normalised block: their posteriors into
    ``posterior``, their log normalisers into ``loglik`` and the posteriors'
    sum added to ``class_total``.

    An item without ratings has likelihood 1 exactly (π sums to 1), so its
    ``loglik`` is 0; with gold (``clamped``) it is log Σ π e^evidence,
    log π_known for a known item.
    """
    n_classes = posterior.shape[1]
    for i in range(first, last):
        base = (i - first) * n_classes
        empty = item_ptr[i + 1] == item_ptr[i] and not clamped
        loglik[i] = 0.0 if empty else log_norm[i - first]
        for k in range(n_classes):
            posterior[i, k] = rows[base + k]
            class_total[k] += rows[base + k]
