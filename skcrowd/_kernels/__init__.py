"""Numba kernels: module-level functions over arrays, no scikit-learn imports.

Rules:

* compiled with :func:`._config.jit` (``nogil``, cached on disk), each on its
  first call and for that call's argument types only;
* a kernel with a serial and a parallel variant is written once and
  compiled both ways by :func:`._common.serial_and_parallel`; ``prange`` only
  over disjoint outputs (items in a local step, raters in a by-rater pass)
  and fixed blocks summed in order, so results do not depend on the number
  of threads;
* a kernel the models call on every fit may have a vectorised numpy twin
  (:func:`._config.with_numpy_twin`) that runs on small inputs, with the
  same results to rounding (tests/test_kernels.py runs both sides);
* outputs preallocated by the caller; no randomness; log-space throughout;
* no ``fastmath`` except the single flag ``contract`` (a * b + c fused into
  one FMA) in the vectorised exponential of :mod:`._common`, which assumes
  nothing about inf or NaN; special functions (``digamma``, the fast
  ``exp`` / ``log``) live once, in :mod:`._common`.
"""
