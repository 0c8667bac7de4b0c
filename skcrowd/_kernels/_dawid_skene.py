"""Dawid–Skene arithmetic: the E-step over items, fused with the collection
of the expected confusion counts, so that an EM iteration reads the ratings
once."""

import numpy as np
from numba import njit, prange

from ._common import (normalize_log_block, serial_and_parallel, start_log_rows,
                      store_posterior_rows)

#: items whose log joints are exponentiated together
ITEM_BLOCK = 256


@serial_and_parallel
def e_step(item_ptr, cell, log_prior, evidence, log_likelihood, chunk_ptr,
           posterior, loglik, partial_counts, partial_class):
    """E-step and expected confusion counts in one pass over the ratings.

    ``posterior[i, k]`` ∝ π_k Π_n θ_{rater_n}[k, label_n] over the ratings n
    of item i, normalised in log space; ``loglik[i]`` is the log normaliser
    (0 for an item with no ratings, since π sums to one).  Items are split
    into fixed chunks (``chunk_ptr``, chosen from the data shape, not from the
    number of threads); chunk c adds P(z_i = ·) of each of its ratings into
    its own ``partial_counts[c]``, so threads never share an output and the
    caller's serial sum over chunks is the same for any number of threads.

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    cell : int32 (n_ratings,)
        ``rater * n_classes + label`` of each rating: the row of
        ``log_likelihood`` it reads and of ``partial_counts`` it adds to.
    log_prior : float64 (n_classes,)
    evidence : float64 (n_items, n_classes) or (0, n_classes)
        Per-item offsets added to ``log_prior`` (the gold clamp: 0 / -inf),
        or no rows for none.
    log_likelihood : float64 (n_raters * n_classes, n_classes)
        ``log θ_j[true, given]`` at row ``j * n_classes + given``, column
        ``true``: the inner loop over the true class reads contiguous memory.
    chunk_ptr : int64 (n_chunks + 1,)
        Items of chunk c are ``chunk_ptr[c]:chunk_ptr[c + 1]``.
    posterior : float64 (n_items, n_classes), output
    loglik : float64 (n_items,), output
    partial_counts : float64 (n_chunks, n_raters * n_classes, n_classes), output
        Expected counts, laid out as ``log_likelihood``.
    partial_class : float64 (n_chunks, n_classes), output
        Σ of the posteriors of the chunk's items.
    """
    # Element indexing only in the inner loops: slicing a view per rating
    # costs an atomic reference count that the threads would contend for.
    n_classes = log_prior.shape[0]
    n_cells = partial_counts.shape[1]
    clamped = evidence.shape[0] > 0
    for c in prange(chunk_ptr.shape[0] - 1):
        # Items go through in blocks: their log joints are written to one
        # flat buffer, normalised in one vectorised pass (a loop of libm exp
        # over K = 5 values was the larger part of the step), then added to
        # the counts.  One buffer per chunk.
        rows = np.empty(ITEM_BLOCK * n_classes)
        bits = np.empty(ITEM_BLOCK * n_classes, dtype=np.int64)
        tops = np.empty(ITEM_BLOCK)  # log normalisers
        for r in range(n_cells):
            for k in range(n_classes):
                partial_counts[c, r, k] = 0.0
        for k in range(n_classes):
            partial_class[c, k] = 0.0
        for first in range(chunk_ptr[c], chunk_ptr[c + 1], ITEM_BLOCK):
            last = min(first + ITEM_BLOCK, chunk_ptr[c + 1])
            start_log_rows(rows, first, last, log_prior, evidence)
            for i in range(first, last):
                base = (i - first) * n_classes
                for n in range(item_ptr[i], item_ptr[i + 1]):
                    r = cell[n]
                    for k in range(n_classes):
                        rows[base + k] += log_likelihood[r, k]
            normalize_log_block(rows, last - first, n_classes, bits, tops)
            store_posterior_rows(rows, first, last, item_ptr, clamped, tops, posterior, loglik,
                                 partial_class[c])
            for i in range(first, last):
                for n in range(item_ptr[i], item_ptr[i + 1]):
                    r = cell[n]
                    for k in range(n_classes):
                        partial_counts[c, r, k] += posterior[i, k]


@njit(cache=True, nogil=True)
def confusion_counts(item, rater, label, posterior, counts):
    """Expected confusion counts of given posteriors (used once, at init).

    ``counts[j, k, l]`` = Σ over rater j's ratings n with label l of
    P(z_{item_n} = k).  Serial: one pass over the ratings.
    """
    n_classes = posterior.shape[1]
    counts[:] = 0.0
    for n in range(item.shape[0]):
        j = rater[n]
        given = label[n]
        i = item[n]
        for k in range(n_classes):
            counts[j, k, given] += posterior[i, k]
