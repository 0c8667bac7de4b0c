"""Pieces shared by the Newton experiments (newton_experiment.py for
DawidSkene, glad_newton_experiment.py for GLAD)."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning


def reduced(p):
    """Reduced softmax coordinates of the last axis: log p_l - log p_K."""
    log = np.log(p)
    return log[..., :-1] - log[..., -1:]


def from_reduced(eta):
    """The probabilities of the last axis back from :func:`reduced`."""
    full = np.concatenate([eta, np.zeros(eta.shape[:-1] + (1,))], axis=-1)
    full -= full.max(axis=-1, keepdims=True)
    e = np.exp(full)
    return e / e.sum(axis=-1, keepdims=True)


def safeguarded_newton(model, data, state, tol, max_iter, newton_point):
    """The shipped loop's safeguard and stopping rule around Newton steps.

    From each kept state, ``newton_point(state)`` gives the Newton point (or
    None); it is evaluated (one pass) and kept when the objective did not
    fall, otherwise the model's plain update is evaluated (one more pass).
    Stops when a kept step changes the objective by less than ``tol``.
    Returns the last state, the passes after the first, the kept Newton
    steps, the kept objectives, the seconds ``newton_point`` took and
    whether the rule stopped the loop (not ``max_iter``).
    """
    passes, n_newton, history, algebra = 0, 0, [state.objective], 0.0
    converged = False
    while passes < max_iter and not converged:
        start = time.perf_counter()
        trial = newton_point(state)
        algebra += time.perf_counter() - start
        if trial is not None:
            candidate = model._evaluate(data, trial)
            passes += 1
            if np.isfinite(candidate.objective) and candidate.objective >= state.objective:
                converged = candidate.objective - state.objective < tol
                state = candidate
                history.append(state.objective)
                n_newton += 1
                continue
        new = model._evaluate(data, model._global_update(data, state.params, state.stats))
        passes += 1
        converged = abs(new.objective - state.objective) < tol
        state = new
        history.append(state.objective)
    return state, passes, n_newton, history, algebra, converged


def timed_fit_predict(make, ratings, **params):
    """``make(max_iter=20000, **params).fit_predict(ratings)`` timed: the
    model, its labels and the wall seconds."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make(max_iter=20000, **params)
        labels = np.asarray(model.fit_predict(ratings))
    return model, labels, time.perf_counter() - start
