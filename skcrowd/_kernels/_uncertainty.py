"""Kernels of the posterior samplers (skcrowd.uncertainty)."""

import numpy as np
from numba import njit, prange

from ._common import serial_and_parallel
from ._irt import _pattern_posterior


@serial_and_parallel
def pattern_cell_cdf(pattern_ptr, rater, label, log_prior, table, cdf):
    """Cumulative posterior over the cells (z, grid node), per pattern.

    ``cdf[p, z * M + m]`` = P(cell <= (z, m) | ratings of pattern p), with
    ``log_prior`` the log prior of each cell and ``table[g, y, z * M + m]``
    = log P(rating y | cell; rater group g); used to draw every item's
    class and node jointly in IRT3PL's posterior sampler.
    """
    n_cells = log_prior.shape[0]
    for p in prange(pattern_ptr.shape[0] - 1):
        post = np.empty(n_cells)
        _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post)
        running = 0.0
        for k in range(n_cells):
            running += post[k]
            cdf[p, k] = running


@njit(cache=True, nogil=True)
def dawid_skene_sweep(item_ptr, rater, label, log_theta, log_prior, uniforms, z, proba,
                      counts, class_counts):
    """One pass of DawidSkene's Gibbs sampler over the items.

    Each item's posterior over its true class (``proba[i]``) given the
    log confusion ``log_theta[j, k, l]`` and log prevalence, its class
    drawn by inverting that posterior's cumulative sum at ``uniforms[i]``
    (into ``z``), and the counts of the drawn classes: ``counts[j, k, l]``
    ratings l by rater j of items drawn in class k, ``class_counts[k]``.
    Ratings sorted by item (``item_ptr``); outputs overwritten.
    """
    n_classes = log_prior.shape[0]
    counts[:] = 0.0
    class_counts[:] = 0.0
    post = np.empty(n_classes)
    for i in range(item_ptr.shape[0] - 1):
        for k in range(n_classes):
            post[k] = log_prior[k]
        for r in range(item_ptr[i], item_ptr[i + 1]):
            j, y = rater[r], label[r]
            for k in range(n_classes):
                post[k] += log_theta[j, k, y]
        top = post[0]
        for k in range(1, n_classes):
            top = max(top, post[k])
        total = 0.0
        for k in range(n_classes):
            post[k] = np.exp(post[k] - top)
            total += post[k]
        target = uniforms[i] * total
        drawn = n_classes - 1
        running = 0.0
        for k in range(n_classes):
            proba[i, k] = post[k] / total
            running += post[k]
            if drawn == n_classes - 1 and running > target:
                drawn = k
        z[i] = drawn
        class_counts[drawn] += 1.0
        for r in range(item_ptr[i], item_ptr[i + 1]):
            counts[rater[r], drawn, label[r]] += 1.0
