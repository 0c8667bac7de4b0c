"""Agreement between raters (Krippendorff's alpha, Fleiss' kappa, pairwise
Cohen's kappa) and the uncertainty of a fitted model's labels, on the same
input forms as the estimators (a matrix with NaN, a sparse matrix, a
:class:`~skcrowd.Ratings` or a long-form DataFrame)."""

import warnings

import numpy as np
from scipy.special import xlogy

from ._base import encode_for, per_item_result, rating_weights, with_population_rater
from ._baselines import MajorityVote
from ._ratings import aligned_by_id

__all__ = [
    "consistency",
    "cohen_kappa_matrix",
    "fleiss_kappa",
    "krippendorff_alpha",
    "posterior_entropy",
    "uncertainty",
]

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _encode(X, classes=None):
    """Ratings of ``X`` in the estimators' internal form, read exactly as a
    model's ``fit`` reads them; returns the data and the reader (which holds
    ``classes_`` and ``rater_ids_``)."""
    reader = MajorityVote(classes=classes)
    with warnings.catch_warnings():
        # "only one class: every item will get it" is about predictions
        warnings.simplefilter("ignore", UserWarning)
        try:
            return encode_for(reader, X, fit=True)
        except ValueError as error:  # the reader is ours, not the user's model
            raise ValueError(str(error).replace(" by MajorityVote", "")) from None


def _value_counts(data):
    """``counts[i, v]`` = number of ratings of item i with label code v."""
    flat = np.bincount(data.item.astype(np.int64) * data.n_classes + data.label,
                       minlength=data.n_items * data.n_classes)
    return flat.reshape(data.n_items, data.n_classes).astype(np.float64)


def _distances(level, values, marginals):
    """Krippendorff's difference function δ²(c, k) for every pair of values."""
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if values.dtype.kind not in "biuf":
        raise ValueError(f"level={level!r} needs numeric labels; got {values.dtype} labels. "
                         "Use level='nominal', or 'ordinal' with numeric codes.")
    if level == "ordinal":
        # (Σ_{g=c..k} n_g - (n_c + n_k) / 2)² over the ordered values
        cumulative = np.cumsum(marginals)
        between = cumulative[None, :] - cumulative[:, None] + marginals[:, None]
        between = np.where(np.arange(len(values))[None, :] >= np.arange(len(values))[:, None],
                           between, between.T)
        return (between - (marginals[:, None] + marginals[None, :]) / 2) ** 2
    # as floats: integer labels (classes=[0, 1, 2], an int column) made
    # ratio's np.divide write floats into an integer array (UFuncTypeError)
    values = values.astype(np.float64)
    diff = values[:, None] - values[None, :]
    if level == "interval":
        return diff ** 2
    if np.any(values < 0):
        raise ValueError("level='ratio' needs non-negative labels.")
    total = values[:, None] + values[None, :]
    return np.divide(diff, total, out=np.zeros_like(diff), where=total != 0) ** 2


def krippendorff_alpha(X, level="nominal", *, classes=None):
    """Krippendorff's alpha: agreement beyond chance, for any number of
    raters, missing ratings and a nominal, ordinal, interval or ratio scale.

    ``alpha = 1 - D_o / D_e``: the observed disagreement between the values
    given to the same item over the disagreement expected by chance, both
    from the coincidence matrix (Krippendorff 2011, "Computing Krippendorff's
    Alpha-Reliability").  Every rating of an item is one pairable value of
    that item, whoever gave it: the coincidence matrix depends only on the
    values of each unit, so a rater's repeated ratings of one item count as
    separate values, as in Krippendorff's tabulation by value counts.  Items
    with fewer than two ratings are not pairable and drop out.

    Parameters
    ----------
    X : array-like, sparse matrix, Ratings or long-form DataFrame
        The ratings, in any form the estimators accept.
    level : {"nominal", "ordinal", "interval", "ratio"}, default="nominal"
        Level of measurement, i.e. the difference function.  All but
        ``"nominal"`` need numeric labels; ``"ordinal"`` uses their order.
    classes : array-like, default=None
        All labels of the scale (unused ones change nothing).

    Returns
    -------
    alpha : float
        1 for perfect agreement, 0 for agreement at chance level.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.metrics import krippendorff_alpha
    >>> X = np.array([[1, 1, np.nan], [2, 2, 2], [3, 3, 1], [1, 1, 1]])
    >>> round(krippendorff_alpha(X), 3)
    0.722
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}; got {level!r}.")
    data, reader = _encode(X, classes)
    counts = _value_counts(data)
    per_item = counts.sum(axis=1)
    counts = counts[per_item >= 2]
    if len(counts) == 0:
        raise ValueError("Krippendorff's alpha needs an item with at least two ratings.")
    weighted = counts / (counts.sum(axis=1, keepdims=True) - 1)
    # o[c, k] = Σ_u (pairs of values c, k in unit u) / (m_u - 1), self-pairs excluded
    coincidence = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    marginals = coincidence.sum(axis=1)
    n = marginals.sum()
    delta = _distances(level, np.asarray(reader.classes_), marginals)
    expected = np.sum(np.outer(marginals, marginals) * delta)
    if expected == 0:
        raise ValueError("Krippendorff's alpha is undefined: every pairable rating has the "
                         "same value, so no disagreement is expected by chance.")
    return float(1.0 - (n - 1) * np.sum(coincidence * delta) / expected)


def fleiss_kappa(X, *, classes=None):
    """Fleiss' kappa: agreement of the raters of each item beyond chance.

    ``kappa = (P̄ - P_e) / (1 - P_e)`` with ``P_i`` the fraction of agreeing
    pairs among the ratings of item i, ``P̄`` their mean over items and
    ``P_e = Σ_l p_l²`` from the overall label shares (Fleiss 1971).  With a
    different number of ratings per item, ``P_i`` uses each item's own count
    and ``p_l`` the pooled ratings; with the same count everywhere this is
    Fleiss' formula.  Items with fewer than two ratings drop out.

    Parameters
    ----------
    X : array-like, sparse matrix, Ratings or long-form DataFrame
    classes : array-like, default=None

    Returns
    -------
    kappa : float

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.metrics import fleiss_kappa
    >>> X = np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 0]])
    >>> round(fleiss_kappa(X), 3)
    0.333
    """
    data, _ = _encode(X, classes)
    counts = _value_counts(data)
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    if len(counts) == 0:
        raise ValueError("Fleiss' kappa needs an item with at least two ratings.")
    agreement = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    shares = counts.sum(axis=0) / m.sum()
    chance = np.sum(shares ** 2)
    if chance == 1:
        raise ValueError("Fleiss' kappa is undefined: every rating has the same label.")
    return float((agreement.mean() - chance) / (1 - chance))


def _as_frame(values, index, columns):
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in every extra
        return values
    return pd.DataFrame(values, index=pd.Index(index, name="rater"),
                        columns=pd.Index(columns, name="rater"))


def cohen_kappa_matrix(X, *, classes=None):
    """Cohen's kappa between every two raters, on the items both rated.

    For raters a and b, the items both rated form a K x K table of their
    labels; ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of
    items on which they agree and ``p_e`` the agreement expected from each
    rater's own label shares on those items (Cohen 1960).  If a rater rated
    an item several times, each of their ratings there weighs 1 / (number
    of them), so every item counts once.

    Parameters
    ----------
    X : array-like, sparse matrix, Ratings or long-form DataFrame
    classes : array-like, default=None

    Returns
    -------
    kappa : pandas DataFrame of shape (n_raters, n_raters)
        Indexed by rater id on both axes (an ndarray without pandas).  NaN
        on the diagonal, for pairs without a common item, and where kappa
        is undefined (both raters gave one and the same label throughout).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.metrics import cohen_kappa_matrix
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0]])
    >>> kappa = cohen_kappa_matrix(X)
    >>> float(kappa.loc[0, 1]), float(kappa.loc[1, 2])
    (0.5, -0.5)
    """
    data, reader = _encode(X, classes)
    J, K = data.n_raters, data.n_classes
    # one row per (item, rater): weight 1 / (ratings of that rater there)
    key = data.item.astype(np.int64) * J + data.rater
    _, group, repeats = np.unique(key, return_inverse=True, return_counts=True)
    weight = 1.0 / repeats[group.ravel()]
    # every ordered pair of ratings of the same item by two different raters
    ptr = data.item_ptr
    sizes = np.diff(ptr)
    first = np.repeat(np.arange(data.n_ratings), sizes[data.item])
    offset = np.arange(len(first)) - np.repeat(np.cumsum(sizes[data.item]) - sizes[data.item],
                                               sizes[data.item])
    second = ptr[data.item[first]] + offset
    keep = data.rater[first] < data.rater[second]
    first, second = first[keep], second[keep]
    a, b = data.rater[first].astype(np.int64), data.rater[second].astype(np.int64)
    pair, pair_index = np.unique(a * J + b, return_inverse=True)
    tables = np.zeros((len(pair), K, K))
    np.add.at(tables, (pair_index.ravel(), data.label[first], data.label[second]),
              weight[first] * weight[second])
    total = tables.sum(axis=(1, 2))
    observed = np.trace(tables, axis1=1, axis2=2) / total
    chance = np.einsum("pk,pk->p", tables.sum(axis=2), tables.sum(axis=1)) / total ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)
    out = np.full((J, J), np.nan)
    out[pair // J, pair % J] = kappa
    out[pair % J, pair // J] = kappa
    return _as_frame(out, reader.rater_ids_, reader.rater_ids_)


def posterior_entropy(model, X):
    """Entropy (in nats) of a fitted model's posterior over each item's
    true class: 0 when the model is sure, log K at its most uncertain.

    Parameters
    ----------
    model : fitted skcrowd estimator with ``predict_proba``
    X : the ratings, in any form ``model`` accepts

    Returns
    -------
    entropy : ndarray of shape (n_items,) or Series
        A Series named ``entropy`` indexed by item id when the model's
        ``predict_proba`` returns a DataFrame for ``X`` (long-form input or
        ``set_output(transform="pandas")``).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MajorityVote
    >>> from skcrowd.metrics import posterior_entropy
    >>> X = np.array([[0, 0, 0], [0, 1, np.nan]])
    >>> posterior_entropy(MajorityVote().fit(X), X).round(3)
    array([0.   , 0.693])
    """
    result = model.predict_proba(X)
    proba = np.asarray(result, dtype=np.float64)
    entropy = 0.0 - xlogy(proba, proba).sum(axis=1)  # 0.0 - : no "-0."
    if hasattr(result, "index"):  # pandas results: the same item index
        import pandas as pd
        return pd.Series(entropy, index=result.index, name="entropy")
    return entropy


def _tidy(model, data, values, by, name):
    """Per-item (or per-rater) values in the form of the model's results:
    a Series indexed by item (rater) id when the model returns pandas for
    this input (long-form DataFrame, or ``set_output(transform="pandas")``),
    else the array."""
    return per_item_result(model, data, values, name, by_rater=by != "item")


def _skills(model, skills, data):
    """Each rater's probability of giving the true label, one per rater
    column of ``data``: the model's raters, and with
    ``unknown_raters="prior"`` one more, the population rater of the raters
    not seen in fit (the model's own, or the rating-weighted mean of the
    given ``skills``, as the models build their population rater)."""
    n_raters = model.n_features_in_
    if skills is not None:
        # a Series (crowd-kit's form) is indexed by rater id: aligned by id,
        # not taken by position
        skills = np.asarray(aligned_by_id(skills, model.rater_ids_, "skills", "rater"),
                            dtype=np.float64)
        # written so that NaN fails too
        if skills.shape != (n_raters,) or not np.all((skills >= 0) & (skills <= 1)):
            raise ValueError(f"skills must be {n_raters} probabilities, one per rater.")
    elif hasattr(model, "rater_accuracy_"):
        # the model's population rater has its own accuracy (MACE's is not
        # the mean of the raters' accuracies)
        return np.asarray(with_population_rater(model, data).rater_accuracy_,
                          dtype=np.float64)
    elif isinstance(model, MajorityVote):
        skills = np.ones(n_raters)
    else:
        raise ValueError(f"{type(model).__name__} has no rater_accuracy_; pass skills=[...] "
                         "(one probability of a right answer per rater).")
    if data.n_raters > n_raters:
        skills = np.append(skills, np.average(skills, weights=rating_weights(model)))
    return skills


def _one_coin_weights(model, X, skills):
    """Per rating, the weight of each class under the one-coin model: the
    rater's skill s on the given label, (1 - s) / (K - 1) on each other."""
    data, _ = encode_for(model, X)
    K = data.n_classes
    s = _skills(model, skills, data)[data.rater]
    weights = np.repeat(((1 - s) / max(K - 1, 1))[:, None], K, axis=1)
    weights[np.arange(data.n_ratings), data.label] = s
    return data, weights


def uncertainty(model, X, *, by="item", skills=None, aggregate=True):
    """crowd-kit's label uncertainty: the entropy (nats) of the labels given
    to each item (or by each rater), every rating spread by its rater's skill.

    A rating of label l by a rater of skill s puts s on l and (1 - s) / (K - 1)
    on every other class; the sums over an item's ratings, normalised, are a
    distribution whose entropy is returned (with every skill 1: the entropy
    of the vote shares).  Skills default to the model's ``rater_accuracy_``
    (1 for :class:`~skcrowd.MajorityVote`).

    Parameters
    ----------
    model : fitted skcrowd estimator
    X : the ratings, in any form ``model`` accepts
    by : {"item", "rater"}, default="item"
    skills : array-like of shape (n_raters,) or Series, default=None
        One probability per rater, in the order of ``rater_ids_``, or a
        pandas Series indexed by rater id (crowd-kit's form), aligned by id.
    aggregate : bool, default=True
        Return the mean instead of one value per item (rater).

    Returns
    -------
    uncertainty : float, or ndarray of shape (n_items,) or (n_raters,), or Series
        Items (raters) without ratings get 0.  ``by="rater"`` covers the
        model's raters (``rater_ids_``); with ``unknown_raters="prior"``,
        ratings by raters not seen in fit count for their items with the
        skill of the model's population rater.  With ``aggregate=False``, a
        Series named ``uncertainty`` indexed by item (rater) id when the
        model returns pandas results for ``X`` (as :func:`posterior_entropy`).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MajorityVote
    >>> from skcrowd.metrics import uncertainty
    >>> X = np.array([[0, 1], [0, 0]])
    >>> uncertainty(MajorityVote().fit(X), X, aggregate=False).round(6)
    array([0.693147, 0.      ])
    """
    if by not in ("item", "rater"):
        raise ValueError(f"by must be 'item' or 'rater'; got {by!r}.")
    data, weights = _one_coin_weights(model, X, skills)
    group = data.item if by == "item" else data.rater
    size = data.n_items if by == "item" else data.n_raters
    totals = np.zeros((size, data.n_classes))
    np.add.at(totals, group, weights)
    norm = totals.sum(axis=1, keepdims=True)
    p = np.divide(totals, norm, out=np.zeros_like(totals), where=norm > 0)
    values = 0.0 - xlogy(p, p).sum(axis=1)
    if by == "rater":
        # the model's raters; raters not seen in fit (unknown_raters="prior")
        # share one population column, which is no rater of the model
        values = values[:model.n_features_in_]
    if aggregate:
        return float(values.mean())
    return _tidy(model, data, values, by, "uncertainty")


def consistency(model, X, *, skills=None, aggregate=True):
    """crowd-kit's consistency: the posterior probability of the model's
    label of each item under a one-coin model with the raters' skills.

    Per item, class k gets Π_n (s_n if label_n = k else (1 - s_n) / (K - 1))
    (uniform prior); the share of the predicted class is returned.  Skills
    default to the model's ``rater_accuracy_`` (1 for MajorityVote).  The
    model must predict classes: a model whose ``predict`` is a value on the
    label scale (MeanRating, MedianRating, OrdinalMixture) is a
    ``ValueError``.

    Parameters
    ----------
    model : fitted skcrowd estimator
    X : the ratings, in any form ``model`` accepts
    skills : array-like of shape (n_raters,) or Series, default=None
        As for :func:`uncertainty`: in the order of ``rater_ids_``, or a
        Series indexed by rater id.
    aggregate : bool, default=True
        Return the mean over items instead of one value per item.

    Returns
    -------
    consistency : float, or ndarray of shape (n_items,) or Series
        With ``aggregate=False``, a Series named ``consistency`` indexed by
        item id when the model returns pandas results for ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.metrics import consistency
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, np.nan, 0], [1, 0, 1]])
    >>> 0.5 < consistency(DawidSkene().fit(X), X) <= 1
    True
    """
    if model._prediction_name != "label":
        # searchsorted would put a mean of 1.33 on the scale's class 2
        raise ValueError(
            f"consistency is the posterior probability of the model's class for each "
            f"item, and {type(model).__name__}.predict gives a {model._prediction_name} "
            "on the label scale, not a class; use a model that predicts classes "
            "(MajorityVote, DawidSkene, ...)."
        )
    data, weights = _one_coin_weights(model, X, skills)
    log_weights = np.zeros((data.n_items, data.n_classes))
    with np.errstate(divide="ignore"):
        np.add.at(log_weights, data.item, np.log(weights))
    top = log_weights.max(axis=1, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    posterior = np.exp(log_weights - top)
    norm = posterior.sum(axis=1, keepdims=True)
    # no class fits every rating (skills of 1 that disagree): 0, as crowd-kit
    posterior = np.divide(posterior, norm, out=np.zeros_like(posterior), where=norm > 0)
    predicted = np.searchsorted(model.classes_, np.asarray(model.predict(X)))
    values = posterior[np.arange(data.n_items), predicted]
    if aggregate:
        return float(values.mean())
    return _tidy(model, data, values, "item", "consistency")
