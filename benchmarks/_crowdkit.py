"""Thin, timed wrappers around crowd-kit's classification aggregators.

Importable whether or not crowd-kit is installed: crowd-kit (and pandas) are
imported lazily inside the functions.  Use :func:`crowdkit_available` to test.

Input: long-form int arrays ``item``, ``rater``, ``label`` (one entry per
rating).  They are turned into the DataFrame crowd-kit expects -- columns
``task``, ``worker``, ``label`` -- *before* the clock starts; the elapsed time
covers ``fit`` only (including crowd-kit's own per-iteration loss
computation, which is part of its fit loop).

Output: ``(labels, seconds)``: ``labels`` is an int64 array aligned with
``np.unique(item)`` (sorted unique item ids).

Fixed iteration count
---------------------
crowd-kit 1.4.2's EM loops (DawidSkene, OneCoinDawidSkene, GLAD) are::

    for _ in range(n_iter):
        ... E-step, M-step, loss ...
        if new_loss - old_loss < tol: break

so ``tol=0`` is NOT enough to force ``n_iter`` iterations (it stops as soon as
the loss fails to increase, e.g. an exact plateau or a rounding-level
decrease).  ``tol=-inf`` never breaks (NaN comparisons are False too), so
these wrappers pass ``tol=-np.inf`` by default (``full_iter=True``).  The
number of iterations actually run is ``len(model.loss_history_)``.

What one "iteration" is in crowd-kit:

* DawidSkene: init = MajorityVote probas -> priors = mean -> M-step; then each
  iteration = E-step, priors = probas.mean(), M-step, ELBO.  The final
  ``labels_``/``probas_`` are from the last E-step (errors_ from the last
  M-step).  Error-matrix entries are clipped below at 1e-10 before
  normalisation; priors clipped at 1e-10.
* OneCoinDawidSkene: same, with one skill per worker (mean posterior of the
  worker's given labels) -> error rows ``s`` on the diagonal and
  ``(1-s)/(K-1)`` off it, clipped to [1e-10, 1-1e-10].
* GLAD: alphas=1, betas=1 (log-parameterised: beta_eff = exp(beta)), uniform
  priors over observed labels (priors never updated), Gaussian N(1, 1) priors on
  alpha and on the log-beta; init E-step, then each iteration = E-step, M-step
  = ``scipy.optimize.minimize(method="CG", maxiter=m_step_max_iter=25,
  tol=m_step_tol=1e-2)``, Q.  ``labels_``/``probas_`` come from the last
  E-step, i.e. computed *before* the last M-step.

Tie-breaking: labels are ``probas_.idxmax(axis=1)`` -> first column among
the maxima.  For MajorityVote the column order comes from
``value_counts().unstack()``: sorted labels under pandas 2.2 (ties -> smallest
label; rte MV accuracy 0.9187, web 0.7765) but first-appearance/most-frequent
order under pandas 3.1 (rte 0.8750, web 0.6883).  DawidSkene/GLAD figures
are the same under both.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = [
    "crowdkit_available",
    "crowdkit_version",
    "make_frame",
    "run_crowdkit",
    "crowdkit_dawid_skene",
    "crowdkit_one_coin_dawid_skene",
    "crowdkit_glad",
    "crowdkit_glad_proba",
    "crowdkit_majority_vote",
    "METHODS",
]

METHODS = ("DawidSkene", "OneCoinDawidSkene", "GLAD", "MajorityVote")


def crowdkit_available() -> bool:
    try:
        import crowdkit.aggregation  # noqa: F401
    except Exception:
        return False
    return True


def crowdkit_version():
    try:
        from importlib.metadata import version

        return version("crowd-kit")
    except Exception:
        return None


def make_frame(item, rater, label):
    """pandas DataFrame with crowd-kit's column names ``task, worker, label``."""
    import pandas as pd

    item = np.asarray(item)
    rater = np.asarray(rater)
    label = np.asarray(label)
    if not (item.shape == rater.shape == label.shape and item.ndim == 1):
        raise ValueError("item, rater, label must be 1-d arrays of equal length")
    return pd.DataFrame(
        {
            "task": item.astype(np.int64, copy=False),
            "worker": rater.astype(np.int64, copy=False),
            "label": label.astype(np.int64, copy=False),
        }
    )


def _make_model(method, n_iter, tol, **kwargs):
    from crowdkit import aggregation as agg

    if method == "MajorityVote":
        return agg.MajorityVote(**kwargs)
    cls = {
        "DawidSkene": agg.DawidSkene,
        "OneCoinDawidSkene": agg.OneCoinDawidSkene,
        "GLAD": agg.GLAD,
    }[method]
    return cls(n_iter=int(n_iter), tol=float(tol), **kwargs)


def _aligned_labels(labels_series, items_sorted):
    lab = labels_series.reindex(items_sorted)
    if lab.isna().any():
        raise RuntimeError("crowd-kit returned no label for some items")
    return lab.to_numpy().astype(np.int64)


def run_crowdkit(
    method,
    item,
    rater,
    label,
    n_iter=100,
    full_iter=True,
    tol=None,
    return_model=False,
    timing=None,
    **kwargs,
):
    """Fit crowd-kit ``method`` (one of :data:`METHODS`) on long-form arrays.

    ``full_iter=True`` (default) forces exactly ``n_iter`` EM iterations
    (``tol=-inf``).  ``full_iter=False`` uses ``tol`` or, if None, crowd-kit's
    default 1e-5 -- i.e. crowd-kit's default behaviour.  ``n_iter``/``tol``
    are ignored for MajorityVote.  Extra ``kwargs`` go to the constructor.

    Returns ``(labels, seconds)`` or ``(labels, seconds, model)`` with
    ``return_model=True``.  ``seconds`` is wall-clock (perf_counter).  If a
    dict is passed as ``timing`` it receives ``wall`` and ``cpu`` (process
    CPU seconds of the fit; crowd-kit is effectively single-threaded, so
    ``cpu`` is the figure to trust when the machine is busy).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if tol is None:
        tol = -np.inf if full_iter else 1e-5
    df = make_frame(item, rater, label)
    items_sorted = np.unique(np.asarray(item))
    model = _make_model(method, n_iter, tol, **kwargs)
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 under pandas >= 3 emits many deprecation warnings
        warnings.simplefilter("ignore")
        c0 = time.process_time()
        t0 = time.perf_counter()
        model.fit(df)
        elapsed = time.perf_counter() - t0
        cpu = time.process_time() - c0
    if timing is not None:
        timing["wall"] = elapsed
        timing["cpu"] = cpu
    labels = _aligned_labels(model.labels_, items_sorted)
    if return_model:
        return labels, elapsed, model
    return labels, elapsed


def crowdkit_dawid_skene(item, rater, label, n_iter=100, full_iter=True, **kw):
    return run_crowdkit("DawidSkene", item, rater, label, n_iter, full_iter, **kw)


def crowdkit_one_coin_dawid_skene(item, rater, label, n_iter=100, full_iter=True, **kw):
    return run_crowdkit(
        "OneCoinDawidSkene", item, rater, label, n_iter, full_iter, **kw
    )


def crowdkit_glad(item, rater, label, n_iter=100, full_iter=True, **kw):
    return run_crowdkit("GLAD", item, rater, label, n_iter, full_iter, **kw)


def crowdkit_majority_vote(item, rater, label, **kw):
    return run_crowdkit("MajorityVote", item, rater, label, **kw)


def crowdkit_glad_proba(item, rater, label, n_iter=100, full_iter=True, **kw):
    """GLAD posteriors and parameters.

    Returns ``(proba, classes, alphas, betas, seconds)``:

    * ``proba``: (n_items, n_classes) float array, rows aligned with
      ``np.unique(item)``, columns with ``classes`` (sorted observed labels);
      from ``model.probas_`` (a DataFrame indexed by task, columns = labels).
    * ``alphas``: worker abilities aligned with ``np.unique(rater)``
      (``model.alphas_``, Series indexed by worker).
    * ``betas``: crowd-kit's *log* inverse difficulties aligned with
      ``np.unique(item)`` (``model.betas_``, Series indexed by task); the
      effective inverse difficulty is ``np.exp(betas)``.
    """
    _, elapsed, model = run_crowdkit(
        "GLAD", item, rater, label, n_iter, full_iter, return_model=True, **kw
    )
    items_sorted = np.unique(np.asarray(item))
    raters_sorted = np.unique(np.asarray(rater))
    probas = model.probas_
    classes = np.sort(np.asarray(probas.columns).astype(np.int64))
    probas = probas.copy()
    probas.columns = np.asarray(probas.columns).astype(np.int64)
    proba = probas.reindex(index=items_sorted, columns=classes).to_numpy(dtype=float)
    alphas = model.alphas_.reindex(raters_sorted).to_numpy(dtype=float)
    betas = model.betas_.reindex(items_sorted).to_numpy(dtype=float)
    return proba, classes, alphas, betas, elapsed
