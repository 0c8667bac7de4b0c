"""Simulators of each model, returning ratings, true labels and the true
parameters, for parameter-recovery tests and benchmarks."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval, validate_params

from .._base import draw_categorical
from .._ratings import Ratings

__all__ = ["make_dawid_skene", "random_design"]

#: ``validate_params`` constraints of the simulators' design parameters
SIZES = {
    "n_items": [Interval(Integral, 1, None, closed="left")],
    "n_raters": [Interval(Integral, 1, None, closed="left")],
    "ratings_per_item": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
}
#: ... and of the probability of a simulated rater being a spammer
FRACTION = [Interval(Real, 0, 1, closed="both")]


def random_design(n_items, n_raters, ratings_per_item, rng):
    """Item and rater of each rating: every item rated by ``ratings_per_item``
    distinct raters drawn uniformly (vectorised; items in order)."""
    if ratings_per_item > n_raters:
        raise ValueError(
            f"ratings_per_item={ratings_per_item} exceeds n_raters={n_raters}."
        )
    # a RandomState (check_random_state) or a numpy Generator
    integers = rng.integers if hasattr(rng, "integers") else rng.randint
    item = np.repeat(np.arange(n_items), ratings_per_item)
    # The first r columns of a random permutation per item: argsort of noise,
    # done in chunks so the (n_items, n_raters) noise stays small.
    rater = np.empty((n_items, ratings_per_item), dtype=np.int64)
    chunk = max(1, 2_000_000 // max(n_raters, 1))
    for start in range(0, n_items, chunk):
        stop = min(n_items, start + chunk)
        if ratings_per_item * 4 < n_raters:
            # Sparse designs: draw with replacement and redraw the repeats.
            draw = integers(0, n_raters, size=(stop - start, ratings_per_item))
            draw.sort(axis=1)
            while True:
                dup = np.zeros_like(draw, dtype=bool)
                dup[:, 1:] = draw[:, 1:] == draw[:, :-1]
                if not dup.any():
                    break
                draw[dup] = integers(0, n_raters, size=dup.sum())
                draw.sort(axis=1)
            rater[start:stop] = draw
        else:
            noise = rng.random((stop - start, n_raters))
            rater[start:stop] = np.argsort(noise, axis=1)[:, :ratings_per_item]
    return item, rater.ravel()


def generator_and_prior(random_state, class_prior, n_classes):
    """A numpy Generator seeded from ``random_state`` (:func:`random_design`
    needs one) and the class prevalence: uniform, or ``class_prior``
    checked (the simulators of GLAD and MACE)."""
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    rng = np.random.default_rng(seed)
    if class_prior is None:
        return rng, np.full(n_classes, 1.0 / n_classes)
    return rng, check_class_prior(class_prior, n_classes)


def check_class_prior(class_prior, n_classes):
    """``class_prior`` as an array of ``n_classes`` probabilities, checked."""
    prior = np.asarray(class_prior, dtype=np.float64)
    if prior.shape != (n_classes,) or np.any(prior < 0) or not np.isclose(prior.sum(), 1):
        raise ValueError(
            f"class_prior must be {n_classes} non-negative numbers summing to 1; "
            f"got {class_prior!r}."
        )
    return prior


@validate_params(
    {
        **SIZES,
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "accuracy": ["array-like"],
        "spammer_fraction": FRACTION,
        "class_prior": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def make_dawid_skene(
    n_items=1000,
    n_raters=20,
    ratings_per_item=5,
    n_classes=2,
    *,
    accuracy=(0.6, 0.95),
    spammer_fraction=0.0,
    class_prior=None,
    random_state=None,
):
    """Ratings simulated from the Dawid–Skene model.

    Each rater's confusion row for class k puts ``a_j`` on k, with ``a_j``
    uniform in ``accuracy``, and spreads ``1 - a_j`` over the other classes
    with Dirichlet(1) weights.  A spammer answers from one random
    distribution whatever the truth (rows all equal).

    Parameters
    ----------
    n_items, n_raters, ratings_per_item, n_classes : int
    accuracy : (float, float), default=(0.6, 0.95)
    spammer_fraction : float, default=0.0
    class_prior : array-like of shape (n_classes,), default=None
        Default: Dirichlet(5, ..., 5) draw.
    random_state : int, RandomState instance or None

    Returns
    -------
    data : Bunch
        ``ratings`` (:class:`~skcrowd.Ratings`, labels 0..K-1), ``X``
        (the same as a dense ``(n_items, n_raters)`` matrix with NaN),
        ``true_labels`` (n_items,), ``confusion`` (n_raters, K, K),
        ``class_prior`` (K,), ``spammer`` (bool per rater).

    Examples
    --------
    >>> from skcrowd import DawidSkene
    >>> from skcrowd.datasets import make_dawid_skene
    >>> data = make_dawid_skene(200, 10, 3, 2, random_state=0)
    >>> data.ratings
    Ratings(n_items=200, n_raters=10, n_ratings=600)
    >>> model = DawidSkene().fit(data.ratings)
    >>> model.confusion_.shape == data.confusion.shape
    True
    """
    bounds = np.asarray(accuracy, dtype=np.float64)
    if bounds.shape != (2,) or not 0 <= bounds[0] <= bounds[1] <= 1:
        raise ValueError(
            f"accuracy must be (low, high) with 0 <= low <= high <= 1; got {accuracy!r}."
        )
    rng = check_random_state(random_state)
    K = n_classes
    prior = (
        rng.dirichlet(np.full(K, 5.0)) if class_prior is None
        else check_class_prior(class_prior, K)
    )
    confusion = np.empty((n_raters, K, K))
    right = rng.uniform(accuracy[0], accuracy[1], size=n_raters)
    for j in range(n_raters):
        for k in range(K):
            wrong = rng.dirichlet(np.ones(K - 1)) * (1 - right[j])
            confusion[j, k] = np.insert(wrong, k, right[j])
    spammer = rng.random(n_raters) < spammer_fraction
    confusion[spammer] = rng.dirichlet(np.ones(K), size=spammer.sum())[:, None, :]
    true_labels = rng.choice(K, size=n_items, p=prior)
    item, rater = random_design(n_items, n_raters, ratings_per_item, rng)
    label = draw_categorical(confusion[rater, true_labels[item]], rng)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items), rater_ids=np.arange(n_raters))
    return Bunch(
        ratings=ratings,
        X=ratings.to_dense(),
        true_labels=true_labels,
        confusion=confusion,
        class_prior=prior,
        spammer=spammer,
    )
