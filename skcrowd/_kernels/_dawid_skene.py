"""Dawid–Skene arithmetic: the E-step over items and the by-rater pass that
collects the expected confusion counts."""

import numpy as np
from numba import njit, prange

from ._common import normalize_log_inplace


@njit(cache=True, nogil=True, parallel=True)
def item_posteriors(item_ptr, rater, label, log_prior, log_confusion, posterior, loglik):
    """E-step: posterior over each item's true class and its log marginal.

    ``posterior[i, k]`` ∝ π_k Π_n θ_{rater_n}[k, label_n] over the ratings n of
    item i, normalised in log space; ``loglik[i]`` is the log normaliser
    (0 for an item with no ratings, since π sums to one).

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    rater, label : int32 (n_ratings,)
    log_prior : float64 (n_classes,)
    log_confusion : float64 (n_raters, n_classes, n_classes)
        ``log θ_j[true, given]``.
    posterior : float64 (n_items, n_classes), output
    loglik : float64 (n_items,), output
    """
    n_classes = log_prior.shape[0]
    for i in prange(item_ptr.shape[0] - 1):
        row = posterior[i]
        for k in range(n_classes):
            row[k] = log_prior[k]
        for n in range(item_ptr[i], item_ptr[i + 1]):
            theta = log_confusion[rater[n]]
            given = label[n]
            for k in range(n_classes):
                row[k] += theta[k, given]
        loglik[i] = normalize_log_inplace(row)


@njit(cache=True, nogil=True, parallel=True)
def confusion_counts(rater_ptr, rater_order, item, label, posterior, counts):
    """Expected confusion counts, one rater per thread.

    ``counts[j, k, l]`` = Σ over rater j's ratings n with label l of
    P(z_{item_n} = k).  Ratings are visited through the by-rater permutation
    so that each rater's row is written by one thread only.
    """
    n_classes = posterior.shape[1]
    for j in prange(rater_ptr.shape[0] - 1):
        out = counts[j]
        out[:, :] = 0.0
        for p in range(rater_ptr[j], rater_ptr[j + 1]):
            n = rater_order[p]
            i = item[n]
            given = label[n]
            for k in range(n_classes):
                out[k, given] += posterior[i, k]
