"""The parts of the fit loop (skcrowd/_loop.py) on a fixed-point problem
whose answer is known: the convergence monitor's stopping rule, SQUAREM,
the restart runner.  The models' tests run the same parts on real data."""

import numpy as np
import pytest

from skcrowd._kernels._common import dot
from skcrowd._loop import ConvergenceMonitor, Squarem, State, em_loop, run_restarts

#: a contraction x -> A x + c (eigenvalues 0.3 and 0.95: one slow
#: direction, as EM near its fixed point) and its fixed point
A = np.array([[0.95, 0.0], [0.0, 0.3]])
C = np.array([0.5, -1.0])
FIXED = np.linalg.solve(np.eye(2) - A, C)


def evaluate(params):
    x = params["x"]
    # the objective rises as the iterates approach the fixed point
    return State(params, None, None, -float(np.sum((x - FIXED) ** 2)))


def update(state):
    return {"x": A @ state.params["x"] + C}


def run(accelerate, tol=1e-12, max_iter=1000):
    state = evaluate({"x": np.zeros(2)})
    monitor = ConvergenceMonitor(tol, max_iter, [state.objective])
    squarem = Squarem(lambda p: p["x"], lambda v, template: {"x": v}) if accelerate else None
    return em_loop(evaluate, update, state, monitor, squarem), monitor


def test_plain_loop_stops_by_the_plain_rule():
    state, monitor = run(accelerate=False, tol=1e-6)
    history = np.asarray(monitor.history)
    assert monitor.converged and monitor.n_iter == len(history) - 1
    assert abs(history[-1] - history[-2]) < 1e-6 <= abs(history[-2] - history[-3])
    assert monitor.largest_decrease() == 0.0
    np.testing.assert_allclose(state.params["x"], FIXED, atol=1e-2)


def test_squarem_reaches_the_fixed_point_in_fewer_passes():
    plain_state, plain = run(accelerate=False)
    fast_state, fast = run(accelerate=True)
    assert fast.converged and plain.converged
    assert fast.n_extrapolated > 0
    assert fast.n_iter < plain.n_iter / 2
    assert fast.largest_decrease() == 0.0  # kept states never fall
    np.testing.assert_allclose(fast_state.params["x"], FIXED, atol=1e-5)
    np.testing.assert_allclose(plain_state.params["x"], FIXED, atol=1e-5)


def test_max_iter_caps_the_passes_and_resuming_goes_on():
    state = evaluate({"x": np.zeros(2)})
    short = ConvergenceMonitor(0.0, 5, [state.objective])
    middle = em_loop(evaluate, update, state, short)
    assert short.n_iter == 5 and not short.converged
    resumed = ConvergenceMonitor(0.0, 8, short.history, short.n_iter)
    em_loop(evaluate, update, middle, resumed)
    whole = ConvergenceMonitor(0.0, 8, [state.objective])
    em_loop(evaluate, update, state, whole)
    assert resumed.history == whole.history


def test_largest_decrease_reports_a_fall():
    monitor = ConvergenceMonitor(0.1, 10, [-3.0, -2.0, -2.5, -1.0])
    assert monitor.largest_decrease() == pytest.approx(0.5)


def test_squarem_step_length_rule():
    squarem = Squarem(lambda p: p, lambda v, template: v, step_max=1.0)
    x0, x1 = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    x2 = np.array([1.5, 1.5])  # |r| / |v| = 2, capped at the longest step 1
    trial, a, at_max, _ = squarem.extrapolate(x0, x1, x2)
    assert trial is None and a == -1.0 and at_max  # a = -1 gives back θ2
    squarem.used(at_max)
    trial, a, _, _ = squarem.extrapolate(x0, x1, x2)
    assert a == -2.0
    np.testing.assert_allclose(trial, x0 + 4 * (x1 - x0) + 4 * (x2 - 2 * x1 + x0))
    squarem.rejected(True)
    assert squarem.step_max == 1.0


@pytest.mark.parametrize("n", [0, 1, 50_000])
def test_dot_is_the_sum_of_products(n):
    # long enough that BLAS would thread it
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=n), rng.normal(size=n)
    value = dot(a, b)
    assert isinstance(value, float)
    assert value == pytest.approx(float(np.sum(a * b)), rel=1e-12, abs=1e-12)


def test_squarem_step_on_a_long_parameter_vector():
    # the step length from the two plain steps, |r| / |v| (here 2, one
    # value per parameter on 50,000 parameters)
    squarem = Squarem(lambda p: p, lambda v, template: v, step_max=8.0)
    x0 = np.zeros(50_000)
    x1, x2 = x0 + 1.0, x0 + 1.5
    trial, a, at_max, rate = squarem.extrapolate(x0, x1, x2)
    assert a == -2.0 and not at_max
    assert rate == pytest.approx(0.25)  # |θ2 - θ1|² / |θ1 - θ0|²
    np.testing.assert_allclose(trial, x0 + 4 * (x1 - x0) + 4 * (x2 - 2 * x1 + x0))


@pytest.mark.parametrize("parallel", [False, True])
def test_run_restarts_returns_every_restart_in_order(parallel):
    seen = []

    def one(restart, params):
        seen.append(restart)
        return restart, params

    starts = [{"x": k} for k in range(5)]
    runs = run_restarts(one, starts, parallel=parallel,
                        single_thread=lambda params, alone: params)
    assert runs == [(k, {"x": k}) for k in range(5)]
    assert sorted(seen) == list(range(5))
