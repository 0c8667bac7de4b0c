"""The fake-spam protocol of Lakshminarayanan & Teh (2013), Figures 2 and 3."""

import numbers

import numpy as np
from .._ratings import Ratings

__all__ = ["add_fake_spam"]


def add_fake_spam(ratings, n_fake, *, random_state=None):
    """Add ``n_fake`` uniformly random ratings to every item, from fake raters.

    The spam protocol of Lakshminarayanan & Teh (2013): each item gets
    ``n_fake`` extra ratings drawn uniformly from the levels seen in ``ratings``, given by fake raters
    who each rate about as many items as a real rater does on average.  A
    fake rater never rates one item twice (the ``n_fake`` slots of an item go
    to distinct fake raters).

    Parameters
    ----------
    ratings : Ratings
        The real ratings.  Not modified.
    n_fake : int
        Fake ratings per item, ``>= 0``.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the fake labels and the assignment of slots to fake raters
        (through :func:`numpy.random.default_rng`; the documented runs use
        ``random_state=n_fake``).

    Returns
    -------
    spammed : Ratings
        The real ratings followed by the fake ones, with the same items (in
        the same order); the fake raters are named ``"fake0"``, ``"fake1"``,
        ...  Rater ids become strings.  ``ratings`` itself when ``n_fake`` is 0.

    Examples
    --------
    >>> from skcrowd import Ratings
    >>> from skcrowd.datasets import add_fake_spam
    >>> R = Ratings(item=[0, 0, 1, 1], rater=["a", "b", "a", "b"], label=[1, 2, 3, 3])
    >>> spammed = add_fake_spam(R, 2, random_state=0)
    >>> spammed.n_ratings
    8
    >>> spammed.rater_ids.tolist()
    ['a', 'b', 'fake0', 'fake1']
    """
    if not isinstance(ratings, Ratings):
        raise ValueError(
            f"ratings must be a skcrowd.Ratings, got {type(ratings).__name__}."
        )
    if (not isinstance(n_fake, numbers.Integral) or isinstance(n_fake, bool)
            or n_fake < 0):
        raise ValueError(f"n_fake must be an integer >= 0, got {n_fake!r}.")
    if n_fake == 0:
        return ratings
    if ratings.n_ratings == 0:
        raise ValueError("ratings has no rating to take the scale from.")
    rng = np.random.default_rng(random_state)
    n_items, n_raters = ratings.shape
    load = ratings.n_ratings / n_raters
    n_fake_raters = max(n_fake, int(np.ceil(n_items * n_fake / load)))
    levels = np.unique(ratings.label)
    # slot s of item m -> fake rater (m * n_fake + s) mod n_fake_raters, after a
    # random relabelling: balanced loads, and distinct raters within an item
    # because n_fake <= n_fake_raters
    slots = np.arange(n_items * n_fake)
    fake_rater = rng.permutation(n_fake_raters)[slots % n_fake_raters]
    fake_item = np.repeat(np.arange(n_items), n_fake)
    fake_label = rng.choice(levels, size=len(slots))
    item = np.concatenate([ratings.item, ratings.item_ids[fake_item]])
    fake_ids = np.array([f"fake{r}" for r in range(n_fake_raters)])
    rater = np.concatenate([ratings.rater.astype(str), fake_ids[fake_rater]])
    label = np.concatenate([ratings.label, fake_label])
    return Ratings(item, rater, label, item_ids=ratings.item_ids)
