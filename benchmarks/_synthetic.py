"""Numpy-only synthetic crowd-labelling data in long form.

Two generators:

* :func:`make_ds_long` -- Dawid-Skene data: every rater has a full K x K
  confusion matrix; the diagonal entry of each row (the rater's accuracy on
  items of that true class) is drawn from ``U(acc_low, acc_high)``
  (default ``U(0.5, 0.95)``) and the remaining mass of the row is spread over
  the wrong classes with ``Dirichlet(1, ..., 1)`` weights.
* :func:`make_glad_long` -- GLAD data: rater ability ``alpha_j ~ N(1, 1)``,
  item log inverse-difficulty ``b_i ~ N(1, 1)``, ``beta_i = exp(b_i)``,
  ``P(correct) = sigmoid(alpha_j * beta_i)``; a wrong label is uniform over
  the other ``K - 1`` classes.

Both return ``(item, rater, label, true_label)``:

* ``item``   int64, length ``n_items * ratings_per_item``, ids ``0..n_items-1``
  (``np.repeat(arange(n_items), ratings_per_item)`` unless ``shuffle=True``);
* ``rater``  int64, same length, ids ``0..n_raters-1``; the raters of one item
  are distinct, chosen uniformly at random without replacement;
* ``label``  int64, same length, classes ``0..n_classes-1``;
* ``true_label`` int64, length ``n_items``, ``true_label[i]`` is the true
  class of item ``i`` (so ``true_label`` is aligned with
  ``np.unique(item)``).

With ``return_params=True`` a fifth element, a dict with the generating
parameters, is returned.

Everything is vectorised (a few passes over the ratings arrays); 10 M ratings
take a few seconds and well under 2 GB.
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_ds_long", "make_glad_long", "choose_raters"]


def _check(n_items, n_raters, ratings_per_item, n_classes):
    n_items = int(n_items)
    n_raters = int(n_raters)
    ratings_per_item = int(ratings_per_item)
    n_classes = int(n_classes)
    if n_items < 1 or n_raters < 1 or ratings_per_item < 1:
        raise ValueError("n_items, n_raters and ratings_per_item must be >= 1")
    if ratings_per_item > n_raters:
        raise ValueError(
            f"ratings_per_item={ratings_per_item} > n_raters={n_raters}: "
            "raters of an item must be distinct"
        )
    if n_classes < 2:
        raise ValueError("n_classes must be >= 2")
    return n_items, n_raters, ratings_per_item, n_classes


def choose_raters(n_items, n_raters, ratings_per_item, rng):
    """(n_items, ratings_per_item) int64 array; each row holds distinct rater
    ids drawn uniformly without replacement from ``0..n_raters-1``.

    Small ``ratings_per_item``: Robert Floyd's sampling algorithm, vectorised
    over items (exactly uniform subsets), then a per-row shuffle of the
    order.  Large ``ratings_per_item``: argpartition of random keys, in chunks.
    """
    m = ratings_per_item
    if m <= 32 or m * 4 <= n_raters:
        out = np.empty((n_items, m), dtype=np.int64)
        for col, j in enumerate(range(n_raters - m, n_raters)):
            t = rng.integers(0, j + 1, size=n_items, dtype=np.int64)
            if col:
                dup = (out[:, :col] == t[:, None]).any(axis=1)
                t[dup] = j
            out[:, col] = t
        # Floyd's algorithm gives a uniform *set*; shuffle the order inside
        # each row so that column position carries no information.
        order = np.argsort(rng.random((n_items, m)), axis=1)
        return np.take_along_axis(out, order, axis=1)
    out = np.empty((n_items, m), dtype=np.int64)
    chunk = max(1, (1 << 24) // n_raters)
    for s in range(0, n_items, chunk):
        e = min(n_items, s + chunk)
        keys = rng.random((e - s, n_raters))
        out[s:e] = np.argpartition(keys, m - 1, axis=1)[:, :m]
    return out


def _long_form(n_items, m, raters, rng, shuffle):
    item = np.repeat(np.arange(n_items, dtype=np.int64), m)
    rater = raters.reshape(-1)
    perm = rng.permutation(item.size) if shuffle else None
    return item, rater, perm


def make_ds_long(
    n_items,
    n_raters,
    ratings_per_item,
    n_classes,
    random_state=None,
    *,
    acc_low=0.5,
    acc_high=0.95,
    class_prior=None,
    shuffle=False,
    return_params=False,
):
    """Dawid-Skene long-form data; see the module docstring.

    ``class_prior``: None (uniform) or a length-K probability vector for the
    true labels.  ``shuffle``: randomly permute the rating rows (otherwise
    rows are grouped by item, items in increasing order).
    """
    n_items, n_raters, m, K = _check(n_items, n_raters, ratings_per_item, n_classes)
    rng = np.random.default_rng(random_state)

    if class_prior is None:
        true_label = rng.integers(0, K, size=n_items, dtype=np.int64)
        class_prior = np.full(K, 1.0 / K)
    else:
        class_prior = np.asarray(class_prior, dtype=np.float64)
        class_prior = class_prior / class_prior.sum()
        true_label = rng.choice(K, size=n_items, p=class_prior).astype(np.int64)

    # confusion[j, t, l] = P(rater j says l | true class t)
    acc = rng.uniform(acc_low, acc_high, size=(n_raters, K))
    off = rng.gamma(1.0, size=(n_raters, K, K))  # Dirichlet(1) after normalising
    eye = np.eye(K, dtype=bool)
    off[:, eye] = 0.0
    off *= ((1.0 - acc) / off.sum(axis=2))[:, :, None]
    off[:, eye] = acc
    confusion = off

    raters = choose_raters(n_items, n_raters, m, rng)
    item, rater, perm = _long_form(n_items, m, raters, rng, shuffle)
    if perm is not None:
        item = item[perm]
        rater = rater[perm]

    # inverse-CDF sampling, one pass per class boundary (memory-light)
    cdf = np.cumsum(confusion, axis=2).reshape(n_raters * K, K)
    row = rater * K + true_label[item]
    u = rng.random(item.size)
    label = np.zeros(item.size, dtype=np.int64)
    for k in range(K - 1):
        label += u >= cdf[row, k]
    if return_params:
        params = {"confusion": confusion, "class_prior": class_prior}
        return item, rater, label, true_label, params
    return item, rater, label, true_label


def make_glad_long(
    n_items,
    n_raters,
    ratings_per_item,
    n_classes,
    random_state=None,
    *,
    shuffle=False,
    return_params=False,
):
    """GLAD long-form data; see the module docstring.

    True labels are uniform over the ``n_classes`` classes.
    """
    n_items, n_raters, m, K = _check(n_items, n_raters, ratings_per_item, n_classes)
    rng = np.random.default_rng(random_state)

    true_label = rng.integers(0, K, size=n_items, dtype=np.int64)
    alpha = rng.normal(1.0, 1.0, size=n_raters)
    b = rng.normal(1.0, 1.0, size=n_items)
    beta = np.exp(b)

    raters = choose_raters(n_items, n_raters, m, rng)
    item, rater, perm = _long_form(n_items, m, raters, rng, shuffle)
    if perm is not None:
        item = item[perm]
        rater = rater[perm]

    p_correct = 1.0 / (1.0 + np.exp(-(alpha[rater] * beta[item])))
    correct = rng.random(item.size) < p_correct
    # wrong label: uniform over the K-1 other classes
    shift = rng.integers(1, K, size=item.size, dtype=np.int64)
    t = true_label[item]
    label = np.where(correct, t, (t + shift) % K)
    if return_params:
        params = {"alpha": alpha, "b": b, "beta": beta}
        return item, rater, label, true_label, params
    return item, rater, label, true_label
