"""How the kernels are compiled and which implementation a call runs.

* :func:`jit` is the one decorator of the compiled kernels: ``nogil``,
  cached on disk where the cache can be written (:func:`cache_dir`).
* numba's OpenMP threads wait for work passively (:func:`start_threads`),
  so that they do not spin on a core that another process needs.
* Below :data:`NUMPY_MAX_RATINGS` ratings a kernel that has a vectorised
  numpy twin runs the twin: a small fit then never waits for numba's
  compiler (several seconds per model with an empty cache), and the twin
  costs little per call at that size.  :func:`kernel_path` forces one side
  (tests compare the two; benchmarks time each).
"""

import os
import tempfile
from contextlib import contextmanager

import numba

#: below this many ratings (or item rows, for item-level kernels) a kernel
#: with a numpy twin runs the twin: measured in doc/first_run.rst (a
#: Dawid-Skene fit on 50,000 ratings takes about as long on the numpy path
#: as loading its compiled kernels from a warm cache)
NUMPY_MAX_RATINGS = 50_000

# "numpy" / "jit" while kernel_path() forces one side, else None
_forced = None


@contextmanager
def kernel_path(path):
    """Run every kernel that has a numpy twin on ``path`` ("numpy" or
    "jit") inside the block, whatever the size of its input."""
    global _forced
    if path not in ("numpy", "jit"):
        raise ValueError(f"kernel_path must be 'numpy' or 'jit', got {path!r}")
    previous, _forced = _forced, path
    try:
        yield
    finally:
        _forced = previous


def use_numpy(size, limit=None):
    """Whether a call over ``size`` ratings runs the numpy twin: below
    ``limit`` (None: :data:`NUMPY_MAX_RATINGS`), unless :func:`kernel_path`
    forces a side."""
    if _forced is not None:
        return _forced == "numpy"
    return size < (NUMPY_MAX_RATINGS if limit is None else limit)


def with_numpy_twin(twin, size, limit=None):
    """Decorator: calls of the compiled kernel with ``size(*args)`` below
    ``limit`` (None: :data:`NUMPY_MAX_RATINGS`; a model whose twin pays at
    another size gives its own, measured) run ``twin(*args)`` instead
    (``twin`` None: none; the call then only picks the serial or parallel
    variant).

    The result is a plain function (so compiled kernels cannot call it:
    only kernels that the models call directly get a twin); ``.jit`` and
    ``.numpy`` are the two sides, ``.pick(size)`` the one a call of that
    size runs.  A compiled side made by ``serial_and_parallel`` runs the
    variant its own ``pick`` gives.
    """
    def wrap(kernel):
        pick_compiled = getattr(kernel, "pick", lambda n: kernel)

        def pick(n):
            return twin if twin is not None and use_numpy(n, limit) else pick_compiled(n)

        def call(*args):
            return pick(size(*args))(*args)

        call.__name__ = kernel.__name__
        call.__qualname__ = getattr(kernel, "__qualname__", kernel.__name__)
        call.__doc__ = kernel.__doc__
        call.__module__ = kernel.__module__
        call.jit = kernel
        call.numpy = twin
        call.pick = pick
        return call
    return wrap


def _writable(path):
    """Whether files can be created in ``path`` (made if missing)."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def _user_cache_root():
    """The per-user cache folder of the platform (XDG on Linux)."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    elif os.uname().sysname == "Darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "skcrowd", "numba")


_cache_dir = False  # not decided yet (None is a decision: numba's own)


def cache_dir():
    """Where the compiled kernels are cached, decided once per process.

    None lets numba choose: when the user set ``NUMBA_CACHE_DIR`` (never
    overridden) or when the package's own ``__pycache__`` can be written.
    Otherwise (a system install, a read-only container image) a per-user
    folder, ``$XDG_CACHE_HOME/skcrowd/numba`` (``~/.cache/...``), else
    ``<tempdir>/skcrowd-numba-<uid>``; "" when nothing can be written: the
    kernels then compile in every process, but nothing fails (numba would
    refuse to decorate a cached function with no place for its cache).
    """
    global _cache_dir
    if _cache_dir is not False:
        return _cache_dir
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    if os.environ.get("NUMBA_CACHE_DIR") or numba.config.CACHE_DIR or _writable(here):
        _cache_dir = None
        return _cache_dir
    candidates = [_user_cache_root()]
    try:
        uid = os.getuid() if hasattr(os, "getuid") else os.getlogin()
        candidates.append(os.path.join(tempfile.gettempdir(), f"skcrowd-numba-{uid}"))
    except OSError:  # no temp folder can be written either (FileNotFoundError)
        pass
    for candidate in candidates:
        if _writable(candidate):
            _cache_dir = candidate
            return _cache_dir
    _cache_dir = ""
    return _cache_dir


def jit(func=None, **options):
    """``numba.njit(nogil=True, **options)``, cached on disk in :func:`cache_dir`.

    Compiles lazily, on the first call, for the types of that call's
    arguments only.
    """
    if func is None:
        return lambda f: jit(f, **options)
    dispatcher = numba.njit(nogil=True, **options)(func)
    location = cache_dir()
    if location == "":
        return dispatcher
    if location is None:
        dispatcher.enable_caching()
        return dispatcher
    # numba picks a function's cache folder when caching is enabled (from
    # its config): point it at ours for that moment only, so that the
    # user's own numba functions keep numba's choice
    previous = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = location
    try:
        dispatcher.enable_caching()
    finally:
        numba.config.CACHE_DIR = previous
    return dispatcher


_threads_started = False


def start_threads():
    """Start numba's thread pool with OpenMP's passive wait policy, unless
    the user chose a policy (``OMP_WAIT_POLICY``) or the pool runs already.
    Called before skcrowd first asks numba about threads (the first fit),
    not at import: a process that forks after importing skcrowd keeps
    libgomp unstarted, as before.

    libgomp's default keeps an idle thread spinning for a while after each
    parallel region.  With another process on one of two cores, the
    spinning thread took CPU from the thread doing the work: a GLAD fit on
    50,000 ratings took 1.23 s at 2 threads against 0.81 s at one; waiting
    passively, 0.37 s against 0.64 s (doc/first_run.rst).  The policy is read once,
    when libgomp starts, so it is set for that moment only: child processes
    and libraries loaded later see the user's environment unchanged.
    """
    global _threads_started
    if _threads_started:
        return
    _threads_started = True
    if "OMP_WAIT_POLICY" in os.environ:
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        numba.get_num_threads()  # starts the pool
    finally:
        del os.environ["OMP_WAIT_POLICY"]


@contextmanager
def numba_threads(n_jobs):
    """Run the enclosed kernels on ``n_jobs`` numba threads, then restore.

    ``None`` keeps the current setting; negative values count back from the
    number of cores as in joblib (-1 = all).  Starts numba's threads first
    (:func:`start_threads`).
    """
    start_threads()
    if n_jobs is None:
        yield
        return
    available = numba.config.NUMBA_NUM_THREADS
    n = n_jobs if n_jobs > 0 else max(1, available + 1 + n_jobs)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(n, available))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
