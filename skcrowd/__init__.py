"""skcrowd: scikit-learn-compatible truth inference for noisy crowd ratings.

Infer the true label of each item from the ratings of several imperfect
raters, and measure the raters and the items.
"""

import importlib

__version__ = "0.1.0"

# Each public name and the module that defines it.  They are imported on
# first use (PEP 562), so ``import skcrowd`` does not load scikit-learn,
# numba, pandas, Dask or matplotlib before they are needed.
_SOURCES = {
    "AutoCrowd": "._auto",
    "CrowdClassifier": "._classifier",
    "DawidSkene": "._dawid_skene",
    "EBCC": "._ebcc",
    "GLAD": "._glad",
    "IRT3PL": "._irt",
    "MACE": "._mace",
    "MajorityVote": "._baselines",
    "MeanRating": "._baselines",
    "MedianRating": "._baselines",
    "OrdinalMixture": "._ordinal",
    "PooledDawidSkene": "._pooled",
    "Ratings": "._ratings",
    "dawid_skene_prior_grid": "._dawid_skene",
    "lattice": "._irt",
    "lattice_grid": "._irt",
    "training_set": "._classifier",
}

_SUBMODULES = {"active", "checks", "cli", "datasets", "metrics", "plotting", "uncertainty"}

__all__ = sorted([*_SOURCES, "__version__"])


def __getattr__(name):
    if name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module("." + name, __name__)
    else:
        raise AttributeError(f"module 'skcrowd' has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__():
    return sorted([*globals(), *_SOURCES, *_SUBMODULES])
