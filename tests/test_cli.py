"""The skcrowd command line."""

import csv
import gzip
import subprocess
import sys

import numpy as np
import pytest

from skcrowd import cli
from skcrowd.datasets._loaders import resources


@pytest.fixture(scope="module")
def rte_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "rte.csv"
    source = resources.files("skcrowd.datasets").joinpath("data", "rte_labels.csv.gz")
    with source.open("rb") as raw, gzip.open(raw, "rt") as f:
        path.write_text(f.read())
    return path


def test_aggregate_writes_one_row_per_item(rte_csv, tmp_path):
    out = tmp_path / "truth.csv"
    assert cli.main(["aggregate", str(rte_csv), "--model", "dawid-skene", "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 800
    assert set(rows[0]) == {"item", "label", "probability", "p_0", "p_1"}
    p = np.array([[float(r["p_0"]), float(r["p_1"])] for r in rows])
    np.testing.assert_allclose(p.sum(axis=1), 1, atol=1e-5)


def test_raters_table(rte_csv, capsys):
    cli.main(["raters", str(rte_csv), "--model", "dawid-skene"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "rater,n_ratings,rater_accuracy"
    assert len(lines) == 165


def test_custom_column_names_and_a_clear_error(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("task,worker,answer\n1,a,x\n1,b,y\n2,a,x\n")
    out = tmp_path / "o.csv"
    cli.main(["aggregate", str(path), "--item", "task", "--rater", "worker",
              "--label", "answer", "--model", "majority-vote", "-o", str(out)])
    assert out.read_text().splitlines()[0].startswith("item,label,probability")
    with pytest.raises(SystemExit, match="no column"):
        cli.main(["aggregate", str(path)])


def test_demo_runs_as_a_command():
    result = subprocess.run(
        [sys.executable, "-m", "skcrowd.cli", "demo"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "rte" in result.stdout and "web" in result.stdout


def test_mace_aggregate_and_raters(rte_csv, tmp_path, capsys):
    out = tmp_path / "truth.csv"
    assert cli.main(["aggregate", str(rte_csv), "--model", "mace", "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 800
    cli.main(["raters", str(rte_csv), "--model", "mace"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "rater,n_ratings,rater_accuracy,rater_competence"
    assert len(lines) == 165
