"""An experiment, not shipped: Anderson acceleration in place of SQUAREM in
the fit loop, counted in passes over the data on the shipped sets.

Run::

    PYTHONPATH=. python benchmarks/experiments/anderson_experiment.py
    PYTHONPATH=. python benchmarks/experiments/anderson_experiment.py --models DawidSkene,GLAD --tol 1e-6

SQUAREM spends two plain passes for every extrapolated one.  Anderson
acceleration (Anderson 1965; "type II" in Walker & Ni 2011) extrapolates at
every pass from the last ``m`` (point, plain update) pairs,

    x' = G(x_k) - ΔG γ,   γ = argmin ‖f_k - ΔF γ‖,   f_i = G(x_i) - x_i,

so it might reach half the plain passes where SQUAREM does not (on the
small shipped sets).  The variant here is the one that did best in a few
trials: memory m = 10, the same monotone safeguard as the shipped loop (a
point is kept only when its objective is at least the kept state's; a
rejection clears the memory and takes the plain step, and extrapolation
resumes once three plain pairs are stored again), and the plain stopping
rule (an accepted point that changes the objective by less than ``tol`` is
followed by a plain step, which decides).  It replaces ``CrowdModel._run``
for the run of this script only.
"""

import argparse
import warnings
from time import perf_counter

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, datasets
from skcrowd._base import CrowdModel, _Run

MEMORY = 10
REFILL = 4  # stored pairs needed after a rejection before extrapolating again


def _anderson_point(model, points, updates, template):
    free = np.logical_and.reduce([np.isfinite(v) for v in points + updates])
    x = np.stack([np.where(free, v, 0.0) for v in points], axis=1)
    g = np.stack([np.where(free, v, 0.0) for v in updates], axis=1)
    d_f, d_g = np.diff(g - x, axis=1), np.diff(g, axis=1)
    if not np.any(d_f):
        return None
    gamma = np.linalg.lstsq(d_f, g[:, -1] - x[:, -1], rcond=1e-12)[0]
    point = g[:, -1] - d_g @ gamma
    if not np.all(np.isfinite(point)):
        return None
    return model._params_from_vector(np.where(free, point, updates[-1]), template)


def anderson_run(self, data, params, progress=None, restart=0, max_iter=None, resume=None):
    """``CrowdModel._run`` with Anderson acceleration (see the module text);
    the shipped loop for plain fits and for resumed short runs."""
    if not self.accelerate or resume is not None or self._params_to_vector(params) is None:
        return plain_run(self, data, params, progress, restart, max_iter, resume)
    max_iter = self.max_iter if max_iter is None else max_iter
    state = self._evaluate(data, params)
    history, passes, n_extrapolated, started = [state.objective], 0, 0, perf_counter()
    points, updates, need, verify, converged = [], [], 2, False, False
    while passes < max_iter and not converged:
        update = self._global_update(data, state.params, state.stats)
        points.append(self._params_to_vector(state.params))
        updates.append(self._params_to_vector(update))
        del points[:-MEMORY - 1], updates[:-MEMORY - 1]
        trial = None
        if not verify and len(points) >= need:
            trial = _anderson_point(self, points, updates, update)
        if trial is not None:
            checkpoint = getattr(data, "checkpoint", lambda: None)()
            candidate = self._evaluate(data, trial)
            passes += 1
            if np.isfinite(candidate.objective) and candidate.objective >= state.objective:
                n_extrapolated += 1
                verify = abs(candidate.objective - state.objective) < self.tol
                history.append(candidate.objective)
                state, need = candidate, 2
                continue
            if checkpoint is not None:
                data.restore(checkpoint)
            points, updates, need = points[-1:], updates[-1:], REFILL
            if passes >= max_iter:
                break
        new = self._evaluate(data, update)
        passes += 1
        converged = abs(new.objective - state.objective) < self.tol
        history.append(new.objective)
        state, verify = new, False
    return _Run(state.params, state.items, history, passes, converged, n_extrapolated,
                perf_counter() - started)


plain_run = CrowdModel._run

MODELS = {
    "DawidSkene": (DawidSkene, ("bluebirds", "caries", "dog", "rte", "trec2010", "web"),
                   lambda m: np.concatenate([m.confusion_.ravel(), m.class_prior_])),
    "GLAD": (GLAD, ("bluebirds", "caries", "dog", "rte", "trec2010", "web"),
             lambda m: np.concatenate([m.rater_ability_, m.class_prior_])),
    "MACE": (lambda **kw: MACE(random_state=0, **kw), ("bluebirds", "caries", "dog", "rte",
                                                       "web"),
             lambda m: np.concatenate([m.rater_competence_, m.spam_distribution_.ravel()])),
    "IRT3PL": (lambda **kw: IRT3PL(random_state=0, **kw), ("bluebirds", "caries", "rte"),
               lambda m: np.concatenate([m.alpha_sens_, m.alpha_spec_, m.class_prior_])),
}


def _fit(make, ratings, scheme, tol):
    CrowdModel._run = anderson_run if scheme == "anderson" else plain_run
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return make(accelerate=scheme != "plain", tol=tol, max_iter=20000).fit(ratings)
    finally:
        CrowdModel._run = plain_run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="DawidSkene")
    parser.add_argument("--tol", default="1e-12,1e-6")
    args = parser.parse_args()
    print("| model | data | tol | passes plain | SQUAREM | Anderson | ratio SQUAREM / "
          "Anderson | rel. objective (Anderson) | max param diff | labels equal |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        make, sets, parameters = MODELS[name]
        for data_name in sets:
            ratings = getattr(datasets, f"load_{data_name}")().ratings
            for tol in (float(t) for t in args.tol.split(",")):
                fits = {s: _fit(make, ratings, s, tol) for s in ("plain", "squarem", "anderson")}
                plain, squarem, anderson = (fits[s] for s in ("plain", "squarem", "anderson"))
                n = {s: sum(f._restart_n_iter) for s, f in fits.items()}
                rel = abs(anderson.lower_bound_ - plain.lower_bound_) / abs(plain.lower_bound_)
                diff = np.max(np.abs(parameters(anderson) - parameters(plain)))
                same = np.array_equal(plain.predict(ratings), anderson.predict(ratings))
                print(f"| {name} | {data_name} | {tol:g} | {n['plain']} | {n['squarem']} | "
                      f"{n['anderson']} | {n['squarem'] / n['plain']:.2f} / "
                      f"{n['anderson'] / n['plain']:.2f} | {rel:.1e} | {diff:.1e} | {same} |",
                      flush=True)


if __name__ == "__main__":
    main()
