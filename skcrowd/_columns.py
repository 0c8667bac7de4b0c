"""The column names of the per-class results (``predict_proba``)."""

from sklearn.utils._set_output import _get_output_config


def class_columns(estimator):
    """The names of the per-class columns of a pandas result of
    ``estimator``: the classes themselves, their dtype kept (``proba[1]``
    for the class 1, as ``classes_`` and ``predict`` give it), except when
    ``set_output(transform="pandas")`` is configured, where scikit-learn
    names every transform output by ``get_feature_names_out()``, which are
    strings: the same strings then for ``predict_proba``, so that
    ``transform`` and ``predict_proba`` of one model agree."""
    if _get_output_config("transform", estimator)["dense"] == "pandas":
        return estimator.get_feature_names_out()
    return estimator.classes_.copy()
