"""Plots of fitted models: raters, items, model checks and convergence.

matplotlib is optional (``pip install "skcrowd[plot]"``) and imported only
when a function draws.  Every function takes ``ax=`` (an existing Axes, or
for :func:`plot_confusion_matrices` an array of Axes) and returns what it
drew on, so plots compose into a user's own figures.
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._ratings import check_positive_int

__all__ = [
    "plot_confusion_matrices",
    "plot_convergence",
    "plot_item_uncertainty",
    "plot_ordinal_raters",
    "plot_predictive_check",
    "plot_rater_ranking",
    "plot_sensitivity_specificity",
]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'skcrowd.plotting needs matplotlib: pip install "skcrowd[plot]"'
        ) from exc
    return plt


def _axes(ax):
    if ax is None:
        # constrained layout: the labels inside the figure at any size (a
        # default-size savefig cut off the y label of long tick labels)
        _, ax = _pyplot().subplots(layout="constrained")
    return ax


def _rater_names(model):
    return [str(r) for r in getattr(model, "rater_ids_", range(model.n_features_in_))]


def _binary_rates(model):
    """(sensitivity, specificity) per rater of a fitted binary model."""
    check_is_fitted(model)
    if hasattr(model, "sensitivity_") and hasattr(model, "specificity_"):
        return np.asarray(model.sensitivity_), np.asarray(model.specificity_)
    confusion = getattr(model, "confusion_", None)
    if confusion is not None and confusion.shape[1] == 2:
        # confusion_[j, true, given]: class 1 is the positive class
        return confusion[:, 1, 1], confusion[:, 0, 0]
    raise ValueError(
        f"{type(model).__name__} has no per-rater sensitivity and specificity: "
        "use a binary DawidSkene or IRT3PL."
    )


def plot_confusion_matrices(model, *, raters=None, ncols=4, ax=None):
    """Draw each rater's confusion matrix, one panel per rater, in a grid.

    Parameters
    ----------
    model : fitted estimator with ``confusion_``
        For example :class:`~skcrowd.DawidSkene`; ``confusion_[j, k, l]`` is
        the probability that rater ``j`` gives label ``l`` to an item of true
        class ``k``.
    raters : array-like of int, default=None
        Column indices of the raters to draw; default: all of them.
    ncols : int, default=4
        Panels per row of the grid (when ``ax`` is None).
    ax : array-like of matplotlib Axes, default=None
        At least ``len(raters)`` Axes to draw on; default: a new figure.
        Spare Axes are hidden.

    Returns
    -------
    axes : ndarray of matplotlib Axes
        The flattened grid; ``axes[i]`` holds rater ``raters[i]``.

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import make_dawid_skene
    >>> from skcrowd.plotting import plot_confusion_matrices
    >>> data = make_dawid_skene(200, 6, 4, 3, random_state=0)
    >>> model = DawidSkene().fit(data.ratings)
    >>> axes = plot_confusion_matrices(model, raters=[0, 1, 2])
    >>> axes[0].get_title()
    'rater 0'
    """
    check_is_fitted(model)
    confusion = getattr(model, "confusion_", None)
    if confusion is None:
        raise ValueError(f"{type(model).__name__} has no confusion_ matrices.")
    n_raters, n_classes, _ = confusion.shape
    raters = np.arange(n_raters) if raters is None else np.asarray(raters)
    if raters.ndim != 1 or len(raters) == 0:
        raise ValueError("raters must be a non-empty list of rater column indices.")
    if raters.dtype.kind not in "iu":
        # read with dtype=int, 0.5 drew rater 0 and '1' rater 1 without a
        # word, and a rater id 'x' raised "invalid literal for int()"
        raise ValueError(
            "raters must be rater column indices (integers, positions in "
            f"rater_ids_); got {raters.tolist()!r}."
        )
    if raters.min() < 0 or raters.max() >= n_raters:
        raise ValueError(f"raters must be column indices in [0, {n_raters}).")
    if ax is None:
        # ncols=0 or -1 drew one column and None raised int()'s TypeError
        ncols = check_positive_int(ncols, "ncols", "the panels per row")
        ncols = min(ncols, len(raters))
        nrows = -(-len(raters) // ncols)
        _, ax = _pyplot().subplots(nrows, ncols, figsize=(2.4 * ncols, 2.3 * nrows),
                                   squeeze=False, constrained_layout=True)
    axes = np.asarray(ax, dtype=object).ravel()
    if len(axes) < len(raters):
        raise ValueError(f"ax has {len(axes)} Axes for {len(raters)} raters.")
    names = _rater_names(model)
    classes = [str(c) for c in model.classes_]
    ticks = np.arange(n_classes)
    for panel, j in zip(axes, raters):
        panel.imshow(confusion[j], vmin=0, vmax=1, cmap="Blues")
        for k in range(n_classes):
            for label in range(n_classes):
                value = confusion[j, k, label]
                panel.text(label, k, f"{value:.2f}", ha="center", va="center",
                           fontsize=7, color="white" if value > 0.6 else "black")
        panel.set_xticks(ticks, classes, fontsize=7)
        panel.set_yticks(ticks, classes, fontsize=7)
        panel.set_title(f"rater {names[j]}", fontsize=9)
        panel.set_xlabel("given label", fontsize=8)
        panel.set_ylabel("true class", fontsize=8)
    for panel in axes[len(raters):]:
        panel.set_visible(False)
    return axes


def plot_sensitivity_specificity(model, *, ax=None, annotate=False):
    """Rater sensitivity against specificity, with the spam line.

    A rater on the line sensitivity + specificity = 1 gives labels that do
    not depend on the true class (a spammer, whatever its bias); raters below
    it are adversarial.  Distance above the line (Youden's J = sensitivity +
    specificity - 1) measures how informative a rater is.

    Parameters
    ----------
    model : fitted binary DawidSkene or IRT3PL
        Sensitivity is P(label 1 | class 1) and specificity P(label 0 |
        class 0), read from ``sensitivity_``/``specificity_`` or from a
        two-class ``confusion_``.
    ax : matplotlib Axes, default=None
    annotate : bool, default=False
        Write each rater's id beside its point.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_rte
    >>> from skcrowd.plotting import plot_sensitivity_specificity
    >>> data = load_rte()
    >>> ax = plot_sensitivity_specificity(DawidSkene().fit(data.ratings))
    >>> len(ax.collections[0].get_offsets())  # one point per rater
    164
    """
    sensitivity, specificity = _binary_rates(model)
    ax = _axes(ax)
    informativeness = sensitivity + specificity - 1
    points = ax.scatter(specificity, sensitivity, c=informativeness, cmap="coolwarm_r",
                        vmin=-1, vmax=1, s=18, edgecolors="k", linewidths=0.3)
    ax.plot([0, 1], [1, 0], ls="--", c="k", lw=1, label="spam line: sens + spec = 1")
    if annotate:
        for name, x, y in zip(_rater_names(model), specificity, sensitivity):
            ax.annotate(name, (x, y), fontsize=6, xytext=(2, 2),
                        textcoords="offset points")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="specificity",
           ylabel="sensitivity", aspect="equal")
    ax.legend(loc="lower left", fontsize=8)
    ax.figure.colorbar(points, ax=ax, label="sens + spec - 1")
    return ax


#: per-rater quality measures, in the order a model's own is looked for
#: (MACE has an accuracy too, but its spam measure is the competence;
#: OrdinalMixture's spam measure is the reliability, beside its precision),
#: with the axis label of each
_RANKING_ATTRIBUTES = {
    "rater_competence_": "competence θ (P(rater knows the label))",
    "rater_reliability_": "reliability ε (P(rating is genuine))",
    "rater_ability_": "ability α",
    "rater_accuracy_": "accuracy (P(label is the true class))",
    "rater_agreement_": "agreement (share of ratings equal to the item's majority)",
    "rater_precision_": "precision E τ",
}


def _ranking_measure(model, attribute):
    """The per-rater values and axis label of ``attribute`` (None: the
    model's own quality measure, the first of :data:`_RANKING_ATTRIBUTES` it
    has, else sensitivity + specificity - 1)."""
    if attribute is None:
        attribute = next((a for a in _RANKING_ATTRIBUTES if hasattr(model, a)), None)
        if attribute is None and hasattr(model, "sensitivity_"):
            attribute = "youden"
        if attribute is None:
            raise ValueError(f"{type(model).__name__} has no per-rater quality to rank.")
    if attribute == "youden":
        sensitivity, specificity = _binary_rates(model)
        return sensitivity + specificity - 1, "sensitivity + specificity - 1", attribute
    if not hasattr(model, attribute):
        raise ValueError(f"{type(model).__name__} has no attribute {attribute!r}.")
    label = _RANKING_ATTRIBUTES.get(attribute, attribute)
    return getattr(model, attribute), f"{label}, {type(model).__name__}", attribute


def plot_rater_ranking(model, *, attribute=None, top=None, ax=None):
    """Raters sorted by a per-rater quality, as horizontal bars.

    Parameters
    ----------
    model : fitted estimator
        Ranked by its own rater-quality measure: :class:`~skcrowd.MACE` by
        ``rater_competence_`` (how often the rater knows the label rather
        than spams), :class:`~skcrowd.OrdinalMixture` by
        ``rater_reliability_``, :class:`~skcrowd.GLAD` by
        ``rater_ability_``, :class:`~skcrowd.DawidSkene` by
        ``rater_accuracy_``, :class:`~skcrowd.MajorityVote` (and the other
        baselines) by ``rater_agreement_`` (the ``agreement`` column of
        ``rater_table()``), and :class:`~skcrowd.IRT3PL` (a model with
        ``sensitivity_``/``specificity_``) by sensitivity + specificity - 1.
    attribute : str, default=None
        The fitted attribute to rank by (one number per rater), or
        ``"youden"`` for sensitivity + specificity - 1.  Default: the
        model's own measure, above.
    top : int, default=None
        Draw only the ``top`` best and ``top`` worst raters.
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from skcrowd import MACE
    >>> from skcrowd.datasets import load_bluebirds
    >>> from skcrowd.plotting import plot_rater_ranking
    >>> data = load_bluebirds()
    >>> ax = plot_rater_ranking(MACE(random_state=0).fit(data.ratings))
    >>> len(ax.patches)  # one bar per rater
    39
    >>> ax.get_xlabel()
    'competence θ (P(rater knows the label)), MACE'
    """
    check_is_fitted(model)
    values, label, attribute = _ranking_measure(model, attribute)
    names = np.asarray(_rater_names(model))
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.shape != names.shape:
        # confusion_ (one matrix per rater) reached matplotlib's "shape
        # mismatch: objects cannot be broadcast", classes_ drew K bars
        # named after the first K raters
        raise ValueError(f"attribute {attribute!r} is not one number per rater "
                         f"({len(names)} raters) of {type(model).__name__}.")
    order = np.argsort(values, kind="stable")
    if top is not None:
        top = check_positive_int(top, "top", "the number of best and of worst raters")
    if top is not None and 2 * top < len(order):
        order = np.concatenate([order[:top], order[-top:]])
    ax = _axes(ax)
    positions = np.arange(len(order))
    ax.barh(positions, values[order], color="tab:blue")
    ax.set_yticks(positions, names[order], fontsize=6 if len(order) > 30 else 8)
    ax.set(xlabel=label, ylabel="rater", title="raters, worst to best")
    return ax


def plot_ordinal_raters(model, *, ax=None):
    """OrdinalMixture raters: reliability ε against precision E τ.

    Reliability is the probability that a rating is genuine rather than
    spam (``rater_reliability_``); precision is how close a genuine rating
    falls to the item's truth (``rater_precision_``).  Spammers sit on the
    left whatever their precision.  The precision axis is linear: the
    fitted precisions are shrunk towards their prior and span a narrow
    range (0.5 to 2.7 on TREC 2010).

    Parameters
    ----------
    model : fitted OrdinalMixture
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from skcrowd import OrdinalMixture
    >>> from skcrowd.datasets import make_ordinal
    >>> from skcrowd.plotting import plot_ordinal_raters
    >>> data = make_ordinal(300, 20, 5, random_state=0)
    >>> model = OrdinalMixture(n_init=1, random_state=0).fit(data.ratings)
    >>> ax = plot_ordinal_raters(model)
    >>> ax.get_yscale()
    'linear'
    """
    check_is_fitted(model)
    if not (hasattr(model, "rater_reliability_") and hasattr(model, "rater_precision_")):
        raise ValueError(
            f"{type(model).__name__} has no rater_reliability_ and rater_precision_: "
            "use an OrdinalMixture."
        )
    ax = _axes(ax)
    # a linear axis: a log one over this narrow range printed ticks such as
    # 2x10^0 and 6x10^-1
    ax.scatter(model.rater_reliability_, model.rater_precision_, s=16,
               edgecolors="k", linewidths=0.3)
    ax.set(xlim=(-0.02, 1.02), xlabel="reliability ε (P(rating is genuine))",
           ylabel="precision E τ", title="raters")
    return ax


def plot_item_uncertainty(model, X, *, bins=20, log=False, ax=None):
    """Histogram of each item's posterior probability of its inferred label.

    Items near 1 are settled by their ratings; items near 1 / n_classes are
    the ones worth another rating or an expert's look.

    Parameters
    ----------
    model : fitted estimator with ``predict_proba``
    X : ratings
        The items to describe, in any form the model accepts.
    bins : int, default=20
    log : bool, default=False
        Log-scale counts, to show the few uncertain items beside the many
        settled ones.
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_dog
    >>> from skcrowd.plotting import plot_item_uncertainty
    >>> data = load_dog()
    >>> model = DawidSkene().fit(data.ratings)
    >>> ax = plot_item_uncertainty(model, data.ratings)
    >>> len(ax.patches)  # one bar per bin
    20
    """
    check_is_fitted(model)
    confidence = np.max(np.asarray(model.predict_proba(X)), axis=1)
    n_classes = len(model.classes_)
    ax = _axes(ax)
    bins = check_positive_int(bins, "bins", "the number of histogram bins")
    ax.hist(confidence, bins=np.linspace(1 / n_classes, 1, bins + 1),
            color="tab:blue", edgecolor="white")
    ax.axvline(np.mean(confidence), c="k", ls="--",
               label=f"mean {np.mean(confidence):.3f}")
    ax.set(xlabel="posterior probability of the inferred label", ylabel="items",
           title=f"{len(confidence)} items")
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    return ax


def plot_predictive_check(check, statistic="ratings", *, ax=None, log=None):
    """Replicated against observed values of one posterior predictive statistic.

    Parameters
    ----------
    check : PredictiveCheck
        The result of :func:`skcrowd.checks.posterior_predictive_check`.
    statistic : {"ratings", "rater"}, default="ratings"
        ``"ratings"``: the histogram over items of the number of positive
        ratings of an item; ``"rater"``: the positive ratings of each rater.
    ax : matplotlib Axes, default=None
    log : bool, default=None
        Log-scale y axis; default: for ``"ratings"``, whose counts span
        orders of magnitude.

    Returns
    -------
    ax : matplotlib Axes
        Boxes: the replicates of each component; red dots: the data.

    Examples
    --------
    >>> from skcrowd import IRT3PL
    >>> from skcrowd.checks import posterior_predictive_check
    >>> from skcrowd.datasets import load_caries
    >>> from skcrowd.plotting import plot_predictive_check
    >>> caries = load_caries().ratings
    >>> model = IRT3PL.from_tag("abc", random_state=0).fit(caries)
    >>> check = posterior_predictive_check(model, caries, n_replicates=100,
    ...                                    random_state=0)
    >>> ax = plot_predictive_check(check, "ratings")
    >>> len(ax.lines[-1].get_xdata())  # the data: items with 0..5 positives
    6
    """
    if not all(hasattr(check, name) for name in ("observed", "simulated", "p_values")):
        # a fitted model passed in place of its check raised "AttributeError:
        # 'DawidSkene' object has no attribute 'observed'"
        raise TypeError(
            "check must be the result of posterior_predictive_check(model, X) (a "
            f"PredictiveCheck); got {type(check).__name__}."
        )
    if statistic not in check.observed:
        raise ValueError(
            f"statistic must be one of {sorted(check.observed)}, got {statistic!r}."
        )
    simulated = np.asarray(check.simulated[statistic])
    observed = np.asarray(check.observed[statistic])
    ax = _axes(ax)
    positions = np.arange(len(observed))
    ax.boxplot(simulated, positions=positions, showfliers=False)
    ax.plot(positions, observed, "o", color="tab:red", label="data")
    p_value = check.p_values.get(statistic)
    if p_value is not None:
        ax.set_title(f"{statistic} statistic, p = {p_value:.3f}")
    if statistic == "ratings":
        ax.set(xlabel="positive ratings of an item", ylabel="items")
    else:
        ax.set(xlabel="rater (component)", ylabel="positive ratings")
    if log if log is not None else statistic == "ratings":
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    return ax


def plot_convergence(model, *, ax=None):
    """The objective after each iteration of the kept restart.

    The objective (log posterior, or the ELBO of a variational model) never
    decreases; a curve still rising at ``max_iter`` is a fit that did not
    converge.

    Parameters
    ----------
    model : fitted estimator with ``objective_history_``
    ax : matplotlib Axes, default=None

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import load_rte
    >>> from skcrowd.plotting import plot_convergence
    >>> model = DawidSkene().fit(load_rte().ratings)
    >>> ax = plot_convergence(model)
    >>> len(ax.lines[0].get_ydata()) == len(model.objective_history_)
    True
    """
    check_is_fitted(model)
    history = getattr(model, "objective_history_", None)
    if history is None or len(history) == 0:
        raise ValueError(f"{type(model).__name__} has no objective_history_.")
    ax = _axes(ax)
    iterations = np.arange(1, len(history) + 1)
    ax.plot(iterations, history, marker="o", ms=3)
    state = "converged" if getattr(model, "converged_", True) else "not converged"
    ax.set(xlabel="iteration", ylabel="objective",
           title=f"{type(model).__name__}: {len(history)} iterations, {state}")
    return ax
