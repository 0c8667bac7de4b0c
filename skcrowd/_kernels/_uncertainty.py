"""Kernels of the posterior samplers (skcrowd.uncertainty)."""

import numpy as np
from numba import prange

from ._common import serial_and_parallel
from ._irt import _pattern_posterior


@serial_and_parallel
def pattern_cell_cdf(pattern_ptr, rater, label, log_prior, table, cdf):
    """Cumulative posterior over the cells (z, grid node), per pattern.

    ``cdf[p, z * M + m]`` = P(cell <= (z, m) | ratings of pattern p), with
    ``log_prior`` the log prior of each cell and ``table[g, y, z * M + m]``
    = log P(rating y | cell; rater group g); used to draw every item's
    class and node jointly in IRT3PL's posterior sampler.
    """
    n_cells = log_prior.shape[0]
    for p in prange(pattern_ptr.shape[0] - 1):
        post = np.empty(n_cells)
        _pattern_posterior(p, pattern_ptr, rater, label, log_prior, table, post)
        running = 0.0
        for k in range(n_cells):
            running += post[k]
            cdf[p, k] = running
