"""Where a fit runs: in this process or on a Dask cluster, behind one small
interface.

The base classes and the models never test for Dask themselves; they ask
the backend of their input (:func:`for_input`) or of their encoded data
(:func:`of`):

- ``local_step(model, data, params)``: the local step over every item, as
  ``(items, stats)``; on a cluster over every partition, with the
  statistics reduced (summed) on the workers and no item state here;
- ``sum_stats(data, function, *args)``: ``function(part, *args)`` of every
  partition (the whole data in memory), summed;
- ``map_item_state(data, function, restart)``: ``function(partition,
  state)`` on every partition with restart ``restart``'s item state kept
  there (Dask only: in memory the loop holds the items' state);
- ``checkpoint(data)`` / ``restore(data, saved)``: the per-item state that
  a rejected SQUAREM step rolls back (kept on the workers on a cluster; in
  memory the loop keeps its states itself);
- ``lockstep(data)``: how restarts share passes over the partitions
  (``None`` in memory);
- ``release(data)``: free what the fit holds on the workers;
- for input: ``encode(model, X, **fit_params)`` and ``infer(model, X, what,
  extra)`` (Dask only: in memory the base encodes through
  :func:`skcrowd._ratings.encode`).

:class:`OnDask` wraps the entry points of ``skcrowd/_dask.py``
(``is_dask_frame``, ``encode_frame``, ``infer_frame``, ``dask_data`` and the
methods ``local_stats``, ``map_sum``, ``map_state``, ``checkpoint``,
``restore``, ``lockstep`` and ``release`` of its ``DaskRatingData``); see
``doc/architecture.rst``.
"""

from . import _dask

__all__ = ["IN_MEMORY", "ON_DASK", "for_input", "of", "on_workers"]


class InMemory:
    """Encoded ratings in this process: one local step over all items."""

    distributed = False

    def local_step(self, model, data, params):
        return model._local_step(data, params)

    def sum_stats(self, data, function, *args):
        return function(data, *args)

    def checkpoint(self, data):
        return None

    def restore(self, data, saved):
        pass

    def lockstep(self, data):
        return None

    def release(self, data):
        pass


class OnDask(InMemory):
    """Ratings in a dask DataFrame: partitions of items on the workers, the
    per-item state kept there between passes, statistics reduced there.
    ``data`` may be the ``DaskRatingData`` or a model's prepared state that
    holds it as ``data``."""

    distributed = True

    def local_step(self, model, data, params):
        return None, _dask.dask_data(data).local_stats(model, params)

    def sum_stats(self, data, function, *args):
        data = _dask.dask_data(data)
        n = data.n_partitions
        return data.map_sum(function, *([arg] * n for arg in args))

    def map_item_state(self, data, function, restart):
        """The list of ``function(partition, state)`` over the partitions."""
        return _dask.dask_data(data).map_state(function, restart)

    def checkpoint(self, data):
        return _dask.dask_data(data).checkpoint()

    def restore(self, data, saved):
        if saved is not None:
            _dask.dask_data(data).restore(saved)

    def lockstep(self, data):
        return _dask.dask_data(data).lockstep

    def release(self, data):
        _dask.dask_data(data).release()

    def encode(self, model, X, **fit_params):
        """The fit's encoded view of the frame (a ``DaskRatingData``)."""
        return _dask.encode_frame(model, X, **fit_params)

    def infer(self, model, X, what, extra=()):
        """Per-item results of ``what`` as dask collections."""
        return _dask.infer_frame(model, X, what, extra=extra)


IN_MEMORY = InMemory()
ON_DASK = OnDask()


def for_input(X):
    """The backend of what a user passed."""
    return ON_DASK if _dask.is_dask_frame(X) else IN_MEMORY


def of(data):
    """The backend of encoded data (a model's prepared state holds its
    encoded data as ``data``)."""
    return ON_DASK if on_workers(data) else IN_MEMORY


def on_workers(data):
    """Whether encoded ``data`` lives on a cluster's workers (its items'
    state is not in this process)."""
    return _dask.dask_data(data) is not None
