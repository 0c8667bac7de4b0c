"""The accelerated fit loop (SQUAREM in CrowdModel._run) and the progress
reporter: every model reaches the plain iteration's optimum, the kept
objective never decreases with acceleration on, and verbose output is live
and tagged."""

import io
import re
import sys
import threading
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, OrdinalMixture, datasets
from skcrowd._loop import Progress
from skcrowd.datasets import make_dawid_skene, make_glad, make_irt, make_mace, make_ordinal


def _quiet_fit(model, ratings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(ratings)


@pytest.fixture(scope="module")
def small():
    return {
        "ds": make_dawid_skene(600, 12, 4, 3, spammer_fraction=0.2, random_state=0).ratings,
        "glad": make_glad(500, 12, 4, 2, spammer_fraction=0.2, random_state=1).ratings,
        "irt": make_irt(600, 8, 4, random_state=2).ratings,
        "ordinal": make_ordinal(400, 15, 4, random_state=3).ratings,
        "mace": make_mace(600, 15, 4, 3, spammer_fraction=0.2, random_state=4).ratings,
    }


# (data key, model factory, tight tolerance, fitted parameters compared)
CASES = {
    "DawidSkene": ("ds", lambda **kw: DawidSkene(**kw), 1e-13,
                   lambda m: [m.confusion_, m.class_prior_]),
    "DawidSkene-one_coin": ("ds", lambda **kw: DawidSkene(confusion="one_coin", **kw), 1e-13,
                            lambda m: [m.confusion_, m.class_prior_]),
    "GLAD": ("glad", lambda **kw: GLAD(class_prior="learn", **kw), 1e-13,
             lambda m: [m.rater_ability_, m.class_prior_, np.log(m.item_difficulty_)]),
    "IRT3PL": ("irt", lambda **kw: IRT3PL(n_init=1, random_state=0, **kw), 1e-14,
               lambda m: [m.alpha_sens_, m.alpha_spec_, m.class_prior_,
                          list(m.item_prior_.values())]),
    # VB: the posterior means of θ and ξ (the probabilities, as for the others)
    "MACE": ("mace", lambda **kw: MACE(n_init=1, **kw), 1e-13,
             lambda m: [m.rater_competence_, m.spam_distribution_]),
    "MACE-em-learn": ("mace", lambda **kw: MACE(method="em", class_prior="learn", n_init=1,
                                                **kw), 1e-13,
                      lambda m: [m.rater_competence_, m.spam_distribution_, m.class_prior_]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_accelerated_fit_reaches_the_plain_optimum(small, case):
    key, make, tol, parameters = CASES[case]
    plain = _quiet_fit(make(accelerate=False, tol=tol, max_iter=5000), small[key])
    fast = _quiet_fit(make(accelerate=True, tol=tol, max_iter=5000), small[key])
    assert plain.converged_ and fast.converged_
    assert fast._n_extrapolated > 0, "no extrapolated step was kept: the test tests nothing"
    assert fast.lower_bound_ == pytest.approx(plain.lower_bound_, rel=1e-6)
    assert fast.lower_bound_ >= plain.lower_bound_ - 1e-9 * abs(plain.lower_bound_)
    for a, b in zip(parameters(plain), parameters(fast)):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-4)
    np.testing.assert_array_equal(fast.predict(small[key]), plain.predict(small[key]))
    assert fast.n_iter_ < plain.n_iter_


@pytest.mark.parametrize("case", sorted(CASES) + ["OrdinalMixture"])
def test_objective_never_decreases_with_acceleration(small, case):
    if case == "OrdinalMixture":
        key, model = "ordinal", OrdinalMixture(n_init=2, random_state=0)
    else:
        key, make, _, _ = CASES[case]
        model = make()
    model.set_params(accelerate=True, tol=0, max_iter=60)
    _quiet_fit(model, small[key])
    assert model.n_iter_ == 60
    assert model._n_extrapolated > 0
    for history in model._restart_histories:
        assert np.all(np.isfinite(history))
        assert np.all(np.diff(history) >= -1e-12 * np.abs(history[1:])), case
        # one entry per kept state; a rejected extrapolation costs a pass
        assert len(history) <= 61


def test_plain_iteration_keeps_every_pass(small):
    model = _quiet_fit(DawidSkene(accelerate=False, tol=0, max_iter=25), small["ds"])
    assert model.n_iter_ == 25 and len(model.objective_history_) == 26
    assert model._n_extrapolated == 0


# -- the stopping rule on the accelerated sequence -----------------------------------
def _run_with_lines(model, ratings):
    """One restart of ``model``'s loop from its first start, with its
    progress lines (which name the extrapolated steps)."""
    data = model._prepare(model._encode(ratings, reset=True))
    stream = io.StringIO()
    progress = Progress(type(model).__name__, 2, 1, stream=stream)
    run = model._run(data, model._init_params(data, np.random.RandomState(0), 0), progress)
    steps = [line for line in stream.getvalue().splitlines() if "] iteration " in line]
    return data, run, steps


def test_a_stop_on_an_extrapolated_step_meets_the_plain_rule():
    # A fit may stop on a kept extrapolated step θ1 -> θ' (its gain below tol
    # and at least the forecast gain of the plain step θ1 -> θ2 it replaces);
    # the plain rule then holds there too: one more plain step from θ'
    # gains less than tol.
    stopped_on_extrapolation = 0
    for seed in range(6):
        ratings = make_dawid_skene(3000, 20, 5, 4, random_state=seed).ratings
        model = DawidSkene()
        data, run, steps = _run_with_lines(model, ratings)
        assert run.converged and len(steps) == run.n_iter
        gains = np.diff(run.history)
        assert 0 <= gains[-1] < model.tol
        if "extrapolated" not in steps[-1]:
            continue
        stopped_on_extrapolation += 1
        assert "extrapolated" not in steps[-2]  # θ0 -> θ1, then θ' (the stop)
        more = model._run(data, None, resume=run, max_iter=run.n_iter + 1)
        assert more.n_iter == run.n_iter + 1 and len(more.history) == len(run.history) + 1
        assert 0 <= more.history[-1] - more.history[-2] < model.tol
    assert stopped_on_extrapolation > 0, "no fit stopped on an extrapolated step"


@pytest.mark.parametrize("name", ["bluebirds", "caries", "dog", "rte", "trec2010", "web"])
def test_accelerated_fit_stops_no_farther_from_the_optimum(name):
    # At the default tol neither sequence is at the fixed point; the
    # accelerated fit must not stop short of where plain EM stops.  A rule
    # that stopped on any extrapolated step gaining less than tol did: on
    # TREC an extrapolation that overshot gained 6e-7 after 27 passes, 1.7e-4
    # below the optimum where plain EM stops 4.9e-5 below it.
    ratings = getattr(datasets, f"load_{name}")().ratings
    plain = DawidSkene(accelerate=False, max_iter=5000).fit(ratings)
    fast = DawidSkene(max_iter=5000).fit(ratings)
    assert plain.converged_ and fast.converged_
    assert fast.lower_bound_ >= plain.lower_bound_
    assert fast.n_iter_ < plain.n_iter_


# -- progress ------------------------------------------------------------------------
LINE = re.compile(r"^\[(\w+) restart (\d+)/(\d+)\] (.+)  \((\d+\.\d\d)s\)$")


class _Recorder(io.StringIO):
    """stdout that remembers which thread wrote each line."""

    def __init__(self):
        super().__init__()
        self.writers = []

    def write(self, text):
        if text.strip():
            self.writers.append((threading.current_thread().name, text.strip()))
        return super().write(text)


def _capture(fit):
    recorder, saved = _Recorder(), sys.stdout
    sys.stdout = recorder
    try:
        fit()
    finally:
        sys.stdout = saved
    return recorder


def test_progress_lines_are_tagged_whole_and_timed(small):
    recorder = _capture(lambda: _quiet_fit(
        OrdinalMixture(n_init=3, n_jobs=2, verbose=2, max_iter=15, random_state=0),
        small["ordinal"]))
    lines = recorder.getvalue().splitlines()
    assert lines and all(LINE.match(line) for line in lines), lines[:5]
    assert "nan" not in recorder.getvalue()
    tags = [LINE.match(line).groups() for line in lines]
    assert {(name, total) for name, _, total, _, _ in tags} == {("OrdinalMixture", "3")}
    for restart in ("1", "2", "3"):
        mine = [text for _, r, _, text, _ in tags if r == restart]
        assert mine[0] == "started"
        assert re.match(r"(converged|did not converge) after 15 iterations", mine[-1])
        assert sum(text.startswith("iteration ") for text in mine) >= 8


def test_threaded_restarts_report_live_from_their_threads(small):
    # A restart's lines are written by the thread that runs it, while it
    # runs (the old code printed every line from the main thread at the end).
    recorder = _capture(lambda: _quiet_fit(
        OrdinalMixture(n_init=2, n_jobs=2, verbose=1, max_iter=10, random_state=0),
        small["ordinal"]))
    main = threading.main_thread().name
    ends = [writer for writer, text in recorder.writers if "after 10 iterations" in text]
    assert len(ends) == 2 and main not in ends


def test_verbose_one_prints_restart_lines_only_for_short_fits(small):
    recorder = _capture(lambda: _quiet_fit(DawidSkene(verbose=1, n_init=2, random_state=0),
                                           small["ds"]))
    texts = [LINE.match(line).group(4) for line in recorder.getvalue().splitlines()]
    assert texts[0] == "started" and texts[1].startswith("converged after")
    assert len(texts) == 4


def test_ordinal_extrapolated_point_stays_finite(small):
    # A long SQUAREM step can put log shapes and rates where exp is 0 or
    # inf; the model's point must stay a finite, positive gamma (a zero
    # precision used to divide by zero in the item sweep).
    model = OrdinalMixture(n_init=1, max_iter=2, accelerate=True, random_state=0)
    _quiet_fit(model, small["ordinal"])
    params = model._fitted_params()
    vector = model._params_to_vector(params)
    for far in (vector * 1e3, -np.abs(vector) * 1e3 - 1e4):
        new = model._params_from_vector(far, params)
        for name in ("tau_shape", "tau_rate", "delta_shape", "delta_rate"):
            assert np.all(np.isfinite(new[name])) and np.all(new[name] > 0), name
        assert np.isfinite(new["alpha"]) and new["alpha"] > 0
        assert np.isfinite(new["beta"]) and new["beta"] > 0
        data = model._encode(small["ordinal"], reset=False)
        problem = model._prepare(data)
        items, stats = model._local_step(problem, dict(new, mu=model.item_mean_,
                                                       lam=1.0 / model.item_std_**2))
        assert np.all(np.isfinite(items["mu"]))
