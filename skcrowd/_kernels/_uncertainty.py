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
def _draw_class(i, post, uniform, proba):
    """Item i's log posterior ``post`` (overwritten) normalised into
    ``proba[i]``; returns the class at which its cumulative sum passes
    ``uniform`` (inversion)."""
    n_classes = post.shape[0]
    top = post[0]
    for k in range(1, n_classes):
        top = max(top, post[k])
    total = 0.0
    for k in range(n_classes):
        post[k] = np.exp(post[k] - top)
        total += post[k]
    target = uniform * total
    drawn = n_classes - 1
    running = 0.0
    for k in range(n_classes):
        proba[i, k] = post[k] / total
        running += post[k]
        if drawn == n_classes - 1 and running > target:
            drawn = k
    return drawn


@njit(cache=True, nogil=True)
def dawid_skene_sweep(item_ptr, rater, label, log_theta, log_prior, evidence, uniforms, z,
                      proba, counts, class_counts):
    """One pass of DawidSkene's Gibbs sampler over the items.

    Each item's posterior over its true class (``proba[i]``) given the
    log confusion ``log_theta[j, k, l]`` and log prevalence (plus the gold
    clamp ``evidence[i]``, 0 or -inf per class, when it has rows), its
    class drawn by inverting that posterior's cumulative sum at
    ``uniforms[i]`` (into ``z``), and the counts of the drawn classes:
    ``counts[j, k, l]`` ratings l by rater j of items drawn in class k,
    ``class_counts[k]``.  Ratings sorted by item (``item_ptr``); outputs
    overwritten.
    """
    n_classes = log_prior.shape[0]
    clamp = evidence.shape[0] > 0
    counts[:] = 0.0
    class_counts[:] = 0.0
    post = np.empty(n_classes)
    for i in range(item_ptr.shape[0] - 1):
        for k in range(n_classes):
            post[k] = log_prior[k] + (evidence[i, k] if clamp else 0.0)
        for r in range(item_ptr[i], item_ptr[i + 1]):
            j, y = rater[r], label[r]
            for k in range(n_classes):
                post[k] += log_theta[j, k, y]
        drawn = _draw_class(i, post, uniforms[i], proba)
        z[i] = drawn
        class_counts[drawn] += 1.0
        for r in range(item_ptr[i], item_ptr[i + 1]):
            counts[rater[r], drawn, label[r]] += 1.0


@njit(cache=True, nogil=True)
def mace_sweep(item_ptr, rater, label, log_off, log_hit, log_prior, evidence, uniforms, z,
               proba, hits, class_counts):
    """One pass of MACE's Gibbs sampler over the items (Hovy et al. 2013).

    With the spam indicators summed out, rater j gives label l to an item
    of class k with probability (1 - θ_j) ξ_jl, plus θ_j when l = k:
    ``log_off[j, l]`` = log((1 - θ_j) ξ_jl) and ``log_hit[j, l]`` =
    log(θ_j + (1 - θ_j) ξ_jl).  Each item's posterior over its class
    (``proba[i]``, with the gold clamp ``evidence[i]`` when it has rows) is
    π_k Π_n off(n) times the hit-over-off ratio of its ratings of label k;
    its class is drawn at ``uniforms[i]`` (into ``z``), and ``hits[j, l]``
    counts the ratings l of rater j on items drawn in class l (the only
    ratings whose rater may have known the answer), ``class_counts[k]``
    the items drawn in class k.  O(K) per rating and O(J K) tables.
    """
    n_classes = log_prior.shape[0]
    clamp = evidence.shape[0] > 0
    hits[:] = 0.0
    class_counts[:] = 0.0
    post = np.empty(n_classes)
    for i in range(item_ptr.shape[0] - 1):
        base = 0.0
        for k in range(n_classes):
            post[k] = log_prior[k] + (evidence[i, k] if clamp else 0.0)
        for r in range(item_ptr[i], item_ptr[i + 1]):
            j, y = rater[r], label[r]
            base += log_off[j, y]
            post[y] += log_hit[j, y] - log_off[j, y]
        for k in range(n_classes):
            post[k] += base
        drawn = _draw_class(i, post, uniforms[i], proba)
        z[i] = drawn
        class_counts[drawn] += 1.0
        for r in range(item_ptr[i], item_ptr[i + 1]):
            if label[r] == drawn:
                hits[rater[r], drawn] += 1.0


@njit(cache=True, nogil=True)
def _log_sigmoid(t):
    if t >= 0:
        return -np.log1p(np.exp(-t))
    return t - np.log1p(np.exp(t))


@njit(cache=True, nogil=True)
def glad_class_loglik(item_ptr, rater, label, alpha, b, log_other, S):
    """``S[i, k]`` = log p(item i's ratings | z_i = k, α, b_i) under GLAD
    (Whitehill et al. 2009, multi-class): log σ(α_j e^{b_i}) for each
    rating of label k, log(1 - σ(α_j e^{b_i})) - ``log_other`` for each
    other one.  Ratings sorted by item (``item_ptr``); ``S`` overwritten.
    """
    n_classes = S.shape[1]
    for i in range(item_ptr.shape[0] - 1):
        beta = np.exp(b[i])
        base = 0.0
        for k in range(n_classes):
            S[i, k] = 0.0
        for r in range(item_ptr[i], item_ptr[i + 1]):
            t = alpha[rater[r]] * beta
            right = _log_sigmoid(t)
            wrong = right - t - log_other  # log σ(-t) = log σ(t) - t
            base += wrong
            S[i, label[r]] += right - wrong
        for k in range(n_classes):
            S[i, k] += base


@njit(cache=True, nogil=True)
def glad_rater_loglik(item, rater, label, z, alpha, beta, out):
    """``out[j]`` = Σ log σ(±α_j β_i) over rater j's ratings, + when the
    rating is the item's class ``z[i]``: the abilities' log likelihood
    given the classes (overwritten)."""
    out[:] = 0.0
    for r in range(item.shape[0]):
        i, j = item[r], rater[r]
        t = alpha[j] * beta[i]
        out[j] += _log_sigmoid(t if label[r] == z[i] else -t)
