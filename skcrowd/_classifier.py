"""Learning a classifier from features and crowd ratings (Raykar et al. 2010).

:class:`CrowdClassifier` fits a scikit-learn classifier and a crowd model
jointly by EM; :func:`training_set` turns a fitted crowd model's posteriors
into a training set for any classifier (the "aggregate, then train" flow).
"""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions, validate_params
from sklearn.utils.validation import _num_samples, check_is_fitted, has_fit_parameter

from ._base import draw_categorical
from ._dawid_skene import DawidSkene
from ._dawid_skene import _refit_raters as _dawid_skene_m_step
from ._mace import MACE
from ._mace import _refit_raters as _mace_m_step
from ._ratings import Ratings, input_form, is_dataframe, show, to_ratings

__all__ = ["CrowdClassifier", "training_set"]

#: The crowd models whose joint E-step and M-step are exact (see
#: :func:`_check_crowd_model`), with their rater-parameter M-step from
#: given item posteriors.
_RATER_M_STEPS = {DawidSkene: _dawid_skene_m_step, MACE: _mace_m_step}


def _as_ratings(X, ratings):
    """``ratings`` in any skcrowd form as a :class:`Ratings` whose items are
    the rows of ``X``: item ``i`` is row ``i`` (``item_ids`` 0..n-1).

    A matrix (array, sparse, wide DataFrame) and a 1-D array (one rater)
    are aligned by row position; a long-form DataFrame and a
    :class:`Ratings` by item id: ``X``'s index when ``X`` is a DataFrame,
    else the row number 0..n-1.  Rows of ``X`` without ratings are kept
    (items with no ratings).
    """
    n_items = _num_samples(X)
    if ratings is None:
        raise ValueError(
            "CrowdClassifier requires y to be passed, but the target y is None: pass "
            "the crowd ratings of the rows of X (a matrix with NaN where not rated, "
            "a long-form DataFrame or a Ratings).")
    form = input_form(ratings)
    if form == "matrix" and not sp.issparse(ratings):
        ratings = np.asarray(ratings)
        if ratings.ndim == 1:
            ratings = ratings.reshape(-1, 1)  # one label per item: one rater
    if form in ("matrix", "wide") and ratings.shape[0] != n_items:
        raise ValueError(
            f"The ratings matrix has {ratings.shape[0]} rows but X has {n_items}: a "
            "matrix of ratings is aligned to the rows of X (one row per item).")
    if getattr(ratings, "dtype", None) is not None and ratings.dtype.kind == "f" \
            and np.any(np.isinf(ratings.data if sp.issparse(ratings) else ratings)):
        raise ValueError("The ratings contain infinity, which is not a label.")
    parsed, _, _ = to_ratings(_Reader(), ratings, reset=True)
    if form in ("matrix", "wide"):
        rows = parsed._item
    else:
        rows = _rows_of_ids(X, parsed.item_ids, n_items)[parsed._item]
    if parsed.n_ratings == 0:
        raise ValueError("The ratings are empty: no item has a rating.")
    return Ratings(rows, parsed.rater, parsed.label, item_ids=np.arange(n_items),
                   rater_ids=parsed.rater_ids)


class _Reader(BaseEstimator):
    """A stand-in estimator for :func:`to_ratings`'s input checks (which
    record ``n_features_in_`` on the estimator they are given)."""


def _rows_of_ids(X, item_ids, n_items):
    """The row of ``X`` of each item id: by ``X``'s index for a DataFrame,
    else the ids must be row numbers."""
    if is_dataframe(X):
        rows = X.index.get_indexer(item_ids) if X.index.is_unique else None
        if rows is None:
            raise ValueError("X's index repeats an id: long-form ratings name the rows "
                             "of X by index, which must be unique.")
    else:
        ids = np.asarray(item_ids)
        integral = ids.dtype.kind in "iu" or (
            ids.dtype.kind == "f" and np.all(ids == np.round(ids)))
        if not integral:
            raise ValueError(
                f"The item ids of the ratings (e.g. {show(ids[0])}) must be row numbers "
                "of X (0 .. n - 1) when X is not a DataFrame; pass X as a DataFrame "
                "indexed by item id.")
        rows = ids.astype(np.int64)
        rows[(rows < 0) | (rows >= n_items)] = -1
    missing = np.flatnonzero(rows < 0)
    if len(missing):
        raise ValueError(
            f"{len(missing)} item id(s) of the ratings are not rows of X, e.g. "
            f"{show(np.asarray(item_ids)[missing[0]])}.")
    return rows


def _check_crowd_model(model):
    """The crowd model's rater M-step, or a clear error for a model the
    joint EM does not support.

    The joint E-step needs each item's likelihood of its ratings per class,
    read as ``predict_proba / class_prior_`` (times the marginal
    likelihood): exact when the posterior is the class prior times a
    per-class likelihood at fixed rater parameters, as for DawidSkene and
    MACE.  GLAD's item difficulties are fitted under the crowd's own prior,
    so its posterior under another prior is not that product; MACE's
    variational fit scores items with its posterior means but updates with
    the weights exp E[log θ], two different likelihoods.
    """
    step = next((_RATER_M_STEPS[c] for c in type(model).__mro__ if c in _RATER_M_STEPS), None)
    if step is None or (isinstance(model, MACE) and model.method != "em"):
        got = (f"MACE(method={model.method!r})" if isinstance(model, MACE)
               else type(model).__name__)
        raise ValueError(
            f"crowd_model must be a DawidSkene or a MACE(method='em'); got {got}.  (The "
            "joint EM needs a model whose item posterior is the class prior times a "
            "per-class likelihood of the ratings; for another model, aggregate then "
            "train: skcrowd.training_set.)")
    return step


def _check_estimator(estimator):
    if not hasattr(estimator, "predict_proba"):
        raise ValueError(f"estimator must have predict_proba; "
                         f"{type(estimator).__name__} has not.")
    if not has_fit_parameter(estimator, "sample_weight"):
        raise ValueError(
            f"estimator must take sample_weight in fit (the item posteriors are its "
            f"per-class weights); {type(estimator).__name__}.fit does not.  A Pipeline "
            "of transformers and a classifier: put CrowdClassifier last in the pipeline "
            "instead, over the classifier.")


def _warm_startable(estimator):
    """Whether ``warm_start=True`` makes the next fit start from this one's
    solution.  Only for linear models and neural networks: an ensemble's
    warm start adds members instead (a random forest with warm_start and the
    same n_estimators would not refit at all)."""
    families = ("sklearn.linear_model", "sklearn.neural_network")
    return "warm_start" in estimator.get_params(deep=False) and any(
        c.__module__.startswith(families) for c in type(estimator).__mro__)


def _replicate(X, posterior, classes):
    """Soft labels as a weighted training set: each row of ``X`` once per
    class, weighted by its posterior (the classifier's M-step of Raykar et
    al. 2010 maximises Σ_i Σ_k μ_ik log p(k | x_i), a weighted log loss)."""
    n_items, n_classes = posterior.shape
    if sp.issparse(X):
        X = X.tocsr()  # rows can be taken (not from every sparse format)
    elif not (isinstance(X, (np.ndarray, list)) or hasattr(X, "iloc")):
        X = np.asarray(X)  # an array-like that only converts
    rows = np.tile(np.arange(n_items), n_classes)
    y = np.repeat(classes, n_items)
    return _safe_indexing(X, rows), y, posterior.T.ravel()


def _column_order(fitted_classes, classes):
    """Columns of the classifier's predict_proba for ``classes``."""
    where = {c: k for k, c in enumerate(fitted_classes)}
    return np.array([where[c] for c in classes])


class CrowdClassifier(ClassifierMixin, BaseEstimator):
    """A classifier learned from features and crowd ratings jointly.

    Raykar et al. (2010), "Learning from Crowds", JMLR 11: EM over a
    classifier p(k | x, w) and a crowd model of the raters (Dawid & Skene
    1979).  The classifier's ``predict_proba(x_i)`` is item i's prior in the
    crowd model's E-step; the M-step refits the rater parameters and the
    classifier on the items' posteriors, as soft labels (each row once per
    class, weighted by its posterior).  Predictions on new items need their
    features only.  See :ref:`crowd_classifier`.

    Parameters
    ----------
    estimator : classifier, default=None
        Any scikit-learn classifier with ``predict_proba`` whose ``fit``
        takes ``sample_weight``; ``None``: ``LogisticRegression()`` (pass
        it explicitly to search its parameters, ``estimator__C``).  Linear
        models and neural networks with a ``warm_start`` parameter are
        warm-started from one EM iteration to the next.
    crowd_model : DawidSkene or MACE, default=None
        The rater model; ``None``: ``DawidSkene()``.  MACE with
        ``method="em"``.  Its fit on the ratings alone is the start of the
        EM.
    max_iter : int, default=100
        EM iterations (each one classifier fit).
    tol : float, default=1e-6
        Stop when the mean log likelihood per item changes by less than this.
    random_state : int, RandomState instance or None, default=None
        Seeds the estimator and the crowd model where they take a
        ``random_state`` left at None.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels of the ratings (the crowd model's classes).
    estimator_ : classifier
        The fitted classifier.
    crowd_model_ : DawidSkene or MACE
        The crowd model with the rater parameters of the joint fit (its
        ``confusion_``, ``rater_table()``, ...).  Its own ``predict_proba``
        of ratings uses its class prior, not the features.
    posterior_ : ndarray of shape (n_items, n_classes)
        Each training item's posterior given its features and ratings.
    n_iter_ : int
    converged_ : bool
    objective_history_ : ndarray of shape (``n_iter_``,)
        Mean per item of log p(ratings_i | x_i) = log Σ_k p(k | x_i, w)
        p(ratings_i | k, θ), after each iteration (Raykar et al. 2010's log
        likelihood; EM increases it plus the log priors of θ and w).
    n_features_in_ : int
        Of the estimator.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Of the estimator, when it was fitted on a DataFrame with string
        column names.

    Examples
    --------
    >>> from skcrowd import CrowdClassifier
    >>> from skcrowd.datasets import make_crowd_classification
    >>> data = make_crowd_classification(300, n_features=3, n_raters=8, random_state=0)
    >>> clf = CrowdClassifier().fit(data.features, data.ratings)
    >>> clf.classes_
    array([0., 1.])
    >>> clf.predict_proba(data.features[:2]).round(2)
    array([[0.43, 0.57],
           [0.21, 0.79]])
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), None],
        "crowd_model": [HasMethods(["fit", "predict_proba"]), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, crowd_model=None, *, max_iter=100, tol=1e-6,
                 random_state=None):
        self.estimator = estimator
        self.crowd_model = crowd_model
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _inner(self):
        estimator = clone(self.estimator if self.estimator is not None
                          else LogisticRegression())
        crowd = clone(self.crowd_model if self.crowd_model is not None else DawidSkene())
        if self.random_state is not None:
            rng = check_random_state(self.random_state)
            for model in (estimator, crowd):
                if model.get_params(deep=False).get("random_state", 0) is None:
                    model.set_params(random_state=rng.randint(np.iinfo(np.int32).max))
        return estimator, crowd

    def fit(self, X, y):
        """Fit the classifier and the rater model by EM.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_items, n_features)
            The features of each item, in any form the estimator takes.
        y : ratings of the items of X
            A matrix (array, sparse, or a DataFrame whose columns are
            raters) with one row per row of ``X`` and NaN where not rated;
            a long-form DataFrame (``item, rater, label``) or a
            :class:`~skcrowd.Ratings` whose item ids are ``X``'s index (a
            DataFrame) or its row numbers; or a 1-D array: one label per
            item from a single rater (NaN: not rated).

        Returns
        -------
        self : object
        """
        self._validate_params()
        estimator, crowd = self._inner()
        _check_estimator(estimator)
        rater_m_step = _check_crowd_model(crowd)
        ratings = _as_ratings(X, y)
        crowd.fit(ratings)
        self.classes_ = crowd.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"The ratings have one class ({show(self.classes_[0])}); a "
                             "classifier needs at least two.")
        data = crowd._encode(ratings, reset=False)  # the M-step's encoding, once
        posterior = np.asarray(crowd.predict_proba(ratings), dtype=np.float64)
        warm = _warm_startable(estimator)
        history, caught = [], {}
        self.converged_ = False
        for n_iter in range(1, self.max_iter + 1):
            # M-step (Raykar et al. 2010): the classifier on the soft
            # labels, the raters on the expected confusion counts
            with warnings.catch_warnings(record=True) as inner:
                warnings.simplefilter("always", ConvergenceWarning)
                X_rep, y_rep, weight = _replicate(X, posterior, self.classes_)
                estimator.fit(X_rep, y_rep, sample_weight=weight)
            for w in inner:  # each distinct warning once, after the loop
                caught.setdefault((w.category, str(w.message)), w)
            if warm and n_iter == 1:
                estimator.set_params(warm_start=True)
            if n_iter > 1:  # the first posteriors are the crowd fit's own fixed point
                rater_m_step(crowd, data, np.ascontiguousarray(posterior))
            # E-step: posterior ∝ p(k | x_i, w) · p(ratings_i | k, θ)
            log_joint = self._log_joint(estimator, crowd, X, ratings)
            log_marginal = _log_marginal(log_joint)
            posterior = _posterior(log_joint, log_marginal, crowd, ratings)
            history.append(float(np.mean(log_marginal)))
            if n_iter > 1 and abs(history[-1] - history[-2]) < self.tol:
                self.converged_ = True
                break
        for w in caught.values():
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if not self.converged_:
            warnings.warn(f"CrowdClassifier's EM did not converge in {self.max_iter} "
                          "iterations; increase max_iter.", ConvergenceWarning, stacklevel=2)
        if warm:
            estimator.set_params(warm_start=False)
        self.estimator_, self.crowd_model_ = estimator, crowd
        # the features are the estimator's: it validated them
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator, name):
                setattr(self, name, getattr(estimator, name))
            else:  # not an earlier fit's
                self.__dict__.pop(name, None)
        self.posterior_ = posterior
        self.n_iter_ = n_iter
        self.objective_history_ = np.asarray(history)
        return self

    def _log_joint(self, estimator, crowd, X, ratings):
        """log p(k | x_i, w) + log p(ratings_i | k, θ) per item and class.

        The crowd model's posterior is π_k p(ratings_i | k, θ) / p(ratings_i),
        so the per-class log likelihood is log predict_proba + score_samples
        - log π (exact for DawidSkene: its E-step is that product)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            log_prior = np.log(self._proba(estimator, X))
            log_likelihood = (np.log(np.asarray(crowd.predict_proba(ratings)))
                              + np.asarray(crowd.score_samples(ratings))[:, None]
                              - np.log(crowd.class_prior_))
        # a class of prevalence 0 (no prior pseudo-count) is impossible
        log_likelihood[np.isnan(log_likelihood)] = -np.inf
        return log_prior + log_likelihood

    def _proba(self, estimator, X):
        proba = estimator.predict_proba(X)
        return np.asarray(proba)[:, _column_order(estimator.classes_, self.classes_)]

    def predict_proba(self, X):
        """Probability of each class from the features alone.

        Parameters
        ----------
        X : array-like of shape (n_items, n_features)

        Returns
        -------
        proba : ndarray of shape (n_items, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        return self._proba(self.estimator_, X)

    def predict(self, X):
        """The most probable class of each item, from its features alone."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy on known labels, or the log likelihood of crowd ratings.

        Parameters
        ----------
        X : array-like of shape (n_items, n_features)
        y : array-like of shape (n_items,), or ratings
            A 1-D ``y``: the items' true labels; the score is the accuracy
            of :meth:`predict` (scikit-learn's classifier score).  Ratings in
            a 2-D form (a matrix with NaN, a long-form DataFrame, a
            :class:`~skcrowd.Ratings`): the mean per item of the log
            likelihood of the ratings, log Σ_k p(k | x_i) p(ratings_i | k),
            with the fitted rater parameters (Raykar et al. 2010's objective
            on these items; higher is better).  It is what
            :class:`~sklearn.model_selection.GridSearchCV` maximises when its
            ``y`` is the ratings: the held-out ratings' likelihood, which
            needs no true labels and rewards neither agreeing with a noisy
            majority nor overconfidence.
        sample_weight : array-like of shape (n_items,), default=None
            Weights of the items.

        Returns
        -------
        score : float
        """
        if _is_label_vector(y):
            return super().score(X, y, sample_weight=sample_weight)
        check_is_fitted(self)
        ratings = _as_ratings(X, y)
        per_item = _log_marginal(self._log_joint(self.estimator_, self.crowd_model_, X,
                                                 ratings))
        return float(np.average(per_item, weights=sample_weight))

    def _expected_failed_checks(self):
        """scikit-learn checks that do not apply, and why."""
        return {
            "check_supervised_y_2d": (
                "a y of shape (n, 1) is a ratings matrix of one rater, a valid input "
                "read as it is, so there is no DataConversionWarning; its predictions "
                "equal those of the 1-D y (tested in test_classifier.py)"),
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator if self.estimator is not None else LogisticRegression()
        inner_tags = inner.__sklearn_tags__()
        tags.input_tags = inner_tags.input_tags
        tags.target_tags.required = True
        # y is ratings (NaN: not rated), not a vector of classes
        tags.target_tags.single_output = True
        tags.classifier_tags.multi_class = True
        return tags


def _is_label_vector(y):
    """A 1-D y of labels (not ratings in a matrix, frame or Ratings)."""
    return input_form(y) == "matrix" and np.ndim(y) == 1


def _log_marginal(log_joint):
    """log p(ratings_i | x_i) per item (-inf when impossible).  A shifted
    log-sum-exp: scipy's costs as much as an E-step pass on 100k items."""
    top = np.max(log_joint, axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return shift + np.log(np.exp(log_joint - shift[:, None]).sum(axis=1))


def _posterior(log_joint, log_marginal, crowd, ratings):
    """The normalised joint; an item whose classifier puts probability 0 on
    every class its ratings allow (a tree's pure leaf against the raters)
    keeps the crowd model's posterior: the ratings outweigh a zero prior."""
    impossible = ~np.isfinite(log_marginal)
    posterior = np.exp(log_joint - np.where(impossible, 0.0, log_marginal)[:, None])
    if np.any(impossible):
        crowd_posterior = np.asarray(crowd.predict_proba(ratings[np.flatnonzero(impossible)]))
        posterior[impossible] = crowd_posterior
    return posterior


@validate_params(
    {
        "model": [HasMethods(["predict_proba"])],
        "X": ["array-like", "sparse matrix"],
        "ratings": "no_validation",
        "strategy": [StrOptions({"weights", "sample", "label"})],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def training_set(model, X, ratings, strategy="weights", random_state=None):
    """A training set for any classifier from a fitted crowd model.

    The "aggregate, then train" flow: the crowd model's posterior of each
    item (the rows of ``X``) becomes a label, a sampled label or a set of
    weighted labels, so that ``clf.fit(*training_set(model, X, ratings))``
    trains a classifier on the crowd's answer.

    Parameters
    ----------
    model : fitted skcrowd estimator
        Fitted on ``ratings`` (or on ratings of the same raters).
    X : array-like of shape (n_items, n_features)
        The items' features.
    ratings : ratings of the items of X
        In any form :meth:`CrowdClassifier.fit` takes.
    strategy : {"weights", "sample", "label"}, default="weights"
        ``"weights"``: each row once per class, weighted by its posterior
        (soft labels; the log loss of this set is the expected log loss
        under the posterior).  ``"sample"``: one label per item drawn from
        its posterior.  ``"label"``: the model's predicted label (with
        :class:`~skcrowd.MajorityVote`, the majority label).
    random_state : int, RandomState instance or None, default=None
        For ``"sample"``.

    Returns
    -------
    X_train : array-like of shape (n_train, n_features)
        Rows of ``X`` (``n_classes`` copies of each for ``"weights"``).
    y_train : ndarray of shape (n_train,)
    sample_weight : ndarray of shape (n_train,)
        The posteriors (``"weights"``), else ones.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcrowd import DawidSkene, training_set
    >>> from skcrowd.datasets import make_crowd_classification
    >>> data = make_crowd_classification(200, n_features=2, n_raters=6, random_state=0)
    >>> model = DawidSkene().fit(data.ratings)
    >>> X_train, y_train, weight = training_set(model, data.features, data.ratings)
    >>> X_train.shape, float(weight.sum())
    ((400, 2), 200.0)
    >>> clf = LogisticRegression().fit(X_train, y_train, sample_weight=weight)
    """
    check_is_fitted(model)
    aligned = _as_ratings(X, ratings)
    if strategy == "label":
        labels = np.asarray(model.predict(aligned))
        return X, labels, np.ones(len(labels))
    posterior = np.asarray(model.predict_proba(aligned), dtype=np.float64)
    classes = np.asarray(model.classes_)
    if strategy == "sample":
        labels = classes[draw_categorical(posterior, check_random_state(random_state))]
        return X, labels, np.ones(len(labels))
    return _replicate(X, posterior, classes)

