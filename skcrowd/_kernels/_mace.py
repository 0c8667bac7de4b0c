"""MACE arithmetic: the posterior over each item's true label, fused with
the expected "knew the answer" counts, so that an iteration reads the
ratings once.

For a rating with label l by rater j, P(l | T = k) is θ_j + (1 - θ_j) ξ_j[l]
when k = l and (1 - θ_j) ξ_j[l] otherwise (Hovy et al. 2013, eq. 1).  In
log space that is ``off[cell] + gain[cell] * [k == l]`` with
``off = log((1 - θ) ξ_l)`` and ``gain = log(1 + θ / ((1 - θ) ξ_l)) >= 0``,
so an item costs O(ratings + classes) instead of O(ratings x classes).
"""

import math

import numpy as np
from numba import prange

from ._common import (chunk_sums_numpy, digamma, normalize_log_block,
                      normalize_log_rows_numpy, serial_and_parallel, start_log_rows,
                      store_posterior_rows)
from ._config import jit, with_numpy_twin
from ._dawid_skene import rating_items

#: items whose log joints are exponentiated together
ITEM_BLOCK = 256
#: log of the smallest normal double: the floor of log P(label | T != label)
LOG_TINY = math.log(np.finfo(np.float64).tiny)


def e_step_numpy(item_ptr, label, cell, log_prior, evidence, off, gain, know_share, chunk_ptr,
                 posterior, loglik, partial_know, partial_class):
    """:func:`e_step` in numpy: the same sums, vectorised over ratings."""
    n_items, n_classes = posterior.shape
    n_cells = partial_know.shape[1]
    n_chunks = chunk_ptr.shape[0] - 1
    item = rating_items(item_ptr)
    # log π_k + evidence + Σ_n gain over the ratings with label k; the spam
    # term Σ_n off, the same for every class, enters the normaliser only
    joint = np.bincount(item * n_classes + label, weights=gain[cell],
                        minlength=n_items * n_classes).reshape(n_items, n_classes)
    joint = joint.astype(np.float64, copy=False)  # (int64 when there are no items)
    joint += log_prior
    if evidence.shape[0] > 0:
        joint += evidence
    spam = np.bincount(item, weights=off[cell], minlength=n_items)
    posterior[:], loglik[:] = normalize_log_rows_numpy(joint)
    loglik += spam
    if evidence.shape[0] == 0:
        loglik[item_ptr[1:] == item_ptr[:-1]] = 0.0  # no ratings: likelihood 1
    chunk_of_item = np.repeat(np.arange(n_chunks), np.diff(chunk_ptr))
    partial_know[:] = np.bincount(
        chunk_of_item[item] * n_cells + cell, weights=posterior[item, label] * know_share[cell],
        minlength=n_chunks * n_cells).reshape(n_chunks, n_cells)
    chunk_sums_numpy(posterior, chunk_ptr, partial_class)


@serial_and_parallel(numpy=e_step_numpy)
def e_step(item_ptr, label, cell, log_prior, evidence, off, gain, know_share, chunk_ptr,
           posterior, loglik, partial_know, partial_class):
    """Posterior over the true label and expected knowing counts, one pass.

    ``posterior[i, k]`` ∝ π_k Π_n P(label_n | k) over the ratings n of item
    i, normalised in log space; ``loglik[i]`` is the log normaliser (0 for
    an item without ratings).  A rating n of an item with posterior q knew
    the answer with probability q[label_n] · ``know_share[cell_n]`` (only a
    rater who gave the true label can have known it); that probability is
    added to ``partial_know[c, cell_n]`` of the item's chunk c.  Chunks (``chunk_ptr``, chosen from the
    data shape) write only their own rows, so the caller's serial sum over
    chunks is the same for any number of threads.

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    label : int32 (n_ratings,)
    cell : int32 (n_ratings,)
        ``rater * n_classes + label`` of each rating.
    log_prior : float64 (n_classes,)
    evidence : float64 (n_items, n_classes) or (0, n_classes)
        Per-item offsets added to ``log_prior`` (the gold clamp: 0 / -inf),
        or no rows for none.
    off : float64 (n_raters * n_classes,)
        log P(label | T != label) of each cell.
    gain : float64 (n_raters * n_classes,)
        log P(label | T = label) - ``off``.
    know_share : float64 (n_raters * n_classes,)
        P(knew | label, T = label) = θ / (θ + (1 - θ) ξ_label).
    chunk_ptr : int64 (n_chunks + 1,)
    posterior : float64 (n_items, n_classes), output
    loglik : float64 (n_items,), output
    partial_know : float64 (n_chunks, n_raters * n_classes), output
    partial_class : float64 (n_chunks, n_classes), output
        Σ of the posteriors of the chunk's items.
    """
    n_classes = log_prior.shape[0]
    n_cells = partial_know.shape[1]
    clamped = evidence.shape[0] > 0
    for c in prange(chunk_ptr.shape[0] - 1):
        # Items go through in blocks, as in the Dawid-Skene kernel: their
        # log joints are written to one flat buffer and normalised in one
        # vectorised pass (a libm exp per class and item was a third of the
        # step), then added to the counts.
        rows = np.empty(ITEM_BLOCK * n_classes)
        spam = np.empty(ITEM_BLOCK)  # the spam term of each item
        norms = np.empty(ITEM_BLOCK)
        for r in range(n_cells):
            partial_know[c, r] = 0.0
        for k in range(n_classes):
            partial_class[c, k] = 0.0
        for first in range(chunk_ptr[c], chunk_ptr[c + 1], ITEM_BLOCK):
            last = min(first + ITEM_BLOCK, chunk_ptr[c + 1])
            start_log_rows(rows, first, last, log_prior, evidence)
            for i in range(first, last):
                base = (i - first) * n_classes
                shared = 0.0  # the spam term every class gets
                for n in range(item_ptr[i], item_ptr[i + 1]):
                    r = cell[n]
                    shared += off[r]
                    rows[base + label[n]] += gain[r]
                spam[i - first] = shared
            normalize_log_block(rows, last - first, n_classes, norms)
            for i in range(last - first):
                norms[i] += spam[i]
            store_posterior_rows(rows, first, last, item_ptr, clamped, norms, posterior, loglik,
                                 partial_class[c])
            for i in range(first, last):
                base = (i - first) * n_classes
                for n in range(item_ptr[i], item_ptr[i + 1]):
                    r = cell[n]
                    partial_know[c, r] += rows[base + label[n]] * know_share[r]


def start_counts_numpy(item_ptr, label, cell, posterior, share, know, count, class_counts):
    """:func:`start_counts` in numpy."""
    item = rating_items(item_ptr)
    know[:] = np.bincount(cell, weights=posterior[item, label] * share, minlength=know.shape[0])
    count[:] = np.bincount(cell, minlength=count.shape[0])
    class_counts[:] = posterior.sum(axis=0)


@with_numpy_twin(start_counts_numpy, size=lambda item_ptr, label, *rest: label.shape[0])
@jit
def start_counts(item_ptr, label, cell, posterior, share, know, count, class_counts):
    """The counts of a start from item posteriors, in one pass.

    ``know[cell_n]`` gets ``posterior[i, label_n] * share`` for each rating
    n of item i (every rater at the same θ and uniform ξ: a rating whose
    label has posterior q knew the answer with probability q · ``share``),
    ``count[cell_n]`` the number of ratings and ``class_counts`` the sum of
    the posteriors.  Outputs are overwritten.

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    label, cell : int32 (n_ratings,)
    posterior : float64 (n_items, n_classes)
    share : float
    know, count : float64 (n_raters * n_classes,), output
    class_counts : float64 (n_classes,), output
    """
    n_items, n_classes = posterior.shape
    know[:] = 0.0
    count[:] = 0.0
    class_counts[:] = 0.0
    for i in range(n_items):
        for k in range(n_classes):
            class_counts[k] += posterior[i, k]
        for n in range(item_ptr[i], item_ptr[i + 1]):
            r = cell[n]
            know[r] += posterior[i, label[n]] * share
            count[r] += 1.0


def cell_tables_numpy(log_know, log_spam, log_strategy, off, gain, know_share):
    """:func:`cell_tables` in numpy."""
    spam = np.maximum(log_spam[:, None] + log_strategy, LOG_TINY)
    know = log_know[:, None]
    top = np.maximum(spam, know)
    both = top + np.log(np.exp(spam - top) + np.exp(know - top))
    off[:] = spam.ravel()
    gain[:] = (both - spam).ravel()
    know_share[:] = np.exp(know - both).ravel()


def _n_cells(*args):
    """The size of a per-rater kernel's call: its (rater, label) cells."""
    return args[2].size


@with_numpy_twin(cell_tables_numpy, size=_n_cells)
@jit
def cell_tables(log_know, log_spam, log_strategy, off, gain, know_share):
    """The e-step's per (rater, label) tables from log θ, log(1 - θ), log ξ
    (see the module docstring): ``off`` = log((1 - θ) ξ_l) (at least
    ``LOG_TINY``), ``gain`` =
    log(θ + (1 - θ) ξ_l) - ``off``, ``know_share`` = θ / (θ + (1 - θ) ξ_l)."""
    n_raters, n_classes = log_strategy.shape
    for j in range(n_raters):
        for l in range(n_classes):
            r = j * n_classes + l
            # A competence that rounds to 1 (or ξ_l to 0) makes off = -inf
            # and gain = +inf, and their sum for the rating's own class NaN;
            # floored at the smallest normal double, P(l | T != l) is
            # 2.2e-308 instead of 0 and a posterior moves by as little.
            spam = max(log_spam[j] + log_strategy[j, l], LOG_TINY)
            top = max(spam, log_know[j])
            both = top + np.log(np.exp(spam - top) + np.exp(log_know[j] - top))
            off[r] = spam
            gain[r] = both - spam
            know_share[r] = np.exp(log_know[j] - both)


def rater_update_numpy(know, count, variational, prior_knowing, prior_spamming,
                       prior_strategy, smoothing, log_know, log_spam, log_strategy, knowing,
                       spamming, strategy, off, gain, know_share):
    """:func:`rater_update` in numpy."""
    n_raters, n_classes = log_strategy.shape
    if variational:
        a0, b0, c0 = prior_knowing, prior_spamming, prior_strategy
    else:
        a0, b0, c0 = smoothing, smoothing, smoothing
    spam = np.maximum(count - know, 0.0).reshape(n_raters, n_classes)
    strategy[:] = spam + c0
    knowing[:] = know.reshape(n_raters, n_classes).sum(axis=1) + a0
    spamming[:] = spam.sum(axis=1) + b0
    return rater_params_numpy(knowing, spamming, strategy, variational, prior_knowing,
                              prior_spamming, prior_strategy, smoothing, log_know, log_spam,
                              log_strategy, off, gain, know_share)


@with_numpy_twin(rater_update_numpy, size=lambda know, *rest: know.size)
@jit
def rater_update(know, count, variational, prior_knowing, prior_spamming, prior_strategy,
                 smoothing, log_know, log_spam, log_strategy, knowing, spamming, strategy,
                 off, gain, know_share):
    """The global step for every rater from the summed counts; returns the
    parameter term of the objective.

    ``know[j * K + l]`` is the expected number of rater j's ratings with
    label l in which the rater knew the answer, ``count`` the number of
    those ratings; the rest were spam with label l.  ``knowing``,
    ``spamming`` and ``strategy`` get the counts plus their prior:
    ``variational``, the parameters of q(θ_j) = Beta(``knowing``,
    ``spamming``) and q(ξ_j) = Dir(``strategy``) (Hovy et al. 2013, §2.1);
    otherwise the counts with ``smoothing`` added, whose ratios are the MAP
    EM estimates.  The rest is :func:`rater_params` of those.

    Parameters
    ----------
    know, count : float64 (n_raters * n_classes,)
    variational : bool
    prior_knowing, prior_spamming, prior_strategy, smoothing : float
    log_know, log_spam : float64 (n_raters,), output
    log_strategy : float64 (n_raters, n_classes), output
    knowing, spamming : float64 (n_raters,), output
    strategy : float64 (n_raters, n_classes), output
    off, gain, know_share : float64 (n_raters * n_classes,), output
    """
    n_raters, n_classes = log_strategy.shape
    if variational:
        a0, b0, c0 = prior_knowing, prior_spamming, prior_strategy
    else:
        a0, b0, c0 = smoothing, smoothing, smoothing
    for j in range(n_raters):
        known = 0.0
        spammed = 0.0
        for l in range(n_classes):
            r = j * n_classes + l
            known += know[r]
            # Only the label's own cell holds knowing ratings; the rest spam.
            spam = max(count[r] - know[r], 0.0)
            strategy[j, l] = spam + c0
            spammed += spam
        knowing[j] = known + a0
        spamming[j] = spammed + b0
    return _rater_params_jit(knowing, spamming, strategy, variational, prior_knowing,
                             prior_spamming, prior_strategy, smoothing, log_know, log_spam,
                             log_strategy, off, gain, know_share)


def rater_params_numpy(knowing, spamming, strategy, variational, prior_knowing,
                       prior_spamming, prior_strategy, smoothing, log_know, log_spam,
                       log_strategy, off, gain, know_share):
    """:func:`rater_params` in numpy (scipy's digamma and gammaln)."""
    from scipy.special import digamma as psi, gammaln

    n_classes = log_strategy.shape[1]
    a0, b0, c0 = prior_knowing, prior_spamming, prior_strategy
    a, b = knowing, spamming
    c_total = strategy.sum(axis=1)
    if variational:
        log_beta0 = math.lgamma(a0) + math.lgamma(b0) - math.lgamma(a0 + b0)
        log_dir0 = n_classes * math.lgamma(c0) - math.lgamma(n_classes * c0)
        psi_ab = psi(a + b)
        log_know[:] = psi(a) - psi_ab
        log_spam[:] = psi(b) - psi_ab
        log_strategy[:] = psi(strategy) - psi(c_total)[:, None]
        kl = (log_beta0 - (gammaln(a) + gammaln(b) - gammaln(a + b))
              + (a - a0) * log_know + (b - b0) * log_spam
              + gammaln(c_total) + log_dir0
              + ((strategy - c0) * log_strategy - gammaln(strategy)).sum(axis=1))
        term = -float(kl.sum())
    else:
        log_know[:] = np.log(a / (a + b))
        log_spam[:] = np.log(b / (a + b))
        log_strategy[:] = np.log(strategy / c_total[:, None])
        term = float(smoothing * (log_know + log_spam + log_strategy.sum(axis=1)).sum())
    cell_tables_numpy(log_know, log_spam, log_strategy, off, gain, know_share)
    return term


@with_numpy_twin(rater_params_numpy, size=_n_cells)
@jit
def rater_params(knowing, spamming, strategy, variational, prior_knowing, prior_spamming,
                 prior_strategy, smoothing, log_know, log_spam, log_strategy, off, gain,
                 know_share):
    """The local step's log parameters and tables of every rater from the
    Beta / Dirichlet parameters (``variational``) or the smoothed counts
    (EM) ``knowing``, ``spamming``, ``strategy``; returns the parameter term
    of the objective.

    ``variational``: the log outputs are E[log θ_j], E[log(1 - θ_j)],
    E[log ξ_j] under q, and the term is -Σ_j KL(q(θ_j) || p) + KL(q(ξ_j) || p)
    with p the Beta(``prior_knowing``, ``prior_spamming``) and
    Dir(``prior_strategy``) priors.  Otherwise θ_j = knowing / (knowing +
    spamming), ξ_j = strategy normalised; the log outputs are log θ_j,
    log(1 - θ_j), log ξ_j and the term the log prior Σ smoothing ·
    log(parameter).  The e-step's tables ``off``, ``gain``, ``know_share``
    are filled too (:func:`cell_tables`).  Any positive inputs are valid
    (the accelerated loop extrapolates them in log coordinates).
    """
    n_raters, n_classes = log_strategy.shape
    a0, b0, c0 = prior_knowing, prior_spamming, prior_strategy
    # the Beta and Dirichlet normalisers of the prior
    log_beta0 = math.lgamma(a0) + math.lgamma(b0) - math.lgamma(a0 + b0)
    log_dir0 = n_classes * math.lgamma(c0) - math.lgamma(n_classes * c0)
    term = 0.0
    for j in range(n_raters):
        a, b = knowing[j], spamming[j]
        c_total = 0.0
        for l in range(n_classes):
            c_total += strategy[j, l]
        if variational:
            psi_ab = digamma(a + b)
            log_know[j] = digamma(a) - psi_ab
            log_spam[j] = digamma(b) - psi_ab
            psi_c = digamma(c_total)
            kl = (log_beta0 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
                  + (a - a0) * log_know[j] + (b - b0) * log_spam[j])
            kl += math.lgamma(c_total) + log_dir0
            for l in range(n_classes):
                c = strategy[j, l]
                log_strategy[j, l] = digamma(c) - psi_c
                kl += (c - c0) * log_strategy[j, l] - math.lgamma(c)
            term -= kl
        else:
            log_know[j] = np.log(a / (a + b))
            log_spam[j] = np.log(b / (a + b))
            term += smoothing * (log_know[j] + log_spam[j])
            for l in range(n_classes):
                log_strategy[j, l] = np.log(strategy[j, l] / c_total)
                term += smoothing * log_strategy[j, l]
    _cell_tables_jit(log_know, log_spam, log_strategy, off, gain, know_share)
    return term


# the compiled sides, for the compiled kernels that call them
_cell_tables_jit = cell_tables.jit
_rater_params_jit = rater_params.jit
