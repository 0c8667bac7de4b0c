"""AutoCrowd: the default estimator, one model chosen per data set without
gold, by the held-out likelihood of the items' ratings."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.model_selection import KFold
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._base import CrowdEstimator
from ._baselines import MajorityVote
from ._dawid_skene import DawidSkene
from ._mace import MACE
from ._held_out import held_out_scores, majority_posterior
from ._irt import IRT3PL

__all__ = ["AutoCrowd"]

#: EM passes of an iterative candidate's fold fit, started from its fit on
#: all the items (see ``_held_out.py``)
FOLD_PASSES = 4

#: an item's raters say a class clearly when majority vote's model
#: (identical raters) gives it at least this posterior probability
CLEAR_MAJORITY = 0.99

#: a candidate is eligible when its label is the clear majority's on at
#: least this share of the items that have one: labels that follow the
#: raters, if not everywhere (labels independent of them agree on about
#: half the binary items)
FOLLOWS_RATERS = 0.75

#: held-out likelihoods within this many standard errors of the best (of
#: the items' paired differences) do not tell two candidates apart
TIED_WITHIN = 2.0


def default_candidates(random_state=None, n_classes=None):
    """The models AutoCrowd chooses from, by name, at their defaults; with
    ``n_classes=2``, the item-difficulty model as well (AutoCrowd fits it
    where the ratings show item difficulty: :func:`difficulty_score`)."""
    candidates = {
        "MajorityVote": MajorityVote(),
        "DawidSkene": DawidSkene(),
        "DawidSkene one_coin": DawidSkene(confusion="one_coin"),
        # one start (soft majority vote), not MACE's 10 restarts: the
        # learned prevalence leaves few poor optima, and restarts and
        # passes to a tolerance of 1e-6 were most of the selection's cost.
        # The two-stage prior on competence: the paper's Beta(0.5, 0.5)
        # takes a rater with a few lucky ratings to know the answer, and
        # the variational learned prior pools the spammers with the others
        # (see :ref:`which_model`)
        "MACE": MACE(n_init=1, tol=1e-5, competence_prior="two_stage",
                     random_state=random_state),
    }
    if n_classes == 2:
        # item difficulty (Carpenter's reduction AB: no guessing, no
        # discrimination): the one effect no other candidate has, at a
        # cost of a few Dawid-Skene fits, where the full model's seven
        # guessing and five discrimination nodes per difficulty node cost
        # 65 to 765.  It starts from a Dawid-Skene fit: from the paper's
        # prior means (prevalence 0.5) the prevalence of an imbalanced
        # crowd moves slowly, and a fit stopped early there had worse
        # labels and a higher held-out likelihood (see :ref:`which_model`)
        candidates["IRT3PL difficulty"] = IRT3PL(
            guessing=False, discrimination=False, init="dawid_skene", n_init=1,
            tol=1e-4, random_state=random_state)
    return candidates


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
    only if its label is the raters' on at least three in four of the
    items where they say a class clearly (majority vote's model of
    identical raters gives it a posterior of at least 0.99).  And where
    the held-out likelihood cannot tell candidates apart (within two
    standard errors of the best, the items' scores paired), the one whose
    labels follow those clear majorities most often is kept.
    See :ref:`which_model` for the rule and its measured accuracy.

    Parameters
    ----------
    candidates : dict of {str: estimator} or None, default=None
        The models to choose from, by name (cloned before fitting; each
        must take ``classes``).  ``None``: ``MajorityVote()``,
        ``DawidSkene()``, ``DawidSkene(confusion="one_coin")`` and
        ``MACE(n_init=1, tol=1e-5, competence_prior="two_stage",
        random_state=random_state)``, otherwise
        at their defaults, and with two classes ``"IRT3PL difficulty"``,
        ``IRT3PL(guessing=False, discrimination=False, init="dawid_skene",
        n_init=1, tol=1e-4, random_state=random_state)``: item difficulty
        without Carpenter's guessing and discrimination, where the ratings
        show item difficulty (``difficulty_score_`` is positive).  GLAD and
        the full IRT3PL are left out because one fit of either costs more
        than the whole selection (:ref:`which_model`); pass them here to
        include them.
    cv : int, default=5
        Folds over the items.  A candidate's fold fit starts from its fit
        on all the items (``init_params``) and runs 4 EM passes (a model
        without warm starts: a full fit); majority vote's is exact.  The
        ratings are encoded once, by the first candidate's fit, for all
        the candidates that share its classes.  With fewer than ``cv`` items no folds are run
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
    held_out_scores_ : dict of {str: ndarray of shape (n_items,)}
        Each candidate's held-out log likelihood of every item's ratings,
        in the items' order (what ``cv_scores_`` averages).
    agreement_ : dict of {str: float}
        Share of the items with a clear majority on which each candidate's
        label is that majority's class (1.0 when no item has one).
    eligible_ : list of str
        The candidates that passed the agreement guard.
    tied_ : list of str
        The eligible candidates whose held-out likelihood is within two
        standard errors of the best one's; ``selected_`` is the one of them
        that agrees most often with the clear majorities.
    difficulty_score_ : float
        With two classes and the default candidates, the score test
        statistic for item difficulty at the ``DawidSkene`` fit, in
        standard errors: the derivative of the log likelihood of
        Carpenter's item-difficulty model in the difficulties' variance
        where it is 0 (and that model is Dawid-Skene's).  Positive: an
        item's raters are right or wrong together more often than their
        accuracies say, the likelihood rises as item difficulty enters, and
        ``"IRT3PL difficulty"`` is a candidate; otherwise it is not fitted.
        NaN with other classes or candidates.
    classes_, n_features_in_, rater_ids_
        Those of ``best_estimator_``.

    See Also
    --------
    DawidSkene, MACE, MajorityVote, IRT3PL : the default candidates.

    Examples
    --------
    >>> from skcrowd import AutoCrowd
    >>> from skcrowd.datasets import load_rte
    >>> rte = load_rte()
    >>> auto = AutoCrowd(random_state=0).fit(rte.ratings)
    >>> auto.selected_
    'IRT3PL difficulty'
    >>> auto.predict(rte.ratings)[:5]
    array([0, 0, 1, 0, 1])
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
        # every candidate on all the items; its labels come from the fit's
        # last pass, in the items' order.  The first skcrowd model encodes
        # the ratings, and every other that leaves its classes to the data,
        # as the first does, is fitted on that encoding.
        labels, data, encoder = {}, None, None

        def fit_candidate(name, model):
            nonlocal data, encoder
            if not isinstance(model, CrowdEstimator):
                labels[name] = np.asarray(model.fit_predict(X, y))
                return
            model._validate_params()
            if data is None:
                data, items = model._fit(X, y)
                encoder = model
            elif model.classes is None and encoder.classes is None:
                items = model._fit_shared(data, encoder)
            else:
                items = model._fit(X, y)[1]
            labels[name] = np.asarray(model._predict_from_items(items))

        for name, model in candidates.items():
            fit_candidate(name, model)
        first = next(iter(candidates.values()))
        if data is None:
            encoder = MajorityVote(classes=first.classes_)
            data = encoder._fit(X, y)[0]
        self.difficulty_score_ = np.nan
        if self.candidates is None and len(first.classes_) == 2:
            # item difficulty: a candidate where the Dawid-Skene fit's
            # likelihood rises as it enters (see difficulty_score)
            # (every default candidate is fitted on the shared encoding)
            self.difficulty_score_ = difficulty_score(candidates["DawidSkene"], data)
            if self.difficulty_score_ > 0:
                for name, model in default_candidates(self.random_state, 2).items():
                    if name not in candidates:
                        candidates[name] = model
                        fit_candidate(name, model)
        fitted = candidates
        self.agreement_ = _clear_majority_agreement(labels, majority_posterior(first, data),
                                                    first.classes_)
        item_scores = self._held_out_scores(data, y, fitted, encoder)
        self.held_out_scores_ = item_scores
        self.cv_scores_ = {name: float(np.mean(v)) for name, v in item_scores.items()}
        self.selected_, self.eligible_, self.tied_ = choose(item_scores, self.agreement_)
        self.estimators_ = fitted
        self.best_estimator_ = fitted[self.selected_]
        for name in ("classes_", "n_features_in_", "rater_ids_", "feature_names_in_"):
            if hasattr(self.best_estimator_, name):
                setattr(self, name, getattr(self.best_estimator_, name))
        return self

    def _held_out_scores(self, data, y, fitted, encoder):
        """Each candidate's held-out log likelihood of every item's ratings
        (an item is scored by the fit on the folds that leave it out)."""
        n_items = data.n_items
        if n_items < self.cv:
            return {name: np.full(n_items, np.nan) for name in fitted}
        ratings = data.ratings
        gold = _gold_array(y, ratings.item_ids)

        def refit(name, full, train, test):
            # a candidate with other classes than the first: its own
            # encoding, its classes kept in every fold
            model = clone(full).set_params(classes=full.classes_)
            fit_params = {"init_params": full} if "warm_start" in full.get_params() else {}
            model.fit(ratings[train], None if gold is None else gold[train], **fit_params)
            return np.asarray(model.score_samples(ratings[test]))

        folds = KFold(self.cv, shuffle=True, random_state=_seed(self.random_state))
        return held_out_scores(fitted, data, encoder, folds.split(np.arange(n_items)),
                               FOLD_PASSES, refit)

    # -- the chosen model answers ----------------------------------------------
    def predict(self, X):
        """The chosen model's most probable class of each item (see
        :meth:`DawidSkene.predict`)."""
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
        """The chosen model's posterior over each item's true class."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    def transform(self, X):
        """Same as :meth:`predict_proba` (a pipeline step)."""
        return self.predict_proba(X)

    def score_samples(self, X):
        """The chosen model's log marginal likelihood of each item's ratings."""
        check_is_fitted(self)
        return self.best_estimator_.score_samples(X)

    def score(self, X, y=None):
        """The chosen model's mean log marginal likelihood per item."""
        check_is_fitted(self)
        return self.best_estimator_.score(X)

    def rater_table(self):
        """The chosen model's per-rater diagnostics (a DataFrame)."""
        check_is_fitted(self)
        return self.best_estimator_.rater_table()

    def item_table(self, X):
        """The chosen model's per-item diagnostics for the items of ``X``."""
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
        """The names of the :meth:`predict_proba` columns: the classes."""
        check_is_fitted(self)
        return self.best_estimator_.get_feature_names_out(input_features)


def _seed(random_state):
    return random_state if random_state is not None else 0


def _gold_array(y, item_ids):
    if y is None:
        return None
    if hasattr(y, "get") and not isinstance(y, np.ndarray):
        return np.array([y.get(item, None) for item in item_ids], dtype=object)
    return np.asarray(y, dtype=object)


def choose(item_scores, agreement):
    """AutoCrowd's rule: ``(selected, eligible, tied)`` from each
    candidate's held-out score of every item and its agreement with the
    clear majorities.

    Eligible: agreement at least :data:`FOLLOWS_RATERS` (every candidate
    when none is).  Tied: the eligible candidates whose held-out scores
    are within :data:`TIED_WITHIN` standard errors of the best mean.
    Selected: of the tied, the one that agrees most often with the clear
    majorities (to 0.1% of those items), then the likeliest.  Without
    folds (NaN scores) the first eligible candidate."""
    eligible = [name for name in item_scores if agreement[name] >= FOLLOWS_RATERS]
    eligible = eligible or list(item_scores)
    if np.isnan(item_scores[eligible[0]]).any():
        return eligible[0], eligible, eligible[:1]
    best = max(eligible, key=lambda name: item_scores[name].mean())
    tied = [name for name in eligible if _tied(item_scores[name], item_scores[best])]
    # where the ratings' likelihood cannot choose, the labels that follow
    # the raters where they agree
    selected = max(tied, key=lambda name: (round(agreement[name], 3),
                                           item_scores[name].mean()))
    return selected, eligible, tied


def _tied(scores, best):
    """Whether per-item held-out scores are within :data:`TIED_WITHIN`
    standard errors of the best candidate's (paired by item)."""
    difference = best - scores
    if len(difference) < 2 or not difference.any():
        return True
    spread = difference.std(ddof=1) / np.sqrt(len(difference))
    return difference.mean() <= TIED_WITHIN * spread


def _clear_majority_agreement(labels, posterior, classes):
    """For each candidate's labels, the share of the items whose raters say
    a class clearly (``posterior`` at least :data:`CLEAR_MAJORITY`) on
    which its label is that class; 1.0 when no item has a clear majority.

    Not Cohen's kappa against majority vote's labels: with two or three
    ratings per item many items are ties, which a vote breaks arbitrarily,
    and at a skewed prevalence kappa is near 0 for a labelling that is
    right on nearly every item (a constant one has kappa 0)."""
    clear = posterior.max(axis=1) >= CLEAR_MAJORITY
    if not clear.any():
        return {name: 1.0 for name in labels}
    majority = np.asarray(classes)[posterior[clear].argmax(axis=1)]
    return {name: float(np.mean(np.asarray(labels[name])[clear] == majority))
            for name in labels}


def difficulty_terms(model, data):
    """Each item's term of the score test for item difficulty at a fitted
    two-class Dawid-Skene ``model`` (``data`` in its codes).

    Carpenter's model with item difficulty alone (reduction AB: a rater's
    rating is right with probability σ(α_j^z - β_i), β_i ~ N(0, σ_β²)) is
    the two-class Dawid-Skene model when σ_β = 0.  There the derivative of
    item i's log marginal likelihood in σ_β² is

        ½ E_z [ (Σ_r e_r)² - Σ_r p_r (1 - p_r) ],

    p_r the probability that its rater r is right when the true class is z
    (``confusion_[r, z, z]``), e_r = 1[y_r = z] - p_r, the expectation over
    the item's posterior: the second derivative in β of the item's
    likelihood at β = 0 over the likelihood.  It is positive when an item's
    raters are right or wrong together more often than their accuracies
    say.  Known items are at their known class."""
    posterior = model._clamp(data, model._infer_items(data))["proba"]
    terms = np.zeros(data.n_items)
    for z in range(2):
        right = model.confusion_[data.rater, z, z]
        residual = np.bincount(data.item, (data.label == z) - right, minlength=data.n_items)
        variance = np.bincount(data.item, right * (1.0 - right), minlength=data.n_items)
        terms += 0.5 * posterior[:, z] * (residual**2 - variance)
    return terms


def difficulty_score(model, data):
    """The score test statistic for item difficulty at a fitted two-class
    Dawid-Skene ``model``: the sum of :func:`difficulty_terms` over its
    standard error (the root of their sum of squares; 0 when every term
    is 0).  Positive: the likelihood rises as item difficulty enters."""
    terms = difficulty_terms(model, data)
    spread = np.sqrt(np.sum(terms**2))
    return float(terms.sum() / spread) if spread > 0 else 0.0
