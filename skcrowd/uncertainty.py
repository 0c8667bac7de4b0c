"""Posterior uncertainty of a fitted model's global parameters, and item
labels and probabilities that integrate it.

Every skcrowd model is fitted to a point: a MAP estimate (DawidSkene,
GLAD, IRT3PL's raters), a marginal-likelihood estimate (IRT3PL's item
population) or variational means.  Carpenter (item-difficulty paper) answers
the five tasks of crowdsourcing with posterior distributions instead: the
prevalence with its interval, each rater's sensitivity and specificity with
theirs, and gold-standard labels *sampled* from the posterior rather than
chosen as the most probable.  This module adds that layer on top of a
fitted model:

- :func:`posterior_samples` draws the global parameters (prevalence, rater
  parameters, item-population hyperparameters) by

  * ``"gibbs"`` (every model, the default): Markov chain Monte Carlo of the
    model's own posterior, started at the fit.  DawidSkene's Dirichlet
    priors are conjugate, so a sweep draws every true class given the
    parameters, then every confusion row and the prevalence given the
    classes (Dawid & Skene 1979's complete-data likelihood, sampled
    instead of maximised).  IRT3PL's sweep draws every item's class and
    quadrature node, then the prevalence, and the raters and item
    population by Metropolis steps (Carpenter, item-difficulty paper).
    MACE's sweep draws the classes, the spam indicators, then the
    competences and spam distributions from their Beta and Dirichlet
    conditionals (Hovy et al. 2013); GLAD's moves the item difficulties,
    the classes and the abilities by Metropolis-within-Gibbs (Whitehill
    et al. 2009); EBCC's draws every item's (class, subtype) pair, then
    the prevalence, subtype weights and raters' rows from their Dirichlet
    conditionals (Li, Rubinstein & Cohn 2019); OrdinalMixture's draws the
    spam indicators and the
    latent scores truncated to their ratings' bins, then the true values,
    the precisions, difficulties and reliabilities from their conjugate
    conditionals (Lakshminarayanan & Teh 2013);
  * ``"bootstrap"``: the fit repeated on items
    resampled with replacement, each refit started from the fitted model
    (``init_params``), so it takes a few passes instead of a cold fit.
    The spread of the refits approximates the posterior when every rater
    has many ratings; it is too narrow when raters have few (see
    :ref:`uncertainty`).

- :func:`interval` turns draws into equal-tailed intervals;
  :func:`prevalence_interval` and :func:`rater_table` give the prevalence
  and the rater table with interval columns;
- :func:`predict_proba` averages the item posteriors over the draws
  (posterior predictive class probabilities), and :func:`sample_labels`
  draws labels from the full posterior: parameters first, then each item's
  class given them.
"""

import copy
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._dask import is_dask_frame
from ._ratings import Ratings

__all__ = [
    "effective_sample_size",
    "interval",
    "model_at",
    "posterior_samples",
    "predict_proba",
    "prevalence_interval",
    "rater_table",
    "sample_labels",
]

_METHODS = ("auto", "gibbs", "bootstrap")


# -- input --------------------------------------------------------------------
def _check_model(model):
    # a model declares its sampler's hooks (skcrowd._mixins.PosteriorMixin)
    if not getattr(model, "_posterior_attributes", ()):
        raise ValueError("posterior uncertainty is available for the models with a "
                         "posterior sampler (DawidSkene, EBCC, GLAD, IRT3PL, MACE, "
                         f"OrdinalMixture, PooledDawidSkene); got {type(model).__name__}.")
    check_is_fitted(model)


def _check_count(value, name, low=1):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    return int(value)


def _check_level(level):
    if isinstance(level, bool) or not isinstance(level, Real) or not 0 < level < 1:
        raise ValueError(f"the interval level must be a number in (0, 1); got {level!r}.")
    return float(level)


def _reject_unknown(options):
    if options:
        raise TypeError(f"unexpected arguments {sorted(options)}.")


def _encoded(model, X, y=None):
    """``X`` (and the fit's known labels ``y``) encoded against the fitted
    model (raters and classes of the fit); raters the fit has not seen are
    refused: their parameters have no posterior."""
    if is_dask_frame(X):
        raise ValueError("posterior uncertainty does not take a dask DataFrame: the chain "
                         "needs the ratings in memory (pass a Ratings or a matrix).")
    data = model._encode(X, reset=False, y=y)
    if data.n_raters > model.n_features_in_:
        raise ValueError("X has raters the model was not fitted on; posterior uncertainty "
                         "needs the ratings the model was fitted to.")
    return data


# -- draws and the model at one draw -----------------------------------------------
def _attribute_names(model):
    names = model._posterior_attributes
    return tuple(n for n in names if getattr(model, n, None) is not None)


def _stack(values):
    """Draws of one attribute stacked on a leading axis (a dict attribute,
    such as IRT3PL's ``item_prior_``, as a dict of stacked values)."""
    if isinstance(values[0], dict):
        return {k: np.array([v[k] for v in values]) for k in values[0]}
    return np.stack([np.asarray(v, dtype=np.float64) for v in values])


def _n_draws(samples):
    """The number of draws in ``samples`` (the length of the leading axis)."""
    return len(samples["class_prior_"])


def model_at(model, samples, s):
    """The fitted model at one posterior draw of its global parameters.

    Parameters
    ----------
    model : fitted model
    samples : dict
        Draws from :func:`posterior_samples`.
    s : int
        Which draw.

    Returns
    -------
    model_s : estimator
        A shallow copy of ``model`` whose global attributes are those of
        draw ``s``: its ``predict_proba``, ``rater_table`` and ``sample``
        condition on that draw.  ``model`` itself is not changed.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import model_at, posterior_samples
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> draws = posterior_samples(model, ratings, 10, random_state=0)
    >>> at = model_at(model, draws, 3)
    >>> bool((at.confusion_ == draws["confusion_"][3]).all())
    True
    """
    at = copy.copy(model)
    for name, values in samples.items():
        if values is None:
            setattr(at, name, None)
        elif isinstance(values, dict):
            setattr(at, name, {k: float(v[s]) for k, v in values.items()})
        else:
            setattr(at, name, values[s])
    return at


def _bootstrap(model, data, n_samples, rng):
    """Refits of ``model`` to items resampled with replacement, each started
    from the fitted model (``init_params``) and run to its tolerance.

    Every rater stays in each refit (a rater none of whose items were
    drawn keeps its prior-only estimate), so draws line up with the fit's
    raters.  Known items (gold ``y``) keep their labels in every refit."""
    if "warm_start" not in model.get_params():
        raise ValueError(f"method='bootstrap' refits warm-started at the fit, which "
                         f"{type(model).__name__} does not support; use method='gibbs'.")
    ratings = Ratings._from_sorted(data.item, data.rater, model.classes_[data.label],
                                   np.arange(data.n_items), model.rater_ids_)
    names = _attribute_names(model)
    refit = clone(model).set_params(warm_start=False, verbose=0)
    if "classes" in refit.get_params():
        refit.set_params(classes=model.classes_)
    draws = {name: [] for name in names}
    for _ in range(n_samples):
        rows = np.sort(rng.randint(0, data.n_items, size=data.n_items))
        sample = ratings[rows]
        sample.item_ids = np.arange(data.n_items)
        with warnings.catch_warnings():
            # a refit's tolerance from a warm start is the fit's own
            warnings.simplefilter("ignore", ConvergenceWarning)
            known = {} if data.gold is None else {
                k: model.classes_[g] for k, g in enumerate(data.gold[rows]) if g >= 0}
            refit.fit(sample, y=known or None, init_params=model)
        for name in names:
            draws[name].append(copy.deepcopy(getattr(refit, name)))
    return {name: _stack(values) for name, values in draws.items()}


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {list(_METHODS)}; got {method!r}.")
    return "gibbs" if method == "auto" else method


def _draw(model, X, n_samples, method, random_state, n_burnin, thin, keep_labels, y=None):
    _check_model(model)
    n_samples = _check_count(n_samples, "n_samples")
    method = _check_method(method)
    default_burnin, default_thin = model._chain_defaults
    n_burnin = _check_count(default_burnin if n_burnin is None else n_burnin, "n_burnin", low=0)
    thin = _check_count(default_thin if thin is None else thin, "thin")
    data = _encoded(model, X, y)
    rng = check_random_state(random_state)
    if method == "gibbs":
        return (data, *model._posterior_chain(data, n_samples, n_burnin, thin, rng,
                                              keep_labels))
    return data, _bootstrap(model, data, n_samples, rng), None, None


# -- public functions --------------------------------------------------------------
def posterior_samples(model, X, n_samples=200, *, y=None, method="auto", random_state=None,
                      n_burnin=None, thin=None):
    """Draws of a fitted model's global parameters from their posterior.

    Parameters
    ----------
    model : DawidSkene, PooledDawidSkene, EBCC, IRT3PL, GLAD, MACE or OrdinalMixture
        A fitted model.
    X : array-like, sparse matrix, DataFrame or Ratings
        The ratings the model was fitted to, in any form ``fit`` takes.
    n_samples : int, default=200
        Number of draws.
    y : array-like, mapping or Series, default=None
        The known labels the model was fitted with (``fit(X, y)``, see
        :ref:`gold`): the draws condition on them, every known item
        keeping its class.
    method : {"auto", "gibbs", "bootstrap"}, default="auto"
        ``"gibbs"``: MCMC of the model's posterior (DawidSkene and MACE:
        Gibbs sampling, their priors are conjugate; IRT3PL:
        Metropolis-within-Gibbs on its quadrature grid; GLAD:
        Metropolis-within-Gibbs over abilities, item difficulties and
        labels; OrdinalMixture: Gibbs sampling with the latent scores
        drawn, ``link="ordinal"`` and ``difficulty`` None or ``"item"``;
        EBCC: Gibbs sampling of (class, subtype) pairs and Dirichlet
        conditionals; PooledDawidSkene: Gibbs sampling with its population
        Dirichlet drawn by Metropolis); ``"bootstrap"``: refits to items resampled with
        replacement, warm-started at the fit (too narrow when raters have
        few ratings; not EBCC, which has no warm start).  ``"auto"``: Gibbs.
    random_state : int, RandomState instance or None, default=None
    n_burnin : int, default=None
        Gibbs sweeps discarded before the first draw (the chain starts at
        the fit); None: 200 (IRT3PL: 100).
    thin : int, default=None
        Gibbs sweeps per kept draw; None: 5 for DawidSkene, EBCC, IRT3PL,
        MACE and OrdinalMixture, 10 for GLAD, 20 for PooledDawidSkene,
        which cover at the nominal rates in simulation-based calibration
        (see :ref:`uncertainty`).

    Returns
    -------
    samples : dict
        One entry per fitted global attribute (``class_prior_``,
        ``confusion_``, ``sensitivity_``, ...), each an array whose leading
        axis has ``n_samples`` draws (IRT3PL's ``item_prior_``: a dict of
        such arrays, one per hyperparameter).

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import posterior_samples, interval
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> draws = posterior_samples(model, ratings, n_samples=100, random_state=0)
    >>> draws["confusion_"].shape
    (100, 5, 2, 2)
    >>> low, high = interval(draws["class_prior_"][:, 1], 0.9)
    >>> bool(low < model.class_prior_[1] < high)
    True
    """
    return _draw(model, X, n_samples, method, random_state, n_burnin, thin, False, y)[1]


def interval(draws, level=0.9):
    """Equal-tailed posterior interval of each entry of ``draws``.

    Parameters
    ----------
    draws : array-like of shape (n_samples, ...)
        Draws along the leading axis.
    level : float, default=0.9
        Posterior mass inside the interval.

    Returns
    -------
    lower, upper : ndarray of shape draws.shape[1:]
        The (1 - level) / 2 and (1 + level) / 2 quantiles.

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.uncertainty import interval
    >>> interval(np.arange(101.0), 0.5)
    (np.float64(25.0), np.float64(75.0))
    """
    level = _check_level(level)
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 0 or len(draws) == 0:
        raise ValueError("draws must have at least one draw along the first axis.")
    tail = (1 - level) / 2
    lower, upper = np.quantile(draws, [tail, 1 - tail], axis=0)
    return lower, upper


def effective_sample_size(draws):
    """Effective sample size of a chain of draws, per entry.

    Geyer's initial positive sequence estimate: n / (1 + 2 Σ ρ_t), summing
    the autocorrelations in pairs while the pair sums stay positive.  A
    Gibbs chain whose effective size is a small fraction of its draws
    mixes slowly (raters close to guessing, few raters): raise ``thin``.

    Parameters
    ----------
    draws : array-like of shape (n_samples, ...)
        Consecutive draws of a chain along the leading axis.

    Returns
    -------
    ess : ndarray of shape draws.shape[1:]
        n_samples for independent draws; smaller for autocorrelated ones
        (a constant entry gets n_samples).

    Examples
    --------
    >>> import numpy as np
    >>> from skcrowd.uncertainty import effective_sample_size
    >>> rng = np.random.default_rng(0)
    >>> chain = np.zeros(2000)
    >>> for t in range(1, 2000):
    ...     chain[t] = 0.9 * chain[t - 1] + rng.normal()
    >>> bool(50 < effective_sample_size(chain) < 250)  # about 2000 / 19
    True
    """
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim == 0 or len(draws) < 4:
        raise ValueError("effective_sample_size needs at least 4 draws along the first axis.")
    n = len(draws)
    flat = draws.reshape(n, -1)
    centred = flat - flat.mean(axis=0)
    spectrum = np.fft.rfft(centred, 2 * n, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), axis=0)[:n] / n
    ess = np.full(flat.shape[1], float(n))
    for c in range(flat.shape[1]):
        if acov[0, c] <= 0:
            continue
        rho = acov[:, c] / acov[0, c]
        total = 0.0
        for t in range(0, n - 1, 2):
            pair = rho[t] + rho[t + 1]
            if pair <= 0:
                break
            total += pair
        ess[c] = n / max(2 * total - 1, 1e-12)
    return ess.reshape(draws.shape[1:]) if draws.ndim > 1 else ess[0]


def prevalence_interval(model, X, level=0.9, *, samples=None, **kwargs):
    """Posterior interval of each class's prevalence (``class_prior_``).

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    level : float, default=0.9
    samples : dict, default=None
        Draws from :func:`posterior_samples`; drawn here when None (the
        further keyword arguments go to it).

    Returns
    -------
    table : pandas.DataFrame
        Indexed by class: ``estimate`` (the fitted prevalence;
        OrdinalMixture: the mean of its item probabilities), ``mean``
        (posterior mean of the draws), ``lower`` and ``upper``.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import prevalence_interval
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> prevalence_interval(model, ratings, random_state=0).columns.tolist()
    ['estimate', 'mean', 'lower', 'upper']
    """
    import pandas as pd

    if samples is None:
        samples = posterior_samples(model, X, **kwargs)
    draws = samples["class_prior_"]
    lower, upper = interval(draws, level)
    estimate = model.class_prior_
    if type(model).__name__ == "OrdinalMixture":
        # its class_prior_ is the mass of the fixed prior N(μ, 1/λ) in each
        # bin; the draws are of the items' share in each bin, whose plug-in
        # estimate is the mean of the items' posteriors
        estimate = np.asarray(model.predict_proba(X), dtype=np.float64).mean(axis=0)
    return pd.DataFrame({"estimate": estimate, "mean": draws.mean(axis=0),
                         "lower": lower, "upper": upper},
                        index=pd.Index(model.classes_, name="class"))


def rater_table(model, X, interval_level=0.9, *, samples=None, **kwargs):
    """The model's :meth:`rater_table` with posterior interval columns.

    Every parameter column ``c`` of the table (all but ``n_ratings``) gets
    ``c_lower`` and ``c_upper``: the equal-tailed interval of the column
    computed at each draw (the model's own table, evaluated at the drawn
    parameters, so derived columns such as accuracy are intervals of the
    derived quantity).

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    interval_level : float, default=0.9
    samples : dict, default=None
        Draws from :func:`posterior_samples`; drawn here when None (the
        further keyword arguments go to it).

    Returns
    -------
    table : pandas.DataFrame

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import rater_table
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> table = rater_table(model, ratings, 0.9, n_samples=50, random_state=0)
    >>> bool((table["recall_1_lower"] <= table["recall_1"]).all())
    True
    """
    level = _check_level(interval_level)
    if samples is None:
        samples = posterior_samples(model, X, **kwargs)
    table = model.rater_table()
    columns = [c for c in table.columns if c != "n_ratings"]
    per_draw = np.stack([model_at(model, samples, s).rater_table()[columns].to_numpy()
                         for s in range(_n_draws(samples))])
    lower, upper = interval(per_draw, level)
    for i, c in enumerate(columns):
        table[f"{c}_lower"] = lower[:, i]
        table[f"{c}_upper"] = upper[:, i]
    return table


def predict_proba(model, X, *, samples=None, **kwargs):
    """Item posteriors averaged over the posterior of the global parameters.

    ``model.predict_proba`` conditions on the fitted parameters (a
    plug-in estimate); this averages ``p(z_i | X, draw)`` over the draws,
    so an item rated by raters with few ratings gets the spread of their
    parameters, not only their estimate.

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    samples : dict, default=None
        Draws from :func:`posterior_samples`; drawn here when None (the
        further keyword arguments, ``y`` among them, go to it).  With a
        Gibbs sampler, drawing here averages the posteriors inside the
        chain (Rao-Blackwellised).  With given draws, a keyword ``y``
        (the fit's known labels) holds the known items at their class.

    Returns
    -------
    proba : ndarray of shape (n_items, n_classes)

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import predict_proba
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> predict_proba(model, ratings, n_samples=50, random_state=0).shape
    (3869, 2)
    """
    if samples is None:
        options = dict(kwargs)
        method = options.pop("method", "auto")
        _check_model(model)
        if _check_method(method) == "gibbs":
            chain = [options.pop(k, d) for k, d in (("n_samples", 200), ("random_state", None),
                                                    ("n_burnin", None), ("thin", None),
                                                    ("y", None))]
            _reject_unknown(options)
            return _draw(model, X, chain[0], "gibbs", chain[1], chain[2], chain[3], False,
                         chain[4])[2]
        samples = posterior_samples(model, X, method=method, **options)
    total = None
    for proba in _probas_at_draws(model, X, samples, kwargs.get("y")):
        total = proba if total is None else total + proba
    return total / _n_draws(samples)


def _probas_at_draws(model, X, samples, y):
    """The item posteriors at each draw, known items (``y``) at their
    class."""
    gold = None if y is None else _encoded(model, X, y).gold
    for s in range(_n_draws(samples)):
        proba = np.array(model_at(model, samples, s).predict_proba(X), dtype=np.float64)
        if gold is not None:
            known = np.flatnonzero(gold >= 0)
            proba[known] = 0.0
            proba[known, gold[known]] = 1.0
        yield proba


def sample_labels(model, X, n_samples=100, *, samples=None, random_state=None, **kwargs):
    """True labels drawn from the full posterior: parameters, then labels.

    For each draw of the global parameters, every item's class is drawn
    from its posterior given that draw: the joint posterior of the labels,
    with the raters' uncertainty in it, as Carpenter (item-difficulty
    paper) recommends for building a training set (rather than each
    item's most probable label).  A Gibbs sampler draws the labels inside
    the chain.

    Parameters
    ----------
    model : fitted model
    X : ratings the model was fitted to
    n_samples : int, default=100
        Label sets to draw (ignored when ``samples`` is given: one per draw).
    samples : dict, default=None
        Draws from :func:`posterior_samples`.
    random_state : int, RandomState instance or None, default=None
    **kwargs
        Passed to :func:`posterior_samples` (``y``, ``method``,
        ``n_burnin``, ...).

    Returns
    -------
    labels : ndarray of shape (n_samples, n_items)
        One label set per row, on the scale of ``classes_``.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.uncertainty import sample_labels
    >>> ratings = load_caries().ratings
    >>> model = DawidSkene().fit(ratings)
    >>> sample_labels(model, ratings, 20, random_state=0).shape
    (20, 3869)
    """
    rng = check_random_state(random_state)
    if samples is None:
        method = kwargs.pop("method", "auto")
        _check_model(model)
        if _check_method(method) == "gibbs":
            n_burnin, thin = kwargs.pop("n_burnin", None), kwargs.pop("thin", None)
            y = kwargs.pop("y", None)
            _reject_unknown(kwargs)
            labels = _draw(model, X, n_samples, "gibbs", rng, n_burnin, thin, True, y)[3]
            return model.classes_[labels]
        samples = posterior_samples(model, X, n_samples, method=method, random_state=rng,
                                    **kwargs)
    codes = []
    for proba in _probas_at_draws(model, X, samples, kwargs.get("y")):
        cdf = np.cumsum(proba, axis=1)
        u = rng.random(len(proba))[:, None] * cdf[:, -1:]
        codes.append(np.minimum((u > cdf).sum(axis=1), proba.shape[1] - 1))
    return model.classes_[np.stack(codes)]
