"""Dawid & Skene (1979): one confusion matrix per rater, fitted by MAP-EM."""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import (
    CrowdModel,
    apply_evidence,
    draw_categorical,
    has_gold,
    item_chunks,
    item_ids_of,
)
from ._backend import of as backend_of, on_workers
from ._item_random import item_dirichlet
from ._kernels import _dawid_skene as kernels
from ._kernels import _uncertainty as uncertainty_kernels
from ._mixins import OnlineEMMixin, PosteriorMixin, WarmStartMixin
from ._ratings import fixed_class_prior

__all__ = ["DawidSkene", "dawid_skene_prior_grid"]

# The (c, w) grid of the prior scan in doc/dawid_skene.rst, without the
# zero counts: a prior with no pseudo-count on a cell lets a held-out rating
# be impossible (a score of -inf), and the held-out search never chose one.
_GRID_CORRECT = (0.5, 1.0, 2.0, 4.0)
_GRID_WRONG = (0.1, 0.5, 1.0, 2.0)


def dawid_skene_prior_grid(n_classes, correct=_GRID_CORRECT, wrong=_GRID_WRONG):
    """Confusion priors as a ``param_grid`` for :class:`~sklearn.model_selection.GridSearchCV`.

    Each prior is c pseudo-answers on the diagonal of a confusion row
    (``prior_correct``) and a total of w on the wrong labels, split evenly
    over the K - 1 wrong cells (``prior_wrong = w / (K - 1)``), so its prior
    accuracy c / (c + w) is the same for any number of classes.  Choosing
    among them by held-out likelihood is the data-driven way to set
    DawidSkene's prior; :ref:`dawid-skene-prior-cv` has the measured
    choices and why the default is not chosen this way.  The split is for
    ``confusion="full"``: with ``"one_coin"`` ``prior_wrong`` is the Beta
    count of wrong answers, a total already, so search it directly.

    Parameters
    ----------
    n_classes : int
        The number of classes K (at least 2) of the data the search runs on.
    correct : float or sequence of float, default=(0.5, 1, 2, 4)
        The diagonal counts c to try, each >= 0.
    wrong : float or sequence of float, default=(0.1, 0.5, 1, 2)
        The wrong-answer totals w to try, each >= 0 (the default has no 0:
        with no pseudo-count on a cell a held-out rating can be impossible,
        a score of -inf).

    Returns
    -------
    param_grid : list of dict
        One dict per (c, w), each value a one-element list.

    Examples
    --------
    >>> from skcrowd import dawid_skene_prior_grid
    >>> grid = dawid_skene_prior_grid(5, correct=[4], wrong=[2])
    >>> grid
    [{'prior_correct': [4.0], 'prior_wrong': [0.5]}]
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, Integral) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2; got {n_classes!r}.")
    counts = {}
    for what, values in (("correct", correct), ("wrong", wrong)):
        values = np.asarray(values, dtype=object).ravel()
        if len(values) == 0 or not all(
                isinstance(v, Real) and not isinstance(v, bool) and 0 <= v < np.inf
                for v in values):
            raise ValueError(f"{what} must be one or more finite numbers >= 0; "
                             f"got {values.tolist()!r}.")
        counts[what] = [float(v) for v in values]
    return [{"prior_correct": [c], "prior_wrong": [w / (n_classes - 1)]}
            for c in counts["correct"] for w in counts["wrong"]]


class DawidSkene(PosteriorMixin, OnlineEMMixin, WarmStartMixin, CrowdModel):
    """Dawid–Skene model: a confusion matrix per rater, fitted by MAP-EM.

    Each item has a true class z_i ~ Cat(π); rater j reports label l for an
    item of class k with probability θ_j[k, l].  EM alternates the posterior
    over every z_i (E-step, one pass over the ratings by item) with
    closed-form MAP updates of π and θ (M-step, from expected confusion counts
    collected in one pass by rater).  Dirichlet priors keep a rater seen only
    a few times away from 0/1 confusion rows and make the cooperative mode
    (raters mostly right) preferred over label-permuted ones.

    Parameters
    ----------
    confusion : {"full", "one_coin"}, default="full"
        ``"full"``: a K x K confusion matrix per rater.  ``"one_coin"``: one
        accuracy per rater, errors uniform over the other classes.
    prior_correct : float, default=1.0
        Dirichlet pseudo-count (α - 1) on each diagonal confusion entry, i.e.
        prior correct answers per true class.  With ``"one_coin"``: the Beta
        pseudo-count of correct answers.
    prior_wrong : float, default=0.5
        Pseudo-count on each off-diagonal entry (``"one_coin"``: of wrong
        answers).
    prior_class : float, default=1.0
        Dirichlet pseudo-count on each class of the prior π.
    class_prior : array-like of shape (n_classes,), default=None
        Known class prevalence, held fixed; ``None`` learns it.
    classes : array-like, default=None
        All labels of the scale, sorted; default the labels seen in fit.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: score them with the population rater, the mean of the
        fitted confusion matrices weighted by each rater's number of ratings
        (the confusion of a randomly drawn rating's rater).
    init : {"majority", "random"}, default="majority"
        Start of the first restart: soft majority vote (each item's vote
        shares) or random posteriors.  Further restarts start at random.
    max_iter : int, default=100
    tol : float, default=1e-6
        Stop when the mean log posterior per item changes by less than this.
    n_init : int, default=1
        Restarts; the one with the highest log posterior is kept.
    random_state : int, RandomState instance or None, default=None
    warm_start : bool, default=False
        If True, each ``fit`` after the first starts from the fitted rater
        parameters, matched by rater id (raters not seen before start from
        the prior), as one run (``n_init`` is ignored).  See
        :ref:`warm-start`.
    verbose : int, default=0
    n_jobs : int, default=None
        Numba threads for the kernels (restored afterwards); results do not
        depend on it.
    accelerate : bool, default=True
        Extrapolate the EM sequence (SQUAREM, in log coordinates of θ and
        π; see :doc:`/acceleration`): the same optimum in fewer passes over
        the data.  ``False`` runs plain EM.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
        Prevalence π of each true class.
    confusion_ : ndarray of shape (n_raters, n_classes, n_classes)
        ``confusion_[j, k, l]`` = P(rater j says l | true class k).
    rater_accuracy_ : ndarray of shape (n_raters,)
        P(rater j is right) = Σ_k π_k θ_j[k, k].
    confusion_counts_ : ndarray of shape (n_raters, n_classes, n_classes) or None
        Expected number of ratings in which rater j gave label l to an item
        of true class k, at the final item posteriors; what
        ``fit(X, prior_params=this_model)`` adds to its prior (see
        :ref:`warm-start`).  None after ``partial_fit``; after a dask fit,
        summed on the workers (one more pass over the partitions).
    n_features_in_ : int
        Number of raters.
    rater_ids_ : ndarray of shape (n_raters,)
    n_iter_, converged_, lower_bound_, objective_history_
        Of the best restart; the objective is the log posterior divided by
        the number of items.

    See Also
    --------
    MajorityVote : the unweighted baseline.
    GLAD : rater ability times item difficulty.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd import DawidSkene
    >>> X = np.array([[0, 0, 1], [1, 1, 1], [0, np.nan, 0], [1, 0, 1]])
    >>> DawidSkene().fit_predict(X)
    array([0., 1., 0., 1.])
    """

    _supports_dask = True
    _rater_params = ("confusion",)
    _shared_params = ("class_prior",)
    _warm_params_complete = True
    _online_stats = ("confusion_counts", "class_counts")
    _online_rater_stats = ("confusion_counts",)

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        "confusion": [StrOptions({"full", "one_coin"})],
        "prior_correct": [Interval(Real, 0, None, closed="left")],
        "prior_wrong": [Interval(Real, 0, None, closed="left")],
        "prior_class": [Interval(Real, 0, None, closed="left")],
        "class_prior": ["array-like", None],
        "init": [StrOptions({"majority", "random"})],
    }

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "confusion_", "rater_accuracy_")
    #: (burn-in sweeps, sweeps per kept draw): the chain mixes slowly
    #: when raters are close to guessing; with thin=5 it covers at its nominal
    #: rates by simulation, with thin=1 it does not (doc/uncertainty.rst)
    _chain_defaults = (200, 5)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return gibbs_posterior(self, data, n_samples, n_burnin, thin, rng, keep_labels)

    def __init__(
        self,
        *,
        confusion="full",
        prior_correct=1.0,
        prior_wrong=0.5,
        prior_class=1.0,
        class_prior=None,
        classes=None,
        unknown_raters="error",
        init="majority",
        max_iter=100,
        tol=1e-6,
        n_init=1,
        random_state=None,
        warm_start=False,
        verbose=0,
        n_jobs=None,
        accelerate=True,
    ):
        self.confusion = confusion
        self.prior_correct = prior_correct
        self.prior_wrong = prior_wrong
        self.prior_class = prior_class
        self.class_prior = class_prior
        self.classes = classes
        self.unknown_raters = unknown_raters
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.accelerate = accelerate

    # -- the model's math -------------------------------------------------------
    def _pseudo_counts(self, n_classes):
        """Dirichlet α - 1 of a confusion row, as a K x K matrix."""
        counts = np.full((n_classes, n_classes), float(self.prior_wrong))
        np.fill_diagonal(counts, self.prior_correct)
        return counts

    def _fixed_prior(self, n_classes):
        if self.class_prior is None:
            return None
        return fixed_class_prior(self.class_prior, self.classes_)

    def _prepare(self, data, prior_params=None, prior_weight=1.0, **fit_params):
        data = super()._prepare(data, **fit_params)
        self._fixed_prior(data.n_classes)  # validate before any work
        # the fit's own prior counts (the encoded ratings are not written on)
        self._fit_earlier_counts = None
        if prior_params is not None:
            self._fit_earlier_counts = self._earlier_counts(data, prior_params, prior_weight)
        return data

    def _earlier_counts(self, data, earlier, weight):
        """"Shrink toward an earlier fit" (``fit(X, prior_params=earlier,
        prior_weight=w)``, see :ref:`warm-start`): the Dirichlet prior of
        rater j's confusion rows gains w times the expected confusion counts
        of the earlier fit, ``earlier.confusion_counts_[j]``, matched by
        rater id.  With w = 1 this is the Bayesian update of the rater
        parameters by the earlier job's ratings (its item posteriors held at
        their fitted values); w < 1 discounts them (raters change); raters
        the earlier fit has not seen keep the plain prior."""
        if on_workers(data):
            raise ValueError("prior_params is not supported with a dask DataFrame.")
        self._check_earlier_fit(earlier, "prior_params")
        if getattr(earlier, "confusion_counts_", None) is None:
            raise ValueError("prior_params needs a DawidSkene fitted with fit, not "
                             "partial_fit (its confusion_counts_ are None).")
        if isinstance(weight, bool) or not isinstance(weight, Real) \
                or not (0 <= weight < np.inf):
            raise ValueError(f"prior_weight must be a finite number >= 0; got {weight!r}.")
        self._check_earlier_classes(earlier.classes_, "prior_params")
        counts = np.zeros((data.n_raters, data.n_classes, data.n_classes))
        now, before = self._match_raters(earlier.rater_ids_)
        counts[now] = earlier.confusion_counts_[before]
        return float(weight) * counts

    def _prior_counts(self, data):
        """Dirichlet α - 1 of every rater's confusion rows: the constructor's
        pseudo-counts, plus an earlier fit's counts (``prior_params``)."""
        pseudo = self._pseudo_counts(data.n_classes)
        earlier = getattr(self, "_fit_earlier_counts", None)
        return pseudo if earlier is None else pseudo + earlier

    def _init_params(self, data, rng, restart):
        return self._start_from_counts(data, rng, restart)

    def _new_rater_params(self, data, params):
        """A rater not seen before starts at the prior's mode: its
        pseudo-counts, normalised (uniform rows without any)."""
        counts = np.broadcast_to(self._prior_counts(data), params["confusion"].shape)
        totals = counts.sum(axis=2, keepdims=True)
        rows = np.divide(counts, totals, out=np.full(counts.shape, 1.0 / data.n_classes),
                         where=totals > 0)
        return dict(params, confusion=rows)

    def _init_stats(self, data, seed):
        """Confusion and class counts of the starting item posteriors: the
        vote shares, or random ones from ``seed``.

        With gold, the majority start is a qualification test instead: the
        known items alone (every rater's answers on them, the prior
        elsewhere).  A majority start would let a crowd that mostly gets a
        class wrong outvote the gold, and EM would stay in that mode.
        """
        J, K = data.n_raters, data.n_classes
        if seed is None and has_gold(data):
            posterior = np.zeros((data.n_items, K))
        elif seed is None:
            # the vote shares go straight into the counts (one pass, no
            # posterior array)
            counts, class_counts = np.empty((J * K, K)), np.empty(K)
            item_ptr, cell = _unsigned_index(data)
            kernels.vote_share_counts(item_ptr, data.label, cell, K, counts, class_counts)
            # [rater, given, true] -> [rater, true, given]
            confusion = np.ascontiguousarray(counts.reshape(J, K, K).transpose(0, 2, 1))
            return {"confusion_counts": confusion, "class_counts": class_counts}
        else:
            posterior = item_dirichlet(item_ids_of(data), seed, data.n_classes)
        return self._stats(data, apply_evidence(posterior, data))

    def _stats(self, data, posterior):
        counts = np.empty((data.n_raters, data.n_classes, data.n_classes))
        kernels.confusion_counts(data.item, data.rater, data.label, posterior, counts)
        return {"confusion_counts": counts, "class_counts": posterior.sum(axis=0)}

    def _local_step(self, data, params):
        J, K = data.n_raters, data.n_classes
        chunk_ptr = item_chunks(data.n_items, J * K * K)
        n_chunks = len(chunk_ptr) - 1
        posterior = np.empty((data.n_items, K))
        loglik = np.empty(data.n_items)
        partial = np.empty((n_chunks, K, J * K))
        partial_class = np.empty((n_chunks, K))
        # [rater, true, given] -> rows true, columns (rater, given): the
        # kernel's layout, read through each rating's cell index.  Without
        # smoothing (prior_wrong=0) a confusion entry or a prevalence can be
        # 0: its log is -inf, an impossible answer, not a warning.
        with np.errstate(divide="ignore"):
            log_likelihood = np.log(params["confusion"]).transpose(1, 0, 2).reshape(K, J * K)
            log_prevalence = np.log(params["class_prior"])
        kernels.e_step.pick(data.n_ratings)(
            *_unsigned_index(data),
            log_prevalence,
            data.evidence,
            np.ascontiguousarray(log_likelihood),
            chunk_ptr,
            posterior,
            loglik,
            partial,
            partial_class,
        )
        items = {"proba": posterior, "loglik": loglik}
        # chunks summed in a fixed order
        counts = _cells_to_confusion(partial.sum(axis=0), J)
        # the counts at these posteriors, for confusion_counts_ (_set_fitted)
        items["confusion_counts"] = counts
        return items, {
            "confusion_counts": counts,
            "class_counts": partial_class.sum(axis=0),
            "loglik_total": float(loglik.sum()),
        }

    def _global_update(self, data, params, stats):
        """M-step: MAP π and θ given expected counts (closed form)."""
        K = data.n_classes
        counts = stats["confusion_counts"]
        if self.confusion == "full":
            rows = counts + self._prior_counts(data)
            totals = rows.sum(axis=2, keepdims=True)
            # A rater without ratings and without prior mass: uniform rows.
            confusion = np.divide(rows, totals, out=np.full_like(rows, 1.0 / K),
                                  where=totals > 0)
        else:
            correct_prior, wrong_prior = self._one_coin_prior(data)
            correct = np.trace(counts, axis1=1, axis2=2) + correct_prior
            total = counts.sum(axis=(1, 2)) + correct_prior + wrong_prior
            accuracy = np.divide(correct, total, out=np.full_like(correct, 1.0 / K),
                                 where=total > 0)
            confusion = _one_coin(accuracy, K)
        prior = self._fixed_prior(K)
        if prior is None:
            prior = stats["class_counts"] + self.prior_class
            prior = prior / prior.sum()
        return {"class_prior": prior, "confusion": confusion}

    def _params_to_vector(self, params):
        """log θ (``"one_coin"``: logit accuracy) and log π when it is
        learned: extrapolated there, mapped back to the simplex by
        normalising (softmax coordinates)."""
        with np.errstate(divide="ignore"):
            if self.confusion == "full":
                parts = [np.log(params["confusion"]).ravel()]
            else:
                accuracy = params["confusion"][:, 0, 0]
                parts = [np.log(accuracy) - np.log1p(-accuracy)]
            if self.class_prior is None:
                parts.append(np.log(params["class_prior"]))
        return np.concatenate(parts)

    def _params_from_vector(self, vector, params):
        J, K = params["confusion"].shape[:2]
        n = J * K * K if self.confusion == "full" else J
        if self.confusion == "full":
            confusion = _softmax(vector[:n].reshape(J, K, K))
        else:
            confusion = _one_coin(expit(vector[:n]), K)
        prior = _softmax(vector[n:]) if self.class_prior is None else params["class_prior"]
        return {"class_prior": prior, "confusion": confusion}

    def _one_coin_prior(self, data):
        """Beta α - 1 of each rater's accuracy (``"one_coin"``): correct and
        wrong answers, plus an earlier fit's (``prior_params``)."""
        correct, wrong = float(self.prior_correct), float(self.prior_wrong)
        earlier = getattr(self, "_fit_earlier_counts", None)
        if earlier is None:
            return correct, wrong
        right = np.trace(earlier, axis1=1, axis2=2)
        return correct + right, wrong + earlier.sum(axis=(1, 2)) - right

    def _log_prior(self, params, data):
        """log p(π, θ) up to a constant (the Dirichlet/Beta kernels)."""
        # invalid: 0 * log 0 in the cells without a pseudo-count, which
        # np.where then drops
        with np.errstate(divide="ignore", invalid="ignore"):
            log_theta = np.log(params["confusion"])
            if self.confusion == "full":
                pseudo = np.broadcast_to(self._prior_counts(data), log_theta.shape)
                value = np.sum(np.where(pseudo > 0, pseudo * log_theta, 0.0))
            else:
                accuracy = params["confusion"][:, 0, 0]
                correct, wrong = self._one_coin_prior(data)
                value = np.sum(_xlogy(correct, accuracy) + _xlogy(wrong, 1 - accuracy))
            if self.class_prior is None:
                value += np.sum(_xlogy(self.prior_class, params["class_prior"]))
        return value

    def _objective(self, data, params, items, stats):
        """Mean log posterior per item: log p(X | π, θ) + log p(π, θ)."""
        total = stats["loglik_total"] + self._log_prior(params, data)
        return total / data.n_items

    # -- result tables and new raters (the base class uses these) ------------------
    _rater_attributes = ("confusion_", "rater_accuracy_")

    def _rater_diagnostics(self):
        recall = np.diagonal(self.confusion_, axis1=1, axis2=2)
        return {"accuracy": self.rater_accuracy_,
                **{f"recall_{c}": recall[:, k] for k, c in enumerate(self.classes_)}}

    def _set_fitted(self, data, params, items):
        self.class_prior_ = params["class_prior"]
        self.confusion_ = params["confusion"]
        diag = np.diagonal(self.confusion_, axis1=1, axis2=2)
        self.rater_accuracy_ = diag @ self.class_prior_
        # the expected counts at the final item posteriors (known items at
        # their class): what a later fit's prior_params adds to its prior
        self.confusion_counts_ = None
        if items is not None:
            # the final local step's (made in the same pass as its posteriors)
            self.confusion_counts_ = items["confusion_counts"].copy()
        elif on_workers(data):
            # the items' posteriors stay on the workers: their counts are a
            # local step's statistics, one more pass at the final parameters
            stats = backend_of(data).local_step(self, data, params)[1]
            self.confusion_counts_ = stats["confusion_counts"]

    def _fitted_params(self):
        return {"class_prior": self.class_prior_, "confusion": self.confusion_}

    def _sample_labels(self, data, rng):
        true_class = rng.choice(data.n_classes, size=data.n_items, p=self.class_prior_)
        rows = self.confusion_[data.rater, true_class[data.item]]
        return draw_categorical(rows, rng)


def _unsigned_index(data):
    """``item_ptr`` and ``cell`` as the unsigned views the kernels index with
    (no negative-index wraparound in their inner loops)."""
    return (np.asarray(data.item_ptr, dtype=np.int64).view(np.uint64),
            data.cell.view(np.uint32))


def _cells_to_confusion(counts, n_raters):
    """Counts laid out as the kernels' tables, ``(true, rater * n_classes +
    given)``, as ``[rater, true, given]``."""
    n_classes = counts.shape[0]
    return np.ascontiguousarray(
        counts.reshape(n_classes, n_raters, n_classes).transpose(1, 0, 2))


def _one_coin(accuracy, n_classes):
    """Confusion matrices of one accuracy per rater, errors uniform."""
    wrong = (1 - accuracy) / max(n_classes - 1, 1)
    confusion = np.repeat(np.repeat(wrong[:, None, None], n_classes, axis=1), n_classes, axis=2)
    idx = np.arange(n_classes)
    confusion[:, idx, idx] = accuracy[:, None]
    return confusion


def _softmax(logits):
    """Normalise log probabilities over the last axis (-inf stays 0)."""
    top = np.max(logits, axis=-1, keepdims=True)
    e = np.exp(logits - top)
    return e / e.sum(axis=-1, keepdims=True)


def _xlogy(x, y):
    return np.where(x == 0, 0.0, x * np.log(np.where(x == 0, 1.0, y)))



def _refit_raters(model, data, posterior):
    """Dawid & Skene's (1979) M-step from given item posteriors, in place.

    ``model`` is a fitted :class:`DawidSkene`, ``data`` its encoding of the
    training ratings (``model._encode(ratings, reset=False)``) and
    ``posterior`` the ``(n_items, n_classes)`` posteriors of those items,
    wherever they come from: :class:`~skcrowd.CrowdClassifier` passes the
    posteriors under its classifier's per-item prior (Raykar et al. 2010).
    The confusion matrices (and π) become the MAP estimates from the
    expected confusion counts at ``posterior``, as in the fit's own M-step.
    """
    stats = model._stats(data, posterior)
    params = model._global_update(data, model._fitted_params(), stats)
    model._set_fitted(data, params, {"confusion_counts": stats["confusion_counts"]})
    return model


# -- the posterior sampler (skcrowd.uncertainty) ------------------------------------
def gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Gibbs sampling of DawidSkene's posterior p(π, θ, z | X).

    The model's priors are Dirichlet with pseudo-counts α - 1 (that is what
    MAP-EM's M-step adds), so given the true classes z the posterior of
    each confusion row θ_{j,k} is Dirichlet(counts + pseudo + 1) and that
    of π is Dirichlet(class counts + prior_class + 1) (Dawid & Skene 1979's
    complete-data likelihood); given (π, θ) the items' classes are
    independent, each from its E-step posterior.  The chain starts at the
    MAP, inside the mode the fit chose, so it does not wander to a
    label-permuted mode.  Returns the draws, the running sum of the item
    posteriors given each draw (Rao-Blackwellised integrated
    probabilities) and, with ``keep_labels``, the classes z drawn jointly.
    """
    J, K, n = data.n_raters, data.n_classes, data.n_items
    item_ptr = np.asarray(data.item_ptr, dtype=np.int64)
    rater, label = data.rater, data.label
    one_coin = model.confusion == "one_coin"
    pseudo = model._pseudo_counts(K)
    fixed = model.class_prior is not None
    theta = np.array(model.confusion_, dtype=np.float64)
    pi = np.array(model.class_prior_, dtype=np.float64)
    # known items (gold y) hold their class, which a relabelling would not
    can_relabel = not one_coin and not fixed and K > 1 and not has_gold(data)
    confusion, prior, labels = [], [], []
    proba_sum = np.zeros((n, K))
    z, post = np.empty(n, dtype=np.int64), np.empty((n, K))
    counts, class_counts = np.empty((J, K, K)), np.empty(K)
    for sweep in range(n_burnin + n_samples * thin):
        # z | π, θ: every item's E-step posterior, its class drawn from it,
        # and the counts of the drawn classes (one pass over the ratings)
        with np.errstate(divide="ignore"):
            log_theta, log_pi = np.log(theta), np.log(pi)
        uncertainty_kernels.dawid_skene_sweep(item_ptr, rater, label, log_theta, log_pi,
                                              data.evidence, rng.random(n), z, post, counts,
                                              class_counts)
        # θ, π | z: conjugate Dirichlet (Beta for one coin) draws
        if one_coin:
            right = np.trace(counts, axis1=1, axis2=2)
            wrong = counts.sum(axis=(1, 2)) - right
            accuracy = rng.beta(right + model.prior_correct + 1, wrong + model.prior_wrong + 1)
            off = (1 - accuracy) / max(K - 1, 1)
            theta = np.repeat(np.repeat(off[:, None, None], K, 1), K, 2)
            theta[:, np.arange(K), np.arange(K)] = accuracy[:, None]
        else:
            theta = rng.standard_gamma(counts + pseudo + 1.0)
            theta /= theta.sum(axis=2, keepdims=True)
        if not fixed:
            pi = rng.standard_gamma(class_counts + model.prior_class + 1.0)
            pi /= pi.sum()
        if can_relabel:
            # Relabelling the true classes (two confusion rows, two
            # prevalences and the items' classes swapped together) leaves
            # the likelihood unchanged, so the Metropolis ratio of the swap
            # is the prior ratio.  With many raters the prior makes the
            # permuted mode negligible and the swap is never taken; with
            # few, the posterior has both modes and the chain visits both.
            a, b = rng.choice(K, size=2, replace=False)
            swapped = theta.copy()
            swapped[:, [a, b]] = theta[:, [b, a]]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.sum(np.where(pseudo > 0, pseudo * (np.log(swapped) - np.log(theta)),
                                        0.0))
            if np.log(rng.random()) < ratio:
                theta = swapped
                pi = pi.copy()
                pi[[a, b]] = pi[[b, a]]
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            confusion.append(theta)
            prior.append(pi)
            proba_sum += post
            if keep_labels:
                labels.append(z.astype(np.int32))
    confusion, prior = np.stack(confusion), np.stack(prior)
    samples = {
        "class_prior_": prior,
        "confusion_": confusion,
        "rater_accuracy_": np.einsum("sjkk,sk->sj", confusion, prior),
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
