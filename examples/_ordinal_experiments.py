"""Shared code of the OrdinalMixture examples: the methods of the seed's
Table 1, the fake-spam protocol of its Figures 2 and 3, and evaluation.

Not an example itself (no ``plot_`` prefix): ``plot_ordinal_trec.py`` and
``plot_ordinal_spam.py`` import it.
"""

import time
import warnings

import numpy as np

import skcrowd
from skcrowd import (DawidSkene, MajorityVote, MeanRating, MedianRating, OrdinalMixture,
                     Ratings)
from skcrowd.metrics import ordinal_scores


def baselines():
    """The seed's comparison methods that exist in skcrowd (GLAD if present)."""
    methods = {
        "majority vote": MajorityVote,
        "mean": MeanRating,
        "median": MedianRating,
        "Dawid-Skene": DawidSkene,
    }
    if hasattr(skcrowd, "GLAD"):
        methods["GLAD"] = skcrowd.GLAD
    return methods


def fit_predict(method, ratings, groups=None):
    """Fit one method; returns (predictions as floats, seconds).

    Categorical methods (majority vote, Dawid–Skene, GLAD) predict a level of
    the scale; MeanRating, MedianRating and OrdinalMixture a real value.
    """
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(method, OrdinalMixture):
            z = method.fit_predict(ratings, groups=groups)
        else:
            z = method.fit_predict(ratings)
    return np.asarray(z, dtype=np.float64), time.perf_counter() - start


def add_fake_spam(ratings, n_fake, random_state=0):
    """The seed's spam protocol: ``n_fake`` extra ratings per item, drawn
    uniformly from the scale, given by fake raters who each rate about as
    many items as a real rater does on average.

    A fake rater never rates one item twice (the ``n_fake`` slots of an item
    go to distinct fake raters).  Returns a new :class:`Ratings` whose first
    raters are the real ones.
    """
    if n_fake == 0:
        return ratings
    rng = np.random.default_rng(random_state)
    n_items, n_raters = ratings.shape
    load = ratings.n_ratings / n_raters
    n_fake_raters = max(n_fake, int(np.ceil(n_items * n_fake / load)))
    levels = np.unique(ratings.label)
    # slot s of item m -> fake rater (m * n_fake + s) mod n_fake_raters, after
    # a random relabelling: balanced loads, distinct raters within an item
    slots = np.arange(n_items * n_fake)
    fake_rater = rng.permutation(n_fake_raters)[slots % n_fake_raters]
    fake_item = np.repeat(np.arange(n_items), n_fake)
    fake_label = rng.choice(levels, size=len(slots))
    item = np.concatenate([ratings.item, ratings.item_ids[fake_item]])
    rater_ids = np.asarray(ratings.rater_ids).astype(str)
    fake_ids = np.array([f"fake{r}" for r in range(n_fake_raters)])
    rater = np.concatenate([rater_ids[ratings._rater], fake_ids[fake_rater]])
    label = np.concatenate([ratings.label, fake_label])
    return Ratings(item, rater, label, item_ids=ratings.item_ids)


def evaluate(methods, ratings, gold, groups=None, ndcg_groups=None, verbose=True):
    """Fit every method; returns {name: {"mse", "correlation"[, "ndcg"], "seconds"}}."""
    rows = {}
    for name, method in methods.items():
        z, seconds = fit_predict(method, ratings, groups)
        row = ordinal_scores(gold, z, ndcg_groups)
        row["seconds"] = seconds
        rows[name] = row
        if verbose:
            print(format_row(name, row), flush=True)
    return rows


def format_row(name, row):
    ndcg = f"  NDCG {row['ndcg']:.4f}" if "ndcg" in row else ""
    return (f"{name:34s} MSE {row['mse']:.4f}  corr {row['correlation']:.4f}{ndcg}"
            f"  ({row['seconds']:.1f} s)")
