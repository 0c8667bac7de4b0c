"""The parts of the fit loop, each a small object: the convergence monitor,
the SQUAREM accelerator, the restart runner and the progress reporter.

:func:`em_loop` is the loop itself (one restart); ``CrowdModel`` in
``_base.py`` builds these parts from its parameters and calls it.  The
layout follows :class:`sklearn.mixture.GaussianMixture` (the loop owns the
iterations; the model fills hooks) and hmmlearn's replaceable
``ConvergenceMonitor``; see ``doc/architecture.rst``.
"""

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from time import perf_counter
from typing import NamedTuple

import numba
import numpy as np

from ._kernels._common import dot

__all__ = ["ConvergenceMonitor", "Progress", "Squarem", "em_loop", "run_restarts"]


class State(NamedTuple):
    """The loop's state after one pass over the data at ``params``."""

    params: dict
    items: dict
    stats: dict
    objective: float


class Run(NamedTuple):
    """The end of one restart."""

    params: dict
    items: dict
    history: list
    n_iter: int
    converged: bool
    n_extrapolated: int
    seconds: float
    #: where the loop stood (to go on from it: screened restarts) and the
    #: SQUAREM longest step there
    state: object = None
    step_max: float = 1.0


class ConvergenceMonitor:
    """The objective of every kept state, the pass count and the stopping
    rule of one restart.

    A pass is one local step over the data; ``n_iter`` counts the passes
    after the first, ``history`` the objective of every kept state (a
    rejected extrapolation is a pass but not a kept state).  The loop stops
    when ``n_iter`` reaches ``max_iter`` or a step changes the objective by
    less than ``tol``.

    Parameters
    ----------
    tol : float
        Stop when one pass changes the objective by less than this.
    max_iter : int
        Most passes after the first.
    history : list of float, default=()
        Objectives of an earlier run to go on from.
    n_iter, n_extrapolated : int, default=0
        Passes and kept extrapolations of that earlier run.

    Examples
    --------
    >>> from skcrowd._loop import ConvergenceMonitor
    >>> monitor = ConvergenceMonitor(tol=0.1, max_iter=10, history=[-5.0])
    >>> monitor.plain_step(-4.0), monitor.converged
    (1.0, False)
    >>> monitor.plain_step(-3.95), monitor.converged
    (0.04999999999999982, True)
    >>> monitor.largest_decrease()
    0.0
    """

    def __init__(self, tol, max_iter, history=(), n_iter=0, n_extrapolated=0):
        self.tol = tol
        self.max_iter = max_iter
        self.history = list(history)
        self.n_iter = n_iter
        self.n_extrapolated = n_extrapolated
        self.converged = False

    def going_on(self):
        """Whether the loop makes another pass."""
        return self.n_iter < self.max_iter and not self.converged

    def at_limit(self):
        return self.n_iter >= self.max_iter

    def count_pass(self):
        """A pass whose state is not kept (a rejected extrapolation)."""
        self.n_iter += 1

    def plain_step(self, objective):
        """A kept plain step reached ``objective``; returns the change.  The
        plain rule: converged when the change is below ``tol``."""
        self.n_iter += 1
        change = objective - self.history[-1]
        self.history.append(objective)
        self.converged = abs(change) < self.tol
        return change

    def extrapolated_step(self, objective, forecast):
        """A kept extrapolated step reached ``objective``; returns the
        change.  It stops the loop only when it also went at least as far
        as the plain step it replaces was ``forecast`` to go (see
        :func:`forecast_plain_gain`): then the plain loop would have
        stopped after that step at a point no better.  Its pass was counted
        by :meth:`count_pass`."""
        self.n_extrapolated += 1
        change = objective - self.history[-1]
        self.history.append(objective)
        self.converged = forecast <= change < self.tol
        return change

    def largest_decrease(self):
        """The largest fall of the objective between kept states (0 when it
        never decreased, as EM and VB guarantee up to rounding)."""
        steps = np.diff(np.asarray(self.history, dtype=np.float64))
        return float(max(0.0, -steps.min())) if len(steps) else 0.0


def forecast_plain_gain(gain, rate):
    """The objective gain forecast for the plain step θ2 = G(θ1) after the
    plain step θ0 -> θ1 that gained ``gain``.

    Near its fixed point EM converges linearly (Dempster, Laird & Rubin
    1977): the error shrinks by a factor λ per step along the slowest
    direction, so step lengths shrink by λ and the objective's gains, which
    are quadratic in the error there, by λ².  ``rate`` is λ² estimated from
    the two steps' lengths, |θ2 - θ1|² / |θ1 - θ0|² (both known after one
    pass: θ2 is a global update from θ1's statistics).  Infinite (no
    forecast, so no stop) unless ``gain`` is positive.
    """
    if not (gain > 0.0 and np.isfinite(rate)):
        return np.inf
    return gain * rate


class Squarem:
    """SQUAREM extrapolation (Varadhan & Roland 2008, scheme S3) on a
    model's unconstrained parameter vector.

    From two plain updates θ1 = G(θ0), θ2 = G(θ1): θ' = θ0 - 2a r + a² v
    with r = θ1 - θ0, v = θ2 - 2θ1 + θ0 and the step length
    a = -|r| / |v|, at most ``step_max`` long (a = -1 gives back θ2).  The
    longest step grows fourfold each time it is used in full and shrinks
    back after a rejection (the SQUAREM package's ``step.max`` rule).

    Parameters
    ----------
    to_vector : callable
        Global parameters -> 1-D array (entries may be ±inf: a probability
        of exactly 0 or 1; those coordinates stay where the plain update
        puts them).
    from_vector : callable
        ``(vector, template)`` -> global parameters; what the vector does
        not hold is taken from ``template``.
    step_max : float, default=1.0
    """

    def __init__(self, to_vector, from_vector, step_max=1.0):
        self.to_vector = to_vector
        self.from_vector = from_vector
        self.step_max = step_max

    def extrapolate(self, params0, params1, params2):
        """The extrapolated parameters (None when a = -1), the step length
        a, whether the longest step capped it, and the squared ratio
        |θ2 - θ1|² / |θ1 - θ0|² of the two plain steps' lengths (the
        contraction rate of the objective's gains, for the stopping rule)."""
        x0, x1, x2 = (self.to_vector(p) for p in (params0, params1, params2))
        # Coordinates at ±inf (probabilities of exactly 0 or 1) stay put.
        free = np.isfinite(x0) & np.isfinite(x1) & np.isfinite(x2)
        with np.errstate(invalid="ignore"):  # inf - inf where not free, dropped
            r = np.where(free, x1 - x0, 0.0)
            v = np.where(free, x2 - 2.0 * x1 + x0, 0.0)
        rr, vv = dot(r, r), dot(v, v)
        if not (vv > 0.0 and np.isfinite(rr) and np.isfinite(vv)):
            return None, -1.0, False, np.inf
        rate = dot(r + v, r + v) / rr if rr > 0.0 else np.inf
        length = np.sqrt(rr / vv)
        a = -min(max(length, 1.0), self.step_max)
        if a == -1.0:  # θ' = θ2: nothing to gain
            return None, a, length >= self.step_max, rate
        x = np.where(free, x0 - 2.0 * a * r + a * a * v, x2)
        return self.from_vector(x, params2), a, length >= self.step_max, rate

    def used(self, at_max):
        """The step was kept (or was a = -1): grow when used in full."""
        if at_max:
            self.step_max *= 4.0

    def rejected(self, at_max):
        """The extrapolated state was worse than θ1."""
        if at_max:
            self.step_max = max(1.0, self.step_max / 4.0)


def em_loop(evaluate, update, state, monitor, accelerator=None, checkpoint=None,
            restore=None, report=None):
    """One restart of the fit loop from ``state``; returns the last kept state.

    Every pass over the data is a local step at some global parameters.
    Plain iteration alternates ``update`` (the global update from a state's
    statistics) and ``evaluate`` (the local step and objective at new
    parameters).  With an ``accelerator`` (:class:`Squarem`), after the
    plain step θ0 -> θ1 the loop forms θ2 = G(θ1) from θ1's statistics (no
    pass) and evaluates the extrapolation θ', kept only when its objective
    is at least θ1's; otherwise the loop evaluates θ2 (a plain step from
    θ1) and goes on from there, so the objective of the kept states never
    decreases and a kept extrapolation costs two passes (θ1 and θ'), not
    three.  ``checkpoint()`` / ``restore(saved)`` (the backend's, for item
    state that lives outside the loop's states: on Dask workers) roll the
    items back after a rejected extrapolation.  ``report(n_iter, objective, change, extrapolated)``
    is called after every kept step (the progress reporter).
    """

    def plain(state, new_params=None):
        if new_params is None:
            new_params = update(state)
        new = evaluate(new_params)
        change = monitor.plain_step(new.objective)
        if report is not None:
            report(monitor.n_iter, new.objective, change, None)
        return new

    while monitor.going_on():
        first = plain(state)
        if monitor.converged or accelerator is None or monitor.at_limit():
            state = first
            continue
        second = update(first)  # θ2 = G(θ1) needs only θ1's statistics: no pass
        trial, a, at_max, rate = accelerator.extrapolate(state.params, first.params, second)
        if trial is not None:
            saved = None if checkpoint is None else checkpoint()
            candidate = evaluate(trial)
            monitor.count_pass()
            if np.isfinite(candidate.objective) and candidate.objective >= first.objective:
                forecast = forecast_plain_gain(first.objective - state.objective, rate)
                change = monitor.extrapolated_step(candidate.objective, forecast)
                if report is not None:
                    report(monitor.n_iter, candidate.objective, change, a)
                state = candidate
                accelerator.used(at_max)
                continue
            if restore is not None:
                restore(saved)
            accelerator.rejected(at_max)
        else:
            accelerator.used(at_max)
        state = first
        if not monitor.at_limit():
            state = plain(first, second)
    return state


class Alone:
    """Whether a restart run in a thread is the only one left: true once
    every other restart of the fit has ended (none running, none waiting).

    Only a running restart asks, so then no other thread runs a kernel and
    the restart's kernels can take every thread (numba's workqueue layer
    cannot run parallel regions from two threads at once).  Results do not
    change: the models' parallel kernels equal their serial twins bit for
    bit (fixed blocks, summed in order).
    """

    def __init__(self, n_restarts):
        self._unfinished = n_restarts
        self._lock = threading.Lock()

    def ended(self):
        with self._lock:
            self._unfinished -= 1

    def __bool__(self):
        return self._unfinished <= 1


def run_restarts(one, starts, *, parallel, lockstep=None, single_thread=None):
    """``one(restart, params)`` from every start; the list of their ends.

    ``parallel`` restarts run in client threads whose local steps are
    batched by ``lockstep`` (one task per partition and iteration serves
    all of them: the Dask backend), or else in threads with serial kernels
    each, ``single_thread(params, alone)`` giving a restart's parameters
    for that (:class:`Alone` tells it when it runs alone and may take every
    thread).  Otherwise, or with one numba thread, one after another.
    """
    n_threads = numba.get_num_threads()
    parallel = parallel and len(starts) > 1
    if parallel and lockstep is not None:
        return lockstep(lambda r: one(r, starts[r]), range(len(starts)))
    if parallel and n_threads > 1:
        # One restart per thread with serial (nogil) kernels: numba's
        # workqueue layer cannot run parallel regions from two threads.
        # The last restart, once it runs alone, takes every thread.
        alone = Alone(len(starts))

        def in_thread(restart):
            numba.set_num_threads(n_threads)  # (per thread: the pool's own)
            try:
                return one(restart, single_thread(starts[restart], alone))
            finally:
                alone.ended()

        with ThreadPoolExecutor(max_workers=min(n_threads, len(starts))) as pool:
            return list(pool.map(in_thread, range(len(starts))))
    return [one(restart, start) for restart, start in enumerate(starts)]


class Progress:
    """Live progress lines of a fit, tagged and safe to call from threads.

    ``verbose=1`` prints a line when each restart starts and ends, and one
    iteration line at most every ``every`` seconds of a restart (a long fit
    is never silent); ``verbose=2`` prints every iteration.  Each line names
    the model and the restart and ends with the seconds since the fit
    started; a lock keeps lines from restarts in different threads whole,
    and each is flushed as soon as it is written.

    Parameters
    ----------
    name : str
        The model's name, the start of every tag.
    verbose : int
        0 prints nothing.
    n_init : int
        Number of restarts (shown in the tag).
    every : float, default=10.0
        With ``verbose=1``: seconds between iteration lines of one restart.
    stream : file-like, default=None
        Where to write; ``None`` is ``sys.stdout`` at the time of writing.

    Examples
    --------
    >>> from skcrowd._loop import Progress
    >>> progress = Progress("DawidSkene", verbose=2, n_init=1)
    >>> progress.iteration(0, 3, -1.25, 0.01, None)  # doctest: +ELLIPSIS
    [DawidSkene restart 1/1] iteration 3  objective -1.25  change 0.01  (...s)
    """

    def __init__(self, name, verbose, n_init, every=10.0, stream=None):
        self.name = name
        self.verbose = int(verbose)
        self.n_init = n_init
        self.every = every
        self.stream = stream
        self.started = perf_counter()
        self._lock = threading.Lock()
        self._last = {}

    def _write(self, restart, text):
        line = (f"[{self.name} restart {restart + 1}/{self.n_init}] {text}  "
                f"({perf_counter() - self.started:.2f}s)")
        with self._lock:
            print(line, file=self.stream or sys.stdout, flush=True)

    def begin(self, restart):
        """A restart starts."""
        if self.verbose:
            self._last[restart] = perf_counter()
            self._write(restart, "started")

    def iteration(self, restart, n_iter, objective, change, restart_started,
                  extrapolated=None):
        """Iteration ``n_iter`` (a pass over the data) reached ``objective``;
        ``extrapolated`` is the step length of an accepted SQUAREM step."""
        if not self.verbose:
            return
        now = perf_counter()
        if self.verbose < 2:
            if now - self._last.get(restart, now) < self.every:
                return
            self._last[restart] = now
        kind = "" if extrapolated is None else f"  extrapolated (step {-extrapolated:.3g})"
        self._write(restart, f"iteration {n_iter}  objective {objective:.8g}  "
                             f"change {change:.3g}{kind}")

    def end(self, restart, run, screened=False):
        """A restart ended with ``run`` (``screened``: stopped after the
        screening iterations, not continued)."""
        if self.verbose:
            state = "converged" if run.converged else "did not converge"
            if screened and not run.converged:
                state = "screened"
            extra = (f" ({run.n_extrapolated} extrapolated)" if run.n_extrapolated else "")
            self._write(restart, f"{state} after {run.n_iter} iterations{extra} in "
                                 f"{run.seconds:.2f}s, objective {run.history[-1]:.8g}")
