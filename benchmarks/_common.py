"""Pieces shared by the benchmark scripts."""

import subprocess
import sys
import time

COLD_CODE = """
import time
t0 = time.perf_counter()
import numpy as np
import skcrowd
from skcrowd.datasets import load_rte
R = load_rte().ratings
{fit}
print(f"{{time.perf_counter() - t0:.2f}}")
"""


def cold_start(fit, title, runs=3):
    """Time ``runs`` fresh processes that import skcrowd, load RTE and run
    ``fit`` (a statement using ``skcrowd`` and ``R``), and print them."""
    times = []
    for _ in range(runs):  # the first run may (re)fill the numba cache
        start = time.perf_counter()
        inner = subprocess.run([sys.executable, "-c", COLD_CODE.format(fit=fit)],
                               capture_output=True, text=True, check=True).stdout.strip()
        times.append((time.perf_counter() - start, float(inner)))
    print(f"\n## Cold start: fresh process, numba cache warm, {title}")
    for wall, inner in times:
        print(f"- process wall time {wall:.2f} s (import + load + fit inside: {inner:.2f} s)")
