"""IRT3PL speed and agreement, with crowd-kit's Dawid–Skene beside the ABC model.

Run:
    PYTHONPATH=. python benchmarks/bench_irt.py [--skip-1m | --full-1m]
    PYTHONPATH=. python benchmarks/bench_irt.py --fits-only 5

Rows:
1. caries (19,345 ratings) and RTE (8,000 ratings, 164 raters): the full
   model with its default restarts (n_init=2);
2. caries: all 18 lattice models, each fitted and checked with 1,000
   replicates (the paper's table);
3. caries / RTE: ABC (= Dawid–Skene) against crowd-kit's DawidSkene (time,
   agreement of labels, accuracy on RTE gold);
4. 1M synthetic ratings (make_irt, 125,000 items x 8 ratings, 100 raters): the
   full model; by default five iterations (time per iteration), with
   ``--full-1m`` the complete default fit (two restarts to convergence).

``--fits-only N`` times only row 1, N times per data set (the spread of one
fit on a shared machine), and prints the median.

Compilation is paid once before the clocks start (a tiny fit of each
configuration).  Timings on a shared 2-core machine are provisional.
"""

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))

from skcrowd import DawidSkene, IRT3PL, lattice  # noqa: E402
from skcrowd.checks import posterior_predictive_check  # noqa: E402
from skcrowd.datasets import load_caries, load_rte, make_irt  # noqa: E402

warnings.simplefilter("ignore", ConvergenceWarning)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def warm_up():
    tiny = make_irt(n_items=50, n_raters=4, ratings_per_item=3, random_state=0).ratings
    for _, params in lattice():
        model = IRT3PL(**params, max_iter=2).fit(tiny)
        posterior_predictive_check(model, tiny, n_replicates=2, random_state=0)
    DawidSkene(max_iter=2).fit(tiny)
    # RTE's fit reaches kernel specialisations the tiny fits do not (their
    # compilation took 13 s of a timed RTE fit).
    IRT3PL(n_init=1, max_iter=5, random_state=0).fit(load_rte().ratings)


def crowdkit_ds(ratings):
    try:
        from _crowdkit import crowdkit_available, crowdkit_dawid_skene
    except ImportError:
        return None
    if not crowdkit_available():
        return None
    # crowd-kit's default stopping rule (tol=1e-5 on its loss), not forced iterations
    codes = np.unique(ratings.label, return_inverse=True)[1]
    return crowdkit_dawid_skene(ratings._item, ratings._rater, codes,
                                n_iter=100, full_iter=False)


class _Rows(list):
    """Rows printed as soon as they are measured (a long run keeps its output)."""

    def append(self, row):
        super().append(row)
        print("  ".join(row), flush=True)


def fits_only(repeats):
    """Row 1 alone, ``repeats`` times per data set."""
    for name, ratings in (("caries", load_caries().ratings), ("rte", load_rte().ratings)):
        runs = [timed(lambda: IRT3PL(random_state=0).fit(ratings)) for _ in range(repeats)]
        seconds = sorted(s for _, s in runs)
        print(f"{name}, full model, n_init=2: {', '.join(f'{s:.2f}' for s in seconds)} s "
              f"(median {np.median(seconds):.2f} s; {runs[0][0].n_iter_} iterations, "
              "best restart)", flush=True)


def main():
    warm_up()
    if "--fits-only" in sys.argv:
        fits_only(int(sys.argv[sys.argv.index("--fits-only") + 1]))
        return
    rows = _Rows()
    caries = load_caries().ratings

    for name, ratings in (("caries", caries), ("rte", load_rte().ratings)):
        model, seconds = timed(lambda: IRT3PL(random_state=0).fit(ratings))
        rows.append((f"{name}, full model, n_init=2", f"{seconds:.2f} s",
                     f"{model.n_iter_} iterations (best restart)"))
        # The cost of one iteration alone: 20 iterations from the seeded start (random_state=0).
        _, seconds = timed(lambda: IRT3PL(n_init=1, max_iter=20, tol=0.0,
                                          random_state=0).fit(ratings))
        rows.append((f"{name}, full model, 20 iterations", f"{seconds:.3f} s",
                     f"{seconds / 20 * 1e3:.1f} ms per iteration"))

    def all_models():
        for _, params in lattice():
            m = IRT3PL(**params, random_state=0).fit(caries)
            posterior_predictive_check(m, caries, n_replicates=1000, random_state=0)

    _, seconds = timed(all_models)
    rows.append(("caries, 18 models + 1,000-replicate check each", f"{seconds:.1f} s", ""))

    for name, bunch in (("caries", load_caries()), ("rte", load_rte())):
        ratings = bunch.ratings
        abc, t_abc = timed(lambda: IRT3PL.from_tag("abc", random_state=0).fit(ratings))
        ds, t_ds = timed(lambda: DawidSkene().fit(ratings))
        labels = abc.predict(ratings)
        corr = np.corrcoef(abc.predict_proba(ratings)[:, 1], ds.predict_proba(ratings)[:, 1])[0, 1]
        extra = f"posterior corr with skcrowd DawidSkene {corr:.4f}"
        ck = crowdkit_ds(ratings)
        if ck is not None:
            ck_labels, t_ck = ck
            extra += f"; label agreement with crowd-kit {np.mean(ck_labels == labels):.4f}"
            rows.append((f"{name}, crowd-kit DawidSkene", f"{t_ck:.3f} s", ""))
        if bunch.gold is not None:
            known = ~np.isnan(bunch.gold)
            extra += f"; accuracy on gold {np.mean(labels[known] == bunch.gold[known]):.4f}"
            if ck is not None:
                extra += f" (crowd-kit {np.mean(ck[0][known] == bunch.gold[known]):.4f})"
        rows.append((f"{name}, IRT3PL abc", f"{t_abc:.3f} s", extra))
        rows.append((f"{name}, skcrowd DawidSkene", f"{t_ds:.3f} s", ""))

    if "--skip-1m" not in sys.argv:
        data = make_irt(n_items=125_000, n_raters=100, ratings_per_item=8, random_state=0)
        ratings = data.ratings
        if "--full-1m" in sys.argv:
            model, seconds = timed(lambda: IRT3PL(random_state=0, verbose=1).fit(ratings))
            label = "full model, n_init=2"
        else:
            # Five iterations from the Dawid–Skene start: the time per iteration.
            model, seconds = timed(lambda: IRT3PL(init="dawid_skene", n_init=1, max_iter=5,
                                                  random_state=0).fit(ratings))
            label = "full model, 5 iterations"
        acc = np.mean(model.predict(ratings) == data.true_labels)
        rows.append((f"1M synthetic ({ratings.n_ratings:,} ratings), {label}",
                     f"{seconds:.1f} s",
                     f"{seconds / max(model.n_iter_, 1):.2f} s/iteration incl. start, "
                     f"{model.n_iter_} iterations, converged={model.converged_}, "
                     f"accuracy {acc:.4f}"))

    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    width = max(len(r[0]) for r in rows)
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:>9}  {note}")


if __name__ == "__main__":
    main()
