"""Dawid–Skene arithmetic: the E-step over items, fused with the collection
of the expected confusion counts, so that an EM iteration reads the ratings
once."""

import numpy as np
from numba import prange

from ._common import (chunk_sums_numpy, exp_shifted_inplace, normalize_log_rows_numpy,
                      serial_and_parallel)
from ._config import jit, with_numpy_twin

#: items whose log joints are exponentiated together
ITEM_BLOCK = 256


#: true classes handled together in one pass over a block's ratings
CLASS_GROUP = 4


@jit
def log_joints(item_ptr, cell, log_prior, evidence, log_likelihood, first, last, rows):
    """Rows of :func:`e_step`'s block of items ``first:last``, class-major
    (item i, class k at ``k * (last - first) + i - first``): log π_k, plus
    the gold offset, plus Σ_n log θ_{j_n}[k, l_n] over the item's ratings.

    Four classes per pass over the ratings, one register each (each
    rating's cell is read once per four classes), then one class at a time.
    """
    n_classes = log_prior.shape[0]
    size = last - first
    clamped = evidence.shape[0] > 0
    grouped = n_classes - n_classes % CLASS_GROUP
    for k in range(0, grouped, CLASS_GROUP):
        row = k * size - first
        for i in range(first, last):
            t0, t1, t2, t3 = log_prior[k], log_prior[k + 1], log_prior[k + 2], log_prior[k + 3]
            if clamped:
                t0 += evidence[i, k]
                t1 += evidence[i, k + 1]
                t2 += evidence[i, k + 2]
                t3 += evidence[i, k + 3]
            for n in range(item_ptr[i], item_ptr[i + 1]):
                r = cell[n]
                t0 += log_likelihood[k, r]
                t1 += log_likelihood[k + 1, r]
                t2 += log_likelihood[k + 2, r]
                t3 += log_likelihood[k + 3, r]
            rows[row + i] = t0
            rows[row + size + i] = t1
            rows[row + 2 * size + i] = t2
            rows[row + 3 * size + i] = t3
    for k in range(grouped, n_classes):
        row = k * size - first
        for i in range(first, last):
            total = log_prior[k]
            if clamped:
                total += evidence[i, k]
            for n in range(item_ptr[i], item_ptr[i + 1]):
                total += log_likelihood[k, cell[n]]
            rows[row + i] = total


@jit
def add_counts(item_ptr, cell, rows, first, last, counts, class_total):
    """P(z_i = k) of the normalised block ``rows`` (laid out as in
    :func:`log_joints`) added into ``counts[k, cell]`` for each rating of
    items ``first:last``, and into ``class_total[k]``; four classes per
    pass over the ratings, then one at a time."""
    n_classes = counts.shape[0]
    size = last - first
    grouped = n_classes - n_classes % CLASS_GROUP
    for k in range(0, grouped, CLASS_GROUP):
        row = k * size - first
        s0, s1, s2, s3 = class_total[k], class_total[k + 1], class_total[k + 2], class_total[k + 3]
        for i in range(first, last):
            p0, p1 = rows[row + i], rows[row + size + i]
            p2, p3 = rows[row + 2 * size + i], rows[row + 3 * size + i]
            s0 += p0
            s1 += p1
            s2 += p2
            s3 += p3
            for n in range(item_ptr[i], item_ptr[i + 1]):
                r = cell[n]
                counts[k, r] += p0
                counts[k + 1, r] += p1
                counts[k + 2, r] += p2
                counts[k + 3, r] += p3
        class_total[k], class_total[k + 1], class_total[k + 2], class_total[k + 3] = s0, s1, s2, s3
    for k in range(grouped, n_classes):
        row = k * size - first
        total = class_total[k]
        for i in range(first, last):
            p = rows[row + i]
            total += p
            for n in range(item_ptr[i], item_ptr[i + 1]):
                counts[k, cell[n]] += p
        class_total[k] = total


def rating_items(item_ptr):
    """The item of each rating, from the items' rating offsets."""
    n_items = item_ptr.shape[0] - 1
    return np.repeat(np.arange(n_items), np.diff(item_ptr).astype(np.int64))


def e_step_numpy(item_ptr, cell, log_prior, evidence, log_likelihood, chunk_ptr, posterior,
                 loglik, partial_counts, partial_class):
    """:func:`e_step` in numpy: the same sums, vectorised over ratings."""
    n_items, n_classes = posterior.shape
    n_cells = log_likelihood.shape[1]
    n_chunks = chunk_ptr.shape[0] - 1
    item = rating_items(item_ptr)
    # log π_k + evidence + Σ_n log θ_{j_n}[k, l_n], one bincount per class
    # (each item's ratings summed in their order, as the kernel does)
    joint = np.empty((n_items, n_classes))
    for k in range(n_classes):
        joint[:, k] = np.bincount(item, weights=log_likelihood[k, cell], minlength=n_items)
    joint += log_prior
    if evidence.shape[0] > 0:
        joint += evidence
    posterior[:], loglik[:] = normalize_log_rows_numpy(joint)
    if evidence.shape[0] == 0:
        loglik[item_ptr[1:] == item_ptr[:-1]] = 0.0  # no ratings: likelihood 1
    # chunk c's expected counts in its own slice, as the kernel writes them
    chunk_of_item = np.repeat(np.arange(n_chunks), np.diff(chunk_ptr))
    slot = chunk_of_item[item] * n_cells + cell
    size = n_chunks * n_cells
    for k in range(n_classes):
        partial_counts[:, k, :] = np.bincount(slot, weights=posterior[item, k],
                                              minlength=size).reshape(n_chunks, n_cells)
    chunk_sums_numpy(posterior, chunk_ptr, partial_class)


@serial_and_parallel(numpy=e_step_numpy)
def e_step(item_ptr, cell, log_prior, evidence, log_likelihood, chunk_ptr, posterior, loglik,
           partial_counts, partial_class):
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
    item_ptr : uint64 (n_items + 1,)
    cell : uint32 (n_ratings,)
        ``rater * n_classes + label`` of each rating: the column of
        ``log_likelihood`` it reads and of ``partial_counts`` it adds to.
        Unsigned, so that indexing with it needs no negative-index
        wraparound (that select was half the instructions of the inner
        loops); the caller passes views of the int64 / int32 arrays.
    log_prior : float64 (n_classes,)
    evidence : float64 (n_items, n_classes) or (0, n_classes)
        Per-item offsets added to ``log_prior`` (the gold clamp: 0 / -inf),
        or no rows for none.
    log_likelihood : float64 (n_classes, n_raters * n_classes)
        ``log θ_j[true, given]`` at row ``true``, column ``j * n_classes + given``.
    chunk_ptr : int64 (n_chunks + 1,)
        Items of chunk c are ``chunk_ptr[c]:chunk_ptr[c + 1]``.
    posterior : float64 (n_items, n_classes), output
    loglik : float64 (n_items,), output
    partial_counts : float64 (n_chunks, n_classes, n_raters * n_classes), output
        Expected counts, laid out as ``log_likelihood``.
    partial_class : float64 (n_chunks, n_classes), output
        Σ of the posteriors of the chunk's items.
    """
    # Items go through in blocks whose rows are class-major (row k holds
    # every item's log joint for class k): the sums over an item's ratings
    # stay in registers (log_joints, add_counts) and the normalisation runs
    # down whole rows (a loop of libm exp over K = 5 values was the larger
    # part of the step, hence one vectorised exp over the block).  Every sum
    # is in the ratings' order, as in a row-by-row pass.
    n_classes = log_prior.shape[0]
    n_cells = log_likelihood.shape[1]
    clamped = evidence.shape[0] > 0
    for c in prange(chunk_ptr.shape[0] - 1):
        rows = np.empty(ITEM_BLOCK * n_classes)
        tops = np.empty(ITEM_BLOCK)  # per item: its largest log joint
        totals = np.empty(ITEM_BLOCK)  # per item: Σ_k e^(log joint - top), then its inverse
        for k in range(n_classes):
            partial_class[c, k] = 0.0
            for r in range(n_cells):
                partial_counts[c, k, r] = 0.0
        for first in range(chunk_ptr[c], chunk_ptr[c + 1], ITEM_BLOCK):
            last = min(first + ITEM_BLOCK, chunk_ptr[c + 1])
            size = last - first
            log_joints(item_ptr, cell, log_prior, evidence, log_likelihood, first, last, rows)
            # shift out each item's maximum (an all -inf item turns uniform)
            for j in range(size):
                tops[j] = rows[j]
            for k in range(1, n_classes):
                for j in range(size):
                    if rows[k * size + j] > tops[j]:
                        tops[j] = rows[k * size + j]
            for k in range(n_classes):
                for j in range(size):
                    top = tops[j]
                    rows[k * size + j] = rows[k * size + j] - top if top > -np.inf else 0.0
            exp_shifted_inplace(rows[:size * n_classes], 0.0)
            for j in range(size):
                totals[j] = rows[j]
            for k in range(1, n_classes):
                for j in range(size):
                    totals[j] += rows[k * size + j]
            for j in range(size):
                i = first + j
                # no ratings: likelihood 1 exactly (π sums to 1); with gold,
                # log Σ π e^evidence (log π_known for a known item)
                empty = item_ptr[i + 1] == item_ptr[i] and not clamped
                loglik[i] = 0.0 if empty else tops[j] + np.log(totals[j])
                totals[j] = 1.0 / totals[j]
            for k in range(n_classes):
                for j in range(size):
                    rows[k * size + j] *= totals[j]
            for j in range(size):
                for k in range(n_classes):
                    posterior[first + j, k] = rows[k * size + j]
            add_counts(item_ptr, cell, rows, first, last, partial_counts[c], partial_class[c])


def confusion_counts_numpy(item, rater, label, posterior, counts):
    """:func:`confusion_counts` in numpy."""
    n_raters, n_classes = counts.shape[0], posterior.shape[1]
    cell = rater * n_classes + label
    for k in range(n_classes):
        counts[:, k, :] = np.bincount(cell, weights=posterior[item, k],
                                      minlength=n_raters * n_classes).reshape(n_raters, n_classes)


@with_numpy_twin(confusion_counts_numpy, size=lambda item, *rest: item.shape[0])
@jit
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


def vote_share_counts_numpy(item_ptr, label, cell, n_classes, counts, class_counts):
    """:func:`vote_share_counts` in numpy."""
    n_items = item_ptr.shape[0] - 1
    item = rating_items(item_ptr)
    shares = np.bincount(item * n_classes + label, minlength=n_items * n_classes
                         ).reshape(n_items, n_classes).astype(np.float64)
    shares += 1e-12
    shares /= shares.sum(axis=1)[:, None]
    class_counts[:] = shares.sum(axis=0)
    for k in range(n_classes):
        counts[:, k] = np.bincount(cell, weights=shares[item, k], minlength=counts.shape[0])


@with_numpy_twin(vote_share_counts_numpy, size=lambda item_ptr, label, *rest: label.shape[0])
@jit
def vote_share_counts(item_ptr, label, cell, n_classes, counts, class_counts):
    """Expected confusion counts of the soft majority-vote start, without
    the posteriors: each item's vote shares (plus 1e-12 per class, so that
    an item without ratings starts uniform) added into the (rater, label)
    cell of each of its ratings.

    ``counts`` is cell-major, ``(n_raters * n_classes, n_classes)``: row
    ``cell`` holds the shares of the true classes, so a rating's K adds
    land side by side (in the true-class-major layout of :func:`e_step`
    they were K cache lines apart); ``class_counts[k]`` = Σ_i of the shares.
    Serial: one pass over the ratings (in item order).
    """
    shares = np.empty(n_classes)
    counts[:] = 0.0
    class_counts[:] = 0.0
    for i in range(item_ptr.shape[0] - 1):
        for k in range(n_classes):
            shares[k] = 0.0
        for n in range(item_ptr[i], item_ptr[i + 1]):
            shares[label[n]] += 1.0
        total = 0.0
        for k in range(n_classes):
            shares[k] += 1e-12
            total += shares[k]
        for k in range(n_classes):
            shares[k] /= total
            class_counts[k] += shares[k]
        for n in range(item_ptr[i], item_ptr[i + 1]):
            r = cell[n]
            for k in range(n_classes):
                counts[r, k] += shares[k]
