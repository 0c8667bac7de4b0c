"""IRT3PL: Carpenter's item-difficulty rating model and its reduction lattice,
fitted by marginal maximum likelihood (Carpenter 2024, "Crowdsourcing with
Difficulty").

For item i with true class z_i ~ Bernoulli(π) and rater j, the probability
that the rating is correct (equals z_i) is

    λ_i + (1 - λ_i) σ(δ_i (α^k_j - β_i)),   k = sens if z_i = 1, spec if z_i = 0,

Carpenter's IRT-3PL rating model (its "Generating ratings" equations; the
reduced z = 0 formula printed there has a typo: it is α^spec).  The item
effects (β_i, log δ_i, logit λ_i) are random effects with a normal
population distribution whose scales are estimated; they and z_i are
integrated out per item on a tensor Gauss–Hermite grid (Bock–Aitkin EM with
the roles of IRT swapped).  Raters and π are MAP under Carpenter's priors,
one Newton step per rater per iteration.
"""

import warnings
import weakref
from functools import lru_cache
from numbers import Integral

import numpy as np
from scipy.special import expit, log_expit, logit
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import CrowdModel, fit_encoded
from ._backend import on_workers
from ._kernels import _irt as kernels
from ._kernels import _uncertainty as uncertainty_kernels
from ._kernels._common import dot
from ._kernels._config import use_numpy
from ._mixins import PosteriorMixin, WarmStartMixin

__all__ = ["IRT3PL", "lattice", "lattice_grid"]

#: Derived from each encoded ratings object while it lives (it is never
#: written on): its rating patterns (:func:`_patterns`) and, for ``sample``,
#: the fitted model's node tables.
_PATTERNS = weakref.WeakKeyDictionary()
_SAMPLE_TABLES = weakref.WeakKeyDictionary()

#: The five reductions of Carpenter's lattice, tag letter -> (flag, value when reduced).
REDUCTIONS = {
    "a": ("guessing", False),
    "b": ("discrimination", False),
    "c": ("difficulty", False),
    "d": ("sens_spec", False),
    "e": ("rater_effects", False),
}

#: The 18 models of Carpenter's tables (its order of the caries table).
LATTICE_TAGS = (
    "abcde", "abcd", "abce", "abde", "abc", "abd", "acd", "bcd", "ab",
    "ac", "ad", "bc", "bd", "cd", "a", "c", "d", "full",
)

# Carpenter's priors (the stan/*.stan models of the paper's repository).
ALPHA_SENS_PRIOR = (1.0, 2.0)  # alpha_sens ~ normal(1, 2)
ALPHA_SPEC_PRIOR = (2.0, 2.0)  # alpha_spec ~ normal(2, 2)
ALPHA_ACC_PRIOR = (1.0, 2.0)  # alpha_acc ~ normal(1, 2)  (models with D)
# Item population at Carpenter's priors: beta ~ normal(0, 1),
# delta ~ lognormal(0, 0.25), lambda ~ beta(2, 2) matched by a logit-normal
# with the same mean and log-odds variance (2 psi'(2) = 1.2899).
PAPER_ITEM_PRIOR = {
    "difficulty_scale": 1.0,
    "discrimination_scale": 0.25,
    "guessing_mean": 0.0,
    "guessing_scale": float(np.sqrt(2 * (np.pi**2 / 6 - 1))),
}
# Bounds of the item-population hyperparameters (log scales, guessing mean).
HYPER_BOUNDS = {
    "difficulty_scale": (np.log(0.05), np.log(10.0)),
    "discrimination_scale": (np.log(0.02), np.log(3.0)),
    "guessing_mean": (-8.0, 4.0),
    "guessing_scale": (np.log(0.05), np.log(5.0)),
}
DS_START_GUESSING_MEAN = float(np.log(0.05 / 0.95))
HYPER_PRIOR_SD = 1.0  # weak N(paper's value, 1) on each log scale and on the mean
#: The population hyperparameters of each item-effect dimension.
HYPER_OF_DIM = {
    "difficulty": ("difficulty_scale",),
    "discrimination": ("discrimination_scale",),
    "guessing": ("guessing_mean", "guessing_scale"),
}
# Gauss–Hermite nodes per item-effect dimension when n_quadrature is None.
# Difficulty needs the most: with σ_β = 3 an item's likelihood in β is about
# one logit wide, and 9 uniform nodes (the former default) put 2-3 logits
# between nodes, which cost 2e-3 of the log likelihood and biased σ_β and
# the abilities; 21 x 5 x 7 is within 5e-6 of a 41 x 15 x 15 grid on the
# cases of doc/irt.rst at the cost of the old 9 x 9 x 9.  A wide guessing
# population (σ_λ ≈ 2) would want more guessing nodes (7 leave ~5e-4 there;
# on two fits 15 nodes moved the abilities' errors by at most 0.013 at 2-4
# times the cost), so 7 keeps the cost.
DEFAULT_NODES = {"difficulty": 21, "discrimination": 5, "guessing": 7}
CHUNK_BUDGET = 16_000_000  # doubles of expected counts held at once
# (rating, node) terms above which the local step and the restarts are threaded
PARALLEL_WORK = 2_000_000
#: below this many (rating, node) terms per local step (pattern ratings x
#: 2 x nodes; RTE 11.8 M at the default grid) a fit runs the numpy twins of
#: its kernels, all of them for the whole fit: it never waits for numba's
#: compiler (16 s CPU on RTE).  The twins cost about 1.5 times the compiled
#: kernels' CPU (doc/first_run.rst), so with a warm cache a fit at the limit
#: loses under a second; above it the compiled kernels pay.
NUMPY_MAX_WORK = 16_000_000


def _tag_params(tag):
    tag = str(tag).lower()
    params = {flag: True for flag, _ in REDUCTIONS.values()}
    if tag == "full":
        return params
    if not tag or any(c not in REDUCTIONS for c in tag) or len(set(tag)) != len(tag):
        raise ValueError(
            f"Unknown lattice tag {tag!r}: use 'full' or distinct letters from "
            "'abcde' (a: no guessing, b: no discrimination, c: no difficulty, "
            "d: sensitivity = specificity, e: one set of rater parameters)."
        )
    for c in tag:
        flag, value = REDUCTIONS[c]
        params[flag] = value
    return params


def lattice():
    """The 18 models of Carpenter's tables (Crowdsourcing with Difficulty)
    as ``(tag, params)`` pairs.

    ``params`` is a dict of the five reduction flags, so that
    ``IRT3PL(**params)`` is the model of that tag.

    Examples
    --------
    >>> from skcrowd import IRT3PL, lattice
    >>> tags = [tag for tag, _ in lattice()]
    >>> len(tags), tags[-1]
    (18, 'full')
    """
    for tag in LATTICE_TAGS:
        yield tag, _tag_params(tag)


def lattice_grid(tags=None):
    """The lattice as a ``param_grid`` for :class:`~sklearn.model_selection.GridSearchCV`.

    One dict per model, each value a one-element list, so that the grid
    holds exactly Carpenter's 18 models (not all 32 flag combinations).

    Parameters
    ----------
    tags : list of str, default=None
        The models to include, by tag (``"full"``, ``"ab"``, ...); default:
        all 18.

    Returns
    -------
    param_grid : list of dict

    Examples
    --------
    >>> from skcrowd import lattice_grid
    >>> grid = lattice_grid(["ab", "full"])
    >>> len(grid), grid[0]["guessing"], grid[0]["discrimination"]
    (2, [False], [False])
    """
    chosen = LATTICE_TAGS if tags is None else tags
    return [{k: [v] for k, v in _tag_params(t).items()} for t in chosen]


class IRT3PL(PosteriorMixin, WarmStartMixin, CrowdModel):
    """Item-difficulty rating model (IRT 3PL with sensitivity/specificity).

    Binary ratings only.  Rater j has log-odds sensitivity α^sens_j and
    specificity α^spec_j, kept above the spam line α^sens + α^spec > 0 by
    reparametrisation; item i has a difficulty β_i, a discrimination δ_i > 0
    and a guessing probability λ_i (Carpenter 2024, "Crowdsourcing with
    Difficulty").  The five flags switch off that paper's
    reductions A–E; :meth:`from_tag` builds a model from its tag and
    :func:`lattice` lists its 18 models.

    Item effects are random: β ~ N(0, σ_β²), log δ ~ N(0, σ_δ²),
    logit λ ~ N(μ_λ, σ_λ²), starting at the paper's priors and estimated
    unless ``learn_item_prior=False``.  Per item, z and the item effects are
    integrated out on a tensor Gauss–Hermite grid, so ``score_samples`` is
    the marginal likelihood up to quadrature.  Items with identical rating
    patterns are integrated once.

    Parameters
    ----------
    guessing : bool, default=True
        Item guessing λ_i (False: reduction A, λ = 0).
    discrimination : bool, default=True
        Item discrimination δ_i (False: reduction B, δ = 1).
    difficulty : bool, default=True
        Item difficulty β_i (False: reduction C, β = 0).
    sens_spec : bool, default=True
        Separate sensitivity and specificity (False: reduction D, one
        accuracy α_j per rater with α_j > 0).
    rater_effects : bool, default=True
        Rater-specific parameters (False: reduction E, one set shared by
        every rater).  With neither rater effects nor sens/spec but with
        difficulty (Carpenter's ABDE) the accuracy is not identified apart
        from the difficulty; as in the paper, α = 0 and π = 1 are pinned.
    learn_item_prior : bool, default=True
        Estimate the item-population scales (and the guessing mean) by
        marginal ML under weak N(paper's value, 1) hyperpriors on their logs;
        False holds them at the paper's priors.
    n_quadrature : int, default=None
        Gauss–Hermite nodes in every active item-effect dimension (the grid
        has ``n_quadrature ** n_dims`` nodes).  None uses 21 difficulty, 5
        discrimination and 7 guessing nodes (735 for the full model): the
        likelihood of one item's ratings is narrow in β when the difficulty
        population is wide, while δ and λ enter smoothly.
    classes : array-like of shape (2,), default=None
        The two labels; ``classes_[1]`` is the positive class.
    unknown_raters : {"error", "prior"}, default="error"
        Raters not seen in fit, at predict time: an error (naming the rater), or
        ``"prior"``: score them with the population abilities, the means of
        the fitted α^sens_j and α^spec_j (log-odds) weighted by each rater's
        number of ratings.
    max_iter : int, default=500
    tol : float, default=1e-6
        Stop when the marginal log posterior per item changes by less.
    init : {"seed", "dawid_skene"}, default="seed"
        Start of the first restart: ``"seed"``, the prior means of Carpenter's
        paper (α^sens = 1, α^spec = 2, π = 0.5, item population at its
        priors), or a Dawid–Skene fit (with a low guessing population when it
        is learned).
        The second restart uses the other start.
    n_init : int, default=2
        Restarts; after the two starts above, further restarts perturb the
        prior means at random.  The highest marginal log posterior is kept.
    random_state : int, RandomState instance or None, default=None
    warm_start : bool, default=False
        If True, each ``fit`` after the first starts from the fitted rater
        parameters, matched by rater id (raters not seen before start as in
        a cold fit), as one run (``n_init`` is ignored).  See
        :ref:`warm-start`.
    verbose : int, default=0
    n_jobs : int, default=None
        Numba threads; results do not depend on it.
    accelerate : bool, default=True
        Extrapolate the rater parameters, π and the item-population
        hyperparameters in their unconstrained coordinates by SQUAREM (see
        :doc:`/acceleration`): the same optimum in fewer passes over the
        data.  ``False`` runs plain EM.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    class_prior_ : ndarray of shape (2,)
    alpha_sens_, alpha_spec_ : ndarray of shape (n_raters,)
        Log-odds sensitivity and specificity.
    sensitivity_, specificity_ : ndarray of shape (n_raters,)
        Probability scale at β = 0, δ = 1, λ = 0.
    item_difficulty_, item_discrimination_, item_guessing_ : ndarray of shape (n_items,)
        Posterior means for the training items (0, 1, 0 when switched off);
        None after a fit on a dask DataFrame, whose items stay on the workers.
    item_prior_ : dict
        The item-population hyperparameters of the active item effects.
    n_features_in_, rater_ids_, n_iter_, converged_, lower_bound_, objective_history_
        The objective is the quadrature marginal log posterior per item.

    See Also
    --------
    DawidSkene : the ABC model, fitted by EM on the confusion matrices.
    skcrowd.checks.posterior_predictive_check : the paper's model checks.

    Examples
    --------
    >>> from skcrowd import IRT3PL
    >>> from skcrowd.datasets import make_irt
    >>> data = make_irt(n_items=300, n_raters=5, ratings_per_item=5, random_state=0)
    >>> model = IRT3PL.from_tag("ab", random_state=0).fit(data.ratings)
    >>> model.predict_proba(data.ratings).shape
    (300, 2)
    """

    _parameter_constraints: dict = {
        **CrowdModel._parameter_constraints,
        "guessing": ["boolean"],
        "discrimination": ["boolean"],
        "difficulty": ["boolean"],
        "sens_spec": ["boolean"],
        "rater_effects": ["boolean"],
        "learn_item_prior": ["boolean"],
        "n_quadrature": [Interval(Integral, 1, 60, closed="both"), None],
        "init": [StrOptions({"seed", "dawid_skene"})],
    }

    # -- posterior sampling (skcrowd.uncertainty) --------------------------
    #: what a posterior draw replaces
    _posterior_attributes = ("class_prior_", "alpha_sens_", "alpha_spec_", "sensitivity_",
                             "specificity_", "item_prior_")
    #: (burn-in sweeps, sweeps per kept draw): the abilities move
    #: by Metropolis given every item's class and grid node; their intervals
    #: cover 85-87% at 90% with thin=1, nominally with thin=5
    _chain_defaults = (100, 5)

    def _posterior_chain(self, data, n_samples, n_burnin, thin, rng, keep_labels):
        return gibbs_posterior(self, data, n_samples, n_burnin, thin, rng, keep_labels)

    _min_classes = 2
    #: classes_[1] is the positive class: an unsorted classes= is refused
    _positive_class_is_last = True
    _supports_dask = True
    _rater_params = ("alpha_sens", "alpha_spec")
    _shared_params = ("prior", "hyper")
    _warm_params_complete = True

    def __init__(
        self,
        *,
        guessing=True,
        discrimination=True,
        difficulty=True,
        sens_spec=True,
        rater_effects=True,
        learn_item_prior=True,
        n_quadrature=None,
        classes=None,
        unknown_raters="error",
        init="seed",
        max_iter=500,
        tol=1e-6,
        n_init=2,
        random_state=None,
        warm_start=False,
        verbose=0,
        n_jobs=None,
        accelerate=True,
    ):
        self.guessing = guessing
        self.discrimination = discrimination
        self.difficulty = difficulty
        self.sens_spec = sens_spec
        self.rater_effects = rater_effects
        self.learn_item_prior = learn_item_prior
        self.n_quadrature = n_quadrature
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

    @classmethod
    def from_tag(cls, tag, **params):
        """The model of a tag of Carpenter's lattice ("full", "a", "ab", ...,
        "abcde").

        Further keyword arguments are passed to the constructor.
        """
        return cls(**_tag_params(tag), **params)

    @property
    def tag(self):
        """Carpenter's lattice tag of this configuration ("full" when nothing is reduced)."""
        letters = "".join(c for c, (flag, _) in REDUCTIONS.items() if not getattr(self, flag))
        return letters or "full"

    # -- configuration --------------------------------------------------------
    def _dims(self):
        """Active item-effect dimensions, in the order of the node grid."""
        dims = []
        if self.difficulty:
            dims.append("difficulty")
        if self.discrimination:
            dims.append("discrimination")
        if self.guessing:
            dims.append("guessing")
        return dims

    def _rater_mode(self):
        """'sens_spec' (two log-odds), 'one' (one accuracy > 0) or 'none'."""
        if self.sens_spec:
            return "sens_spec"
        if not self.rater_effects and self.difficulty:
            return "none"  # Carpenter's ABDE: alpha = 0, pi = 1
        return "one"

    def _rater_layout(self):
        """What the rater parameters mean: the rater mode and whether they
        are per rater (``rater_effects``) or one shared pair."""
        return self._rater_mode(), bool(self.rater_effects)

    def _hyper_names(self):
        """Item-population hyperparameters of the active dimensions, in grid order."""
        return [name for dim in self._dims() for name in HYPER_OF_DIM[dim]]

    def _grid(self):
        """Standard-normal tensor grid: ``(nodes (M, n_dims), log weights (M,))``."""
        if self.n_quadrature is not None:
            counts = (self.n_quadrature,) * len(self._dims())
        else:
            counts = tuple(DEFAULT_NODES[dim] for dim in self._dims())
        return _tensor_grid(counts)

    def _node_values(self, grid, hyper):
        """Item effects at the nodes: b, d, log λ, log(1-λ) (each (M,))."""
        nodes, _ = grid
        M = nodes.shape[0]
        b = np.zeros(M)
        d = np.ones(M)
        log_guess = np.full(M, -np.inf)
        log_noguess = np.zeros(M)
        col = 0
        if self.difficulty:
            b = hyper["difficulty_scale"] * nodes[:, col]
            col += 1
        if self.discrimination:
            d = np.exp(hyper["discrimination_scale"] * nodes[:, col])
            col += 1
        if self.guessing:
            t = hyper["guessing_mean"] + hyper["guessing_scale"] * nodes[:, col]
            log_guess = log_expit(t)
            log_noguess = log_expit(-t)
        return b, d, log_guess, log_noguess

    # -- data -----------------------------------------------------------------
    def _prepare(self, data, **fit_params):
        data = super()._prepare(data, **fit_params)
        _check_binary(data)
        return data

    # -- the model's math -----------------------------------------------------
    def _init_params(self, data, rng, restart):
        J = data.n_raters
        hyper = dict(PAPER_ITEM_PRIOR)
        mode = self._rater_mode()
        sens = np.full(J, ALPHA_SENS_PRIOR[0])
        spec = np.full(J, ALPHA_SPEC_PRIOR[0])
        prior = 0.5
        if mode == "one":
            sens[:] = spec[:] = ALPHA_ACC_PRIOR[0]
        # Restarts 0 and 1 are the two reliable starts, ``init`` first.
        start = restart
        if restart < 2 and self.init == "dawid_skene":
            start = 1 - restart
        if start == 1:
            sens, spec, prior = self._dawid_skene_start(data, mode)
            # Dawid–Skene has no guessing: start the guessing population low
            # (mean λ ≈ 0.05) rather than at the paper's Beta(2, 2) (mean 0.5).
            # With learn_item_prior=False the population stays at the paper's.
            if self.learn_item_prior:
                hyper["guessing_mean"] = DS_START_GUESSING_MEAN
        elif start >= 2:
            sens = sens + rng.normal(0, 1, J)
            spec = spec + rng.normal(0, 1, J)
            if mode == "one":
                spec = sens = np.abs(sens) + 0.1
            prior = rng.uniform(0.2, 0.8)
        if mode == "none":
            sens = np.zeros(J)
            spec = np.zeros(J)
        # Shared parameters when raters are identical (reduction E).
        if not self.rater_effects:
            sens = np.full(J, sens.mean())
            spec = np.full(J, spec.mean())
        if mode == "none":
            prior = 1.0
        else:
            bad = sens + spec <= 0
            sens[bad], spec[bad] = ALPHA_SENS_PRIOR[0], ALPHA_SPEC_PRIOR[0]
        # One path for the whole fit, read by every step (see _numpy_path).
        return {"alpha_sens": sens, "alpha_spec": spec, "prior": float(prior), "hyper": hyper,
                "numpy": self._numpy_path(data)}

    def _snapshot(self, source):
        start = super()._snapshot(source)
        start["rater_layout"] = getattr(source, "_fitted_rater_layout", None)
        return start

    def _warm_params(self, data, rng, start):
        # Rater parameters fitted under another mode or layout mean something
        # else (sens_spec=True's two log-odds are not mode "one"'s single
        # accuracy α > 0, where sens = spec; per-rater values are not the
        # shared pair of rater_effects=False): carried over, log(α) of a
        # negative α made the refit NaN and stop after one pass.  Such a
        # start takes the cold start's raters and π; the item population
        # carries over.
        params = super()._warm_params(data, rng, start)
        earlier = start.get("rater_layout")
        if earlier is not None and earlier != self._rater_layout():
            cold = self._init_params(data, rng, 0)
            for name in (*self._rater_params, "prior"):
                params[name] = cold[name]
        return params

    def _warm_extra_params(self, data):
        # the path choice, as the cold start makes it: a warm start that
        # knows every rater needs no Dawid-Skene fit for its start
        return {"numpy": self._numpy_path(data)}

    def _dawid_skene_start(self, data, mode):
        from ._dawid_skene import DawidSkene

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ds = fit_encoded(DawidSkene(max_iter=50, tol=1e-6), data)
        sens = logit(np.clip(ds.confusion_[:, 1, 1], 0.02, 0.98))
        spec = logit(np.clip(ds.confusion_[:, 0, 0], 0.02, 0.98))
        if mode == "one":
            sens = spec = np.maximum(0.5 * (sens + spec), 0.1)
        return sens, spec, float(np.clip(ds.class_prior_[1], 0.01, 0.99))

    def _log_class_prior(self, prior):
        """log (π_0, π_1), repeated over the M nodes of each class."""
        with np.errstate(divide="ignore"):
            return np.log(np.array([1.0 - prior, prior]))

    def _numpy_path(self, data, params=None):
        """Whether a fit (``params`` from its start, which carry the choice)
        or a prediction on ``data`` runs the kernels' numpy twins: below
        :data:`NUMPY_MAX_WORK` terms of the local step.  A fit on a cluster
        runs them compiled (its partitions would each decide otherwise)."""
        if params is not None and "numpy" in params:
            return params["numpy"]
        if on_workers(data):
            return use_numpy(np.inf, NUMPY_MAX_WORK)
        M = len(self._grid()[1])
        return use_numpy(len(_patterns(data)["rater"]) * 2 * M, NUMPY_MAX_WORK)

    def _variant(self, data, params):
        """What the kernels of a step run: "numpy", or whether the compiled
        ones may be parallel (see :func:`_pick`)."""
        if self._numpy_path(data, params):
            return "numpy"
        return bool(params.get("parallel", True))

    def _local_step(self, data, params):
        parallel = self._variant(data, params)
        pat = _patterns(data)
        grid = self._grid()
        b, d, log_guess, log_noguess = self._node_values(grid, params["hyper"])
        M = len(b)
        J = data.n_raters
        # Known items carry one more rating, by a perfect "gold rater" J
        # (see _patterns): 0 for its label's class, -inf for the other, the
        # per-item evidence of the gold clamp as a table row.
        gold_rows = int(data.gold is not None)
        table = np.empty((J + gold_rows, 2, 2 * M))
        tabled = _terms_at(params)
        if tabled is not None:
            # the global update's accepted terms are at exactly these
            # parameters (one row per group: a shared row without rater effects)
            table[:J] = tabled["table"]
        else:
            _pick(kernels.rating_log_table, table.size, parallel)(
                params["alpha_sens"], params["alpha_spec"], b, d, log_guess, log_noguess,
                table[:J])
        if gold_rows:
            table[J] = -np.inf
            table[J, 0, :M] = table[J, 1, M:] = 0.0
        log_class = self._log_class_prior(params["prior"])
        log_prior = np.concatenate([log_class[0] + grid[1], log_class[1] + grid[1]])
        P = pat["n_patterns"]
        n_chunks = int(max(1, min(8, P, CHUNK_BUDGET // max(1, data.n_raters * 4 * M))))
        if parallel == "numpy":
            n_chunks = 1  # chunks are for threads; the twin sums in one product
        chunk_ptr = np.linspace(0, P, n_chunks + 1).round().astype(np.int64)
        lam = np.exp(log_guess)
        node_values = np.ascontiguousarray(np.stack([b, d, lam]))
        counts = np.empty((n_chunks, J + gold_rows, 2, 2 * M))
        touched = np.empty((n_chunks, J + gold_rows), dtype=np.bool_)
        proba1 = np.empty(P)
        effects = np.empty((P, 3))
        loglik = np.empty(P)
        # Waking threads costs more than a small local step (caries: 32 patterns).
        work = len(pat["rater"]) * 2 * M
        if parallel == "numpy":
            kernel = kernels.pattern_posteriors.numpy_twin
        else:
            kernel = (kernels.pattern_posteriors if parallel and work > PARALLEL_WORK
                      else kernels.pattern_posteriors_serial)
        kernel(
            pat["ptr"], pat["rater"], pat["label"], pat["count"], log_prior, table,
            chunk_ptr, node_values, counts, touched, proba1, effects, loglik,
        )
        expected_counts = np.empty((J, 2, 2 * M))
        _pick(kernels.sum_chunks, expected_counts.size, parallel)(counts, touched, expected_counts)
        # Switched-off effects are constants, not averages that round off them.
        effects[:, 0] = effects[:, 0] if self.difficulty else 0.0
        effects[:, 1] = effects[:, 1] if self.discrimination else 1.0
        effects[:, 2] = effects[:, 2] if self.guessing else 0.0
        of = pat["of_item"]
        proba = np.empty((data.n_items, 2))
        proba[:, 1] = proba1[of]
        proba[:, 0] = 1.0 - proba[:, 1]
        items = {
            "proba": proba,
            "loglik": loglik[of],
            "difficulty": effects[of, 0],
            "discrimination": effects[of, 1],
            "guessing": effects[of, 2],
        }
        stats = {
            "expected_counts": expected_counts,
            "positive": dot(pat["count"], proba1),
            "loglik_total": dot(pat["count"], loglik),
        }
        return items, stats

    # -- global update --------------------------------------------------------
    def _grouped(self, W, sens, spec):
        """Expected counts and abilities per parameter group (rater or shared)."""
        if self.rater_effects:
            return W, sens, spec
        return W.sum(axis=0, keepdims=True), sens[:1], spec[:1]

    def _rater_log_prior(self, sens, spec):
        """log prior of each group's abilities and its α-derivatives."""
        if self._rater_mode() == "one":
            m, s = ALPHA_ACC_PRIOR
            value = -0.5 * ((sens - m) / s) ** 2
            g = -(sens - m) / s**2
            return value, np.stack([g / 2, g / 2], 1), np.full((len(sens), 2), -0.5 / s**2)
        (ms, ss), (mp, sp) = ALPHA_SENS_PRIOR, ALPHA_SPEC_PRIOR
        value = -0.5 * ((sens - ms) / ss) ** 2 - 0.5 * ((spec - mp) / sp) ** 2
        grad = np.stack([-(spec - mp) / sp**2, -(sens - ms) / ss**2], 1)
        hess = np.stack([np.full_like(spec, -1 / sp**2), np.full_like(sens, -1 / ss**2)], 1)
        return value, grad, hess

    def _terms(self, sens, spec, nodes, groups=None, out=None, parallel=True):
        """Every group's terms at ``nodes`` (:func:`kernels.rater_node_terms`):
        a dict of ``table``, ``sigma``, ``slope``, ``ratio``; only the rows
        of ``groups`` (default all) are computed into ``out`` (default new)."""
        G, M = len(sens), len(nodes[0])
        if out is None:
            out = {"table": np.empty((G, 2, 2 * M)), "sigma": np.empty((G, 2 * M)),
                   "slope": np.empty((G, 2 * M)), "ratio": np.empty((G, 2 * M))}
        if groups is None:
            groups = np.arange(G, dtype=np.int64)
        _pick(kernels.rater_node_terms, len(groups) * 4 * M, parallel)(
            sens, spec, *nodes, groups, out["table"], out["sigma"], out["slope"], out["ratio"])
        return out

    def _rater_terms(self, W, sens, spec, nodes, terms, parallel=True):
        """Each group's expected log posterior and its α-derivatives, from
        ``terms`` at (sens, spec, nodes)."""
        G = len(sens)
        value = np.empty(G)
        grad = np.empty((G, 2))
        hess = np.empty((G, 2))
        _pick(kernels.rater_derivatives, W.size, parallel)(
            W, terms["table"], terms["sigma"], terms["slope"], nodes[1], value, grad, hess)
        pv, pg, ph = self._rater_log_prior(sens, spec)
        return value + pv, grad + pg, hess + ph

    def _rater_newton(self, W, sens, spec, nodes, terms, parallel=True):
        """One safeguarded Newton step per group in the free parameters.

        sens/spec: θ = (u, v), α^sens = (e^u + v)/2, α^spec = (e^u - v)/2, so
        α^sens + α^spec = e^u > 0 (the cooperative constraint).  One
        accuracy: α = e^u.  The step is halved until the group's expected
        log posterior does not decrease (generalised EM stays monotone).
        ``terms`` are at (sens, spec, nodes); returns the new abilities and
        the terms at them (each trial evaluates the groups still searching).
        """
        f0, g, h = self._rater_terms(W, sens, spec, nodes, terms, parallel)
        one = self._rater_mode() == "one"
        e = sens + spec if not one else sens
        u = np.log(e)
        if one:
            # g[:, 0] = dQ/dα_spec, g[:, 1] = dQ/dα_sens; α = α_sens = α_spec.
            ga = g.sum(1)
            ha = h.sum(1)
            grad_u = ga * e
            hess_u = ha * e**2 + ga * e
            curv = np.minimum(hess_u, -1e-6 * (1 + np.abs(hess_u)))
            step = np.clip(-grad_u / curv, -3, 3)[:, None]
            theta = u[:, None]
            grad = grad_u[:, None]
        else:
            v = sens - spec
            gs, gp, hs, hp = g[:, 1], g[:, 0], h[:, 1], h[:, 0]
            grad = np.stack([(gs + gp) * e / 2, (gs - gp) / 2], 1)
            huu = (hs + hp) * e**2 / 4 + (gs + gp) * e / 2
            hvv = (hs + hp) / 4
            huv = (hs - hp) * e / 4
            # Shift the Hessian to negative definite where it is not.
            top = 0.5 * (huu + hvv) + np.sqrt(0.25 * (huu - hvv) ** 2 + huv**2)
            shift = np.maximum(0.0, top + 1e-6 * (1 + np.abs(huu) + np.abs(hvv)))
            huu, hvv = huu - shift, hvv - shift
            det = huu * hvv - huv**2
            step = -np.stack([hvv * grad[:, 0] - huv * grad[:, 1],
                              huu * grad[:, 1] - huv * grad[:, 0]], 1) / det[:, None]
            norm = np.sqrt((step**2).sum(1))
            step *= np.minimum(1.0, 3.0 / np.maximum(norm, 1e-300))[:, None]
            theta = np.stack([u, v], 1)
        new_sens, new_spec = sens.copy(), spec.copy()
        # A group's rows of ``new`` hold its terms at its latest trial, which
        # is its accepted one once it leaves ``searching``.
        new = None
        searching = np.arange(len(u), dtype=np.int64)
        value = np.empty(len(u))
        scale = 1.0
        for _ in range(40):
            trial = theta + scale * step
            ts, tp = _alphas(trial, one)
            new = self._terms(ts, tp, nodes, searching, new, parallel)
            _pick(kernels.rater_values, len(searching) * 4 * len(nodes[0]), parallel)(
                W, new["table"], searching, value)
            f1 = value[searching] + self._rater_log_prior(ts, tp)[0][searching]
            ok = (f1 >= f0[searching]) & np.isfinite(f1)
            done = searching[ok]
            new_sens[done], new_spec[done] = ts[done], tp[done]
            searching = searching[~ok]
            if not len(searching):
                break
            scale *= 0.5
        for key in new:  # groups that never improved keep their start
            new[key][searching] = terms[key][searching]
        return new_sens, new_spec, new

    def _hyper_objective(self, vec, W, sens, spec, grid, value_only=False, terms=None,
                         parallel=True):
        """Expected log likelihood + hyperprior as a function of the item
        population (log scales, guessing mean): value, gradient, Hessian.

        Each hyperparameter moves one node coordinate: b = σ_β u₁, d =
        exp(σ_δ u₂), t = μ_λ + σ_λ u₃ (u the standard grid), so the chain
        rule turns the per-node derivatives of ``node_derivatives`` into
        exact derivatives in (log σ_β, log σ_δ, μ_λ, log σ_λ).  ``terms``
        are the groups' terms at these nodes (computed when None); with
        ``value_only``, the value alone (the same bits) and the terms.
        """
        names = self._hyper_names()
        hyper = _hyper_from_vector(names, vec)
        b, d, log_guess, log_noguess = nodes = self._node_values(grid, hyper)
        if terms is None:
            terms = self._terms(sens, spec, nodes, parallel=parallel)
        M = len(b)
        node_value = np.empty(M)
        if value_only:  # the line search: the same sum without the derivatives
            _pick(kernels.node_values, W.size, parallel)(W, terms["table"], node_value)
            return float(node_value.sum()) + _hyper_log_prior(names, vec), terms
        node_grad = np.empty((3, M))
        node_hess = np.empty((6, M))
        _pick(kernels.node_derivatives, W.size, parallel)(
            W, sens, spec, b, d, log_guess, terms["table"], terms["sigma"], terms["slope"],
            terms["ratio"], node_value, node_grad, node_hess)
        # Node coordinate (0: b, 1: d, 2: t) of each hyperparameter, its first
        # derivative dθ and its own second derivative d²θ.
        coord, first, second = [], [], []
        for name in names:
            if name == "difficulty_scale":
                coord.append(0), first.append(b), second.append(b)
            elif name == "discrimination_scale":
                log_d = np.log(d)
                coord.append(1), first.append(d * log_d), second.append(d * log_d * (log_d + 1))
            elif name == "guessing_mean":
                coord.append(2), first.append(np.ones(M)), second.append(np.zeros(M))
            else:
                spread = log_guess - log_noguess - hyper["guessing_mean"]  # t - μ = σ_λ u₃
                coord.append(2), first.append(spread), second.append(spread)
        pair = {(0, 0): 0, (1, 1): 1, (2, 2): 2, (0, 1): 3, (0, 2): 4, (1, 2): 5}
        n = len(names)
        grad = np.array([node_grad[coord[k]] @ first[k] for k in range(n)])
        hess = np.empty((n, n))
        for k in range(n):
            for l in range(k, n):
                key = (min(coord[k], coord[l]), max(coord[k], coord[l]))
                hess[k, l] = hess[l, k] = node_hess[pair[key]] @ (first[k] * first[l])
            hess[k, k] += node_grad[coord[k]] @ second[k]
        seed = _hyper_vector(names, PAPER_ITEM_PRIOR)
        value = float(node_value.sum()) + _hyper_log_prior(names, vec)
        grad -= (np.asarray(vec) - seed) / HYPER_PRIOR_SD**2
        hess -= np.eye(n) / HYPER_PRIOR_SD**2
        return value, grad, hess

    def _hyper_newton(self, names, hyper, W, sens, spec, grid, terms, parallel=True):
        """One safeguarded Newton step on the item-population hyperparameters.

        Exact gradient and Hessian (at most four parameters); where the
        Hessian is not negative definite it is shifted; the step is projected
        on the bounds and halved until the expected log posterior does not
        decrease.  ``terms`` are the groups' terms at ``hyper``; returns the
        new hyperparameters and the terms at them (the accepted trial's).
        """
        vec = _hyper_vector(names, hyper)
        low = np.array([HYPER_BOUNDS[n][0] for n in names])
        high = np.array([HYPER_BOUNDS[n][1] for n in names])
        f0, g0, hess = self._hyper_objective(vec, W, sens, spec, grid, terms=terms,
                                             parallel=parallel)
        n = len(vec)
        top = np.linalg.eigvalsh(hess).max()
        if top > -1e-8:
            hess -= (top + 1e-3 * (1 + np.abs(np.diag(hess)).max())) * np.eye(n)
        step = -np.linalg.solve(hess, g0)
        step *= min(1.0, 1.0 / max(np.abs(step).max(), 1e-300))
        buffer = None
        for _ in range(30):
            trial = np.clip(vec + step, low, high)
            nodes = self._node_values(grid, _hyper_from_vector(names, trial))
            buffer = self._terms(sens, spec, nodes, out=buffer, parallel=parallel)
            f1, _ = self._hyper_objective(trial, W, sens, spec, grid, value_only=True,
                                          terms=buffer, parallel=parallel)
            if np.isfinite(f1) and f1 >= f0:
                return _hyper_from_vector(names, trial), buffer
            step *= 0.5
        return hyper, terms

    def _global_update(self, data, params, stats):
        W, sens, spec = self._grouped(stats["expected_counts"], params["alpha_sens"],
                                      params["alpha_spec"])
        grid = self._grid()
        hyper = params["hyper"]
        names = self._hyper_names()
        learn = bool(self.learn_item_prior and names)
        rated = self._rater_mode() != "none"
        parallel = self._variant(data, params)
        terms = None
        if rated or learn:
            # Every (group, node) term is evaluated once per trial point and
            # reused: the start's come from the last global update when it
            # ended at exactly these parameters (not after an extrapolation).
            terms = _terms_at(params)
            if terms is None:
                terms = self._terms(sens, spec, self._node_values(grid, hyper),
                                    parallel=parallel)
        if rated:
            sens, spec, terms = self._rater_newton(W, sens, spec, self._node_values(grid, hyper),
                                                   terms, parallel)
        if learn:
            hyper, terms = self._hyper_newton(names, hyper, W, sens, spec, grid, terms, parallel)
        J = data.n_raters
        if not self.rater_effects:
            sens, spec = np.full(J, sens[0]), np.full(J, spec[0])
        tabled = None
        if terms is not None and not on_workers(data):
            # The terms at the new parameters: the next local step's rating
            # log table and the next global update's start (the workers of a
            # dask fit would be sent them, so they are not kept there).
            tabled = {"alpha_sens": sens, "alpha_spec": spec, "hyper": hyper, **terms}
        if self._rater_mode() == "none":
            prior = 1.0
        else:
            # MAP under Beta(2, 2): (n_1 + 1) / (n + 2).
            prior = (stats["positive"] + 1.0) / (data.n_items + 2.0)
        new = {"alpha_sens": sens, "alpha_spec": spec, "prior": prior, "hyper": hyper,
               "log_table": tabled}
        for key in ("parallel", "numpy"):  # a restart in a thread, the fit's path
            if key in params:
                new[key] = params[key]
        return new

    # -- restarts in threads: the base loop's hooks ------------------------------------
    def _threaded_restarts(self, data):
        # Where the kernels dominate (the local step's work above the
        # threshold that threads it), the restarts run in threads, their
        # kernels serial (nogil) while another runs: a parallel region waits
        # for every thread at each of the ~8 kernel calls of an iteration,
        # which a shared machine makes slow.  Below it (caries) Python's share
        # of an iteration is large and threads would contend for the GIL.  A
        # dask fit's local steps run on the cluster: its restarts run in turn.
        # The numpy twins hold the GIL for much of an iteration: in turn.
        M = len(self._grid()[1])
        return (not on_workers(data) and not self._numpy_path(data)
                and len(_patterns(data)["rater"]) * 2 * M > PARALLEL_WORK)

    def _single_thread(self, params, alone):
        # serial kernels while other restarts run, the parallel ones (equal to
        # the last bit) once this restart runs alone: ``parallel`` is read as
        # a bool at every step and passed on by the global update
        return dict(params, parallel=alone)

    def _params_to_vector(self, params):
        """The coordinates the Newton steps work in: per rater
        u = log(α^sens + α^spec) and v = α^sens - α^spec (one accuracy:
        u = log α), logit π, and the active item-population hyperparameters
        (log scales, the guessing mean as it is).  Extrapolated there, every
        point satisfies the cooperative constraint α^sens + α^spec > 0."""
        parts = []
        mode = self._rater_mode()
        if mode != "none":
            sens, spec = params["alpha_sens"], params["alpha_spec"]
            if mode == "one":
                parts.append(np.log(sens))
            else:
                parts += [np.log(sens + spec), sens - spec]
            parts.append([logit(params["prior"])])
        names = self._hyper_names()
        if self.learn_item_prior and names:
            parts.append(_hyper_vector(names, params["hyper"]))
        return np.concatenate(parts) if parts else None

    def _params_from_vector(self, vector, params):
        new = dict(params)
        mode = self._rater_mode()
        J = len(params["alpha_sens"])
        n = 0
        if mode != "none":
            if mode == "one":
                theta, n = vector[:J, None], J
            else:
                theta, n = np.stack([vector[:J], vector[J:2 * J]], 1), 2 * J
            new["alpha_sens"], new["alpha_spec"] = _alphas(theta, mode == "one")
            new["prior"] = float(expit(vector[n]))
            n += 1
        names = self._hyper_names()
        if self.learn_item_prior and names:
            new["hyper"] = _hyper_from_vector(names, vector[n:])
        return new

    def _log_prior(self, params):
        """log p(π, α, item-population hyperparameters), up to constants."""
        sens, spec = params["alpha_sens"], params["alpha_spec"]
        value = 0.0
        if self._rater_mode() != "none":
            if not self.rater_effects:
                sens, spec = sens[:1], spec[:1]
            value += float(self._rater_log_prior(sens, spec)[0].sum())
            p = params["prior"]
            value += np.log(p) + np.log1p(-p)
        names = self._hyper_names()
        if self.learn_item_prior and names:
            value += _hyper_log_prior(names, _hyper_vector(names, params["hyper"]))
        return value

    def _objective(self, data, params, items, stats):
        """Quadrature marginal log posterior per item."""
        return (stats["loglik_total"] + self._log_prior(params)) / data.n_items

    # -- result tables and new raters (the base class uses these) ------------------
    _rater_attributes = ("alpha_sens_", "alpha_spec_", "sensitivity_", "specificity_")

    def _population_rater(self):
        # Average on the log-odds scale, the scale of the model's priors.
        mean = super()._population_rater()
        return dict(mean, sensitivity_=expit(mean["alpha_sens_"]),
                    specificity_=expit(mean["alpha_spec_"]))

    def _rater_diagnostics(self):
        # accuracy on an item of average difficulty, weighted by the
        # prevalence: the column every categorical model's table has
        accuracy = (self.class_prior_[1] * self.sensitivity_
                    + self.class_prior_[0] * self.specificity_)
        return {"accuracy": accuracy,
                "sensitivity": self.sensitivity_, "specificity": self.specificity_,
                "alpha_sens": self.alpha_sens_, "alpha_spec": self.alpha_spec_}

    def _item_diagnostics(self, data, items):
        active = {"difficulty": self.difficulty, "discrimination": self.discrimination,
                  "guessing": self.guessing}
        return {name: items[name] for name, on in active.items() if on}

    def _set_fitted(self, data, params, items):
        self.class_prior_ = np.array([1.0 - params["prior"], params["prior"]])
        self.alpha_sens_ = params["alpha_sens"]
        self.alpha_spec_ = params["alpha_spec"]
        self.sensitivity_ = expit(self.alpha_sens_)
        self.specificity_ = expit(self.alpha_spec_)
        self.item_prior_ = {n: params["hyper"][n] for n in self._hyper_names()}
        self._fitted_rater_layout = self._rater_layout()
        # Fitted on a dask DataFrame the training items stay on the workers.
        for name in ("difficulty", "discrimination", "guessing"):
            setattr(self, f"item_{name}_", None if items is None else items[name])
        self._fit_token = object()

    def _fitted_params(self):
        hyper = dict(PAPER_ITEM_PRIOR)
        hyper.update(self.item_prior_)
        return {
            "alpha_sens": self.alpha_sens_,
            "alpha_spec": self.alpha_spec_,
            "prior": float(self.class_prior_[1]),
            "hyper": hyper,
        }

    # -- simulation -----------------------------------------------------------
    def _sample_labels(self, data, rng):
        """z from the class prior, item effects from each item's posterior
        (z summed out), rater parameters plugged in (as Carpenter's predictive
        checks replicate ratings)."""
        pat = _patterns(data)
        cache = _SAMPLE_TABLES.get(data)
        if cache is None or cache[0] is not self._fit_token:
            params = self._fitted_params()
            grid = self._grid()
            b, d, log_guess, log_noguess = self._node_values(grid, params["hyper"])
            M = len(b)
            table = np.empty((data.n_raters, 2, 2 * M))
            variant = "numpy" if self._numpy_path(data) else True
            _pick(kernels.rating_log_table, table.size, variant)(
                params["alpha_sens"], params["alpha_spec"], b, d, log_guess, log_noguess, table)
            log_class = self._log_class_prior(params["prior"])
            log_prior = np.concatenate([log_class[0] + grid[1], log_class[1] + grid[1]])
            cdf = np.empty((pat["n_patterns"], M))
            _pick(kernels.pattern_node_cdf, cdf.size, variant)(
                pat["ptr"], pat["rater"], pat["label"], log_prior, table, cdf)
            # Offsetting row p by p makes the flattened cdf sorted, so one
            # searchsorted draws every item's node.
            flat = (cdf + np.arange(len(cdf))[:, None]).ravel()
            p_positive = np.exp(table[:, 1, :])
            cache = (self._fit_token, flat, M, p_positive)
            _SAMPLE_TABLES[data] = cache
        _, flat, M, p_positive = cache
        of = pat["of_item"]
        z = (rng.random(data.n_items) < self.class_prior_[1]).astype(np.int64)
        node = np.searchsorted(flat, of + rng.random(data.n_items) * (1 - 1e-12)) - of * M
        node = np.clip(node, 0, M - 1)
        col = z * M + node
        p = p_positive[data.rater, col[data.item]]
        return (rng.random(data.n_ratings) < p).astype(np.int32)

    def _expected_failed_checks(self):
        # These common checks fit on categorical data with 3-10 label values
        # (or one); IRT3PL is binary by definition and raises a ValueError.
        # tests/test_irt.py checks the same properties on binary ratings.
        reason = ("the check feeds multi-class (or single-class) ratings; IRT3PL is "
                  "binary only (the binary version is in tests/test_irt.py)")
        failed = {name: reason for name in BINARY_ONLY_CHECKS}
        for name in ("check_fit_score_takes_y", "check_dtype_object"):
            failed[name] = (
                "the check's y (read as gold labels) has 3 or 4 values; IRT3PL's gold, like its "
                "ratings, must be binary: a ValueError (tests/test_gold.py fits binary gold)")
        return failed


BINARY_ONLY_CHECKS = (
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_estimator_sparse_tag",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_overwrite_params",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
    "check_transformer_data_not_an_array",
    "check_transformer_general",
    "check_transformer_preserve_dtypes",
)


def _alphas(theta, one):
    e = np.exp(np.clip(theta[:, 0], -30, 30))
    if one:
        return e, e.copy()
    return 0.5 * (e + theta[:, 1]), 0.5 * (e - theta[:, 1])


def _hyper_vector(names, hyper):
    return np.array([hyper[n] if n == "guessing_mean" else np.log(hyper[n]) for n in names])


def _hyper_from_vector(names, vec):
    hyper = dict(PAPER_ITEM_PRIOR)
    for n, x in zip(names, vec):
        hyper[n] = float(x) if n == "guessing_mean" else float(np.exp(x))
    return hyper


def _hyper_log_prior(names, vec):
    seed = _hyper_vector(names, PAPER_ITEM_PRIOR)
    return float(-0.5 * np.sum(((np.asarray(vec) - seed) / HYPER_PRIOR_SD) ** 2))


def _pick(kernel, size, parallel):
    """``kernel``'s numpy twin when ``parallel`` is "numpy" (the fit's path,
    :meth:`IRT3PL._numpy_path`); else its compiled variant for ``size`` (see
    ``serial_and_parallel``), the serial one while other restarts run in
    threads (``parallel`` False)."""
    if parallel == "numpy":
        return kernel.numpy_twin
    return kernel.pick(size) if parallel else kernel.serial


def _terms_at(params):
    """The terms ``params`` carry from the global update that made them (a
    dict of ``table``, ``sigma``, ``slope``, ``ratio``, one row per group),
    or None when they are not at exactly these parameters (an extrapolated
    point carries its template's stale terms: it fails this test)."""
    tabled = params.get("log_table")
    if (tabled is not None and tabled["hyper"] == params["hyper"]
            and np.array_equal(tabled["alpha_sens"], params["alpha_sens"])
            and np.array_equal(tabled["alpha_spec"], params["alpha_spec"])):
        return tabled
    return None


def _check_binary(data):
    if data.n_classes != 2:
        raise ValueError(
            f"IRT3PL needs binary ratings (exactly two classes); got {data.n_classes} "
            "classes. Pass classes=[negative, positive] if only one label occurs (sorted: "
            "the positive class is classes_[1])."
        )


def _patterns(data):
    """Items with the same ratings (same raters, same labels) grouped into
    patterns, computed once per encoded ``data`` (kept beside it, in
    ``_PATTERNS``, while it lives: the encoded ratings are not written on).
    Integrating a pattern once and weighting it by its count is exact
    (caries: 3,869 items, 32 patterns)."""
    cached = _PATTERNS.get(data)
    if cached is not None:
        return cached
    item, rater, label, ptr = data.item, data.rater, data.label, data.item_ptr
    if data.gold is not None:
        # A known item's label is one more rating, by rater n_raters (a
        # perfect rater: IRT3PL._local_step gives it its table row).
        known = np.flatnonzero(data.gold >= 0)
        item = np.concatenate([item, known.astype(item.dtype)])
        rater = np.concatenate([rater, np.full(len(known), data.n_raters, rater.dtype)])
        label = np.concatenate([label, data.gold[known]])
        ptr = ptr + np.concatenate([[0], np.cumsum(data.gold >= 0)])
    code = rater.astype(np.int64) * 2 + label
    # each item's codes in order: one stable sort of a key ordered by item,
    # then code (np.lexsort's order; at 100,000 ratings 9 times faster)
    span = 2 * (data.n_raters + 1)
    if len(ptr) * span < 2**62:
        order = np.argsort(item.astype(np.int64) * span + code, kind="stable")
    else:
        order = np.lexsort((code, item))
    code = code[order]
    of_item, first = _group_sequences(code, ptr)
    lengths = ptr[first + 1] - ptr[first]
    pattern_ptr = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(lengths, out=pattern_ptr[1:])
    take = np.repeat(ptr[first] - pattern_ptr[:-1], lengths) + np.arange(pattern_ptr[-1])
    pcode = code[take]
    result = {
        "n_patterns": len(first),
        "ptr": pattern_ptr,
        "rater": (pcode // 2).astype(np.int32),
        "label": (pcode % 2).astype(np.int32),
        "count": np.bincount(of_item, minlength=len(first)).astype(np.float64),
        "of_item": of_item,
    }
    _PATTERNS[data] = result
    return result


def _group_sequences(code, ptr):
    """Items whose code sequences ``code[ptr[i]:ptr[i + 1]]`` are equal, as
    ``(of_item, first)``: each item's group, the groups numbered in the
    order of their first item, and that first item of each group.

    Items of one length are compared as the rows of one matrix (the ratings
    are stored once, whatever the longest item), so no loop runs over the
    items."""
    n_items = len(ptr) - 1
    lengths = np.diff(ptr)
    group = np.empty(n_items, dtype=np.int64)
    first_of, n_groups = [], 0
    for length in np.unique(lengths):
        members = np.flatnonzero(lengths == length)
        rows = _packed_rows(code[ptr[members][:, None] + np.arange(length)])
        # a stable sort of the rows: equal rows end up side by side, the
        # first item of each run first
        if rows.shape[1] == 0:
            order = np.arange(len(members))
        elif rows.shape[1] == 1:
            order = np.argsort(rows[:, 0], kind="stable")
        else:
            order = np.lexsort(rows.T[::-1])
        rows = rows[order]
        starts = np.ones(len(members), dtype=bool)
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        group[members[order]] = n_groups + np.cumsum(starts) - 1
        first_of.append(members[order[starts]])
        n_groups += int(starts.sum())
    first_item = np.concatenate(first_of) if first_of else np.zeros(0, np.int64)
    # number the groups by their first item, as a scan over the items would
    rank = np.empty(n_groups, dtype=np.int64)
    rank[np.argsort(first_item, kind="stable")] = np.arange(n_groups)
    return rank[group], np.sort(first_item)


def _packed_rows(rows):
    """The rows of a matrix of non-negative codes packed into as few int64
    columns as hold them (each column a run of codes in big-endian order),
    so that the packed rows sort, and compare, as the rows do: a sort over
    a few packed keys instead of one key per code."""
    n_rows, n_codes = rows.shape
    if n_codes == 0:
        return rows
    bits = max(1, int(rows.max()).bit_length())
    per_column = 63 // bits
    if per_column <= 1:
        return rows
    packed = []
    for start in range(0, n_codes, per_column):
        column = np.zeros(n_rows, dtype=np.int64)
        for code in rows[:, start:start + per_column].T:
            column = (column << bits) | code
        packed.append(column)
    return np.stack(packed, axis=1)


@lru_cache(maxsize=32)
def _tensor_grid(counts):
    """Gauss–Hermite tensor grid for a standard normal, ``counts[k]`` nodes in
    dimension k: ``(nodes (prod(counts), len(counts)), log weights)``, read-only."""
    if not counts:
        nodes, log_w = np.zeros((1, 0)), np.zeros(1)
    else:
        rules = [np.polynomial.hermite_e.hermegauss(n) for n in counts]
        mesh = np.meshgrid(*[x for x, _ in rules], indexing="ij")
        nodes = np.stack([g.ravel() for g in mesh], axis=1)
        wmesh = np.meshgrid(*[np.log(w / w.sum()) for _, w in rules], indexing="ij")
        log_w = sum(g.ravel() for g in wmesh)
    nodes.flags.writeable = False
    log_w.flags.writeable = False
    return nodes, log_w


# -- the posterior sampler (skcrowd.uncertainty) ------------------------------------
def _irt_log_table(model, sens, spec, hyper, grid):
    """``table[g, y, z * M + m]`` = log P(rating y | class z, node m; group g)
    of the IRT-3PL rating model (Carpenter, item-difficulty paper): correct
    with probability λ_m + (1 - λ_m) σ(δ_m (α^z_g - β_m)); the fit's own
    kernel."""
    b, d, log_guess, log_noguess = model._node_values(grid, hyper)
    table = np.empty((len(sens), 2, 2 * len(b)))
    kernels.rating_log_table.pick(table.size)(
        np.ascontiguousarray(sens, dtype=np.float64), np.ascontiguousarray(spec, dtype=np.float64),
        np.ascontiguousarray(b, dtype=np.float64), np.ascontiguousarray(d, dtype=np.float64),
        np.ascontiguousarray(log_guess, dtype=np.float64),
        np.ascontiguousarray(log_noguess, dtype=np.float64), table)
    return table


def _irt_group_loglik(W, table):
    """Each group's log likelihood of its ratings given every item's class
    and node, from ``W[g, y, z * M + m]``, the number of ratings y of group
    g on items in cell (z, m), and the log table of the rating model (the
    augmented likelihood of the rater and hyperparameter steps)."""
    return np.einsum("gyk,gyk->g", W, table)


def gibbs_posterior(model, data, n_samples, n_burnin, thin, rng, keep_labels):
    """Metropolis-within-Gibbs of IRT3PL's posterior on its quadrature grid.

    The fit integrates each item's class z_i and effects (β_i, δ_i, λ_i)
    over a Gauss–Hermite grid; the same model with the item's grid node
    m_i as a discrete latent variable (prior: the quadrature weights) has
    conjugate-like conditionals: (z_i, m_i) | α, π is the item's posterior
    over the 2M grid cells (drawn exactly, by pattern); π | z is
    Beta(2 + Σz, 2 + Σ(1 - z)) (under the model's Beta(2, 2) prior);
    each rater's α^sens (items with z = 1) and α^spec (z = 0) are
    updated by random-walk Metropolis on its own ratings, vectorised over
    raters, with their normal priors and the spam-line constraint
    α^sens + α^spec > 0; the item-population hyperparameters (when
    learned) by random-walk Metropolis on every rating.  Proposal scales
    adapt during burn-in (target acceptance 0.44) and are then fixed.  The
    chain starts at the fitted MAP.
    """
    from ._irt import (ALPHA_ACC_PRIOR, ALPHA_SENS_PRIOR, ALPHA_SPEC_PRIOR,
                       _hyper_from_vector, _hyper_log_prior, _hyper_vector, _patterns)

    mode = model._rater_mode()
    grid = model._grid()
    M = len(grid[1])
    fitted = model._fitted_params()
    hyper = dict(fitted["hyper"])
    names = model._hyper_names() if model.learn_item_prior else []
    hvec = _hyper_vector(names, hyper)
    J = data.n_raters
    n_groups = J if model.rater_effects else 1
    sens = np.array(fitted["alpha_sens"], dtype=np.float64)[:n_groups].copy()
    spec = np.array(fitted["alpha_spec"], dtype=np.float64)[:n_groups].copy()
    pi = float(fitted["prior"])
    item, label = data.item, data.label.astype(np.int64)
    group = data.rater.astype(np.int64) if model.rater_effects else np.zeros(len(item), np.int64)
    # patterns: items with the same ratings share their posterior over cells
    pat = _patterns(data)
    of_item, p_ptr, n_patterns = pat["of_item"], pat["ptr"], pat["n_patterns"]
    p_rating_label = pat["label"]
    p_rating_group = (pat["rater"] if model.rater_effects
                      else np.zeros(len(p_rating_label), pat["rater"].dtype))
    gold_row = None
    if data.gold is not None:
        # a known item's class is one more rating, by a perfect rater
        # (rater J of the patterns, as in the fit): a table row after the
        # groups', 0 where the rating is the class and -inf elsewhere
        p_rating_group = np.where(pat["rater"] == J, n_groups, p_rating_group)
        gold_row = np.full((1, 2, 2 * M), -np.inf)
        gold_row[0, 0, :M] = gold_row[0, 1, M:] = 0.0
    counts = np.bincount(group, minlength=n_groups).astype(np.float64)
    step = {"sens": 2.0 / np.sqrt(1.0 + 0.25 * counts), "spec": 2.0 / np.sqrt(1.0 + 0.25 * counts),
            "hyper": np.full(len(names), 0.1)}
    (ms, ss), (mp, sp), (ma, sa) = ALPHA_SENS_PRIOR, ALPHA_SPEC_PRIOR, ALPHA_ACC_PRIOR

    def log_prior_alpha(which, value):
        if mode == "one":
            return -0.5 * ((value - ma) / sa) ** 2
        m, s = (ms, ss) if which == "sens" else (mp, sp)
        return -0.5 * ((value - m) / s) ** 2

    draws = {"prior": [], "sens": [], "spec": [], "hyper": []}
    labels, proba_sum = [], np.zeros((data.n_items, 2))
    table = _irt_log_table(model, sens, spec, hyper, grid)
    for sweep in range(n_burnin + n_samples * thin):
        adapting = sweep < n_burnin
        # (z_i, m_i) | α, π, hyper: exact draw from each pattern's cells
        with np.errstate(divide="ignore"):
            log_cell = np.concatenate([np.log(1 - pi) + grid[1], np.log(pi) + grid[1]])
        cdf = np.empty((n_patterns, 2 * M))
        uncertainty_kernels.pattern_cell_cdf.pick(len(p_rating_label) * 2 * M)(
            p_ptr, p_rating_group, p_rating_label, log_cell,
            table if gold_row is None else np.concatenate([table, gold_row]), cdf)
        cdf /= cdf[:, -1:]
        class_proba = np.column_stack([cdf[:, M - 1], 1 - cdf[:, M - 1]])[of_item]
        flat = (cdf + np.arange(n_patterns)[:, None]).ravel()
        cell = np.searchsorted(flat, of_item + rng.random(data.n_items) * (1 - 1e-12))
        cell = np.clip(cell - of_item * 2 * M, 0, 2 * M - 1)
        z = cell // M
        # π | z
        if mode != "none":
            n1 = int(z.sum())
            pi = float(rng.beta(2 + n1, 2 + data.n_items - n1))
        # ratings per (group, label, cell): the sufficient statistics of α
        # and the hyperparameters given the cells
        W = np.bincount((group * 2 + label) * (2 * M) + cell[item],
                        minlength=n_groups * 4 * M).reshape(n_groups, 2, 2 * M).astype(float)
        # α | z, m: random-walk Metropolis per group.  ``table`` stays the
        # table at the current parameters: its rows are per group, so after
        # a step it is the proposal's rows where accepted.
        if mode != "none":
            loglik = _irt_group_loglik(W, table)
            for which in (("sens", "spec") if mode == "sens_spec" else ("one",)):
                current = sens if which in ("sens", "one") else spec
                key = "sens" if which == "one" else which
                proposal = current + step[key] * rng.standard_normal(n_groups)
                new_sens = proposal if which in ("sens", "one") else sens
                new_spec = proposal if which in ("spec", "one") else spec
                trial_table = _irt_log_table(model, new_sens, new_spec, hyper, grid)
                trial_loglik = _irt_group_loglik(W, trial_table)
                log_ratio = (trial_loglik - loglik
                             + log_prior_alpha(key, proposal) - log_prior_alpha(key, current))
                valid = (new_sens + new_spec > 0) if mode == "sens_spec" else proposal > 0
                with np.errstate(invalid="ignore"):
                    accept = valid & (np.log(rng.random(n_groups)) < log_ratio)
                current = np.where(accept, proposal, current)
                table = np.where(accept[:, None, None], trial_table, table)
                loglik = np.where(accept, trial_loglik, loglik)
                if which in ("sens", "one"):
                    sens = current
                if which in ("spec", "one"):
                    spec = current
                if adapting:
                    step[key] *= np.exp(0.1 * (accept - 0.44))
        # item-population hyperparameters | z, m (learned ones only)
        for h in range(len(names)):
            old = _irt_group_loglik(W, table).sum() + _hyper_log_prior(names, hvec)
            trial = hvec.copy()
            trial[h] += step["hyper"][h] * rng.standard_normal()
            trial_hyper = _hyper_from_vector(names, trial)
            trial_table = _irt_log_table(model, sens, spec, trial_hyper, grid)
            new = _irt_group_loglik(W, trial_table).sum() + _hyper_log_prior(names, trial)
            accept = np.log(rng.random()) < new - old
            if accept:
                hvec, hyper, table = trial, trial_hyper, trial_table
            if adapting:
                step["hyper"][h] *= np.exp(0.1 * (accept - 0.44))
        kept = sweep - n_burnin
        if kept >= 0 and kept % thin == 0:
            draws["prior"].append(pi)
            draws["sens"].append(np.broadcast_to(sens, (J,)).copy())
            draws["spec"].append(np.broadcast_to(spec, (J,)).copy())
            draws["hyper"].append({n: hyper[n] for n in names})
            proba_sum += class_proba
            if keep_labels:
                labels.append(z.astype(np.int32))
    prior = np.array(draws["prior"])
    alpha_sens, alpha_spec = np.stack(draws["sens"]), np.stack(draws["spec"])
    samples = {
        "class_prior_": np.column_stack([1 - prior, prior]),
        "alpha_sens_": alpha_sens,
        "alpha_spec_": alpha_spec,
        "sensitivity_": expit(alpha_sens),
        "specificity_": expit(alpha_spec),
        "item_prior_": {n: np.array([h[n] for h in draws["hyper"]]) for n in names},
    }
    return samples, proba_sum / n_samples, (np.stack(labels) if keep_labels else None)
