"""EBCC arithmetic (Li, Rubinstein & Cohn 2019): the variational posterior
over each item's (true class, subtype) pair, fused with the expected counts
that the next update of the Dirichlet posteriors reads, and the Dirichlet
expectations and KL terms of the evidence lower bound.

Layout: a rating's (rater j, label l) is its ``cell = j * K + l``; the
per-rater tables are ``(n_cells, K * M)`` arrays, row ``cell`` holding the
K x M (class k, subtype m) values side by side at ``k * M + m``, so the
K M adds of one rating touch one contiguous row.
"""

import math

import numpy as np
from numba import prange
from scipy.sparse import csr_matrix
from scipy.special import digamma as digamma_numpy
from scipy.special import gammaln

from ._common import digamma, normalize_log_rows_numpy, serial_and_parallel
from ._config import jit, with_numpy_twin


def _cell_matrix(item_ptr, cell, n_cells):
    """The items x cells indicator of the ratings (repeats add up)."""
    n_items = item_ptr.shape[0] - 1
    return csr_matrix((np.ones(cell.shape[0]), cell.astype(np.int64), item_ptr.astype(np.int64)),
                      shape=(n_items, n_cells))


def e_step_numpy(item_ptr, cell, log_prior, evidence, log_table, n_classes, chunk_ptr,
                 posterior, loglik, partial_counts, partial_joint):
    """:func:`e_step` in numpy: one sparse product over the ratings."""
    n_items = posterior.shape[0]
    n_cells, width = log_table.shape
    n_subtypes = width // n_classes
    ratings = _cell_matrix(item_ptr, cell, n_cells)
    joint = np.asarray(ratings @ log_table).reshape(n_items, width)
    joint += log_prior
    if evidence.shape[0] > 0:
        joint += np.repeat(evidence, n_subtypes, axis=1)
    q, loglik[:] = normalize_log_rows_numpy(joint)
    posterior[:] = q.reshape(n_items, n_classes, n_subtypes).sum(axis=2)
    for c in range(chunk_ptr.shape[0] - 1):
        rows = slice(chunk_ptr[c], chunk_ptr[c + 1])
        partial_counts[c] = np.asarray(ratings[rows].T @ q[rows])
        partial_joint[c] = q[rows].sum(axis=0)


@serial_and_parallel(numpy=e_step_numpy)
def e_step(item_ptr, cell, log_prior, evidence, log_table, n_classes, chunk_ptr,
           posterior, loglik, partial_counts, partial_joint):
    """q(z_i = k, g_i = m) of every item and the expected counts, one pass.

    ``log q(k, m)`` = ``log_prior[k M + m]`` (+ the gold offset
    ``evidence[i, k]``) + Σ_n ``log_table[cell_n, k M + m]`` over the
    item's ratings n, normalised in log space (Li et al. 2019, the update
    of q(z_i, g_i)); ``loglik[i]`` is the log normaliser and
    ``posterior[i, k]`` = Σ_m q(k, m).  Chunk c (``chunk_ptr``, from the
    data shape only) adds q of each of its ratings into its own
    ``partial_counts[c, cell_n]`` and each item's q into
    ``partial_joint[c]``, so the caller's serial sum over chunks does not
    depend on the number of threads.

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    cell : int32 (n_ratings,)
    log_prior : float64 (K * M,)
    evidence : float64 (n_items, K) or (0, K)
        Per-item offsets of each class (the gold clamp: 0 / -inf), or no
        rows for none.
    log_table : float64 (n_raters * K, K * M)
    n_classes : int
    chunk_ptr : int64 (n_chunks + 1,)
    posterior : float64 (n_items, K), output
    loglik : float64 (n_items,), output
    partial_counts : float64 (n_chunks, n_raters * K, K * M), output
    partial_joint : float64 (n_chunks, K * M), output
    """
    width = log_prior.shape[0]
    n_subtypes = width // n_classes
    n_cells = log_table.shape[0]
    clamped = evidence.shape[0] > 0
    for c in prange(chunk_ptr.shape[0] - 1):
        row = np.empty(width)
        for r in range(n_cells):
            for t in range(width):
                partial_counts[c, r, t] = 0.0
        for t in range(width):
            partial_joint[c, t] = 0.0
        for i in range(chunk_ptr[c], chunk_ptr[c + 1]):
            for t in range(width):
                row[t] = log_prior[t]
            if clamped:
                for k in range(n_classes):
                    for m in range(n_subtypes):
                        row[k * n_subtypes + m] += evidence[i, k]
            for n in range(item_ptr[i], item_ptr[i + 1]):
                r = cell[n]
                for t in range(width):
                    row[t] += log_table[r, t]
            top = -np.inf
            for t in range(width):
                if row[t] > top:
                    top = row[t]
            if top == -np.inf:  # every pair impossible: uniform, as the twin
                for t in range(width):
                    row[t] = 1.0
                loglik[i] = -np.inf
                total = float(width)
            else:
                total = 0.0
                for t in range(width):
                    row[t] = math.exp(row[t] - top)
                    total += row[t]
                loglik[i] = top + math.log(total)
            inv = 1.0 / total
            for t in range(width):
                row[t] *= inv
                partial_joint[c, t] += row[t]
            for k in range(n_classes):
                s = 0.0
                for m in range(n_subtypes):
                    s += row[k * n_subtypes + m]
                posterior[i, k] = s
            for n in range(item_ptr[i], item_ptr[i + 1]):
                r = cell[n]
                for t in range(width):
                    partial_counts[c, r, t] += row[t]


def joint_counts_numpy(item_ptr, cell, joint, counts):
    """:func:`joint_counts` in numpy."""
    counts[:] = np.asarray(_cell_matrix(item_ptr, cell, counts.shape[0]).T @ joint)


@with_numpy_twin(joint_counts_numpy, size=lambda item_ptr, cell, *rest: cell.shape[0])
@jit
def joint_counts(item_ptr, cell, joint, counts):
    """``counts[cell, t]`` = Σ over the ratings n in that cell of
    ``joint[item_n, t]``: the expected counts of given item posteriors
    q(k, m) (``joint``, ``(n_items, K * M)``), used once, at the start.
    Serial: one pass over the ratings."""
    counts[:] = 0.0
    for i in range(item_ptr.shape[0] - 1):
        for n in range(item_ptr[i], item_ptr[i + 1]):
            r = cell[n]
            for t in range(joint.shape[1]):
                counts[r, t] += joint[i, t]


def dirichlet_terms_numpy(posterior, prior, expected_log):
    """:func:`dirichlet_terms` in numpy (scipy's ψ and log Γ)."""
    total = posterior.sum(axis=1, keepdims=True)
    prior_total = prior.sum(axis=1, keepdims=True)
    expected_log[:] = digamma_numpy(posterior) - digamma_numpy(total)
    kl = (gammaln(total).sum() - gammaln(posterior).sum()
          - gammaln(prior_total).sum() + gammaln(prior).sum())
    return float(kl + np.sum((posterior - prior) * expected_log))


@with_numpy_twin(dirichlet_terms_numpy, size=lambda posterior, *rest: posterior.size)
@jit
def dirichlet_terms(posterior, prior, expected_log):
    """E[log p] under Dirichlet posteriors, and their KL from the priors.

    ``posterior`` and ``prior`` are ``(R, L, C)``: R x C Dirichlet
    distributions, each over the L entries of axis 1 (for the raters, row
    ``j`` of rater j, axis 1 the label, axis 2 the (class, subtype) pair).
    ``expected_log[r, l, c]`` = ψ(a_l) - ψ(Σ a) (Li et al. 2019, the
    expectations in the q(z, g) update); returns Σ KL(Dir(a) || Dir(b)) =
    Σ [log Γ(a_0) - Σ_l log Γ(a_l) - log Γ(b_0) + Σ_l log Γ(b_l)
    + Σ_l (a_l - b_l)(ψ(a_l) - ψ(a_0))], the ELBO's prior terms.
    """
    n_rows, n_entries, n_cols = posterior.shape
    kl = 0.0
    for r in range(n_rows):
        for c in range(n_cols):
            total = 0.0
            prior_total = 0.0
            for l in range(n_entries):
                total += posterior[r, l, c]
                prior_total += prior[r, l, c]
            psi_total = digamma(total)
            kl += math.lgamma(total) - math.lgamma(prior_total)
            for l in range(n_entries):
                a = posterior[r, l, c]
                e = digamma(a) - psi_total
                expected_log[r, l, c] = e
                kl += math.lgamma(prior[r, l, c]) - math.lgamma(a) + (a - prior[r, l, c]) * e
    return kl


def gibbs_sweep_numpy(item_ptr, cell, log_prior, evidence, log_table, n_classes, uniforms,
                      pair, posterior, counts, pair_counts):
    """:func:`gibbs_sweep` in numpy: one sparse product over the ratings."""
    n_items = posterior.shape[0]
    n_cells, width = log_table.shape
    n_subtypes = width // n_classes
    ratings = _cell_matrix(item_ptr, cell, n_cells)
    joint = np.asarray(ratings @ log_table).reshape(n_items, width)
    joint += log_prior
    if evidence.shape[0] > 0:
        joint += np.repeat(evidence, n_subtypes, axis=1)
    q, _ = normalize_log_rows_numpy(joint)
    posterior[:] = q.reshape(n_items, n_classes, n_subtypes).sum(axis=2)
    # inversion: the first pair whose cumulative probability passes u
    below = np.cumsum(q, axis=1) <= uniforms[:, None]
    pair[:] = np.minimum(below.sum(axis=1), width - 1)
    drawn = csr_matrix((np.ones(n_items), pair.astype(np.int64), np.arange(n_items + 1)),
                       shape=(n_items, width))
    counts[:] = np.asarray((ratings.T @ drawn).todense())
    pair_counts[:] = np.bincount(pair, minlength=width)


@with_numpy_twin(gibbs_sweep_numpy, size=lambda item_ptr, cell, *rest: cell.shape[0])
@jit
def gibbs_sweep(item_ptr, cell, log_prior, evidence, log_table, n_classes, uniforms,
                pair, posterior, counts, pair_counts):
    """One pass of EBCC's Gibbs sampler over the items.

    Item i's (class k, subtype m) pair is drawn from its full conditional
    p(z_i = k, g_i = m | τ, π, v) ∝ τ_k π_km Π_n v_{j_n k m}[l_n] (the
    generative model of Li et al. 2019): ``log_prior[k M + m]`` = log τ_k
    + log π_km (+ the gold clamp ``evidence[i, k]``, 0 or -inf, when it
    has rows) plus Σ_n ``log_table[cell_n, k M + m]`` = log v over the
    item's ratings, normalised, and inverted at ``uniforms[i]`` into
    ``pair[i]`` = k M + m.  ``posterior[i, k]`` = Σ_m of the conditional
    (the item's class probabilities given the parameters: the
    Rao-Blackwellised prediction); ``counts[cell, k M + m]`` counts the
    ratings in each cell on items drawn in pair (k, m) and
    ``pair_counts`` the items drawn in each pair: the sufficient
    statistics of the Dirichlet conditionals.  Serial: one pass over the
    ratings, outputs overwritten.
    """
    width = log_prior.shape[0]
    n_subtypes = width // n_classes
    clamped = evidence.shape[0] > 0
    counts[:] = 0.0
    pair_counts[:] = 0.0
    row = np.empty(width)
    for i in range(item_ptr.shape[0] - 1):
        for t in range(width):
            row[t] = log_prior[t]
        if clamped:
            for k in range(n_classes):
                for m in range(n_subtypes):
                    row[k * n_subtypes + m] += evidence[i, k]
        for n in range(item_ptr[i], item_ptr[i + 1]):
            r = cell[n]
            for t in range(width):
                row[t] += log_table[r, t]
        top = -np.inf
        for t in range(width):
            if row[t] > top:
                top = row[t]
        total = 0.0
        for t in range(width):
            # every pair impossible: uniform, as the twin
            row[t] = 1.0 if top == -np.inf else math.exp(row[t] - top)
            total += row[t]
        target = uniforms[i]
        drawn = width - 1
        running = 0.0
        for t in range(width):
            row[t] /= total
            running += row[t]
            if drawn == width - 1 and running > target:
                drawn = t
        for k in range(n_classes):
            s = 0.0
            for m in range(n_subtypes):
                s += row[k * n_subtypes + m]
            posterior[i, k] = s
        pair[i] = drawn
        pair_counts[drawn] += 1.0
        for n in range(item_ptr[i], item_ptr[i + 1]):
            counts[cell[n], drawn] += 1.0


__all__ = ["dirichlet_terms", "e_step", "gibbs_sweep", "joint_counts"]
