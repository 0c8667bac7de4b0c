"""skcrowd: scikit-learn-compatible truth inference for noisy crowd ratings.

Infer the true label of each item from the ratings of several imperfect
raters, and measure the raters and the items.
"""

from ._auto import AutoCrowd
from ._baselines import MajorityVote, MeanRating, MedianRating
from ._dawid_skene import DawidSkene, dawid_skene_prior_grid
from ._glad import GLAD
from ._mace import MACE
from ._irt import IRT3PL, lattice, lattice_grid
from ._ordinal import OrdinalMixture
from ._ratings import Ratings

__version__ = "0.1.0"

__all__ = [
    "AutoCrowd",
    "DawidSkene",
    "GLAD",
    "IRT3PL",
    "MACE",
    "MajorityVote",
    "MeanRating",
    "MedianRating",
    "OrdinalMixture",
    "Ratings",
    "__version__",
    "dawid_skene_prior_grid",
    "lattice",
    "lattice_grid",
]
