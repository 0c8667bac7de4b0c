"""Accuracy on gold of DawidSkene for a few Dirichlet prior settings.

Run from the repository root:  python benchmarks/dawid_skene_prior_scan.py
"""

import warnings

import numpy as np

from skcrowd import DawidSkene
from skcrowd.datasets import load_bluebirds, load_dog, load_rte, load_web

SETS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}
PRIORS = [(2, 1), (1, 0.5), (1, 1), (0.5, 0.25), (0.1, 0.1), (0, 0)]


def main():
    data = {name: load() for name, load in SETS.items()}
    print(f"{'(correct, wrong)':<18}" + "".join(f"{n:>11}" for n in data))
    for correct, wrong in PRIORS:
        cells = []
        for d in data.values():
            known = ~np.isnan(d.gold)
            model = DawidSkene(prior_correct=correct, prior_wrong=wrong)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels = model.fit_predict(d.ratings)
            cells.append(np.mean(labels[known] == d.gold[known]))
        print(f"{str((correct, wrong)):<18}" + "".join(f"{c:>11.4f}" for c in cells))


if __name__ == "__main__":
    main()
