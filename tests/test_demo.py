"""``skcrowd demo``: what it fits, on which sets, and what it says it cost."""

import json
import os
import re
import subprocess
import sys
from time import process_time

import numpy as np
import pytest

from skcrowd import cli

# In a fresh process with an empty numba cache: the demo's fits of every
# model on the default sets, counting numba's compiles.
_DEMO_COMPILES = """
import json
import numpy as np
from skcrowd import cli

clock = cli._CompileClock()
events = []
from numba.core import event
event.register("numba:compile", type("Count", (event.Listener,), {
    "on_start": lambda self, ev: events.append(ev.data["dispatcher"].py_func.__qualname__),
    "on_end": lambda self, ev: None})())
for name in cli.DEFAULT_DEMO_SETS:
    ratings = cli._demo_data(name).ratings
    binary = len(np.unique(ratings.label)) == 2
    models = ("auto", "majority-vote", "dawid-skene", "one-coin", "mace", "mean", "median",
              "glad")
    graded = ("ordinal",) if name in cli.GRADED_SETS else ()
    for model in models + (("irt3pl",) if binary else ()) + graded:
        cli._demo_fit(model, ratings, clock)
print(json.dumps({"compiled": sorted(set(events)), "seconds": clock.seconds}))
"""


def test_the_default_demo_compiles_nothing(tmp_path):
    # the default sets are below every model's numpy limit: a first run
    # after an install never waits for numba's compiler
    result = subprocess.run([sys.executable, "-c", _DEMO_COMPILES], capture_output=True,
                            text=True, timeout=600,
                            env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out == {"compiled": [], "seconds": 0.0}


def test_compile_clock_counts_a_compile():
    import numba

    clock = cli._CompileClock()
    numba.njit(lambda x: x + 1)(1)  # a new function: compiled now
    assert clock.seconds > 0.0
    before = clock.seconds
    np.add(1, 2)  # no compile
    assert clock.seconds == before


def test_demo_says_what_it_fits_and_what_it_cost(capsys):
    start = process_time()
    assert cli.main(["demo", "--sets", "bluebirds"]) == 0
    out = capsys.readouterr().out
    assert cli.DEMO_FIRST_RUN in out and cli.DEMO_WARM_RUN in out
    ratings = cli._demo_data("bluebirds").ratings
    n_items, n_raters = ratings.shape
    line = next(s for s in out.splitlines() if s.startswith("bluebirds "))
    assert f"{n_items:,} items" in line and f"{n_raters:,} raters" in line
    assert f"{ratings.n_ratings:,} ratings" in line
    # no warm-up: the table's fits are the run's first (GLAD may compile here)
    assert "warm-up" not in out
    cost = re.search(r"This run: ([\d.]+) s wall, ([\d.]+) s CPU .*?([\d.]+) s CPU of it numba "
                     r"compiling; load average", out)
    assert cost is not None, out
    wall, cpu, compiling = map(float, cost.groups())
    # the process's CPU: at least this command's, at most all of it
    assert process_time() - start - 0.1 <= cpu <= process_time() + 0.1
    assert 0.0 <= compiling <= cpu and wall > 0.0
    assert "Graded sets" not in out  # bluebirds is categorical


def test_default_sets_leave_out_trec2010():
    parser = cli.build_parser()
    assert parser.parse_args(["demo"]).sets == ",".join(cli.DEFAULT_DEMO_SETS)
    assert "trec2010" not in cli.DEFAULT_DEMO_SETS and "trec2010" in cli.DEMO_SETS
    args = parser.parse_args(["demo", "--sets", "trec2010"])
    cli._check_args(args)  # still accepted
    with pytest.raises(SystemExit):
        cli._check_args(parser.parse_args(["demo", "--sets", "nope"]))


@pytest.mark.parametrize("name", ["glad", "irt3pl", "mace"])
def test_demo_fits_on_one_thread(name, monkeypatch):
    # the demo fixes n_jobs=1 (its results do not depend on it)
    seen = {}
    estimator = cli._estimator

    def recording(model_name):
        model = estimator(model_name)
        seen["model"] = model
        return model

    monkeypatch.setattr(cli, "_estimator", recording)
    cli._demo_fit(name, cli._demo_data("bluebirds").ratings)
    assert seen["model"].n_jobs == 1
    assert seen["model"].random_state == 0
