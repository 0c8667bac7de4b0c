"""Dask fits on a real LocalCluster of worker processes when the cluster
fails: a worker process that dies during the fit (as a pre-empted or
OOM-killed worker would) costs a recomputation, and the fit ends with the
numbers of the undisturbed fit; a cluster closed, or left without workers,
during the fit is a RuntimeError within seconds, not a fit that waits
forever."""

import os
import threading
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from distributed.diagnostics.plugin import WorkerPlugin  # noqa: E402

from skcrowd import GLAD, MACE, DawidSkene, IRT3PL, OrdinalMixture  # noqa: E402
from skcrowd import _dask  # noqa: E402
from skcrowd.datasets import (load_caries, make_dawid_skene, make_glad, make_mace,  # noqa: E402
                              make_ordinal)

#: each fit runs this many iterations (tol=0), the kill comes after the
#: dying worker's third local-step task: always mid-fit
ITERATIONS = 8
KILL_AFTER_STEPS = 3


class KillOnce(WorkerPlugin):
    """Ends its worker's process (``os._exit``: no clean-up, as a killed
    process) once the worker has finished ``after`` local-step tasks of a fit,
    on the first worker to get there, once per ``flag`` file: the file, made
    atomically, marks that the kill happened (the nanny's new worker process
    gets the plugin too, and finds the file)."""

    def __init__(self, flag, after):
        self.flag = str(flag)
        self.after = after
        self.count = 0

    def transition(self, key, start, finish, **kwargs):
        if finish != "memory" or not str(key).startswith("_partition_step-"):
            return
        self.count += 1
        if self.count < self.after:
            return
        try:
            os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)


@pytest.fixture
def client():
    """A new cluster for each fit: the test does not wait for the nanny's
    new worker process, whose start can take minutes on a loaded machine."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            yield client


def frame_of(ratings, npartitions):
    """The ratings as a dask frame whose partitions hold whole items."""
    frame = pd.DataFrame({"item": ratings.item, "rater": ratings.rater,
                          "label": ratings.label})
    return dd.from_pandas(frame, npartitions=npartitions, sort=False)


def graded_frame():
    """Graded ratings sorted by rater: every item's ratings spread over the
    partitions, so the fit shuffles them first (the shuffle's output is
    then recomputed too)."""
    ratings = make_ordinal(n_items=300, n_raters=15, ratings_per_item=4,
                           random_state=0).ratings
    frame = pd.DataFrame({"item": ratings.item, "rater": ratings.rater,
                          "label": ratings.label})
    frame = frame.sort_values(["rater", "item"], kind="stable").reset_index(drop=True)
    return dd.from_pandas(frame, npartitions=3, sort=False)


FITS = {
    "DawidSkene": lambda: (DawidSkene(), frame_of(make_dawid_skene(
        n_items=600, n_raters=15, ratings_per_item=4, n_classes=3,
        random_state=0).ratings, 4)),
    # warm starts of each item's difficulty b, rejected extrapolations
    # (the item state goes back to a checkpoint)
    "GLAD": lambda: (GLAD(), frame_of(make_glad(n_items=600, n_raters=15,
                                                ratings_per_item=4,
                                                random_state=0).ratings, 4)),
    "MACE": lambda: (MACE(random_state=0), frame_of(make_mace(
        n_items=600, n_raters=15, ratings_per_item=4, n_classes=3,
        random_state=0).ratings, 4)),
    "IRT3PL": lambda: (IRT3PL.from_tag("ab", random_state=0),
                       frame_of(load_caries().ratings, 3)),
    # two restarts in lockstep (one task per partition serves both), each
    # item's q(z) and q(δ) kept from step to step, a shuffled frame
    "OrdinalMixture": lambda: (OrdinalMixture(difficulty="item", n_init=2,
                                              random_state=0), graded_frame()),
}


def fitted(model, ddf):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clone(model).set_params(max_iter=ITERATIONS, tol=0.0).fit(ddf)


def fitted_arrays(model):
    """The fitted attributes that hold numbers."""
    values = {}
    for name, value in vars(model).items():
        if name.endswith("_") and not name.startswith("_") and value is not None:
            array = np.asarray(value)
            if array.dtype.kind in "fiub":
                values[name] = array
    return values


@pytest.mark.parametrize("name", list(FITS))
def test_a_worker_killed_during_the_fit_costs_a_recomputation(client, tmp_path, name):
    """A worker process dies after its third local step; the nanny starts a
    new one; the fit completes with the numbers of the undisturbed fit.
    Before, each partition's tasks were pinned to its worker and the item
    state was in that worker process's memory: the fit waited forever."""
    model, ddf = FITS[name]()
    undisturbed = fitted(model, ddf)
    flag = tmp_path / "killed"
    client.register_plugin(KillOnce(flag, KILL_AFTER_STEPS), name="kill-once")
    try:
        disturbed = fitted(model, ddf)
    finally:
        client.unregister_worker_plugin("kill-once")
    assert flag.exists(), "no worker was killed: the test proves nothing"
    assert disturbed.n_iter_ == undisturbed.n_iter_ == ITERATIONS
    expected = fitted_arrays(undisturbed)
    assert expected.keys() == fitted_arrays(disturbed).keys()
    for key, value in fitted_arrays(disturbed).items():
        np.testing.assert_allclose(value, expected[key], rtol=1e-8, atol=1e-8, err_msg=key)
    # the items' results, computed from the fitted parameters on the cluster
    proba = disturbed.predict_proba(ddf).compute().sort_index()
    np.testing.assert_allclose(proba.to_numpy(),
                               undisturbed.predict_proba(ddf).compute().sort_index().to_numpy(),
                               rtol=1e-8, atol=1e-8)


def endless_fit(ddf, outcome):
    """A fit that would run for hours (tol=0), in a thread: its error and the
    time it came, in ``outcome``."""
    def run():
        try:
            DawidSkene(max_iter=10**6, tol=0.0, accelerate=False).fit(ddf)
        except BaseException as error:  # noqa: BLE001 - the test looks at it
            outcome["error"] = error
        outcome["ended"] = time.perf_counter()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_for_iterations(client, thread):
    """Return once the endless fit's local steps are running."""
    deadline = time.perf_counter() + 120
    while not any(str(key).startswith("_partition_step-") for key in list(client.futures)):
        assert thread.is_alive() and time.perf_counter() < deadline
        time.sleep(0.05)


def small_frame():
    ratings = make_dawid_skene(n_items=200, n_raters=10, ratings_per_item=3,
                               random_state=1).ratings
    return frame_of(ratings, 2)


def test_a_cluster_closed_during_the_fit_is_an_error_within_a_minute():
    """Before, a fit whose cluster went away waited for its tasks forever."""
    outcome = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        client = distributed.Client(cluster)
        try:
            thread = endless_fit(small_frame(), outcome)
            wait_for_iterations(client, thread)
            closed = time.perf_counter()
            cluster.close()
            thread.join(timeout=90)
            assert not thread.is_alive(), "the fit still waits 90 s after the close"
        finally:
            client.close(timeout=10)
    error = outcome["error"]
    assert isinstance(error, RuntimeError), repr(error)
    assert "cannot go on" in str(error) and "fit again" in str(error)
    assert outcome["ended"] - closed < 60


def test_a_result_lost_with_its_worker_is_an_error_not_a_wait(monkeypatch):
    """A task done, its worker gone before the result was fetched: Dask
    computes the task again, so with no worker left ``client.gather`` waits
    for ever (a fit's iteration hung so, one run in a few under load); the
    fit's fetch stops with the cluster's error instead."""
    monkeypatch.setattr(_dask, "NO_WORKERS_TIMEOUT", 3.0)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            future = client.submit(np.arange, 10, pure=False)
            distributed.wait(future)
            cluster.scale(0)
            deadline = time.perf_counter() + 60
            while client.nthreads() and time.perf_counter() < deadline:
                time.sleep(0.1)
            assert not client.nthreads()
            start = time.perf_counter()
            with pytest.raises(RuntimeError, match="no worker"):
                _dask._fetch(client, [future])
            assert time.perf_counter() - start < 30


def test_a_cluster_left_without_workers_is_an_error(monkeypatch):
    """Every worker retired (none comes back): the tasks have nowhere to run."""
    monkeypatch.setattr(_dask, "NO_WORKERS_TIMEOUT", 3.0)
    outcome = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            thread = endless_fit(small_frame(), outcome)
            wait_for_iterations(client, thread)
            gone = time.perf_counter()
            cluster.scale(0)
            thread.join(timeout=90)
            assert not thread.is_alive(), "the fit still waits 90 s after the workers left"
    error = outcome["error"]
    assert isinstance(error, RuntimeError), repr(error)
    assert "no worker" in str(error)
    assert outcome["ended"] - gone < 60
