"""Loaders for the real crowdsourced data sets shipped with skcrowd.

The files are the tidy copies of ``shared/data`` (item,rater,label; every
rating kept, repeats included), gzip-compressed inside the package, so the
loaders work offline.  Each ``SOURCE.md`` (repository, commit, licence,
citation, counts, quirks) is returned as ``DESCR``.
"""

import csv
import gzip
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

from .._ratings import Ratings

__all__ = [
    "load_bluebirds",
    "load_caries",
    "load_dog",
    "load_rte",
    "load_trec2010",
    "load_web",
]


def _read_csv(name):
    """Columns of a shipped gzip CSV, as a dict of string arrays."""
    path = resources.files(__package__).joinpath("data", name)
    with path.open("rb") as raw, gzip.open(raw, "rt", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    columns = np.array(rows, dtype=str).T if rows else np.empty((len(header), 0), str)
    return dict(zip(header, columns))


def _as_ids(values):
    """Integer ids where every id is an integer, else the strings."""
    try:
        return values.astype(np.int64)
    except ValueError:
        return values


def _descr(name):
    return resources.files(__package__).joinpath("data", f"{name}_SOURCE.md").read_text()


def _load(name, has_gold=True):
    cols = _read_csv(f"{name}_labels.csv.gz")
    ratings = Ratings(
        _as_ids(cols["item"]), _as_ids(cols["rater"]), cols["label"].astype(np.int64)
    )
    bunch = Bunch(ratings=ratings, gold=None, DESCR=_descr(name))
    if has_gold:
        bunch.gold = _gold(name, ratings.item_ids)
    return bunch


def _gold(name, item_ids):
    """Gold labels aligned with ``item_ids`` (float, NaN where unknown)."""
    cols = _read_csv(f"{name}_gold.csv.gz")
    gold_items = _as_ids(cols["item"])
    gold = np.full(len(item_ids), np.nan)
    order = np.argsort(item_ids)
    pos = np.searchsorted(item_ids[order], gold_items).clip(0, len(item_ids) - 1)
    found = item_ids[order][pos] == gold_items
    gold[order[pos[found]]] = cols["label"][found].astype(np.float64)
    return gold


def load_caries():
    """Dental caries X-rays rated by 5 dentists (Espeland & Handelman 1989).

    3,869 items, 5 raters, 19,345 binary ratings (1 = caries); no gold.

    Returns
    -------
    data : Bunch
        ``ratings`` (:class:`~skcrowd.Ratings`), ``gold`` (None), ``DESCR``.

    Examples
    --------
    >>> from skcrowd.datasets import load_caries
    >>> data = load_caries()
    >>> data.ratings
    Ratings(n_items=3869, n_raters=5, n_ratings=19345)
    >>> data.gold is None
    True
    """
    return _load("caries", has_gold=False)


def load_rte():
    """Recognising textual entailment on Mechanical Turk (Snow et al. 2008).

    800 items, 164 raters, 8,000 binary ratings; expert gold for every item.

    Returns
    -------
    data : Bunch
        ``ratings``, ``gold`` (float array aligned with
        ``ratings.item_ids``, NaN where unknown) and ``DESCR``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MajorityVote
    >>> from skcrowd.datasets import load_rte
    >>> data = load_rte()
    >>> data.ratings
    Ratings(n_items=800, n_raters=164, n_ratings=8000)
    >>> labels = MajorityVote().fit_predict(data.ratings)
    >>> print(f"{np.mean(labels == data.gold):.4f}")
    0.9187
    """
    return _load("rte")


def load_bluebirds():
    """Bluebird species, binary (Welinder et al. 2010).

    108 items x 39 raters, fully crossed (4,212 ratings); gold for all.

    Returns
    -------
    data : Bunch
        ``ratings``, ``gold`` (float array aligned with
        ``ratings.item_ids``) and ``DESCR``.

    Examples
    --------
    >>> from skcrowd.datasets import load_bluebirds
    >>> load_bluebirds().ratings
    Ratings(n_items=108, n_raters=39, n_ratings=4212)
    """
    return _load("bluebirds")


def load_dog():
    """Dog breeds, 4 classes (Zhou et al. 2012).

    807 items, 109 raters, 8,070 ratings; gold for all items.

    Returns
    -------
    data : Bunch
        ``ratings``, ``gold`` (float array aligned with
        ``ratings.item_ids``) and ``DESCR``.

    Examples
    --------
    >>> from skcrowd.datasets import load_dog
    >>> data = load_dog()
    >>> data.ratings
    Ratings(n_items=807, n_raters=109, n_ratings=8070)
    >>> sorted(set(data.ratings.label.tolist()))
    [0, 1, 2, 3]
    """
    return _load("dog")


def load_web():
    """Web search relevance on a 5-level scale (Zhou et al. 2012).

    2,665 items, 177 raters, 15,567 ratings coded 1..5; gold for 2,653 items
    (NaN for the other 12).

    Returns
    -------
    data : Bunch
        ``ratings``, ``gold`` (float array aligned with
        ``ratings.item_ids``, NaN where unknown) and ``DESCR``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.datasets import load_web
    >>> data = load_web()
    >>> data.ratings
    Ratings(n_items=2665, n_raters=177, n_ratings=15567)
    >>> int(np.sum(~np.isnan(data.gold)))
    2653
    """
    return _load("web")


def load_trec2010(preprocess=None):
    """TREC 2010 Relevance Feedback crowd judgments (graded relevance).

    Items are ``<query>_<doc>`` pairs.  Labels: 0 non-relevant, 1 relevant,
    2 highly relevant, and -2 for "broken link" (not on the relevance scale).

    Parameters
    ----------
    preprocess : {None, "paper"}, default=None
        ``None``: every rating as released (98,453 ratings, 766 raters,
        20,232 items, labels -2/0/1/2).  ``"paper"``: the preprocessing of
        Lakshminarayanan & Teh (2013): drop the -2 ratings and map 0/1/2 to
        1/2/3, giving 91,783 ratings, 762 raters, 20,026 items, 100 queries.

    Returns
    -------
    data : Bunch
        ``ratings``; ``gold`` (NIST graded gold on the labels' scale — so
        mapped to 1/2/3 with ``"paper"`` — NaN for the items without gold);
        ``groups`` (the query id of each item, for ``GroupKFold`` and the
        per-query difficulty of OrdinalMixture); ``DESCR``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.datasets import load_trec2010
    >>> data = load_trec2010(preprocess="paper")
    >>> data.ratings
    Ratings(n_items=20026, n_raters=762, n_ratings=91783)
    >>> len(np.unique(data.groups))
    100
    """
    if preprocess not in (None, "paper"):
        raise ValueError(f"preprocess must be None or 'paper'; got {preprocess!r}.")
    cols = _read_csv("trec2010_labels.csv.gz")
    items, raters = cols["item"], cols["rater"]
    labels = cols["label"].astype(np.int64)
    shift = 0
    if preprocess == "paper":
        keep = labels != -2
        items, raters, labels = items[keep], raters[keep], labels[keep]
        shift = 1
        labels = labels + shift
    ratings = Ratings(items, raters, labels)
    gold = _gold("trec2010", ratings.item_ids) + shift
    groups = np.array([i.split("_", 1)[0] for i in ratings.item_ids])
    return Bunch(ratings=ratings, gold=gold, groups=groups, DESCR=_descr("trec2010"))
