"""scikit-learn's estimator checks over every public skcrowd estimator."""

import inspect

from sklearn.utils.estimator_checks import parametrize_with_checks

import skcrowd
from skcrowd._base import CrowdEstimator


def all_estimators():
    """Every public estimator class, found from ``skcrowd.__all__``."""
    classes = [getattr(skcrowd, name) for name in skcrowd.__all__]
    return sorted(
        (c for c in classes if inspect.isclass(c) and issubclass(c, CrowdEstimator)),
        key=lambda c: c.__name__,
    )


def fast_instance(cls):
    """An instance with few iterations and restarts so the checks stay quick."""
    params = {"max_iter": 5, "n_init": 1}
    accepted = cls().get_params()
    return cls(**{k: v for k, v in params.items() if k in accepted})


# scikit-learn's sparse-input check assumes that an estimator with
# ``predict_proba`` is a classifier whose probability columns are the classes
# of ``y`` (2 or 4).  skcrowd's columns are the classes of the ratings in X:
# in that check every stored entry is 1, so there is one column.  Sparse input
# itself is supported and tested in test_ratings.py / test_api.py.
SPARSE_CHECK_REASON = (
    "sklearn's check expects predict_proba to have y's classes as columns; "
    "skcrowd's columns are the rating classes of X (sparse input is tested "
    "separately)"
)


def expected_failed_checks(estimator):
    return {
        "check_estimator_sparse_array": SPARSE_CHECK_REASON,
        "check_estimator_sparse_matrix": SPARSE_CHECK_REASON,
    } | getattr(estimator, "_expected_failed_checks", dict)()


# Strict: an expected failure that starts to pass (or a check that fails in
# a new way is listed here) shows up instead of hiding as XPASS.
@parametrize_with_checks(
    [fast_instance(c) for c in all_estimators()],
    expected_failed_checks=expected_failed_checks,
    xfail_strict=True,
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_every_estimator_is_checked():
    names = {c.__name__ for c in all_estimators()}
    assert {"DawidSkene", "MajorityVote", "MeanRating", "MedianRating"} <= names
