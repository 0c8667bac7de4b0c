"""Real crowdsourced data sets (``load_*``) and model simulators (``make_*``)."""

from ._generators import make_dawid_skene
from ._ordinal_generator import make_ordinal
from ._loaders import (
    load_bluebirds,
    load_caries,
    load_dog,
    load_rte,
    load_trec2010,
    load_web,
)

__all__ = [
    "load_bluebirds",
    "load_caries",
    "load_dog",
    "load_rte",
    "load_trec2010",
    "load_web",
    "make_dawid_skene",
    "make_ordinal",
]
