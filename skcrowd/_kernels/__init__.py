"""Numba kernels: module-level functions over arrays, no scikit-learn imports.

Rules (DESIGN §5): ``@njit(cache=True, nogil=True)``; outputs preallocated by
the caller; no randomness; ``prange`` only over disjoint outputs (items in a
local step, raters in a by-rater pass) so results do not depend on the number
of threads; log-space throughout, no ``fastmath``.
"""
