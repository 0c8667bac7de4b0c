"""Which item to label next: rank items for one more rating.

Two rankings of the items of ``X`` under a fitted model (any skcrowd
estimator; the rater parameters are held fixed):

- :func:`uncertainty_ranking`: by the entropy of the posterior over the
  true class (uncertainty sampling), highest first;
- :func:`information_gain_ranking`: by the expected information gain of
  one more rating, from a rater drawn at random from a pool: the expected
  reduction in the entropy of the item's posterior,

  EIG_i = H[p(z_i | X_i)] - Σ_j w_j Σ_l p(l | X_i, j) H[p(z_i | X_i, (j, l))],

  where p(l | X_i, j) is the model's predictive probability that rater j
  gives label l, exp(score(X_i + (j, l)) - score(X_i)).  Entropy ranks an
  item whose raters agree by chance as highly as one a good rater could
  settle; the gain accounts for how much the pool's raters can tell.

Both are model-agnostic: they use only ``predict_proba`` and
``score_samples`` on items with one rating added, so they work for every
model.  See :ref:`active` for the simulated collection loop.
"""

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np
from scipy.special import xlogy
from sklearn.utils.validation import check_is_fitted

from ._base import CrowdEstimator, per_item_result
from ._ratings import (Ratings, aligned_by_id, input_form, item_name_of, loaded_pandas, show,
                       to_ratings)

__all__ = ["expected_information_gain", "information_gain_ranking", "uncertainty_ranking"]


def _entropy(proba):
    return 0.0 - xlogy(proba, proba).sum(axis=1)


def _as_ratings(model, X):
    """``X`` as a :class:`Ratings` on the model's rater ids, read as the
    model reads it (the data layer: a long table is ratings, not a matrix
    whose raters are called 'item', 'rater', 'label'; a matrix and the
    columns of a wide frame are checked against the fit, and are raters by
    position when the model was fitted on an unnamed matrix)."""
    if input_form(X) == "matrix":  # raters by position (and no item is no gain)
        return Ratings.from_matrix(X, rater_ids=np.asarray(model.rater_ids_))
    ratings, form, _ = to_ratings(model, X, reset=False)
    if form == "wide" and getattr(model, "_raters_by_position", True):
        ratings = Ratings._from_sorted(ratings._item, ratings._rater, ratings.label,
                                       ratings.item_ids, np.asarray(model.rater_ids_))
    return ratings


def _pools_by_item_id(raters, R, form, fitted):
    """Per-item pools given by item id, in the order of ``R``'s items: a
    mapping (an item absent from it has no candidate rater; a key that is
    no item of ``X`` is an error, as for the gold ``y``) or a pandas Series
    indexed by item id (aligned by id; in row order for a matrix, whose
    items have no ids).  Anything else is returned as given."""
    pd = loaded_pandas()
    if isinstance(raters, Mapping):
        position = {key: i for i, key in enumerate(R.item_ids.tolist())}
        pools = [fitted[:0]] * len(R)
        for key, pool in raters.items():
            if key not in position:
                raise ValueError(f"raters has a pool for item {show(key)}, which is not "
                                 "an item of X.")
            pools[position[key]] = np.asarray(pool)
        return pools
    if pd is not None and isinstance(raters, pd.Series):
        values = aligned_by_id(raters, None if form == "matrix" else R.item_ids, "raters")
        return [np.asarray(pool) for pool in values]
    return raters


def _pools(raters, n_items, fitted):
    """The pool of candidate raters of each item: ``raters`` is one array of
    rater ids for every item, or one array per item.  An id the model did not
    fit is a ValueError naming it as given (mixed with the model's ids of
    another type, 'a' was reported as the model's rater '0')."""
    if raters is None:
        return [fitted] * n_items
    if (np.isscalar(raters) or getattr(raters, "ndim", 1) == 0
            or not hasattr(raters, "__len__") or not hasattr(raters, "__getitem__")):
        raise ValueError(
            "raters must be an array of rater ids (one pool for every item) or a "
            f"list of such arrays, one per item; got {type(raters).__name__}."
        )
    if len(raters) == n_items and all(np.ndim(p) == 1 for p in raters) and \
            not np.isscalar(raters[0]):
        pools = [np.asarray(p) for p in raters]
    else:
        pools = [np.asarray(raters)] * n_items
    known = set(fitted.tolist())
    for pool in {id(p): p for p in pools}.values():
        unknown = set(pool.ravel().tolist()) - known
        if unknown:
            value = next(v for v in pool.ravel().tolist() if v in unknown)
            raise ValueError(
                f"rater {value!r} of the pool is not one of the model's raters "
                "(rater_ids_)."
            )
    return pools


def _by_item_id(model, X, item_ids, values, name):
    """Per-item ``values`` as the models return per-item results for ``X``:
    a Series indexed by item id for a long table (whose rows are ratings, so
    positions in the sorted ids would be hidden knowledge) or with
    ``set_output(transform="pandas")``; else the array."""
    form = input_form(X)
    # the models' own rule and index, on what they read from the encoded X
    read = SimpleNamespace(form=form, n_items=len(values), item_ids=item_ids,
                           item_name=item_name_of(X, form))
    return per_item_result(model, read, values, name)


def _ranked(gain):
    """Best candidate first: positions for an array, item ids (the index,
    in rank order) for a Series."""
    order = np.argsort(-np.asarray(gain), kind="stable")
    return gain.index.to_numpy()[order] if hasattr(gain, "index") else order


def _check(model):
    if not isinstance(model, CrowdEstimator):
        raise ValueError(f"model must be a fitted skcrowd estimator; got {type(model).__name__}.")
    check_is_fitted(model)


def uncertainty_ranking(model, X):
    """Items of ``X`` by the entropy of their posterior, most uncertain first.

    Parameters
    ----------
    model : fitted skcrowd estimator
    X : ratings in any form ``model`` accepts

    Returns
    -------
    order : ndarray of shape (n_items,)
        Item positions (rows of ``X``), best candidate first; ties keep row
        order.  The item ids instead when ``model`` returns pandas results
        for ``X`` (a long-form DataFrame, whose rows are ratings, or
        ``set_output(transform="pandas")``).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.active import uncertainty_ranking
    >>> X = np.array([[0, 0, 0], [0, 1, np.nan], [1, 1, 1]])
    >>> uncertainty_ranking(DawidSkene().fit(X), X)[0]
    np.int64(1)
    """
    _check(model)
    proba = model.predict_proba(X)
    entropy = _entropy(np.asarray(proba))
    if hasattr(proba, "index"):  # pandas results: indexed by item id
        entropy = loaded_pandas().Series(entropy, index=proba.index)
    return _ranked(entropy)


def _weight_numbers(values, weights):
    """``values`` (the pool's ``weights``) as floats; numpy's "could not
    convert string to float: 'x'" named no argument."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("weights must be one non-negative number per rater of the pool; "
                         f"got {weights!r}.") from None


def expected_information_gain(model, X, raters=None, weights=None):
    """Expected reduction of each item's posterior entropy (nats) from one
    more rating by a rater drawn from the pool.

    Parameters
    ----------
    model : fitted skcrowd estimator
    X : ratings in any form ``model`` accepts
    raters : array-like of rater ids, or list of such arrays, default=None
        The pool: one array for every item (default: every rater of the
        fitted model), or one array per item (e.g. the raters still
        available for it): a list in the row order of ``X`` (for long form
        and Ratings: the sorted item ids), a dict keyed by item id (an item
        absent from it has no candidate rater), or a pandas Series indexed
        by item id, aligned by id.  For an array or sparse ``X`` the item
        ids are the row numbers, and a Series is in row order.
    weights : array-like or Series, default=None
        The probability of each rater of the pool answering next (default:
        uniform): an array in the order of the pool (every item's pool of
        that length), or a pandas Series indexed by rater id, aligned with
        each item's pool by id and normalised over it.

    Returns
    -------
    gain : ndarray of shape (n_items,) or Series
        0 for an item whose pool is empty.  A Series named
        ``information_gain`` indexed by item id when ``model`` returns
        pandas results for ``X`` (long-form input or
        ``set_output(transform="pandas")``), as
        :func:`~skcrowd.metrics.posterior_entropy`.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.active import expected_information_gain
    >>> X = np.array([[0, 0, 0], [0, 1, np.nan], [1, 1, 1], [1, 0, 1]])
    >>> gain = expected_information_gain(DawidSkene().fit(X), X)
    >>> int(gain.argmax())
    1
    """
    _check(model)
    R = _as_ratings(model, X)
    n_items = len(R)
    if n_items == 0:
        # no items, no gain (tested); the model's predict_proba refuses an
        # empty X, which scoring the pool would give it
        return _by_item_id(model, X, R.item_ids, np.zeros(0), "information_gain")
    fitted = np.asarray(model.rater_ids_)
    pools = _pools(_pools_by_item_id(raters, R, input_form(X), fitted), n_items, fitted)
    if weights is not None:
        pd = loaded_pandas()
        if pd is not None and isinstance(weights, pd.Series):
            # indexed by rater id: aligned with each pool by id, not position
            per_pool = [_weight_numbers(aligned_by_id(weights, p, "weights", "rater"), weights)
                        for p in pools]
        else:
            per_pool = [_weight_numbers(weights, weights)] * n_items
        for w, p in zip(per_pool, pools):
            if len(p) and (w.shape != (len(p),) or not np.all(np.isfinite(w))
                           or np.any(w < 0) or w.sum() <= 0):
                raise ValueError(
                    "weights must be one non-negative number per rater of the pool.")
        weights = [w / w.sum() if len(p) else w[:0] for w, p in zip(per_pool, pools)]
    classes = model.classes_
    K = len(classes)
    base_proba = np.asarray(model.predict_proba(R))
    base_score = np.asarray(model.score_samples(R))
    # Every (item, rater, label) hypothesis as one new item: the item's
    # ratings plus the hypothetical one, scored in one call.
    sizes = np.array([len(p) for p in pools], dtype=np.int64) * K
    owner = np.repeat(np.arange(n_items), sizes)
    if len(owner) == 0:
        return _by_item_id(model, X, R.item_ids, np.zeros(n_items), "information_gain")
    hyp_rater = np.concatenate([np.repeat(p, K) for p in pools])
    hyp_label = np.concatenate([np.tile(classes, len(p)) for p in pools])
    counts = np.diff(R._item_ptr)
    take = np.concatenate([np.arange(R._item_ptr[i], R._item_ptr[i + 1]) for i in owner]) \
        if counts.sum() else np.zeros(0, dtype=np.int64)
    old_item = np.repeat(np.arange(len(owner)), counts[owner])
    item = np.concatenate([old_item, np.arange(len(owner))])
    rater = np.concatenate([R.rater[take], hyp_rater])
    label = np.concatenate([R.label[take], hyp_label])
    order = np.argsort(item, kind="stable")
    # raters of X the model has not seen (unknown_raters="prior") are raters
    # of the hypotheses too; the model scores them with its population rater
    new = R.rater_ids[~np.isin(R.rater_ids, fitted)]
    H = Ratings(item[order], rater[order], label[order], item_ids=np.arange(len(owner)),
                rater_ids=np.concatenate([fitted, new]) if len(new) else fitted)
    proba = np.asarray(model.predict_proba(H))
    predictive = np.exp(np.asarray(model.score_samples(H)) - base_score[owner])
    after = _entropy(proba)
    # per (item, rater): normalise the predictive over the K labels (it sums
    # to one up to the models' quadrature), then the expected entropy
    predictive = predictive.reshape(-1, K)
    predictive /= predictive.sum(axis=1, keepdims=True)
    expected = (predictive * after.reshape(-1, K)).sum(axis=1)
    pair_owner = owner[::K]
    if weights is not None:
        pair_weight = np.concatenate(weights)
    else:
        pair_weight = 1.0 / np.repeat(np.maximum(sizes // K, 1), sizes // K)
    expected_after = np.bincount(pair_owner, weights=pair_weight * expected, minlength=n_items)
    gain = _entropy(base_proba) - expected_after
    gain[sizes == 0] = 0.0
    return _by_item_id(model, X, R.item_ids, np.maximum(gain, 0.0), "information_gain")


def information_gain_ranking(model, X, raters=None, weights=None):
    """Items of ``X`` by :func:`expected_information_gain`, largest first.

    Parameters
    ----------
    model : fitted skcrowd estimator
    X : ratings in any form ``model`` accepts
    raters : array-like of rater ids, or list of such arrays, default=None
        The pool of raters who may answer next, per item or for every item,
        as in :func:`expected_information_gain`.
    weights : array-like or Series, default=None
        The probability of each rater of the pool answering next, as in
        :func:`expected_information_gain`.

    Returns
    -------
    order : ndarray of shape (n_items,)
        Item positions, best candidate first (item ids for long-form input
        or pandas output, as :func:`uncertainty_ranking`).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.active import information_gain_ranking
    >>> X = np.array([[0, 0, 0], [0, 1, np.nan], [1, 1, 1], [1, 0, 1]])
    >>> information_gain_ranking(DawidSkene().fit(X), X)[0]
    np.int64(1)
    """
    return _ranked(expected_information_gain(model, X, raters=raters, weights=weights))
