"""Real crowdsourced data sets (``load_*``) and model simulators (``make_*``)."""

from ._classification import load_digits_crowd, make_crowd_classification
from ._generators import make_dawid_skene
from ._glad_generator import make_glad
from ._irt_generator import make_irt
from ._mace_generator import make_mace
from ._loaders import (
    load_bluebirds,
    load_caries,
    load_dog,
    load_rte,
    load_trec2010,
    load_web,
)
from ._ordinal_generator import make_ordinal
from ._spam import add_fake_spam

__all__ = [
    "add_fake_spam",
    "load_bluebirds",
    "load_caries",
    "load_digits_crowd",
    "load_dog",
    "load_rte",
    "load_trec2010",
    "load_web",
    "make_crowd_classification",
    "make_dawid_skene",
    "make_glad",
    "make_irt",
    "make_mace",
    "make_ordinal",
]
