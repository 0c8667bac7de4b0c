"""Accelerated (SQUAREM) against plain EM/VB: passes over the data and the
optimum reached, per model and shipped data set.

Run::

    PYTHONPATH=. python benchmarks/bench_acceleration.py
    PYTHONPATH=. python benchmarks/bench_acceleration.py --models DawidSkene,GLAD --tol tight
    PYTHONPATH=. python benchmarks/bench_acceleration.py --models DawidSkene,GLAD --tol tight \
        --sets bluebirds,caries,dog,rte --step-max0 1,4,16,64

For each model and data set the fit runs twice, ``accelerate=False`` and
``accelerate=True``, at the model's default ``tol`` and at a tight one
(``--tol default|tight|both``) where the plain iteration itself gets close
to its fixed point.  A pass is one local step over every rating (``n_iter_``
counts them after the first; with acceleration a rejected extrapolation
costs a pass too).  Reported: passes of the best restart and of all
restarts, the relative difference of the objectives, the largest absolute
difference of the fitted parameters, whether the predicted labels are
identical, and the wall time of each fit (numba compiled beforehand).
``--step-max0`` repeats the accelerated fit with other first caps on the
SQUAREM step length (the loop's ``_step_max0``, 1 for every model).

``--trace`` (with ``--tol tight``) prints, per model and data set, how far
below the optimum each kept state of the plain and the accelerated fit is
(the optimum: a plain fit to ``tol=1e-15``), and after how many passes the
accelerated fit first reaches the plain fit's final objective (refits with
``max_iter=n``, which are deterministic)::

    PYTHONPATH=. python benchmarks/bench_acceleration.py --models DawidSkene \
        --tol tight --sets dog,rte --trace
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, OrdinalMixture
from skcrowd import datasets

CATEGORICAL = ("bluebirds", "caries", "dog", "rte", "trec2010", "web")
BINARY = ("bluebirds", "caries", "rte")

MODELS = {
    # name: (constructor, data sets, tight tol, parameters compared)
    "DawidSkene": (DawidSkene, CATEGORICAL, 1e-12,
                   lambda m: np.concatenate([m.confusion_.ravel(), m.class_prior_])),
    "GLAD": (GLAD, CATEGORICAL, 1e-12,
             lambda m: np.concatenate([m.rater_ability_, m.class_prior_])),
    "IRT3PL": (lambda **kw: IRT3PL(random_state=0, **kw), BINARY, 1e-12,
               lambda m: np.concatenate([m.alpha_sens_, m.alpha_spec_, m.class_prior_,
                                         list(m.item_prior_.values())])),
    # one restart, the majority start (the default screens 10 restarts, whose
    # passes before the screening are the same with and without acceleration)
    "MACE": (lambda **kw: MACE(n_init=1, random_state=0, **kw), CATEGORICAL, 1e-12,
             lambda m: np.concatenate([m.rater_competence_, m.spam_distribution_.ravel(),
                                       m.class_prior_])),
    "OrdinalMixture": (lambda **kw: OrdinalMixture(random_state=0, **kw), ("trec2010", "web"),
                       1e-4,
                       lambda m: np.concatenate([np.log(m.rater_precision_),
                                                 m.rater_reliability_, m.item_mean_])),
}


def _load(name, model):
    if name == "trec2010" and model == "OrdinalMixture":
        return datasets.load_trec2010(preprocess="paper").ratings
    return getattr(datasets, f"load_{name}")().ratings


def _fit(make, ratings, **params):
    model = make(**params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(ratings)
    return model, time.perf_counter() - start


def _warm_up():
    from skcrowd.datasets import make_dawid_skene, make_irt, make_ordinal

    small = make_dawid_skene(60, 5, 3, random_state=0).ratings
    for make in (DawidSkene, GLAD, MACE):
        for accelerate in (False, True):
            _fit(make, small, max_iter=5, accelerate=accelerate)
    _fit(IRT3PL, make_irt(60, 5, 3, random_state=0).ratings, max_iter=5)
    _fit(OrdinalMixture, make_ordinal(60, 5, 3, random_state=0).ratings, max_iter=5, n_init=2)


def _cases(models, only_sets=None):
    """(model name, constructor, data set name, ratings, tight tol, parameters
    compared) for every model and data set asked for."""
    for name in models:
        make, sets, tight, parameters = MODELS[name]
        for data_name in sets:
            if not only_sets or data_name in only_sets:
                yield name, make, data_name, _load(data_name, name), tight, parameters


def run(models, tols, max_iter, only_sets=None, step_max0s=(None,)):
    print("| model | data | tol | first step cap | passes plain | passes accelerated | ratio | "
          "all restarts plain / acc. | rel. objective diff | max param diff | "
          "labels equal | wall s plain / acc. |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, make, data_name, ratings, tight, parameters in _cases(models, only_sets):
        for tol_name in tols:
            params = {"max_iter": max_iter}
            if tol_name == "tight":
                params["tol"] = tight
            plain, t_plain = _fit(make, ratings, accelerate=False, **params)
            for step_max0 in step_max0s:
                kind = type(plain)
                default = kind._step_max0
                if step_max0 is not None:
                    kind._step_max0 = step_max0
                try:
                    fast, t_fast = _fit(make, ratings, accelerate=True, **params)
                finally:
                    kind._step_max0 = default
                tol = plain.tol
                rel = abs(fast.lower_bound_ - plain.lower_bound_) / abs(plain.lower_bound_)
                diff = np.max(np.abs(parameters(fast) - parameters(plain)))
                same = np.array_equal(plain.predict(ratings), fast.predict(ratings))
                cap = default if step_max0 is None else step_max0
                print(f"| {name} | {data_name} | {tol:g} | {cap:g} | {plain.n_iter_} | "
                      f"{fast.n_iter_} | {fast.n_iter_ / max(plain.n_iter_, 1):.2f} | "
                      f"{sum(plain._restart_n_iter)} / {sum(fast._restart_n_iter)} | "
                      f"{rel:.1e} | {diff:.1e} | {same} | {t_plain:.2f} / {t_fast:.2f} |",
                      flush=True)


def trace(models, only_sets=None):
    """Gaps to the optimum, kept state by kept state (see the module text)."""
    for name, make, data_name, ratings, tight, _ in _cases(models, only_sets):
        optimum = _fit(make, ratings, accelerate=False, tol=1e-15, max_iter=20000)[0]
        print(f"{name} on {data_name}, tol={tight:g}: gap to the optimum "
              f"({optimum.lower_bound_:.12g}, {optimum.n_iter_} plain passes at tol=1e-15)")
        fits = {}
        for accelerate in (False, True):
            model = _fit(make, ratings, accelerate=accelerate, tol=tight, max_iter=20000)[0]
            fits[accelerate] = model
            gaps = optimum.lower_bound_ - np.asarray(model.objective_history_)
            print(f"  {'accelerated' if accelerate else 'plain':>11} "
                  f"({model.n_iter_} passes): " + " ".join(f"{g:.1e}" for g in gaps))
        target = fits[False].lower_bound_
        reach = next((n for n in range(1, fits[True].n_iter_ + 1)
                      if _fit(make, ratings, accelerate=True, tol=tight,
                              max_iter=n)[0].lower_bound_ >= target), None)
        print(f"  the accelerated fit reaches the plain fit's final objective after "
              f"{reach} passes (plain: {fits[False].n_iter_})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="DawidSkene,GLAD,IRT3PL,MACE,OrdinalMixture")
    parser.add_argument("--tol", default="both", choices=["default", "tight", "both"])
    parser.add_argument("--max-iter", type=int, default=20000)
    parser.add_argument("--sets", default=None, help="only these data sets, e.g. caries,dog")
    parser.add_argument("--step-max0", default=None,
                        help="first caps on the step length to compare, e.g. 1,4,16")
    parser.add_argument("--trace", action="store_true",
                        help="gaps to the optimum per kept state, at the tight tol")
    args = parser.parse_args()
    if args.trace:
        _warm_up()
        trace(args.models.split(","), args.sets.split(",") if args.sets else None)
        return
    tols = ("default", "tight") if args.tol == "both" else (args.tol,)
    caps = ((None,) if args.step_max0 is None
            else tuple(float(c) for c in args.step_max0.split(",")))
    _warm_up()
    run(args.models.split(","), tols, args.max_iter,
        args.sets.split(",") if args.sets else None, caps)


if __name__ == "__main__":
    main()
