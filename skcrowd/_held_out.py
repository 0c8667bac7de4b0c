"""Held-out log likelihood of the items' ratings, for AutoCrowd's choice.

The ratings are encoded once (by the first candidate's fit) and every
candidate that shares its classes and raters is scored on the same codes:
a fold is a subset of the encoded items, not a new encoding.  An iterative
model's fold fit starts from its fit on all the items and runs a few EM
passes (``n_passes``): four fifths of the items barely move the fitted
parameters, and the score only has to rank the candidates.  Majority
vote's fold fit is its closed form (one pass of counts).
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._base import CrowdEstimator, CrowdModel
from ._ratings import RatingData

__all__ = ["held_out_scores", "majority_posterior", "take_items"]


def take_items(data, rows, gold=True):
    """The encoded ratings of the items ``rows`` (sorted) of ``data``, with
    its raters and classes (the codes are unchanged); their known labels
    when ``gold`` is true."""
    rows = np.asarray(rows, dtype=np.int64)
    starts = data.item_ptr[rows]
    lengths = data.item_ptr[rows + 1] - starts
    item_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=item_ptr[1:])
    take = np.repeat(starts - item_ptr[:-1], lengths) + np.arange(item_ptr[-1])
    item = np.repeat(np.arange(len(rows), dtype=np.int32), lengths)
    item_ids = None if data.item_ids is None else data.item_ids[rows]
    known = data.gold[rows] if gold and data.gold is not None else None
    return RatingData(item, data.rater[take], data.label[take], item_ptr, data.n_raters,
                      data.n_classes, item_ids=item_ids, form="ratings", gold=known)


def _shares_codes(model, reference):
    """Whether ``model`` was fitted with the classes and raters of
    ``reference`` (then the reference's encoding is the model's too)."""
    return (isinstance(model, CrowdEstimator)
            and len(model.classes_) == len(reference.classes_)
            and np.all(model.classes_ == reference.classes_)
            and len(model.rater_ids_) == len(reference.rater_ids_)
            and np.all(model.rater_ids_ == reference.rater_ids_))


def _fold_fit(full, train, n_passes):
    """``full`` refitted on the encoded items ``train``: from its own fitted
    parameters and ``n_passes`` EM passes when it is iterative and warm
    starts, else a complete fit."""
    # a new instance with the same parameters (clone without its deep
    # copies: the parameters are not changed by a fit)
    params = full.get_params(deep=False)
    start = {}
    warm = isinstance(full, CrowdModel) and "warm_start" in params
    if warm:
        # plain EM: an extrapolation step costs three passes
        params.update(max_iter=n_passes, accelerate=False)
    model = type(full)(**params)
    for name in ("classes_", "rater_ids_", "n_features_in_"):
        setattr(model, name, getattr(full, name))
    model._rater_counts = np.bincount(train.rater, minlength=train.n_raters)
    if warm:
        start = {"start": model._snapshot(full)}
    with warnings.catch_warnings():
        # a few passes do not converge, by design
        warnings.simplefilter("ignore", ConvergenceWarning)
        model._fit_encoded(train, **start)
    return model


def held_out_scores(fitted, data, reference, splits, n_passes, refit):
    """Each candidate's held-out log likelihood of every item's ratings.

    ``fitted``: the candidates fitted on all the items; ``data``: the
    ratings encoded by the fitted skcrowd model ``reference``; ``splits``:
    ``(train, test)`` item positions; ``refit(name, model, train, test)``
    scores a candidate that does not share the encoding (the public
    ``fit`` and ``score_samples`` on the user's ratings).  Returns
    ``{name: array of shape (n_items,)}``.
    """
    scores = {name: np.full(data.n_items, np.nan) for name in fitted}
    for train, test in splits:
        train, test = np.sort(train), np.sort(test)
        train_data, test_data = take_items(data, train), take_items(data, test, gold=False)
        for name, full in fitted.items():
            if not _shares_codes(full, reference):
                scores[name][test] = refit(name, full, train, test)
                continue
            model = _fold_fit(full, train_data, n_passes)
            loglik = np.asarray(model._score_items(test_data), dtype=np.float64)
            # an item without ratings scores 0, as score_samples says
            loglik[test_data.ratings_per_item == 0] = 0.0
            scores[name][test] = loglik
    return scores


def majority_posterior(reference, data):
    """Each encoded item's posterior over the classes of the fitted
    ``reference`` under majority vote's model (identical raters, right with
    the share of ratings that agree with their item's majority), known
    items at their known class: how clearly the raters say one class."""
    from ._baselines import MajorityVote

    vote = MajorityVote(classes=reference.classes_)
    vote.classes_ = reference.classes_
    vote._fit_encoded(data)
    log_joint = vote._log_joint(vote._vote_shares(data))
    log_joint -= log_joint.max(axis=1, keepdims=True)
    posterior = np.exp(log_joint)
    posterior /= posterior.sum(axis=1, keepdims=True)
    return vote._clamp(data, {"proba": posterior})["proba"]
