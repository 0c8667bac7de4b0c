"""Scale-out on Dask: the fit loop over partitions of items.

``fit`` accepts a dask DataFrame in long form (columns ``item``, ``rater``,
``label``, or crowd-kit's ``task``, ``worker``, ``label``; OrdinalMixture
with ``difficulty="group"`` also reads a ``group`` column).  Each partition
is encoded once on its worker into a :class:`~skcrowd._ratings.RatingData`
that stays there.  A frame whose partitions already hold whole items (whole
groups) is used as it is; otherwise it is shuffled by item (group) once, and
the result is checked: an item (group) in two partitions is a ``ValueError``.

Each iteration then

- sends the global parameters once (one task holds them, which Dask can
  compute again);
- runs one task per partition, on the worker that holds the partition (on
  any other when that one is gone): the model's own local step (one data
  pass), whose result holds the per-item state (warm starts, posteriors)
  that the partition's next step reads;
- sums the small ``stats`` on the workers in a tree (a model may name stats
  combined by their maximum), so that the client receives one set of
  per-rater (per-class, per-group) statistics per iteration;
- runs ``_global_update`` and the objective on the client - the loop of
  ``_base.CrowdModel`` unchanged.

Restarts that run in client threads (OrdinalMixture) share each iteration's
tasks: one task per partition serves every restart still running.
Item-level results come back as dask collections (``predict_proba`` /
``predict`` / ``score_samples`` via ``map_partitions``).  Dask is imported
only when a dask collection is passed.

Everything a fit keeps on the cluster is Dask-managed data with a lineage
(see :class:`DaskRatingData`), so a worker lost during a fit costs a
recomputation of what it held, and the fit ends with the same numbers; a
fit that cannot go on (its client closed, no worker left) raises a
RuntimeError instead of waiting.
"""

import asyncio
import contextlib
import functools
import threading
from concurrent.futures import CancelledError, ThreadPoolExecutor
from functools import reduce
from numbers import Integral, Real
from time import perf_counter

import numpy as np

from ._columns import class_columns
from ._ratings import (NO_RATINGS, RatingData, Ratings, as_label_array, check_groups_present,
                       encode_labels, fit_classes, kept_label_dtype, label_categories,
                       long_columns, mixed_groups_error, mixed_ids_error, set_raters, show,
                       unique_codes)

#: The column conventions of a long-form frame: skcrowd's, then crowd-kit's.
CONVENTIONS = (("item", "rater", "label"), ("task", "worker", "label"))
COLUMNS = CONVENTIONS[0]
#: Partial sums are combined on the workers in groups of this many.
FAN_IN = 8



def is_dask_frame(X):
    """Whether ``X`` is a dask DataFrame (without importing dask)."""
    return (type(X).__module__.split(".")[0] in ("dask", "dask_expr")
            and hasattr(X, "map_partitions") and hasattr(X, "columns"))


def _standard_frame(estimator, frame, extra=()):
    """``frame`` with the columns ``item``, ``rater``, ``label`` (renamed
    from crowd-kit's convention) and the model's ``extra`` columns."""
    if not getattr(estimator, "_supports_dask", False):
        raise ValueError(
            f"{type(estimator).__name__} does not run on Dask; fit it on a Ratings or a "
            "matrix, or use DawidSkene, GLAD, IRT3PL, MACE or OrdinalMixture for a dask "
            "DataFrame."
        )
    complete = [cols for cols in CONVENTIONS if set(cols) <= set(frame.columns)]
    if len(complete) > 1:
        # the in-memory error (was: "needs the columns [...]", which it has)
        raise ValueError(
            f"The DataFrame has the columns of both long-form conventions {CONVENTIONS[0]} "
            f"and {CONVENTIONS[1]}; it is ambiguous which to use. Drop or rename one set, "
            "e.g. frame.drop(columns=[...])."
        )
    try:
        names = long_columns(frame.columns)  # the data layer's rule
    except ValueError:
        names = None
    if names is None:
        raise ValueError(
            "A dask DataFrame of ratings needs the columns ['item', 'rater', 'label'] "
            f"(or crowd-kit's ['task', 'worker', 'label']); it has {list(frame.columns)}. "
            "Rename them, e.g. frame.rename(columns={...})."
        )
    missing = [column for _, column in extra if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{type(estimator).__name__} needs the column(s) {missing} in the dask DataFrame "
            f"(it has {list(frame.columns)})."
        )
    # A label dtype that is never a label fails here, as in memory, not in
    # the shuffle (complex numbers: "P2P failed during transfer phase").
    dtype = frame.dtypes[names[2]]
    if isinstance(dtype, np.dtype):
        as_label_array(np.empty(0, dtype=dtype))
    # The in-memory rules: crowd-kit's names are renamed, other columns
    # dropped, and a row without a label is not a rating.
    columns = dict(zip(names, COLUMNS))
    columns.update({column: name for name, column in extra})
    return frame[list(columns)].rename(columns=columns).dropna(subset=["label"])


def _object_columns(frame):
    """The columns of ``frame`` that hold Python objects (dask keeps them
    with ``dataframe.convert-string`` off): they may hold values of several
    types, in one partition or in different ones."""
    return [name for name in frame.columns if frame.dtypes[name] == object]


def _shuffle_method(frame):
    """How to shuffle ``frame``: Dask's default (P2P), except for a frame
    with object columns.  P2P converts each partition to Arrow, which fails
    on an object column holding two types ("RuntimeError: P2P ... failed
    during transfer phase"; True and 1 included, which are one id in memory)
    or holding a different type in each of two partitions ("... failed
    during unpack phase"), before skcrowd's code sees the values; the task
    shuffle moves pandas frames and lets the in-memory checks name the
    problem."""
    return "tasks" if _object_columns(frame) else None


def _id_key(value):
    """The value of an id that the shuffle hashes: one value for the ids
    that are one id in memory (``True``, ``1`` and ``1.0`` compare equal),
    which Dask hashes apart in an object column (as the strings 'True', '1',
    '1.0'), putting one item in two partitions."""
    if isinstance(value, (Integral, np.bool_)):
        return int(value)
    if isinstance(value, Real) and float(value).is_integer():
        return int(value)
    return value


def _shuffle_keys(ids):
    """:func:`_id_key` of each id of a partition, as an object Series."""
    import pandas as pd

    if pd.api.types.infer_dtype(ids, skipna=True) in ("string", "empty"):
        return ids  # strings hash as themselves (the fast path)
    return ids.map(_id_key).astype(object)


def _id_column(frame, column):
    """``frame[column]``, or for an object column the ids as the shuffle
    hashes them (:func:`_shuffle_keys`)."""
    if frame.dtypes[column] != object:
        return frame[column]
    return frame[column].map_partitions(_shuffle_keys, meta=frame[column]._meta)


def _shuffled(frame, on):
    """``frame`` shuffled by its column ``on``: the ratings of one item
    (group) in one partition, also in an object column holding ids of
    several types that are one id in memory (``True``, ``1``, ``1.0``)."""
    if frame.dtypes[on] != object:
        return frame.shuffle(on=on, shuffle_method=_shuffle_method(frame))
    keyed = frame.assign(_shuffle_key=_id_column(frame, on))
    return keyed.shuffle(on="_shuffle_key", shuffle_method=_shuffle_method(frame)).drop(
        columns="_shuffle_key")


def _detached(error):
    """``error`` without the exceptions it was raised while handling.  An
    error that leaves a worker is pickled with its ``__context__``, also a
    suppressed one (``raise ... from None``), and numpy's exception for
    ``datetime64 < int`` (the context of the mixed-ids error for ids that
    mix dates with numbers) does not unpickle; distributed then sends
    ``Exception("ValueError('...')")`` instead of the ValueError."""
    error.__cause__ = error.__context__ = None
    return error


def _plain_errors(task):
    """``task`` (run on a worker) raising its ValueError :func:`_detached`,
    so that the client gets the in-memory ValueError itself."""
    @functools.wraps(task)
    def run(*args, **kwargs):
        try:
            return task(*args, **kwargs)
        except ValueError as error:
            raise _detached(error)  # the same object: it gets no new context
    return run


@_plain_errors
def _checked_partition(frame, columns):
    """``frame`` unchanged, once its object ``columns`` pass the in-memory
    checks of ids, labels and groups (the same errors)."""
    import pandas as pd

    for name in columns:
        column = frame[name].dropna()
        if pd.api.types.infer_dtype(column, skipna=True) in (
                "string", "integer", "floating", "boolean", "mixed-integer-float", "empty"):
            continue  # one kind of value: nothing to refuse (the fast path)
        _check_column(name, column.to_numpy())
    return frame


def _check_column(name, values):
    """The in-memory check of the values of one standard column: labels,
    OrdinalMixture's groups, or item / rater ids (the same errors)."""
    if name == "label":
        as_label_array(values)
    elif name == "group":
        _unique_groups(values)
    else:
        unique_codes(values, what=name)


def _unique_groups(values):
    try:
        return np.unique(values)
    except TypeError:  # the in-memory error (OrdinalMixture._prepare)
        raise mixed_groups_error(values) from None


def _type_samples(frame, columns):
    """One value of each Python type in each of the object ``columns`` of a
    partition, as a tuple of (column, type name, value): the types of a
    column across partitions, for :func:`_check_samples`."""
    import pandas as pd

    samples = {}
    for name in columns:
        column = frame[name].dropna()
        if not len(column):
            continue
        if pd.api.types.infer_dtype(column, skipna=True) in (
                "string", "integer", "floating", "boolean", "bytes"):
            values = column.iloc[:1]  # one kind of value (the fast path)
        else:
            values = column
        for value in values.tolist():
            samples.setdefault((name, type(value).__name__), value)
    return tuple((name, kind, value) for (name, kind), value in samples.items())


def _merge_samples(parts):
    """The samples of several partitions (a Series of tuples) as one tuple."""
    merged = {}
    for part in parts:
        for name, kind, value in part:
            merged.setdefault((name, kind), value)
    return tuple((name, kind, value) for (name, kind), value in merged.items())


def _check_samples(samples):
    """The in-memory error for a column whose values, gathered from every
    partition, are of types that do not mix (numbers in one partition,
    strings in another): the in-memory checks run on one value of each type."""
    columns = {}
    for name, _, value in samples:
        columns.setdefault(name, []).append(value)
    for name, values in columns.items():
        _check_column(name, np.array(values + [None], dtype=object)[:-1])  # never 2-d


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


class Partition:
    """One partition's ratings as the workers hold them: ``index`` (its
    place in the frame), ``item_ids``, the encoded ``data`` and, for a model
    that reads them, per-item ``groups``."""

    def __init__(self, index, item_ids, data, groups=None):
        self.index = index
        self.item_ids = item_ids
        self.data = data
        self.groups = groups
        self.group_ids = None if groups is None else _unique_groups(groups)

    def summary(self):
        """What the client needs to check the partitioning: item (group)
        count and range."""
        return {"n_items": self.data.n_items, "items": _id_range(self.item_ids),
                "n_groups": None if self.groups is None else len(self.group_ids),
                "groups": None if self.groups is None else _id_range(self.group_ids)}


class _Failed:
    """A partition whose ratings the in-memory checks refused: the
    ValueError, for the client to raise (:func:`_summary`).  Returned, not
    raised, so that a user's mistake is not a failed task, which the worker
    logs as "Compute Failed" with a traceback on top of the client's error."""

    def __init__(self, error):
        self.error = error


def _summary(part):
    """:meth:`Partition.summary`, or the error of a :class:`_Failed` one."""
    if isinstance(part, _Failed):
        return {"error": part.error}
    return part.summary()


def _id_range(ids):
    try:
        return (ids.min(), ids.max()) if len(ids) else None
    except TypeError:  # ids of mixed types: no order
        return "unordered"


def _encode_partition(frame, index, rater_ids, classes, with_groups):
    """One partition as a :class:`Partition` with the fit's codes, or as a
    :class:`_Failed` when its ratings are refused (ids of two types or
    missing, an item in two groups, a missing group)."""
    try:
        return _encoded_partition(frame, index, rater_ids, classes, with_groups)
    except ValueError as error:
        return _Failed(_detached(error))


def _encoded_partition(frame, index, rater_ids, classes, with_groups):
    ratings = Ratings(frame["item"].to_numpy(), frame["rater"].to_numpy(),
                      frame["label"].to_numpy(), rater_ids=rater_ids)
    data = RatingData(ratings._item, ratings._rater, encode_labels(ratings.label, classes),
                      ratings._item_ptr, n_raters=len(rater_ids), n_classes=len(classes),
                      item_ids=ratings.item_ids)
    groups = None
    if with_groups:
        groups = _item_groups(frame, ratings.item_ids)
        # before the shuffle by group puts an item's missing groups apart
        check_groups_present(groups, ratings.item_ids)
    return Partition(index, ratings.item_ids, data, groups)


def _item_groups(frame, item_ids):
    """Each item's group (in the order of ``item_ids``) from the group column
    of a partition that holds whole items; an item whose ratings name two
    groups is a ValueError, in fit as in predict."""
    per_item = frame.groupby("item", sort=True)["group"]
    counts = per_item.nunique(dropna=False)
    if (counts > 1).any():
        item = counts.index[np.argmax(counts.to_numpy() > 1)]
        raise ValueError(f"Item {show(item)} has ratings in more than one group; each item "
                         "belongs to one group.")
    return per_item.first().reindex(item_ids).to_numpy()


def _rater_counts(data):
    return {"counts": np.bincount(data.rater, minlength=data.n_raters)}


def _combine(stats, maxima=()):
    """Combine a list of stats dicts key by key, in list order
    (deterministic): a sum, or the maximum for the keys in ``maxima``."""
    def combine(key):
        parts = [s[key] for s in stats]
        if key in maxima:
            return reduce(np.maximum, parts)
        return reduce(lambda a, b: a + b, parts)
    return {key: combine(key) for key in stats[0]}


def _combine_batches(maxima, *batches):
    """Combine per-restart stats (``{restart: stats}``) of several partitions."""
    return {r: _combine([b[r] for b in batches], maxima) for r in batches[0]}


def _keeps_item_state(model):
    """Whether ``model``'s local step keeps per-item state from one
    iteration to the next (GLAD's warm starts, OrdinalMixture's factors)."""
    return hasattr(model, "_dask_step") or bool(getattr(model, "_dask_item_state", ()))


def _model_step(model, part, params, state):
    """The model's local step on one partition: its stats for the client and
    the per-item state for the partition's next step.

    A model with its own Dask step (``_dask_step``, OrdinalMixture) runs it;
    a model with per-item warm starts (``_dask_item_state``, GLAD's b) gets
    them merged into its parameters by ``_dask_local_params``; any other model
    runs its plain ``_local_step`` (DawidSkene, IRT3PL)."""
    if hasattr(model, "_dask_step"):
        return model._dask_step(part, params, state)
    keys = getattr(model, "_dask_item_state", ())
    if keys:
        params = model._dask_local_params(part.data, params, state or {})
    stats = dict(model._local_step(part.data, params)[1])
    return stats, {key: stats.pop(key) for key in keys} or None


def _given(value):
    """``value`` itself, as a task: data sent this way (the model, each
    iteration's parameters) is held in the task's definition by the
    scheduler, so that Dask can compute it again on any worker when the
    workers that held it are lost.  Data sent with ``scatter`` has no such
    definition: lost with its workers, it cannot be recomputed."""
    return value


def _previous_state(step, restart):
    """Restart ``restart``'s item state in a partition's earlier step (the
    result of :func:`_partition_step`), or None at the restart's start."""
    return None if step is None else step[1][restart]


def _partition_step(part, model, batch, previous, keep):
    """One iteration's task on one partition: the local step of every
    restart in ``batch`` (``{restart: params}``) from its item state in
    ``previous`` (``{restart: earlier step or None}``).  Returns the stats
    by restart, and with ``keep`` also the new item states by restart: the
    task's result is then the next step's input.  A pure function of its
    arguments, so that Dask may recompute it on another worker (a kernel
    never changes its inputs: a state is replaced by a step, not updated)."""
    stats, states = {}, {}
    for restart, params in batch.items():
        start = perf_counter()
        stats[restart], states[restart] = _model_step(
            model, part, params, _previous_state(previous.get(restart), restart))
        stats[restart]["_seconds"] = perf_counter() - start
    return (stats, states) if keep else stats


def _step_stats(step):
    """The stats of a step that also holds item state: the small part that
    the reduction moves between workers."""
    return step[0]


def _partition_call(part, fn, *args):
    return fn(part.data, *args)


def _partition_state(part, fn, step, restart):
    return fn(part, _previous_state(step, restart))


#: Seconds between two looks at the cluster while the client waits for an
#: iteration's tasks, and how long the cluster may have no worker at all
#: before the fit stops.
POLL_SECONDS = 2.0
NO_WORKERS_TIMEOUT = 50.0

_RERUN_HINT = ("Start the cluster again (or connect a new Client) and fit again; the fit "
               "keeps its state on the cluster, so it cannot go on from where it stopped.")


def _cluster_error(what, error=None):
    """The RuntimeError of a fit that cannot go on because of the cluster."""
    detail = f" ({type(error).__name__}: {error})" if error is not None else ""
    return RuntimeError(f"The Dask fit cannot go on: {what}{detail}. {_RERUN_HINT}")


def _check_cluster(client, idle_since):
    """Raise when the client is closed or the cluster has had no worker for
    :data:`NO_WORKERS_TIMEOUT` seconds; returns since when there is no worker
    (None while there are workers)."""
    if client.status not in ("running", "connecting"):
        raise _cluster_error(f"the Client is {client.status} (the scheduler was closed or "
                             "the connection to it was lost)")
    try:
        n_workers = len(client.nthreads())
    except Exception as error:  # the scheduler did not answer
        raise _cluster_error("the scheduler does not answer", error) from None
    if n_workers:
        return None
    now = perf_counter()
    if idle_since is None:
        return now
    if now - idle_since > NO_WORKERS_TIMEOUT:
        raise _cluster_error(f"the cluster has had no worker for {NO_WORKERS_TIMEOUT:g} s "
                             "(every worker left or died, and none came back)")
    return idle_since


def _await(client, futures):
    """Wait for ``futures``; a lost worker only delays them (Dask computes
    its tasks again elsewhere), but a closed client or a cluster without
    workers raises a RuntimeError within a bounded time instead of waiting
    forever."""
    from distributed import wait

    idle_since = None
    while True:
        try:
            wait(futures, timeout=POLL_SECONDS)
            return
        except TimeoutError:
            idle_since = _check_cluster(client, idle_since)


def _fetch(client, futures):
    """The results of ``futures`` once they are done (:func:`_await`).

    A result can be lost after its task finished: its worker left before
    the result was fetched.  Dask then computes the task again, and
    ``client.gather`` would wait for that forever on a cluster left
    without workers; here each attempt to fetch is bounded, and between
    attempts the cluster is checked as :func:`_await` does."""
    idle_since = None
    while True:
        _await(client, futures)
        try:
            # Client.gather has no timeout; its coroutine, run with one
            return client.sync(client._gather, futures, callback_timeout=POLL_SECONDS)
        except (TimeoutError, asyncio.TimeoutError):  # (the same from Python 3.11)
            idle_since = _check_cluster(client, idle_since)


def _cluster_failure(error):
    """The RuntimeError for ``error`` when it is the cluster's own (a closed
    client or scheduler, cancelled tasks, a lost connection, a task that
    killed the workers it ran on), else None (the model's own errors)."""
    from distributed import KilledWorker

    if isinstance(error, KilledWorker):
        return _cluster_error("a task's worker died each time it ran the task (too little "
                              "memory per worker?)", error)
    if isinstance(error, (CancelledError, OSError)):  # CommClosedError is an OSError
        return _cluster_error("its tasks were cancelled or the connection to the cluster "
                              "was lost", error)
    return None


@contextlib.contextmanager
def _released_on_error(futures):
    """Release ``futures`` when the block raises, and raise a failure of the
    cluster as :func:`_cluster_failure`'s RuntimeError.  The client keeps a
    task's error with its future, and the error's traceback holds the frames
    that hold the futures: unreleased, a failed fit's partitions stayed on
    the cluster (and in ``client.futures``) for the client's lifetime."""
    try:
        yield
    except BaseException as error:
        for future in futures:
            future.release()
        failure = _cluster_failure(error)
        if failure is None:
            raise
        raise failure from None


def _gather(client, futures, also=()):
    """``client.gather(futures)`` once they are done (:func:`_await`); when a
    task failed, ``futures`` and ``also`` (what they were computed from) are
    released before the error is raised (:func:`_released_on_error`)."""
    with _released_on_error([*futures, *also]):
        return _fetch(client, futures)


def dask_data(data):
    """The :class:`DaskRatingData` that ``data`` is or wraps (a model's
    problem object keeps it as ``data``), else None."""
    for candidate in (data, getattr(data, "data", None)):
        if isinstance(candidate, DaskRatingData):
            return candidate
    return None


class DaskRatingData:
    """Encoded ratings held by the workers, one :class:`Partition` each.

    Has the sizes of a RatingData (``n_items``, ``n_raters``, ``n_classes``,
    ``n_ratings``) and the ratings per rater (``rater_counts``), so that the
    global update and objective run unchanged.  ``iterations`` records, per
    local step over the partitions, its wall time on the client, the summed
    compute time of its tasks, and the seconds the client spent sending the
    parameters, waiting for the tasks and the reduction, and receiving the
    statistics.

    Everything the fit keeps on the cluster is Dask's own data, held by the
    client as futures: the partitions (computed from the frame), the model
    and each iteration's parameters (tasks that hold them: :func:`_given`),
    and each partition's item state (the result of its latest step, whose
    inputs are the partition, the parameters and the previous step).  Its
    tasks run on any worker; when a worker is lost, Dask computes what it
    held again from that lineage, so the fit goes on with the same numbers.
    """

    def __init__(self, client, parts, n_raters, n_classes, n_ratings, n_items,
                 rater_counts, workers=None):
        self.client = client
        self.parts = parts
        # Where each partition was encoded: its tasks prefer that worker, and
        # run on any other when it is gone (allow_other_workers).  Left to
        # itself the scheduler may place a step elsewhere and move the
        # partition, or queue the steps as root tasks, without regard to
        # where their data is.
        self.workers = [None] * len(parts) if workers is None else list(workers)
        self.n_raters = int(n_raters)
        self.n_classes = int(n_classes)
        self.n_ratings = int(n_ratings)
        self.n_items = int(n_items)
        self.rater_counts = rater_counts
        self.iterations = []
        self._model = self._model_future = None
        #: restart -> each partition's latest step (a future holding its item state)
        self._states = {}
        self._lockstep = None
        self._thread = threading.local()  # the restart a lockstep thread runs

    @property
    def n_partitions(self):
        return len(self.parts)

    def _placement(self, index):
        """The worker preferred for partition ``index``'s tasks (any other
        one may run them)."""
        worker = self.workers[index]
        return {} if worker is None else {"workers": [worker], "allow_other_workers": True}

    def _send_model(self, model):
        # The model (its hyperparameters) goes to the cluster once per fit.
        if self._model is not model:
            self._model = model
            self._model_future = self.client.submit(_given, model, pure=False)

    def run_batch(self, model, batch):
        """One task per partition runs the local step of every restart in
        ``batch`` (``{restart: params}``); returns ``{restart: stats}``, the
        stats combined over the partitions in a tree on the workers."""
        self._send_model(model)
        client = self.client
        keep = _keeps_item_state(model)
        start = perf_counter()
        # One task holds the parameters; every partition's step reads them.
        # Scattered data would have no definition to compute it again from:
        # a lost worker that held the only copy lost it (the scheduler's
        # "lost scattered data, which can't be recovered"), and with it the
        # fit, also when the parameters were broadcast.  A lost item state
        # is recomputed from earlier steps, which read their own
        # iteration's parameters.
        params = client.submit(_given, batch, pure=False)
        sent = perf_counter()
        n = self.n_partitions
        previous = {restart: self._states.get(restart, [None] * n) for restart in batch}
        steps = [client.submit(_partition_step, part, self._model_future, params,
                               {r: previous[r][i] for r in batch}, keep,
                               **self._placement(i), pure=False)
                 for i, part in enumerate(self.parts)]
        if keep:
            # The new steps are the item state from now on.  Dropping the
            # earlier ones here lets each worker free a partition's earlier
            # state as soon as its new step is done (the scheduler keeps it
            # until then, as the step's input): one state per partition
            # stays in memory, not two until the iteration ends.
            for restart in batch:
                self._states[restart] = steps
            del previous
        futures = ([client.submit(_step_stats, step, pure=False) for step in steps]
                   if keep else steps)
        reduced = list(futures)
        maxima = tuple(getattr(model, "_stats_maxima", ()))
        while len(futures) > 1:
            futures = [client.submit(_combine_batches, maxima, *futures[i:i + FAN_IN],
                                     pure=False)
                       for i in range(0, len(futures), FAN_IN)]
            reduced = reduced + futures
        with _released_on_error([params, *steps, *reduced]):
            _await(client, futures)
            ready = perf_counter()
            result = _fetch(client, futures)[0]
        end = perf_counter()
        compute = sum(stats.pop("_seconds") for stats in result.values())
        self.iterations.append({"wall": end - start, "compute": compute,
                                "send": sent - start, "tasks": ready - sent,
                                "receive": end - ready, "restarts": len(batch)})
        return result

    def local_stats(self, model, params):
        """The model's local step on every partition; the stats summed.

        Restarts running in :meth:`lockstep` threads wait for each other
        and share one task per partition."""
        restart = params.get("restart", 0)
        if self._lockstep is not None:
            return self._lockstep.step(model, restart, params)
        return self.run_batch(model, {restart: params})[restart]

    def lockstep(self, run, restarts):
        """``run(restart)`` for every restart in its own client thread, their
        local steps batched (:meth:`local_stats`); returns the runs' results."""
        starts = list(restarts)
        self._lockstep = _Lockstep(self, len(starts))

        def one(start):
            self._thread.restart = start
            try:
                return run(start)
            finally:
                self._lockstep.leave()

        try:
            with ThreadPoolExecutor(max_workers=len(starts)) as pool:
                return list(pool.map(one, starts))
        finally:
            self._lockstep = None

    def checkpoint(self):
        """Remember the partitions' item state (of the calling restart in
        :meth:`lockstep`, else of every restart), to go back to it when the
        fit loop rejects an extrapolated step.  A step replaces the state, so
        this keeps the futures of the latest steps: no round trip."""
        restart = getattr(self._thread, "restart", None)
        saved = {r: steps for r, steps in self._states.items()
                 if restart is None or r == restart}
        # never None (the loop's "nothing to restore"), outside lockstep too
        return ("checkpoint", restart, saved)

    def restore(self, checkpoint):
        """Go back to the item state saved by :meth:`checkpoint`."""
        self._states.update(checkpoint[2])

    def map_sum(self, fn, *per_part_args):
        """``fn(part_data, *args)`` on each partition (args given per partition), summed."""
        futures = self.client.map(_partition_call, self.parts, [fn] * len(self.parts),
                                  *per_part_args, pure=False)
        return _combine(_gather(self.client, futures))

    def map_state(self, fn, restart):
        """``fn(partition, state)`` on each partition with restart
        ``restart``'s item state; the list of results."""
        steps = self._states.get(restart, [None] * self.n_partitions)
        futures = [self.client.submit(_partition_state, part, fn, step, restart,
                                      **self._placement(i), pure=False)
                   for i, (part, step) in enumerate(zip(self.parts, steps))]
        return _gather(self.client, futures)

    def release(self):
        """Drop the fit's item state, model and partitions from the cluster
        (once the fit has ended, failed or not)."""
        states = [step for steps in self._states.values() for step in steps
                  if step is not None]
        self._states = {}
        for future in [*states, *self.parts, *filter(None, [self._model_future])]:
            future.release()


class _Lockstep:
    """Restarts in client threads, each running the fit loop: their local
    steps wait until every live restart has asked for one, then run as one
    batch (one task per partition for all of them)."""

    def __init__(self, data, n_live):
        self.data = data
        self.live = n_live
        self.pending = {}
        self.done = {}
        self.cond = threading.Condition()

    def step(self, model, restart, params):
        with self.cond:
            self.pending[restart] = (model, params)
            self._fire_when_complete()
            while restart not in self.done:
                self.cond.wait()
            result = self.done.pop(restart)
        if isinstance(result, BaseException):
            raise result
        return result

    def leave(self):
        with self.cond:
            self.live -= 1
            self._fire_when_complete()

    def _fire_when_complete(self):
        if not self.pending or len(self.pending) < self.live:
            return
        batch, self.pending = self.pending, {}
        model = next(iter(batch.values()))[0]
        try:
            self.done.update(self.data.run_batch(
                model, {r: params for r, (_, params) in batch.items()}))
        except Exception as error:  # every waiting restart sees it
            self.done.update({r: error for r in batch})
        self.cond.notify_all()


def _disjoint(summaries, key, count, total):
    """Whether no item (group) is in two partitions: their id ranges do not
    overlap, or (ids without order) their counts add up to ``total()``."""
    ranges = [s[key] for s in summaries if s[key] is not None]
    if all(r != "unordered" for r in ranges):
        try:
            ranges.sort()
        except TypeError:
            # ids of two partitions that do not compare (numbers in one,
            # strings in another): the in-memory error, naming the types of
            # the partitions' first and last ids, before the count check's
            # shuffle fails on them ("P2P ... failed")
            ends = [end for r in ranges for end in r]
            if key == "groups":
                raise mixed_groups_error(ends) from None
            raise mixed_ids_error("item", ends) from None
        if all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])):
            return True
    return sum(s[count] for s in summaries) == total()


def encode_frame(estimator, frame, **fit_params):
    """Set ``classes_``, ``rater_ids_``, ``n_features_in_`` from a dask
    DataFrame and encode its partitions on the workers (shuffled by item, or
    by group, first when a partition does not hold whole items, groups)."""
    import dask

    extra = estimator._dask_columns(**fit_params)
    frame = _standard_frame(estimator, frame, extra)
    with_groups = any(name == "group" for name, _ in extra)
    key = "group" if with_groups else "item"
    client = _client()
    method = _shuffle_method(frame)
    # split_out=1: a tree reduction (the raters and the labels are few),
    # not a shuffle, so that ids or labels of two types reach the checks
    # below (a P2P shuffle failed on them: "P2P ... failed").  The distinct
    # raters, not their counts: value_counts sorts them on a worker, a
    # TypeError there for raters that do not compare (numbers and bytes).
    # Nothing here checks a partition on a worker: what the client gathers
    # (raters, labels) is checked on the client, a partition's items and
    # groups when it is encoded (a refused partition is an error value).
    raters, labels, n_ratings = dask.compute(
        frame["rater"].drop_duplicates(split_out=1),
        frame["label"].drop_duplicates(split_out=1), frame.shape[0])
    if n_ratings == 0:
        # the in-memory error (a frame whose labels are all missing is not
        # "empty": _standard_frame drops the rows without a label)
        raise ValueError(NO_RATINGS)
    if raters.isna().any():
        raise ValueError("item and rater ids must not be missing (NaN or None).")  # in memory
    try:
        rater_ids = np.sort(raters.to_numpy())
    except TypeError:  # the in-memory error (raters of two types)
        raise mixed_ids_error("rater", raters.to_numpy()) from None
    # The classes as the in-memory fit of the same table finds them: a
    # categorical column's categories name the scale (levels nobody used
    # included), and integer or boolean labels are int64, uint64 or bool
    # whatever the column's width (see _ratings.encode and _rated_labels).
    values = as_label_array(labels.to_numpy())  # as the in-memory Ratings reads them
    kept = kept_label_dtype([labels])
    values = values if kept is None else values.astype(kept)
    fit_classes(estimator, values, label_categories([labels]))
    classes = estimator.classes_
    # A label outside classes= is the in-memory error, found here from the
    # distinct labels rather than in every partition's task (each failing
    # task logged a worker traceback)
    encode_labels(values, classes)

    def encode(frame):
        pieces = client.compute(frame.to_delayed())
        return client.map(_encode_partition, pieces, range(len(pieces)), rater_ids=rater_ids,
                          classes=classes, with_groups=with_groups, pure=False)

    def nunique(column):  # the distinct ids as the shuffle sees them
        return _id_column(frame, column).drop_duplicates(shuffle_method=method).count().compute()

    def check(parts):
        """The non-empty partitions, their items, and whether they are whole."""
        summaries = _gather(client, client.map(_summary, parts, pure=False), also=parts)
        failed = [s["error"] for s in summaries if "error" in s]
        if failed:  # the first refused partition's error, from the client
            for part in parts:
                part.release()
            raise failed[0].with_traceback(None)
        n_items = sum(s["n_items"] for s in summaries)
        items_whole = _disjoint(summaries, "items", "n_items", lambda: nunique("item"))
        groups_whole = not with_groups or _disjoint(
            summaries, "groups", "n_groups", lambda: nunique("group"))
        parts = [part for part, s in zip(parts, summaries) if s["n_items"] > 0]
        return parts, n_items, items_whole and groups_whole

    parts, n_items, whole = check(encode(frame))
    if not whole:
        # One shuffle so that every item's (group's) ratings sit in one partition.
        parts, n_items, whole = check(encode(_shuffled(frame, key)))
        if not whole:
            raise ValueError(
                f"After shuffling by {key}, an item spans two partitions"
                + (": an item has ratings in more than one group." if with_groups else ".")
            )
    who_has = client.who_has(parts)
    workers = [min(who_has[part.key], default=None) for part in parts]
    data = DaskRatingData(client, parts, len(rater_ids), len(classes), n_ratings, n_items,
                          None, workers=workers)
    data.rater_counts = data.map_sum(_rater_counts)["counts"]
    set_raters(estimator, rater_ids)
    # every rating is in one partition: the ratings per rater of the frame
    estimator._rater_counts = data.rater_counts.copy()
    return data


def _empty_result(model, what, index):
    import pandas as pd

    if what == "proba":
        # the class columns are named as in memory
        return pd.DataFrame(np.zeros((0, len(model.classes_))),
                            columns=class_columns(model), index=index)
    if what == "loglik":
        return pd.Series(np.zeros(0), name="log_likelihood", index=index)
    dtype = np.float64 if what == "mean" else model.classes_.dtype
    return pd.Series(np.zeros(0, dtype=dtype), name=model._prediction_name, index=index)


def _item_table(frame, model, index_name):
    """The in-memory ``item_table`` of a partition that holds whole items
    (the same code, so the same columns, dtypes and values)."""
    import pandas as pd

    params = {}
    if "group" in frame.columns:
        ids = frame["item"].drop_duplicates().to_numpy()
        params["groups"] = pd.Series(_item_groups(frame, ids), index=ids)
    table = model._item_table(frame[list(COLUMNS)].reset_index(drop=True),
                              allow_empty=True, **params)
    return table.rename_axis(index_name)


@_plain_errors
def _infer_partition(frame, model, what, index_name, samples=()):
    import pandas as pd

    _check_samples(samples)  # ids or labels of two types in two partitions
    if what == "table":
        return _item_table(frame, model, index_name)
    if len(frame) == 0:
        mean = what == "label" and getattr(model, "_predicts_mean", False)
        return _empty_result(model, "mean" if mean else what,
                             pd.Index([], name=index_name, dtype=frame["item"].dtype))
    ratings = Ratings(frame["item"].to_numpy(), frame["rater"].to_numpy(),
                      frame["label"].to_numpy())
    data = model._encode(ratings, reset=False)
    kwargs = {}
    if "group" in frame.columns:
        kwargs["groups"] = _item_groups(frame, ratings.item_ids)
    index = pd.Index(ratings.item_ids, name=index_name)
    if what == "loglik":
        return pd.Series(model._score_items(data, **kwargs), index=index,
                         name="log_likelihood")
    items = model._infer_items(data, **kwargs)
    if what == "proba":
        return pd.DataFrame(items["proba"], index=index, columns=class_columns(model))
    return pd.Series(model._predict_from_items(items), index=index,
                     name=model._prediction_name)


def infer_frame(model, frame, what, extra=()):
    """Per-item posteriors (``what="proba"``, a dask DataFrame indexed by item
    with one column per class), labels (``"label"``) or log marginal
    likelihoods (``"loglik"``), both dask Series indexed by item, or the
    item table (``"table"``, a dask DataFrame); ``extra``
    names the model's further columns as ``(name, column)`` pairs.  Named as
    the in-memory results of the same table: the index after the table's
    item column (``task`` in crowd-kit's convention), the classes' columns
    as in memory (``class_columns``)."""
    import pandas as pd

    standard = _standard_frame(model, frame, extra)  # checks the columns
    index_name = long_columns(frame.columns)[0]
    frame = standard
    samples = ()
    mixed = _object_columns(frame)
    if mixed:
        # An object column may hold values of two types: in one partition,
        # the in-memory error before the shuffle; in two partitions, one
        # value of each type, gathered in a tree from every partition (in
        # the same pass as the shuffle), is checked by every task after it.
        # The results are lazy: these errors are raised in tasks.
        frame = frame.map_partitions(_checked_partition, mixed, meta=frame._meta)
        samples = frame.reduction(_type_samples, aggregate=_merge_samples, meta=object,
                                  chunk_kwargs={"columns": mixed})
    # By item, groups or not: an item's results need only its own ratings
    # and the fitted parameters (its group's δ), and a partition that holds
    # all of an item's ratings sees all the groups they name.
    shuffled = _shuffled(frame, "item")
    if what == "table":
        meta = _item_table(frame._meta, model, index_name)
    else:
        mean = what == "label" and getattr(model, "_predicts_mean", False)
        meta = _empty_result(model, "mean" if mean else what,
                             pd.Index([], name=index_name, dtype=frame["item"].dtype))
    return shuffled.map_partitions(_infer_partition, model, what, index_name, samples,
                                   meta=meta)
