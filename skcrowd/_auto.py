"""AutoCrowd: the default estimator, one model chosen per data set without
gold, by the held-out likelihood of the items' ratings."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.model_selection import KFold
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._baselines import MajorityVote
from ._dawid_skene import DawidSkene
from ._mace import MACE
from ._ratings import Ratings, to_ratings

__all__ = ["AutoCrowd"]


def default_candidates(random_state=None):
    """The models AutoCrowd chooses from, by name, at their defaults."""
    return {
        "MajorityVote": MajorityVote(),
        "DawidSkene": DawidSkene(),
        "DawidSkene one_coin": DawidSkene(confusion="one_coin"),
        "MACE": MACE(random_state=random_state),
    }


class AutoCrowd(TransformerMixin, BaseEstimator):
    """The default: the model that best predicts held-out items' ratings.

    One call, no gold: ``AutoCrowd`` fits every candidate model on all the
    items, and scores each by the log marginal likelihood of the ratings of
    items it did not see (``cv`` folds over the items; each model's
    ``score_samples``, the probability of an item's ratings with its true
    class summed out, compares across models).  The model with the highest
    held-out likelihood answers ``predict``, ``predict_proba``,
    ``score`` and the tables; it is ``best_estimator_``, fitted on all the
    items.

    Held-out likelihood is what each model claims about the ratings, not
    about the truth: a model can describe the raters better with labels
    that follow something else than what the raters agree on (raters in
    consistent camps, "schools of thought").  So a candidate is eligible
    only if its labels agree with majority vote, beyond chance (Cohen's
    kappa), at least half as well as the most agreeing candidate does.
    See :ref:`which_model` for the rule and its measured accuracy.

    Parameters
    ----------
    candidates : dict of {str: estimator} or None, default=None
        The models to choose from, by name (cloned before fitting; each
        must take ``classes``).  ``None``: ``MajorityVote()``,
        ``DawidSkene()``, ``DawidSkene(confusion="one_coin")`` and
        ``MACE(random_state=random_state)``, at their defaults.  GLAD and
        IRT3PL are left out of the default because one fit of either costs
        more than the whole selection (:ref:`which_model`); pass them here
        to include them.
    cv : int, default=5
        Folds over the items.  A candidate's fold fit starts from its fit
        on all the items (``init_params``), so the folds cost a few
        iterations each.  With fewer than ``cv`` items no folds are run
        and the first candidate is kept.
    random_state : int or None, default=None
        Seeds the folds and the default MACE's restarts (``None``: folds
        seeded with 0, so the choice is repeatable).

    Attributes
    ----------
    selected_ : str
        Name of the chosen candidate.
    best_estimator_ : estimator
        The chosen candidate, fitted on all the items.
    estimators_ : dict of {str: estimator}
        Every candidate, fitted on all the items.
    cv_scores_ : dict of {str: float}
        Held-out log likelihood per item of each candidate (NaN without
        folds).
    agreement_ : dict of {str: float}
        Cohen's kappa between each candidate's labels and majority vote.
    eligible_ : list of str
        The candidates that passed the agreement guard.
    classes_, n_features_in_, rater_ids_
        Those of ``best_estimator_``.

    See Also
    --------
    DawidSkene, MACE, MajorityVote : the default candidates.

    Examples
    --------
    >>> from skcrowd import AutoCrowd
    >>> from skcrowd.datasets import load_rte
    >>> rte = load_rte()
    >>> auto = AutoCrowd(random_state=0).fit(rte.ratings)
    >>> auto.selected_
    'MACE'
    >>> auto.predict(rte.ratings)[:5]
    array([0, 0, 1, 0, 0])
    """

    _parameter_constraints: dict = {
        "candidates": [dict, None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, *, candidates=None, cv=5, random_state=None):
        self.candidates = candidates
        self.cv = cv
        self.random_state = random_state

    def _candidates(self):
        if self.candidates is None:
            return default_candidates(self.random_state)
        if not self.candidates:
            raise ValueError("AutoCrowd needs at least one model in candidates; got none.")
        return {str(name): clone(model) for name, model in self.candidates.items()}

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit every candidate, score each on held-out items, keep the best.

        Parameters
        ----------
        X : array-like, sparse matrix, DataFrame or Ratings
            The ratings, in any form the models take (not a dask DataFrame).
        y : array-like, mapping or Series, default=None
            Known true labels of some items (see :ref:`gold`); every
            candidate fits with them, in the folds too.

        Returns
        -------
        self : object
        """
        if type(X).__module__.split(".")[0] == "dask":
            raise ValueError("AutoCrowd does not take a dask DataFrame: fit one model "
                             "(e.g. DawidSkene) on the cluster.")
        candidates = self._candidates()
        fitted = {name: model.fit(X, y) for name, model in candidates.items()}
        first = next(iter(fitted.values()))
        ratings, _, _ = to_ratings(MajorityVote(), X, reset=True)
        gold = _gold_array(y, ratings.item_ids)
        majority = MajorityVote(classes=first.classes_).fit(ratings).predict(ratings)
        self.agreement_ = {name: _kappa(model.predict(ratings), majority, first.classes_)
                           for name, model in fitted.items()}
        self.cv_scores_ = self._held_out_scores(ratings, gold, fitted, first.classes_)
        self.selected_ = self._choose()
        self.estimators_ = fitted
        self.best_estimator_ = fitted[self.selected_]
        for name in ("classes_", "n_features_in_", "rater_ids_", "feature_names_in_"):
            if hasattr(self.best_estimator_, name):
                setattr(self, name, getattr(self.best_estimator_, name))
        return self

    def _held_out_scores(self, ratings, gold, fitted, classes):
        n_items = len(ratings)
        n_splits = min(self.cv, n_items)
        if n_splits < 2:
            return {name: np.nan for name in fitted}
        folds = KFold(n_splits, shuffle=True, random_state=_seed(self.random_state))
        total = dict.fromkeys(fitted, 0.0)
        for train, test in folds.split(np.arange(n_items)):
            for name, full in fitted.items():
                model = clone(full).set_params(classes=classes)
                fit_params = {"init_params": full} if "warm_start" in full.get_params() else {}
                model.fit(ratings[train], None if gold is None else gold[train], **fit_params)
                total[name] += float(np.sum(model.score_samples(ratings[test])))
        return {name: value / n_items for name, value in total.items()}

    def _choose(self):
        scores = self.cv_scores_
        floor = 0.5 * max(self.agreement_.values())
        self.eligible_ = [name for name in scores if self.agreement_[name] >= floor]
        return max(self.eligible_, key=lambda name: (np.nan_to_num(scores[name], nan=-np.inf)))

    # -- the chosen model answers ----------------------------------------------
    def predict(self, X):
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    def fit_predict(self, X, y=None):
        """Fit, then return the chosen model's label of each item; with
        ``y``, the known items keep their known labels (the chosen model's
        ``fit_predict``)."""
        self.fit(X, y)
        if y is None:
            return self.best_estimator_.predict(X)
        return self.best_estimator_.fit_predict(X, y)

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    def transform(self, X):
        return self.predict_proba(X)

    def score_samples(self, X):
        check_is_fitted(self)
        return self.best_estimator_.score_samples(X)

    def score(self, X, y=None):
        check_is_fitted(self)
        return self.best_estimator_.score(X)

    def rater_table(self):
        check_is_fitted(self)
        return self.best_estimator_.rater_table()

    def item_table(self, X):
        check_is_fitted(self)
        return self.best_estimator_.item_table(X)

    def __sklearn_tags__(self):
        # the inputs the candidate models take (missing ratings, string and
        # categorical labels, sparse matrices), and no target: gold is optional
        tags = super().__sklearn_tags__()
        tags.input_tags = DawidSkene().__sklearn_tags__().input_tags
        tags.target_tags.required = False
        return tags

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return self.best_estimator_.get_feature_names_out(input_features)


def _fit_args(model):
    import inspect
    return inspect.signature(type(model)._start_state).parameters if hasattr(
        model, "_start_state") else {}


def _seed(random_state):
    return random_state if random_state is not None else 0


def _gold_array(y, item_ids):
    if y is None:
        return None
    if hasattr(y, "get") and not isinstance(y, np.ndarray):
        return np.array([y.get(item, None) for item in item_ids], dtype=object)
    return np.asarray(y, dtype=object)


def _kappa(labels, reference, classes):
    """Cohen's kappa between two labellings of the same items."""
    a = np.searchsorted(classes, labels)
    b = np.searchsorted(classes, reference)
    K = len(classes)
    joint = np.bincount(a * K + b, minlength=K * K).reshape(K, K) / len(a)
    chance = joint.sum(axis=1) @ joint.sum(axis=0)
    observed = np.trace(joint)
    return 1.0 if chance >= 1 else float((observed - chance) / (1 - chance))
