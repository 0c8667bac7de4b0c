"""Scale-out on Dask (DESIGN §9): the fit loop over partitions of items.

``fit`` accepts a dask DataFrame in long form (columns ``item``, ``rater``,
``label``).  The frame is shuffled by item once, so that an item never spans
two partitions (checked), and each partition is encoded once on its worker
into a :class:`~skcrowd._ratings.RatingData` that stays there.  Each
iteration then runs the model's own ``_local_step`` on every partition (one
data pass, on the workers), brings back only the small ``stats``, sums them
in partition order (a model may name stats combined by their maximum) and
runs ``_global_update`` on the client - the loop of ``_base.CrowdModel``
unchanged.  Item-level results come back as dask collections
(``predict_proba`` / ``predict`` / ``score_samples`` via ``map_partitions``).

Only models whose global update and objective need nothing but the summed
statistics and the data's sizes run here (``_supports_dask``): DawidSkene,
IRT3PL, MACE and GLAD, whose per-item warm starts stay on the workers.  Dask is
imported only when a dask collection is passed.
"""

from functools import reduce

import numpy as np

from ._ratings import RatingData, Ratings, encode_labels, fit_classes, long_columns

COLUMNS = ("item", "rater", "label")


def is_dask_frame(X):
    """Whether ``X`` is a dask DataFrame (without importing dask)."""
    return (type(X).__module__.split(".")[0] in ("dask", "dask_expr")
            and hasattr(X, "map_partitions") and hasattr(X, "columns"))


def _check_frame(estimator, frame):
    if not getattr(estimator, "_supports_dask", False):
        raise ValueError(
            f"{type(estimator).__name__} does not run on Dask; fit it on a Ratings or a "
            "matrix, or use DawidSkene, GLAD, IRT3PL or MACE for a dask DataFrame."
        )
    try:
        columns = long_columns(frame.columns)
    except ValueError:
        columns = None
    if columns is None:
        raise ValueError(
            f"A dask DataFrame of ratings needs the columns {list(COLUMNS)} (or "
            f"crowd-kit's task, worker, label); it has {list(frame.columns)}."
        )
    # The in-memory rules (the data layer): crowd-kit's names are renamed,
    # other columns dropped, and a row without a label is not a rating.
    frame = frame[list(columns)]
    if tuple(columns) != COLUMNS:
        frame = frame.rename(columns=dict(zip(columns, COLUMNS)))
    return frame.dropna(subset=["label"])


def _client():
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover - the dask extra brings distributed
        raise ImportError("Fitting on a dask DataFrame needs dask.distributed: "
                          "pip install 'skcrowd[dask]'.") from None
    try:
        return get_client()
    except ValueError:
        raise ValueError(
            "Fitting on a dask DataFrame needs a running dask.distributed Client "
            "(for example Client(LocalCluster()))."
        ) from None


def _encode_partition(frame, rater_ids, classes):
    """One partition as (item ids, RatingData) with the fit's codes."""
    ratings = Ratings(frame["item"].to_numpy(), frame["rater"].to_numpy(),
                      frame["label"].to_numpy(), rater_ids=rater_ids)
    data = RatingData(ratings._item, ratings._rater, encode_labels(ratings.label, classes),
                      ratings._item_ptr, n_raters=len(rater_ids), n_classes=len(classes))
    return ratings.item_ids, data


def _partition_stats(part, model, params):
    """The model's local step on one partition; its stats for the client."""
    return model._local_step(part[1], params)[1]


def _partition_step(part, state, model, params):
    """The local step of a model with per-item warm starts
    (``_dask_item_state``, GLAD's b): ``_dask_local_params`` merges the
    partition's previous ``state`` into the step's parameters; returns the
    stats for the client and the new state, which stays on the workers as
    a future for the next iteration."""
    data = part[1]
    local = model._dask_local_params(data, params, state or {})
    stats = dict(model._local_step(data, local)[1])
    return stats, {key: stats.pop(key) for key in model._dask_item_state}


def _first(pair):
    return pair[0]


def _second(pair):
    return pair[1]


def _partition_call(part, fn, *args):
    return fn(part[1], *args)


def _n_items(part):
    return part[1].n_items


def _sum(stats, maxima=()):
    """Combine a list of stats dicts key by key, in list order
    (deterministic): a sum, or the maximum for the keys in ``maxima``."""
    def combine(key):
        parts = [s[key] for s in stats]
        if key in maxima:
            return reduce(np.maximum, parts)
        return reduce(lambda a, b: a + b, parts)
    return {key: combine(key) for key in stats[0]}


class DaskRatingData:
    """Encoded ratings held by the workers, one RatingData per partition.

    Has the sizes of a RatingData (``n_items``, ``n_raters``, ``n_classes``,
    ``n_ratings``) so that the global update and objective run unchanged.
    """

    def __init__(self, client, parts, n_raters, n_classes, n_ratings):
        self.client = client
        self.parts = parts
        self.n_raters = int(n_raters)
        self.n_classes = int(n_classes)
        self.n_ratings = int(n_ratings)
        self._model = self._model_future = None
        self._states = [None] * len(parts)
        self.n_items = int(sum(client.gather(client.map(_n_items, parts, pure=False))))

    @property
    def n_partitions(self):
        return len(self.parts)

    def local_stats(self, model, params):
        """The model's local step on every partition; stats summed in order.

        The model (its hyperparameters) goes to the workers once per fit;
        the global parameters, small, travel with each iteration's tasks.
        """
        if self._model is not model:
            self._model = model
            self._model_future = self.client.scatter(model, broadcast=True, hash=False)
            self._states = [None] * len(self.parts)
        if getattr(model, "_dask_item_state", ()):
            # Item state goes from each task to the same partition's next
            # task as a future; a restart's first step ignores it (the
            # model's _dask_local_params starts fresh without a shift).
            steps = self.client.map(_partition_step, self.parts, self._states,
                                    model=self._model_future, params=params, pure=False)
            self._states = self.client.map(_second, steps, pure=False)
            futures = self.client.map(_first, steps, pure=False)
        else:
            futures = self.client.map(_partition_stats, self.parts, model=self._model_future,
                                      params=params, pure=False)
        return _sum(self.client.gather(futures), getattr(model, "_stats_maxima", ()))

    def checkpoint(self):
        """The partitions' item state (futures), to go back to it when the
        fit loop rejects an extrapolated step."""
        return (self._model, list(self._states))

    def restore(self, checkpoint):
        """Go back to the item state of :meth:`checkpoint`."""
        model, states = checkpoint
        if model is self._model:
            self._states = list(states)

    def map_sum(self, fn, *per_part_args):
        """``fn(part_data, *args)`` on each partition (args given per partition), summed."""
        futures = self.client.map(_partition_call, self.parts, [fn] * len(self.parts),
                                  *per_part_args, pure=False)
        return _sum(self.client.gather(futures))


def encode_frame(estimator, frame):
    """Set ``classes_``, ``rater_ids_``, ``n_features_in_`` from a dask
    DataFrame and encode its partitions on the workers."""
    import dask

    frame = _check_frame(estimator, frame)
    client = _client()
    rater_counts, labels, n_ratings, n_unique_items = dask.compute(
        frame["rater"].value_counts(dropna=False), frame["label"].drop_duplicates(),
        frame.shape[0], frame["item"].nunique())
    raters = rater_counts.index.to_series()
    if n_ratings == 0:
        raise ValueError("X has no ratings: the dask DataFrame is empty, nothing to fit.")
    if raters.isna().any():
        raise ValueError("A rating has a missing rater id (NaN or None); drop it first.")
    rater_ids = np.sort(raters.to_numpy())
    fit_classes(estimator, labels.to_numpy())
    classes = estimator.classes_
    # One shuffle so that every item's ratings sit in one partition.
    shuffled = frame.shuffle(on="item")
    pieces = client.compute(shuffled.to_delayed())
    parts = client.map(_encode_partition, pieces, rater_ids=rater_ids, classes=classes,
                       pure=False)
    data = DaskRatingData(client, parts, len(rater_ids), len(classes), n_ratings)
    if data.n_items != n_unique_items:
        raise ValueError(  # pragma: no cover - a broken shuffle, not user input
            f"After shuffling by item, partitions hold {data.n_items} items but the "
            f"frame has {n_unique_items}: an item spans two partitions."
        )
    estimator.rater_ids_ = rater_ids
    estimator.n_features_in_ = len(rater_ids)
    estimator._rater_counts = rater_counts.loc[rater_ids].to_numpy()
    return data


def _infer_partition(frame, model, what):
    import pandas as pd

    columns = list(model.classes_)
    if len(frame) == 0:
        index = pd.Index([], name="item", dtype=frame["item"].dtype)
        if what == "proba":
            return pd.DataFrame(np.zeros((0, len(columns))), columns=columns, index=index)
        if what == "loglik":
            return pd.Series(np.zeros(0), name="loglik", index=index)
        return pd.Series(np.zeros(0, dtype=model.classes_.dtype), name="label", index=index)
    ratings = Ratings(frame["item"].to_numpy(), frame["rater"].to_numpy(),
                      frame["label"].to_numpy())
    data = model._encode(ratings, reset=False)
    index = pd.Index(ratings.item_ids, name="item")
    if what == "loglik":
        return pd.Series(model._score_items(data), index=index, name="loglik")
    items = model._infer_items(data)
    if what == "proba":
        return pd.DataFrame(items["proba"], index=index, columns=columns)
    return pd.Series(model._predict_from_items(items), index=index, name="label")


def infer_frame(model, frame, what):
    """Per-item posteriors (``what="proba"``, a dask DataFrame indexed by item
    with one column per class), labels (``"label"``) or log marginal
    likelihoods (``"loglik"``), both dask Series indexed by item."""
    import pandas as pd

    frame = _check_frame(model, frame)
    shuffled = frame.shuffle(on="item")
    index = pd.Index([], name="item", dtype=frame["item"].dtype)
    if what == "proba":
        meta = pd.DataFrame(np.zeros((0, len(model.classes_))), columns=list(model.classes_),
                            index=index)
    elif what == "loglik":
        meta = pd.Series(np.zeros(0), name="loglik", index=index)
    else:
        meta = pd.Series(np.zeros(0, dtype=model.classes_.dtype), name="label", index=index)
    return shuffled.map_partitions(_infer_partition, model, what, meta=meta)
