"""Baselines that weigh every rating equally: majority vote, mean and median."""

import numpy as np

from ._base import CrowdEstimator, draw_categorical
from ._kernels._common import item_means, item_medians, vote_counts

__all__ = ["MajorityVote", "MeanRating", "MedianRating"]


class MajorityVote(CrowdEstimator):
    """Majority vote: each item gets its most frequent label.

    ``predict_proba`` returns each item's vote shares (a tie splits evenly);
    ``predict`` breaks a tie toward the smallest class in ``classes_``.

    For ``score`` and ``sample`` a vote needs a probability model.  The one
    used is the model whose maximum a posteriori labelling *is* the majority
    vote: every rater is identical, right with probability ``accuracy_`` and
    otherwise uniform over the other classes.  ``accuracy_`` is the share of
    ratings that agree with their item's majority label (with one pseudo
    count each for agreeing and disagreeing, so it is never 0 or 1), and
    ``class_prior_`` the mean of the vote shares.

    Parameters
    ----------
    classes : array-like, default=None
        All labels of the scale; default the labels seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: count their ratings (the baselines have no per-rater
        parameters: every rater is the same rater).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
    accuracy_ : float
    rater_agreement_ : ndarray of shape (n_raters,)
        Share of each rater's ratings that equal their item's majority label;
        ``accuracy_`` for a rater without ratings (the model's value for
        every rater), as the other models give such a rater its prior.
    n_features_in_ : int
    rater_ids_ : ndarray of shape (n_raters,)

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MajorityVote
    >>> MajorityVote().fit_predict(np.array([[0, 1, 1], [0, 0, np.nan]]))
    array([1., 0.])
    """

    def __init__(self, *, classes=None, unknown_raters="error"):
        self.classes = classes
        self.unknown_raters = unknown_raters

    def _vote_shares(self, data):
        counts = np.empty((data.n_items, data.n_classes))
        vote_counts.pick(data.n_ratings)(data.item_ptr, data.label, data.n_classes, counts)
        return counts

    def _fit_encoded(self, data, **fit_params):
        self._reject_fit_params(fit_params)
        counts = self._vote_shares(data)
        n_votes = counts.sum(axis=1)
        rated = n_votes > 0
        shares = counts[rated] / n_votes[rated, None]
        self.class_prior_ = (shares.sum(axis=0) + 1e-12) / (len(shares) + 1e-12 * data.n_classes)
        agree = counts[rated].max(axis=1).sum()
        self.accuracy_ = float((agree + 1.0) / (n_votes.sum() + 2.0))
        # Share of each rater's ratings that equal their item's majority
        # label (predict's tie rule).  A rater without ratings (an all-missing
        # column of a wide frame) has no share; like the other models, whose
        # rater without ratings keeps its prior parameters, it gets what this
        # model holds of any rater: every rater is the same rater, right with
        # probability accuracy_ (not NaN, which no rater_table shows).
        majority = np.argmax(counts, axis=1)
        agrees = np.bincount(data.rater, weights=data.label == majority[data.item],
                             minlength=data.n_raters)
        per_rater = np.bincount(data.rater, minlength=data.n_raters)
        self.rater_agreement_ = np.full(data.n_raters, self.accuracy_)
        np.divide(agrees, per_rater, out=self.rater_agreement_, where=per_rater > 0)
        return self._items_from_counts(counts)

    def _rater_diagnostics(self):
        return {"agreement": self.rater_agreement_}

    def _log_joint(self, counts):
        """log π_k a^{c_k} ((1 - a)/(K - 1))^{n - c_k} of each item and class
        k: the identical raters' model, from the items' vote counts."""
        n_votes = counts.sum(axis=1, keepdims=True)
        K = len(self.classes_)
        log_right = np.log(self.accuracy_)
        # With one class every rating is right: the wrong term never counts.
        log_wrong = np.log1p(-self.accuracy_) - np.log(K - 1) if K > 1 else 0.0
        return np.log(self.class_prior_) + counts * log_right + (n_votes - counts) * log_wrong

    def _items_from_counts(self, counts):
        n_votes = counts.sum(axis=1, keepdims=True)
        proba = np.where(n_votes > 0, counts / np.maximum(n_votes, 1), self.class_prior_)
        terms = self._log_joint(counts)
        top = terms.max(axis=1, keepdims=True)
        loglik = (top + np.log(np.exp(terms - top).sum(axis=1, keepdims=True))).ravel()
        return {"proba": proba, "loglik": loglik}

    def _infer_items(self, data):
        return self._items_from_counts(self._vote_shares(data))

    def _sample_labels(self, data, rng):
        K = len(self.classes_)
        true_class = rng.choice(K, size=data.n_items, p=self.class_prior_)
        rows = np.full((K, K), (1 - self.accuracy_) / max(K - 1, 1))
        np.fill_diagonal(rows, self.accuracy_)
        return draw_categorical(rows[true_class[data.item]], rng)


class _NumericSummary(MajorityVote):
    """A per-item summary of numeric label values; the probability model for
    ``predict_proba``, ``score`` and ``sample`` is the majority vote's."""

    _summary = None  # kernel filling one value per item

    def _fit_encoded(self, data, **fit_params):
        self._reject_fit_params(fit_params)
        if self.classes_.dtype.kind not in "biuf":
            raise ValueError(
                f"{type(self).__name__} needs numeric labels; got "
                f"{self.classes_[:3].tolist()!r}..."
            )
        largest = float(np.max(np.abs(self.classes_.astype(np.float64))))
        with np.errstate(over="ignore"):
            overflows = not np.isfinite(np.float64(largest) ** 2 * data.n_ratings)
        if overflows:  # sums (the mean) and squares (its standard error) stay finite
            raise ValueError(
                f"{type(self).__name__} cannot sum label values as large as "
                f"{largest:g} in float64: rescale the labels."
            )
        super()._fit_encoded(data)
        return self._infer_items(data)

    def _predict_from_items(self, items):
        return items["value"]

    def _item_diagnostics(self, data, items):
        # The standard error of the mean of the item's ratings (NaN under two
        # ratings): a scale of the summary's uncertainty, for the median too.
        values = self.classes_.astype(np.float64)[data.label]
        n = data.ratings_per_item.astype(np.float64)
        total = np.bincount(data.item, weights=values, minlength=data.n_items)
        square = np.bincount(data.item, weights=values**2, minlength=data.n_items)
        with np.errstate(invalid="ignore", divide="ignore"):
            variance = np.maximum(square - total**2 / n, 0.0) / (n - 1)
            std = np.where(n >= 2, np.sqrt(variance / n), np.nan)
        return {"std": std}

    def _infer_items(self, data):
        items = super()._infer_items(data)
        values = np.empty(data.n_items)
        self._summary.pick(data.n_ratings)(
            data.item_ptr, self.classes_.astype(np.float64)[data.label], values
        )
        # An item without ratings gets the prior mean of the scale.
        values[np.isnan(values)] = self.class_prior_ @ self.classes_.astype(np.float64)
        items["value"] = values
        return items


class MeanRating(_NumericSummary):
    """Mean of each item's numeric ratings (an ordinal scale taken as numbers).

    ``predict`` returns the mean (a float); ``predict_proba``, ``score`` and
    ``sample`` are those of :class:`MajorityVote`.  An item with no rating
    gets the mean of the scale under ``class_prior_``.

    Parameters
    ----------
    classes : array-like, default=None
        All values of the scale; default the values seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: count their ratings (the baselines have no per-rater
        parameters: every rater is the same rater).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MeanRating
    >>> MeanRating().fit_predict(np.array([[1, 2, 4], [5, 5, np.nan]]))
    array([2.33333333, 5.        ])
    """

    _summary = staticmethod(item_means)
    _prediction_name = "mean"


class MedianRating(_NumericSummary):
    """Median of each item's numeric ratings (the mean of the two middle
    values for an even count, as :func:`numpy.median`).

    ``predict_proba``, ``score`` and ``sample`` are those of
    :class:`MajorityVote`.

    Parameters
    ----------
    classes : array-like, default=None
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: count their ratings (the baselines have no per-rater
        parameters: every rater is the same rater).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import MedianRating
    >>> MedianRating().fit_predict(np.array([[1, 2, 4], [5, 4, np.nan]]))
    array([2. , 4.5])
    """

    _summary = staticmethod(item_medians)
    _prediction_name = "median"
