"""Pieces that the posterior samplers of MACE and GLAD share (each model's
sampler is in its own module; :mod:`skcrowd.uncertainty` is their common
interface)."""

import numpy as np

__all__ = ["PREVALENCE_MOVES", "draw_classes", "prevalence_moves"]

#: Metropolis moves of the prevalence per sweep with the classes summed out
#: (:func:`prevalence_moves`); each costs O(items x classes)
PREVALENCE_MOVES = 5


def draw_classes(proba, rng):
    """One class per row of ``proba``, by inversion of its cumulative sum."""
    u = rng.random(len(proba))[:, None]
    return np.minimum((u > np.cumsum(proba, axis=1)).sum(axis=1), proba.shape[1] - 1)


def prevalence_moves(pi, proba, concentration, step, rng):
    """Random-walk Metropolis on the prevalence π with every item's class
    summed out, from ``proba``, the items' class posteriors at ``pi``.

    Changing π to π' multiplies item i's marginal likelihood by
    Σ_k proba_ik π'_k / π_k, so no pass over the ratings is needed.  The
    walk is on the additive log-ratios log(π_k / π_K), under the
    Dirichlet(``concentration``) prior (its density there gains the
    Jacobian Π_k π_k).  Drawing π given the classes alone mixes slowly
    when the ratings say little about the classes: π and the class counts
    then pin each other down (lag-one autocorrelation about
    n / (n + Σ concentration)).  Returns π, the item posteriors at it
    (to draw the classes from next: the blocked draw of π and the
    classes) and the number of moves accepted.
    """
    def target(p):
        with np.errstate(divide="ignore"):
            return (np.sum(concentration * np.log(p))
                    + np.sum(np.log(proba @ (p / pi))))

    current, value, accepted = pi, target(pi), 0
    for _ in range(PREVALENCE_MOVES):
        logits = np.log(current[:-1] / current[-1]) + step * rng.standard_normal(len(pi) - 1)
        proposal = np.exp(np.append(logits, 0.0) - max(logits.max(), 0.0))
        proposal /= proposal.sum()
        new = target(proposal)
        if np.log(rng.random()) < new - value:
            current, value, accepted = proposal, new, accepted + 1
    proba = proba * (current / pi)
    return current, proba / proba.sum(axis=1, keepdims=True), accepted
