"""Random numbers keyed by item id: one draw per item that is a function
of the item's id and a seed only, so that a random start is the same for
an item wherever it sits (in memory, in any Dask partition, in a
cross-validation fold).  The hash is the splitmix64 finaliser (Steele,
Lea & Flood 2014)."""

import numpy as np
from scipy.special import ndtri

__all__ = ["item_dirichlet", "item_keys", "item_normals", "item_uniforms", "splitmix64"]


def splitmix64(x):
    """The splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def item_keys(item_ids):
    """The items' ids as uint64 keys for :func:`item_uniforms`, the same for
    every seed (hashing text ids is most of the cost: compute them once for
    several seeds).  Integer ids are taken as numbers, others hashed by
    their text (``str``)."""
    ids = np.asarray(item_ids)
    if ids.dtype.kind in "iub":
        return ids.astype(np.int64).view(np.uint64)
    if ids.dtype.kind == "f":
        return ids.astype(np.float64).view(np.uint64)
    text = ids.astype(str)
    codes = text.view(np.uint32).reshape(len(text), -1).astype(np.uint64)
    keys = np.zeros(len(text), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in codes.T:  # the padding (code 0) of shorter ids is skipped
            keys = np.where(column != 0, splitmix64(keys ^ column), keys)
    return keys


def item_uniforms(item_ids, seed, keys=None):
    """One uniform number in (0, 1) per item, a function of the item's id
    and ``seed`` only: the same for an item wherever it sits (in memory, in
    any Dask partition, in a cross-validation fold), so that random starts
    do not depend on how the items are laid out.  ``keys``: the ids'
    :func:`item_keys`, when already computed."""
    if keys is None:
        keys = item_keys(item_ids)
    with np.errstate(over="ignore"):
        hashed = splitmix64(keys ^ splitmix64(np.uint64(seed)))
    return ((hashed >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def item_normals(item_ids, seed, keys=None):
    """One standard normal per item (see :func:`item_uniforms`)."""
    return ndtri(item_uniforms(item_ids, seed, keys))


def item_dirichlet(item_ids, seed, n_classes):
    """One Dirichlet(1, ..., 1) row per item, as normalised exponentials of
    :func:`item_uniforms` (seeds ``seed`` ... ``seed + n_classes - 1``): a
    random start of the items' posteriors that is the same in memory and in
    any Dask partition."""
    keys = item_keys(item_ids)
    rows = -np.log(np.column_stack(
        [item_uniforms(item_ids, seed + k, keys) for k in range(n_classes)]))
    return rows / rows.sum(axis=1, keepdims=True)
