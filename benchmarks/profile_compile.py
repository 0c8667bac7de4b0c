"""Where numba's compile time goes: one model's first fit, per kernel.

Runs each model's first fit in a fresh process with an empty numba cache
(``NUMBA_CACHE_DIR`` pointing at a new folder) and records numba's own
``numba:compile`` events: for every kernel and signature compiled, the CPU
seconds of its compilation, inclusive (a kernel's compile includes the
compiles of the kernels it calls) and exclusive (without them).  A kernel
whose numpy path ran compiles nothing and does not appear.

Usage::

    python benchmarks/profile_compile.py [MODEL ...]

MODEL is one of DawidSkene, MajorityVote, MACE, GLAD, OrdinalMixture (TREC
2010, ``n_init=1``), IRT3PL (RTE otherwise); default all but MajorityVote.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_first_run import MAKE_MODEL  # noqa: E402

CHILD = r"""
import json, sys, time
from numba.core import event

stack, rows = [], []


class Compiles(event.Listener):
    def on_start(self, ev):
        stack.append([time.process_time(), 0.0])

    def on_end(self, ev):
        start, inner = stack.pop()
        spent = time.process_time() - start
        if stack:
            stack[-1][1] += spent
        disp = ev.data["dispatcher"]
        name = getattr(disp, "py_func", disp).__qualname__
        parallel = bool(disp.targetoptions.get("parallel"))
        rows.append([name + (" [parallel]" if parallel else ""),
                     str(ev.data["args"]), spent, spent - inner])


event.register("numba:compile", Compiles())
t0 = time.process_time()
""" + MAKE_MODEL + r"""
t1 = time.process_time()
est.fit_predict(X)
print(json.dumps({"rows": rows, "import_load": t1 - t0, "fit": time.process_time() - t1}))
"""

MODELS = ["DawidSkene", "MACE", "GLAD", "OrdinalMixture", "IRT3PL"]


def profile(model):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", CHILD, model], env=env, check=True,
                             capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(models):
    with open("/proc/loadavg") as f:
        print(f"load average at start: {f.read().split()[:3]}")
    for model in models:
        result = profile(model)
        rows = sorted(result["rows"], key=lambda r: -r[3])
        total = sum(r[3] for r in rows)
        print(f"\n## {model}: import + load {result['import_load']:.2f} s CPU, "
              f"first fit {result['fit']:.2f} s CPU, of which compiling {total:.2f} s "
              f"({len(rows)} compilations)")
        seen = {}
        for name, args, incl, excl in rows:
            seen[name] = seen.get(name, 0) + 1
        print(f"| {'kernel':44s} | {'exclusive s':>11s} | {'inclusive s':>11s} |")
        for name, args, incl, excl in rows:
            # a kernel compiled for more than one signature: show which
            label = f"{name} {args}" if seen[name] > 1 else name
            print(f"| {label:44s} | {excl:11.2f} | {incl:11.2f} |")
    with open("/proc/loadavg") as f:
        print(f"\nload average at end: {f.read().split()[:3]}")


if __name__ == "__main__":
    main(sys.argv[1:] or MODELS)
