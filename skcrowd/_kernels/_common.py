"""Small numerical helpers shared by the kernels."""

import types

import numba
import numpy as np
from numba import njit, prange

#: below this many ratings a parallel kernel costs more to launch than it saves
PARALLEL_MIN_RATINGS = 100_000


def serial_and_parallel(func):
    """Compile ``func`` twice, once with ``parallel=True`` (its ``prange``
    loops run on numba's threads) and once serially; returns a dispatcher
    that carries both.

    Call ``kernel.pick(n_ratings)`` for the variant to run: small data runs
    serially because waking threads costs more than the work.  Both variants
    give identical results: parallel loops only write disjoint outputs.
    The serial copy gets its own name so the on-disk caches do not collide.
    """
    parallel = njit(cache=True, nogil=True, parallel=True)(func)
    copy = types.FunctionType(func.__code__, func.__globals__, func.__name__ + "_serial",
                              func.__defaults__, func.__closure__)
    copy.__qualname__ = func.__qualname__ + "_serial"
    copy.__doc__ = func.__doc__
    serial = njit(cache=True, nogil=True)(copy)

    def pick(n_ratings):
        if n_ratings >= PARALLEL_MIN_RATINGS and numba.get_num_threads() > 1:
            return parallel
        return serial

    parallel.serial = serial
    parallel.pick = pick
    return parallel


@njit(cache=True, nogil=True)
def normalize_log_inplace(log_p):
    """Turn the log-weights ``log_p`` into probabilities in place.

    Returns the log normaliser (``logsumexp(log_p)``).  The maximum is shifted
    out before exponentiating so that nothing underflows to 0/0; when every
    weight is ``-inf`` the result is uniform and the normaliser ``-inf``.
    """
    n = log_p.shape[0]
    top = -np.inf
    for k in range(n):
        if log_p[k] > top:
            top = log_p[k]
    if top == -np.inf:
        for k in range(n):
            log_p[k] = 1.0 / n
        return -np.inf
    total = 0.0
    for k in range(n):
        log_p[k] = np.exp(log_p[k] - top)
        total += log_p[k]
    for k in range(n):
        log_p[k] /= total
    return top + np.log(total)


@serial_and_parallel
def vote_counts(item_ptr, label, n_classes, counts):
    """``counts[i, k]`` = number of ratings of item ``i`` with label ``k``."""
    for i in prange(item_ptr.shape[0] - 1):
        for k in range(n_classes):
            counts[i, k] = 0.0
        for n in range(item_ptr[i], item_ptr[i + 1]):
            counts[i, label[n]] += 1.0


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
