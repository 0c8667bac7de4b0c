"""Cross-validation that holds out items, not ratings.

A scikit-learn splitter splits the rows of what it is given.  The rows of
a long-form DataFrame are ratings, so a plain splitter (``KFold``,
``ShuffleSplit``) puts some ratings of an item in the training fold and the
others in the test fold, and ``score`` then measures items the fit has
seen, each with a few of its ratings: about -1.3 per item on RTE against
-5.0 when the items are held out.  The estimators' route is a group-aware
splitter with the item column as ``groups`` (``GroupKFold``,
``GroupShuffleSplit``, ...).

The fit keeps a fingerprint of each training item's ratings, and
``score`` refuses a long-form DataFrame that looks like the test fold of a
rating split: most of its items that were in the training data have none
of the ratings they had there.  Scoring the training data itself, new
items, or training items with some ratings changed or added (new raters)
passes.
"""

import numpy as np

from ._item_random import splitmix64

#: the documented route, named in the refusal
SPLIT_BY_ITEM = (
    "split by item: pass the item column as groups to a group-aware splitter, e.g. "
    "cross_val_score(model, df, groups=df['item'], cv=GroupKFold(5)), or "
    "GridSearchCV(model, grid, cv=GroupKFold(5)).fit(df, groups=df['item'])"
)

#: hashes per item whose minima are kept (MinHash): two disjoint sets of
#: ratings never share a minimum (each hash is a bijection of the rating's
#: key), two sets that share a fraction J of their ratings share at least
#: one of them with probability about 1 - (1 - J)^4
MIN_HASH_MULTIPLIERS = np.array([0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9,
                                 0x94D049BB133111EB, 0xD6E8FEB86659FD93], dtype=np.uint64)


def item_ratings(data):
    """A fingerprint of each item's ratings in encoded long-form ``data``:
    ``(item_ids, minima)``, ``minima[s, i]`` the minimum over item ``i``'s
    ratings of hash ``s`` of the rating's (rater code, label code), its high
    32 bits (the largest uint32 for an item without ratings).  None for the
    other input forms, whose rows are items (a splitter never divides an
    item there)."""
    if data.form != "long" or data.item_ids is None:
        return None
    rated = np.diff(data.item_ptr) > 0
    starts = data.item_ptr[:-1][rated]
    minima = np.full((len(MIN_HASH_MULTIPLIERS), data.n_items), np.iinfo(np.uint64).max,
                     dtype=np.uint64)
    with np.errstate(over="ignore"):
        keys = splitmix64(data.rater.astype(np.uint64) * np.uint64(data.n_classes)
                          + data.label.astype(np.uint64))
        for s, multiplier in enumerate(MIN_HASH_MULTIPLIERS):
            # an odd multiplier and an xor-shift: a bijection on uint64, so
            # that distinct ratings keep distinct hashes
            hashed = keys * multiplier
            hashed ^= hashed >> np.uint64(32)
            if len(starts):
                minima[s, rated] = np.minimum.reduceat(hashed, starts)
    # the high 32 bits (of the minimum, the minimum of the high bits): half the
    # size in a saved model; two disjoint sets then share one with
    # probability about 2^-32 per hash, which only lets a split pass
    return data.item_ids, (minima >> np.uint64(32)).astype(np.uint32)


def check_items_not_split(estimator, data):
    """Refuse to score long-form ``data`` that looks like the test fold of
    a rating split of the training data (see the module's docstring)."""
    fitted = getattr(estimator, "_fit_item_ratings", None)
    if fitted is None or data.form != "long":
        return
    from ._ratings import import_pandas

    ids, minima = fitted
    test_ids, test_minima = item_ratings(data)
    at = import_pandas("long-form input").Index(ids).get_indexer(test_ids)
    shared = np.flatnonzero(at >= 0)
    if not len(shared):
        return
    # none of the item's ratings in fit: no minimum in common
    disjoint = ~np.any(minima[:, at[shared]] == test_minima[:, shared], axis=0)
    # in a rating split no shared item keeps all its ratings (it would not be
    # shared): most are disjoint; a few items re-rated by new raters are not
    if disjoint.sum() and 2 * disjoint.sum() >= len(shared):
        raise ValueError(
            f"{int(disjoint.sum())} of the {len(test_ids)} items of X were in the training "
            "data with other ratings: the rows of a long-form DataFrame are ratings, and a "
            "plain splitter (KFold, ShuffleSplit) divides an item's ratings between the "
            "training and the test fold, so the score is not of held-out items. To "
            f"cross-validate, {SPLIT_BY_ITEM}."
        )
