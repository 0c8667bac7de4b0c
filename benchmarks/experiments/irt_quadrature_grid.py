"""How many Gauss–Hermite nodes each IRT3PL item-effect dimension needs.

Total quadrature log marginal likelihood at fixed parameters, for several
(difficulty, discrimination, guessing) node counts, relative to a 41 x 15 x 15
grid.  Cases: the full model fitted to caries; the truth of two wide-difficulty
simulations (σ_β = 3 and 3.9, the recovery design of tests/test_irt.py and
the same stretched by 1.3); the truth of make_irt's defaults.

Run:
    PYTHONPATH=. python benchmarks/experiments/irt_quadrature_grid.py
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

import skcrowd._irt as irt
from skcrowd import IRT3PL
from skcrowd.datasets import load_caries, make_irt

warnings.simplefilter("ignore", ConvergenceWarning)
GRIDS = [(41, 15, 15), (9, 9, 9), (7, 7, 7), (15, 5, 7), (21, 5, 7), (21, 5, 5), (31, 5, 7)]
ABILITIES = np.c_[np.linspace(-3, 7, 8), np.linspace(-2, 8, 8)[[5, 7, 6, 3, 1, 4, 0, 2]]]


def simulated(stretch=None):
    if stretch is None:
        hyper = {"difficulty_scale": 1.0, "discrimination_scale": 0.25,
                 "guessing_mean": -1.5, "guessing_scale": 1.0}
        data = make_irt(n_items=10_000, n_raters=8, ratings_per_item=8, random_state=0)
    else:
        hyper = {"difficulty_scale": 3.0 * stretch, "discrimination_scale": 0.25,
                 "guessing_mean": -2.0, "guessing_scale": 0.5}
        data = make_irt(n_items=10_000, n_raters=8, ratings_per_item=8, random_state=0,
                        rater_abilities=ABILITIES * stretch,
                        **{k: v for k, v in hyper.items() if k != "discrimination_scale"})
    return data.ratings, {"alpha_sens": data.alpha_sens, "alpha_spec": data.alpha_spec,
                          "prior": data.prevalence, "hyper": hyper}


def main():
    caries = load_caries().ratings
    cases = {"caries, fitted full model": (caries, IRT3PL(random_state=0).fit(caries)._fitted_params()),
             "sigma_beta = 3 (test design), truth": simulated(1.0),
             "sigma_beta = 3.9, truth": simulated(1.3),
             "make_irt defaults, truth": simulated(None)}
    saved = dict(irt.DEFAULT_NODES)
    print("relative difference of the total log likelihood from 41 x 15 x 15")
    print(f"{'case':38s}" + "".join(f"{'x'.join(map(str, g)):>11s}" for g in GRIDS[1:]))
    try:
        for name, (ratings, params) in cases.items():
            totals = []
            for grid in GRIDS:
                irt.DEFAULT_NODES.update(zip(("difficulty", "discrimination", "guessing"), grid))
                model = IRT3PL(max_iter=0, n_init=1).fit(ratings)
                _, stats = model._local_step(model._encode(ratings, reset=False), params)
                totals.append(stats["loglik_total"])
            ref = totals[0]
            print(f"{name:38s}" + "".join(f"{(t - ref) / abs(ref):11.1e}" for t in totals[1:]))
    finally:
        irt.DEFAULT_NODES.clear()
        irt.DEFAULT_NODES.update(saved)


if __name__ == "__main__":
    main()
