"""Cost and checks of skcrowd.uncertainty.

``--perf``: the cost of the posterior draws against one fit (with the
load of the data): DawidSkene on 500k simulated ratings (Gibbs, bootstrap,
integrated probabilities), IRT3PL on caries, MACE and GLAD on RTE (Gibbs,
bootstrap).  Wall and CPU seconds.

``--lattice``: on caries and RTE, every model of Carpenter's lattice
(IRT3PL with the paper's fixed item priors, ``learn_item_prior=False``):
the MAP prevalence, the posterior mean and 90% interval from the Gibbs
sampler, beside the paper's Stan posterior mean of ``pi`` (copied below
from the paper's repository, bob-carpenter/crowdsource-computo,
python/results-caries.csv and results-rte.csv, column ``pi``).

    python benchmarks/bench_uncertainty.py --perf
    python benchmarks/bench_uncertainty.py --lattice
"""

import argparse
import os
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, lattice
from skcrowd.datasets import load_caries, load_rte, make_dawid_skene
from skcrowd.uncertainty import interval, posterior_samples

#: Carpenter (item-difficulty paper): Stan posterior means of pi per lattice
#: model (python/results-*.csv of its repository).
STAN_PI = {
    "caries": {"a": 0.200527, "ab": 0.205874, "abc": 0.195715, "abcd": 0.0777306,
               "abcde": 0.0960824, "abce": 0.166344, "abd": 0.0469596, "abde": 1.0,
               "ac": 0.182347, "acd": 0.0728376, "ad": 0.0469516, "bc": 0.177659,
               "bcd": 0.0758309, "bd": 0.058521, "c": 0.176193, "cd": 0.0744471,
               "d": 0.0587114, "full": 0.157181},
    "rte": {"a": 0.495583, "ab": 0.498951, "abc": 0.488029, "abcd": 0.479122,
            "abcde": 0.56662, "abce": 0.472609, "abd": 0.425633, "abde": 1.0,
            "ac": 0.484657, "acd": 0.481081, "ad": 0.428866, "bc": 0.518496,
            "bcd": 0.504367, "bd": 0.478355, "c": 0.51929, "cd": 0.505053,
            "d": 0.479604, "full": 0.522942},
}


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def timed(what, func):
    wall, cpu = time.perf_counter(), time.process_time()
    result = func()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"  {what:<44} {wall:7.2f} s wall {cpu:7.2f} s CPU   (load {load()})")
    return result, wall


def perf():
    print("DawidSkene, 100,000 items x 5 ratings = 500,000 ratings, 50 raters, K = 2")
    data, t_load = timed("simulate (the load)", lambda: make_dawid_skene(
        n_items=100_000, n_raters=50, ratings_per_item=5, random_state=0))
    ratings = data.ratings
    model, t_fit = timed("one fit", lambda: DawidSkene().fit(ratings))
    # the integrated probabilities (predict_proba with samples=None) are
    # the same chain's running average: the same cost
    _, t_gibbs = timed("Gibbs, 200 burn-in + 200 draws x thin 5", lambda: posterior_samples(
        model, ratings, 200, random_state=0))
    _, t_boot = timed("bootstrap, 20 warm refits", lambda: posterior_samples(
        model, ratings, 20, method="bootstrap", random_state=0))
    print(f"  ratio to load + fit: Gibbs {t_gibbs / (t_load + t_fit):.1f}x, bootstrap (20) "
          f"{t_boot / (t_load + t_fit):.1f}x; ratio to the fit alone: Gibbs "
          f"{t_gibbs / t_fit:.1f}x")
    for learn in (False, True):
        print(f"IRT3PL (full) on caries, learn_item_prior={learn}")
        ratings, t_load = timed("load_caries (the load)", lambda: load_caries().ratings)
        model, t_fit = timed("one fit", lambda: IRT3PL(learn_item_prior=learn,
                                                       random_state=0).fit(ratings))
        _, t_gibbs = timed("Gibbs, 100 burn-in + 200 draws", lambda: posterior_samples(
            model, ratings, 200, random_state=0))
        _, t_boot = timed("bootstrap, 20 warm refits", lambda: posterior_samples(
            model, ratings, 20, method="bootstrap", random_state=0))
        print(f"  ratio to load + fit: Gibbs {t_gibbs / (t_load + t_fit):.1f}x, bootstrap (20) "
              f"{t_boot / (t_load + t_fit):.1f}x")
    for make, chain in ((MACE, "200 burn-in + 200 draws x thin 5"),
                        (GLAD, "200 burn-in + 200 draws x thin 10")):
        print(f"{make.__name__} on RTE (defaults)")
        ratings, t_load = timed("load_rte (the load)", lambda: load_rte().ratings)
        model, t_fit = timed("one fit", lambda: make(random_state=0).fit(ratings))
        _, t_gibbs = timed(f"Gibbs, {chain}", lambda: posterior_samples(
            model, ratings, 200, random_state=0))
        _, t_boot = timed("bootstrap, 20 warm refits", lambda: posterior_samples(
            model, ratings, 20, method="bootstrap", random_state=0))
        print(f"  ratio to load + fit: Gibbs {t_gibbs / (t_load + t_fit):.1f}x, bootstrap (20) "
              f"{t_boot / (t_load + t_fit):.1f}x")


def lattice_table(names, n_samples):
    loaders = {"caries": load_caries, "rte": load_rte}
    for name in names:
        ratings = loaders[name]().ratings
        print(f"\n{name}: prevalence, IRT3PL(learn_item_prior=False) per lattice model, "
              f"Gibbs {n_samples} draws after 100 burn-in")
        print(f"{'model':<6} {'MAP':>7} {'mean':>7} {'90% interval':>17} {'Stan pi':>8} "
              f"{'inside':>6} {'seconds':>8}")
        inside_count = 0
        for tag, _ in lattice():
            model = IRT3PL.from_tag(tag, learn_item_prior=False, random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(ratings)
            start = time.perf_counter()
            draws = posterior_samples(model, ratings, n_samples, random_state=0)
            seconds = time.perf_counter() - start
            prevalence = draws["class_prior_"][:, 1]
            low, high = interval(prevalence, 0.9)
            stan = STAN_PI[name][tag]
            # a pinned prevalence (abde: pi = 1) is inside its point interval
            inside = low - 1e-12 <= stan <= high + 1e-12
            inside_count += inside
            print(f"{tag:<6} {model.class_prior_[1]:7.4f} {prevalence.mean():7.4f} "
                  f"[{low:6.4f}, {high:6.4f}] {stan:8.4f} {'yes' if inside else 'NO':>6} "
                  f"{seconds:8.1f}")
        print(f"Stan's mean inside the 90% interval for {inside_count} of 18 models "
              f"(load {load()})")
        ds = DawidSkene().fit(ratings)
        draws = posterior_samples(ds, ratings, n_samples, random_state=0)
        low, high = interval(draws["class_prior_"][:, 1], 0.9)
        print(f"DawidSkene (its own Dirichlet priors): MAP {ds.class_prior_[1]:.4f} mean "
              f"{draws['class_prior_'][:, 1].mean():.4f} [{low:.4f}, {high:.4f}]; "
              f"Stan abc {STAN_PI[name]['abc']:.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--perf", action="store_true")
    parser.add_argument("--lattice", action="store_true")
    parser.add_argument("--datasets", default="caries,rte")
    parser.add_argument("--n-samples", type=int, default=200)
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, load {load()}")
    if args.perf:
        perf()
    if args.lattice:
        lattice_table(args.datasets.split(","), args.n_samples)


if __name__ == "__main__":
    main()
