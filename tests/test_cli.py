"""The skcrowd command line."""

import csv
import gzip
import io
import re
import subprocess
import sys

import numpy as np
import pytest

import skcrowd
from skcrowd import Ratings, cli
from skcrowd._auto import default_candidates
from skcrowd.datasets import make_ordinal
from skcrowd.datasets._loaders import resources


@pytest.fixture(scope="module")
def rte_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "rte.csv"
    source = resources.files("skcrowd.datasets").joinpath("data", "rte_labels.csv.gz")
    with source.open("rb") as raw, gzip.open(raw, "rt") as f:
        path.write_text(f.read())
    return path


def _error(capsys, argv):
    """The exit status and the one line on stderr of a failing command: 2
    for a usage mistake (found in the flags, before any file is read), 1 for
    bad input."""
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status in (1, 2) and err, (status, err)
    assert err[-1].startswith("skcrowd: error: "), err
    return status, err[-1]


def test_aggregate_writes_one_row_per_item(rte_csv, tmp_path):
    out = tmp_path / "truth.csv"
    assert cli.main(["aggregate", str(rte_csv), "--model", "dawid-skene", "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 800
    assert set(rows[0]) == {"item", "label", "probability", "p_0", "p_1"}
    p = np.array([[float(r["p_0"]), float(r["p_1"])] for r in rows])
    np.testing.assert_allclose(p.sum(axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("command", ["aggregate", "raters"])
def test_output_lines_end_in_a_newline_only(tmp_path, command):
    # the csv module's default "\r\n": every line ended in a stray \r on
    # Linux (seen by cut, awk and diff)
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\n1,a,x\n1,b,y\n2,a,y\n2,b,y\n")
    out = tmp_path / "out.csv"
    assert cli.main([command, str(path), "--model", "majority-vote", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert b"\r" not in data and data.count(b"\n") == 3  # a header and two items or raters


def test_raters_table(rte_csv, capsys):
    cli.main(["raters", str(rte_csv), "--model", "dawid-skene"])
    lines = capsys.readouterr().out.strip().splitlines()
    # the columns of DawidSkene().rater_table()
    assert lines[0] == "rater,n_ratings,accuracy,recall_0,recall_1"
    assert len(lines) == 165


def test_custom_column_names_and_a_clear_error(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("task,worker,answer\n1,a,x\n1,b,y\n2,a,x\n")
    out = tmp_path / "o.csv"
    cli.main(["aggregate", str(path), "--item", "task", "--rater", "worker",
              "--label", "answer", "--model", "majority-vote", "-o", str(out)])
    assert out.read_text().splitlines()[0].startswith("item,label,probability")
    assert "no column" in _error(capsys, ["aggregate", str(path)])[1]


def test_crowd_kit_column_names_need_no_flags(tmp_path, capsys):
    # a crowd-kit export (task,worker,label), which fit(df) reads as long
    # form, was "has no column(s) ['item', 'rater']" on the command line
    ratings = "1,a,0\n1,b,0\n1,c,1\n2,a,1\n2,b,1\n2,c,1\n3,a,0\n3,b,1\n3,c,0\n"
    tables = []
    for header in ("item,rater,label", "task,worker,label"):
        path = tmp_path / f"{header[:4]}.csv"
        path.write_text(header + "\n" + ratings)
        assert cli.main(["aggregate", str(path), "--random-state", "0"]) == 0
        tables.append(capsys.readouterr().out)
    assert tables[0].startswith("item,label,probability") and tables[1] == tables[0]
    # and its gold file: task,label (it needed item,label)
    gold = tmp_path / "gold.csv"
    gold.write_text("task,label\n3,1\n")
    assert cli.main(["aggregate", str(path), "--gold", str(gold)]) == 0
    out = capsys.readouterr()
    assert "with 1 gold items" in out.err and "\n3,1,1," in out.out
    # with a column named by a flag, the others are the flags' defaults
    assert "no column(s) ['id', 'rater']" in _error(capsys, ["aggregate", str(path),
                                                             "--item", "id"])[1]


@pytest.mark.parametrize("row, missing", [(",a,1", "item"), ("2,,1", "rater"),
                                          (" , ,1", "item or rater")])
def test_a_rating_without_an_item_or_rater_id_is_an_error(tmp_path, capsys, row,
                                                          missing):
    # an empty id was read as the id "" (one more item or rater), silently
    path = tmp_path / "r.csv"
    path.write_text(f"item,rater,label\n1,a,1\n1,b,0\n{row}\n")
    assert cli.main(["aggregate", str(path), "--model", "majority-vote"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"skcrowd: error: {path}, line 4: the rating has no {missing} id; "
                   "every rating needs an item and a rater.")


@pytest.mark.parametrize("ratings, flags, message", [
    ("1,a,1\n1,b,1\n2,a,1\n", [], "only one class (1)"),
    ("1,a,0\n1,b,1\n2,a,1\n2,b,1\n3,a,0\n", ["--model", "glad", "--max-iter", "1"],
     "GLAD did not converge"),
])
def test_warnings_are_one_line_on_stderr(tmp_path, capsys, ratings, flags, message):
    # they were printed by Python: file path and line, then the source line
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\n" + ratings)
    assert cli.main(["aggregate", str(path), *flags]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3, err  # read ..., the warning, fitted ...
    assert err[1].startswith("skcrowd: warning: ") and message in err[1]


@pytest.mark.parametrize("argv, message", [
    (["aggregate", "r.csv", "--model", "bogus"], "invalid choice: 'bogus'"),
    (["aggregate", "r.csv", "--max-iter", "abc"], "invalid int value: 'abc'"),
    (["aggregate"], "required: ratings"),
    (["bogus"], "invalid choice: 'bogus'"),
])
def test_usage_mistakes_are_one_line_on_stderr(capsys, argv, message):
    # argparse printed its usage block first: eight lines for aggregate
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    # one prefix for every error, a subcommand's too (was "skcrowd aggregate: error")
    assert len(err) == 1 and err[0].startswith("skcrowd: error: ") and message in err[0]
    assert err[0].endswith("--help)")


@pytest.mark.parametrize("classes", ["", ",", "0,,1"])
def test_classes_flag_with_an_empty_level_is_named(tmp_path, capsys, classes):
    # "" became the class '' and the error blamed the labels' type
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\n1,a,0\n1,b,1\n")
    status, err = _error(capsys, ["aggregate", str(path), "--model", "dawid-skene",
                                  "--classes", classes])
    assert status == 2 and re.search("--classes .* has an empty level", err)


def test_a_repeated_column_name_is_an_error_not_the_last_column(tmp_path, capsys):
    # csv.DictReader kept the last "item" column: the ids 2 and 3, silently
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label,item\n1,a,0,2\n1,b,1,3\n")
    assert "more than one column named ['item']" in _error(capsys, ["aggregate",
                                                                    str(path)])[1]


def test_an_empty_file_is_named_empty(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("")
    assert "is empty" in _error(capsys, ["aggregate", str(path)])[1]  # was "it has None"


def test_python_dash_m_skcrowd_is_the_command(tmp_path):
    # "python -m skcrowd" was "No module named skcrowd.__main__"
    version = subprocess.run([sys.executable, "-m", "skcrowd", "--version"],
                             capture_output=True, text=True, timeout=300)
    assert version.returncode == 0, version.stderr
    assert version.stdout.split() == ["skcrowd", skcrowd.__version__]
    missing = subprocess.run([sys.executable, "-m", "skcrowd", "aggregate",
                              str(tmp_path / "nope.csv")],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"skcrowd: error: {tmp_path / 'nope.csv'}: No such file or directory"]


def test_spaces_after_the_commas_are_not_part_of_the_values(tmp_path, capsys):
    # "photo2, bob, dog" beside "photo2,cy,dog": the classes " dog" and "dog"
    # (columns p_ dog and p_dog), silently; a header "item, rater, label"
    # had no column "rater"
    rows = ["photo1,ann,cat", "photo1,bob,cat", "photo2,ann,dog", "photo2,bob,dog"]
    tables = []
    for sep in (",", ", "):
        path = tmp_path / "r.csv"
        path.write_text("\n".join(r.replace(",", sep) for r in ["item,rater,label"] + rows)
                        + "\n")
        assert cli.main(["aggregate", str(path), "--model", "majority-vote"]) == 0
        tables.append(capsys.readouterr().out)
    assert tables[0].splitlines()[0] == "item,label,probability,p_cat,p_dog"
    assert tables[1] == tables[0]


def test_a_gold_file_with_a_byte_order_mark(tmp_path, capsys):
    # Excel's "CSV UTF-8": 'gold file ... needs columns item,label; it has
    # ['\ufeffitem', 'label']', although the ratings file may have the mark
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,label\n1,a,x\n1,b,y\n2,a,y\n2,b,y\n")
    gold = tmp_path / "gold.csv"
    gold.write_bytes("item,label\n1,x\n".encode("utf-8-sig"))
    assert cli.main(["aggregate", str(ratings), "--model", "majority-vote",
                     "--gold", str(gold)]) == 0
    out = capsys.readouterr()
    assert "with 1 gold items" in out.err
    assert out.out.splitlines()[1].startswith("1,x,1")


def test_a_closed_output_pipe_prints_no_error(rte_csv):
    # "skcrowd aggregate ratings.csv | head" ended with "skcrowd: error:
    # Broken pipe" on stderr, as if the input were wrong
    proc = subprocess.Popen([sys.executable, "-m", "skcrowd", "aggregate", str(rte_csv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the table is written
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 1
    lines = err.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["read", "fitted"], err


def test_help_is_plain_text_and_names_the_default_model(capsys):
    # the description showed the docstring's reST markup: "The ``skcrowd``
    # command line", and --model had no help (its default unsaid)
    with pytest.raises(SystemExit):
        cli.main(["aggregate", "--help"])
    text = capsys.readouterr().out
    assert "``" not in cli.build_parser().description
    assert "(default: auto, AutoCrowd" in " ".join(text.split())


def test_demo_runs_as_a_command():
    # two sets keep CI quick; every set is the default
    result = subprocess.run(
        [sys.executable, "-m", "skcrowd.cli", "demo", "--sets", "bluebirds,web"],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "This run:" in out and "bluebirds" in out and "web" in out
    # the default estimator's column comes first, and the model it chose
    # on each set is named
    header = out.split("Accuracy on gold")[1].splitlines()[1].split()
    assert header[:2] == ["data", "auto"]
    chose = next(line for line in out.splitlines() if "AutoCrowd" in line).split(": ")[1]
    names = "|".join(default_candidates(0, 2))
    assert re.fullmatch(f"bluebirds ({names}), web ({names})", chose), chose
    graded = out.split("Graded sets")[1]
    for model in ("majority-vote", "mean", "median", "ordinal"):
        assert f"\n{model} " in graded


def test_model_flags_set_the_parameters(rte_csv, tmp_path, capsys):
    from skcrowd.cli import _model, build_parser

    args = build_parser().parse_args(["aggregate", "x.csv", "--model", "ordinal",
                                      "--random-state", "3", "--max-iter", "7",
                                      "--n-init", "2", "--classes", "1,2,3,4,5"])
    model = _model(args)
    assert (model.random_state, model.max_iter, model.n_init) == (3, 7, 2)
    assert model.classes.tolist() == [1, 2, 3, 4, 5] and model.classes.dtype.kind == "i"
    status, err = _error(capsys, ["aggregate", "x.csv", "--model", "majority-vote",
                                  "--max-iter", "7"])
    assert status == 2 and "majority-vote does not take --max-iter" in err
    # --classes names a level nobody used: one more probability column
    out = tmp_path / "t.csv"
    cli.main(["aggregate", str(rte_csv), "--model", "one-coin", "--classes", "0,1,2",
              "-o", str(out)])
    assert out.read_text().splitlines()[0] == "item,label,probability,p_0,p_1,p_2"


def test_real_valued_models_write_std_not_probability(tmp_path):
    from skcrowd.datasets import make_ordinal

    R = make_ordinal(n_items=50, n_raters=6, random_state=0).ratings
    path = tmp_path / "graded.csv"
    lines = ["item,rater,label"] + [f"{i},{r},{lab}" for i, r, lab in zip(R.item, R.rater, R.label)]
    path.write_text("\n".join(lines) + "\n")
    for model in ("mean", "median", "ordinal"):
        out = tmp_path / f"{model}.csv"
        restarts = ["--n-init", "1"] if model == "ordinal" else []
        cli.main(["aggregate", str(path), "--model", model, *restarts, "-o", str(out)])
        rows = list(csv.DictReader(out.open()))
        assert "probability" not in rows[0] and "std" in rows[0]
        std = np.array([float(r["std"]) for r in rows])
        assert np.all(std[np.isfinite(std)] >= 0) and np.isfinite(std).mean() > 0.9


def test_parquet_output(rte_csv, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "truth.parquet"
    cli.main(["aggregate", str(rte_csv), "--output-format", "parquet", "-o", str(out)])
    table = pd.read_parquet(out)
    assert table.columns.tolist() == ["item", "label", "probability", "p_0", "p_1"]
    assert len(table) == 800 and table["probability"].dtype.kind == "f"
    status, err = _error(capsys, ["raters", str(rte_csv), "--output-format", "parquet"])
    assert status == 2 and "needs -o FILE" in err


def test_mace_aggregate_and_raters(rte_csv, tmp_path, capsys):
    out = tmp_path / "truth.csv"
    assert cli.main(["aggregate", str(rte_csv), "--model", "mace", "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 800
    cli.main(["raters", str(rte_csv), "--model", "mace"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "rater,n_ratings,accuracy,competence"  # MACE().rater_table()
    assert len(lines) == 165


def test_aggregate_with_gold_file(rte_csv, tmp_path, capsys):
    from skcrowd.datasets import load_rte

    data = load_rte()
    known = np.arange(0, 800, 10)
    gold = tmp_path / "gold.csv"
    with gold.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["item", "label"])
        for i in known:  # the flipped label: the output must follow the gold
            writer.writerow([data.ratings.item_ids[i], int(1 - data.gold[i])])
        writer.writerow(["no-such-item", 1])
    out = tmp_path / "truth.csv"
    cli.main(["aggregate", str(rte_csv), "--gold", str(gold), "-o", str(out)])
    assert "1 gold items have no ratings" in capsys.readouterr().err
    rows = {r["item"]: r for r in csv.DictReader(out.open())}
    for i in known:
        row = rows[str(data.ratings.item_ids[i])]
        assert int(row["label"]) == 1 - data.gold[i] and float(row["probability"]) == 1.0
    bad = tmp_path / "bad.csv"
    bad.write_text("item,label\n" + f"{data.ratings.item_ids[0]},yes\n")
    assert cli.main(["aggregate", str(rte_csv), "--gold", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("skcrowd: error: ") and "different types" in err[-1]


def _aggregate_rows(path, capsys, *flags):
    assert cli.main(["aggregate", str(path), "--model", "majority-vote", *flags]) == 0
    captured = capsys.readouterr()
    return list(csv.DictReader(captured.out.splitlines())), captured.err


def test_a_missing_marker_is_not_rated_as_in_pandas(tmp_path, capsys):
    # R's write.csv writes NA for a missing label: it was read as a class
    # "NA", which also turned the integer labels into the strings "1", "2"
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,1\na,y,2\nb,x,NA\nb,y,NA\nc,x,2\nc,y,2\n"
                    "d,x,1\nd,y,NaN\n,,\n")
    rows, err = _aggregate_rows(path, capsys)
    assert list(rows[0]) == ["item", "label", "probability", "p_1", "p_2"]
    # b has no rating left but is kept (as Ratings.from_long keeps it);
    # the blank last row is skipped
    assert [r["item"] for r in rows] == ["a", "b", "c", "d"]
    assert [r["label"] for r in rows[2:]] == ["2", "1"]
    assert "read 5 ratings of 4 items by 2 raters" in err
    assert "NA (2 rows), NaN (1 rows) read as not rated" in err
    pandas = pytest.importorskip("pandas")
    df = pandas.read_csv(path).dropna(how="all")  # pandas keeps the blank row
    from skcrowd import MajorityVote

    expected = MajorityVote().fit(df).predict_proba(df)
    np.testing.assert_allclose([[float(r["p_1"]), float(r["p_2"])] for r in rows],
                               expected, atol=1e-6)


def test_missing_flag_replaces_the_markers(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,yes\na,y,None\nb,x,None\nb,y,\nc,x,NA\n")
    rows, err = _aggregate_rows(path, capsys, "--missing", "NA")
    assert list(rows[0])[3:] == ["p_None", "p_yes"]  # None is a class here
    assert "read 3 ratings of 3 items by 2 raters" in err
    rows, err = _aggregate_rows(path, capsys, "--missing", "")
    assert list(rows[0])[3:] == ["p_NA", "p_None", "p_yes"]
    assert "read 4 ratings" in err and "read as not rated" not in err


def test_nan_kept_as_a_label_is_a_string_class(tmp_path, capsys):
    # with --missing '', "nan" parsed as float NaN and met an error worded
    # for the Python API; it is now a class, and the other labels strings too
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,1\na,y,nan\nb,x,2\n")
    rows, _ = _aggregate_rows(path, capsys, "--missing", "")
    assert list(rows[0])[3:] == ["p_1", "p_2", "p_nan"]


def test_a_class_that_is_a_missing_marker_is_named(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,yes\na,y,no\n")
    status, err = _error(capsys, ["aggregate", str(path), "--model", "dawid-skene",
                                  "--classes", "no,yes,NA"])
    assert status == 2 and re.search(r"--classes names \['NA'\].*--missing", err)
    assert cli.main(["aggregate", str(path), "--classes", "NA,no,yes", "--missing", "",
                     "--model", "majority-vote"]) == 0


def test_only_missing_labels_is_no_ratings(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,NA\nb,x,null\n")
    assert ("has no ratings (every label is one of ['NA', 'null'], read as missing"
            in _error(capsys, ["aggregate", str(path)])[1])


def test_a_missing_gold_label_is_not_known(tmp_path, capsys):
    path, gold = tmp_path / "r.csv", tmp_path / "gold.csv"
    path.write_text("item,rater,label\na,x,1\na,y,2\nb,x,2\nb,y,1\n")
    gold.write_text("item,label\na,NA\nb,2\n")
    assert cli.main(["aggregate", str(path), "--gold", str(gold)]) == 0
    captured = capsys.readouterr()
    assert "with 1 gold items" in captured.err
    rows = list(csv.DictReader(captured.out.splitlines()))
    assert rows[1]["label"] == "2" and float(rows[1]["probability"]) == 1.0
    assert float(rows[0]["probability"]) < 1.0


@pytest.mark.parametrize("flags", [["--label", "item"], ["--item", "rater"],
                                   ["--rater", "label"]])
def test_two_flags_naming_one_column_are_an_error(tmp_path, capsys, flags):
    # --label item fitted the item ids as labels, --item rater one item per
    # rater, without a word
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,1\na,y,0\nb,x,1\nb,y,1\n")
    assert "name the same column twice" in _error(capsys, ["aggregate", str(path),
                                                           *flags])[1]


def test_a_gold_file_with_two_labels_for_an_item_is_an_error(tmp_path, capsys):
    # the file's last label was kept without a word ("with 1 gold items");
    # fit(X, y) refuses two labels for an item, and so does the command line
    path, gold = tmp_path / "r.csv", tmp_path / "gold.csv"
    path.write_text("item,rater,label\na,x,1\na,y,0\nb,x,1\nb,y,1\n")
    gold.write_text("item,label\na,1\nb,1\na,0\n")
    assert "gives item 'a' two labels, 1 and 0" in _error(
        capsys, ["aggregate", str(path), "--gold", str(gold)])[1]
    # the same label twice is one known label
    gold.write_text("item,label\na,1\na,1\n")
    assert cli.main(["aggregate", str(path), "--gold", str(gold)]) == 0
    assert "with 1 gold items" in capsys.readouterr().err


def test_float_labels_are_written_as_their_column_names(tmp_path):
    # labels read as floats (a pandas export of integer labels with missing
    # values writes 1.0, 2.0) were written '1' in the label column but named
    # 'p_1.0' in the header, and a label of more than 6 digits was rounded
    path = tmp_path / "r.csv"
    path.write_text("item,rater,label\na,x,1.0\na,y,1.0\nb,x,2.0\nb,y,2.0\n"
                    "c,x,1234567.5\nc,y,1234567.5\n")
    out = tmp_path / "out.csv"
    assert cli.main(["aggregate", str(path), "--model", "majority-vote", "-o", str(out)]) == 0
    header, *rows = out.read_text().splitlines()
    assert header == "item,label,probability,p_1,p_2,p_1234567.5"
    assert [row.split(",")[1] for row in rows] == ["1", "2", "1234567.5"]
    raters = tmp_path / "raters.csv"
    assert cli.main(["raters", str(path), "--model", "dawid-skene", "-o", str(raters)]) == 0
    assert raters.read_text().splitlines()[0].endswith("recall_1,recall_2,recall_1234567.5")


def test_demo_fits_are_the_same_on_every_run():
    # the demo's models with random restarts were unseeded: its MACE and
    # OrdinalMixture numbers changed from one run to the next
    ratings = make_ordinal(n_items=150, n_raters=8, ratings_per_item=4, random_state=1).ratings
    for name in ("ordinal", "mace"):
        first, *_ = cli._demo_fit(name, ratings)
        second, *_ = cli._demo_fit(name, ratings)
        assert np.array_equal(first, second)


# -- user errors are one line --------------------------------------------------------
@pytest.fixture
def csv_dir(tmp_path):
    files = {
        "short.csv": b"item,rater,label\n1,a,x\n1,b,y\n2,a\n",
        "binary.csv": b"item,rater,label\n1,a,\xff\n",
        "three.csv": b"item,rater,label\n1,a,0\n1,b,1\n1,c,2\n2,a,0\n",
        "yes_no.csv": b"item,rater,label\n1,a,yes\n1,b,no\n2,a,yes\n",
        "inf.csv": b"item,rater,label\n1,a,inf\n1,b,1\n2,a,0\n",
        "bom.csv": b"\xef\xbb\xbfitem,rater,label\n1,a,0\n1,b,1\n2,a,0\n2,b,0\n",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "folder").mkdir()
    return tmp_path


@pytest.mark.parametrize("args, message", [
    (["aggregate", "{d}/missing.csv"], "missing.csv: No such file"),
    (["aggregate", "{d}/folder"], "folder: Is a directory"),
    (["aggregate", "{d}/binary.csv"], "not UTF-8 text"),
    (["aggregate", "{d}/bom.csv", "-o", "{d}/nowhere/out.csv"], "no directory"),
    (["aggregate", "{d}/short.csv"], "line 4: the row has 2 field"),
    (["aggregate", "{d}/three.csv", "--model", "irt3pl"], "binary ratings"),
    (["aggregate", "{d}/yes_no.csv", "--model", "ordinal"], "numeric labels"),
    (["aggregate", "{d}/inf.csv"], "finite"),
    # a label "nan" is a missing marker, not rated (tests/test_cli.py)
    (["raters", "{d}/missing.csv"], "No such file"),
])
def test_cli_user_errors_are_one_line_on_stderr(csv_dir, capsys, args, message):
    """Non-regression: the CLI printed tracebacks for user errors."""
    code = cli.main([a.format(d=csv_dir) for a in args])
    captured = capsys.readouterr()
    assert code == 1
    errors = [line for line in captured.err.splitlines() if line.startswith("skcrowd: error")]
    assert len(errors) == 1, captured.err
    assert message in errors[0]
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_cli_reads_a_utf8_bom_header(csv_dir, capsys):
    """Non-regression: a UTF-8 BOM was read as part of the first column name."""
    assert cli.main(["aggregate", str(csv_dir / "bom.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("item,label,probability")
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2"]


def test_cli_dash_reads_standard_input(csv_dir, capsys, monkeypatch):
    """Non-regression: '-' was read as a file name, not standard input."""
    content = (csv_dir / "bom.csv").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(content)))
    assert cli.main(["aggregate", "-", "--model", "majority-vote"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("item,label,probability") and len(lines) == 3


def test_cli_dash_reads_standard_input_in_a_subprocess(csv_dir):
    """Non-regression: '-' did not read standard input in a real process."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "skcrowd.cli", "aggregate", "-",
                             "--model", "majority-vote"],
                            input=(csv_dir / "bom.csv").read_bytes(), capture_output=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines()[0].startswith("item,label,probability")
    missing = subprocess.run([sys.executable, "-m", "skcrowd.cli", "aggregate",
                              str(csv_dir / "missing.csv")], capture_output=True, timeout=300)
    assert missing.returncode == 1
    assert missing.stderr.decode().strip().count("\n") == 0
    assert b"Traceback" not in missing.stderr
@pytest.mark.parametrize("argv, message, status", [
    (["aggregate", "{path}", "--model", "bogus"], "invalid choice: 'bogus'", 2),
    (["raters", "{path}", "--output-format", "parquet"], "needs -o FILE", 2),
    (["aggregate", "{empty}"], "is empty", 1),
    (["aggregate", "{path}", "--label", "answer"], "no column(s) ['answer']", 1),
    (["aggregate", "{path}", "--gold", "{empty}"], "gold file", 1),
])
def test_every_error_has_one_prefix(tmp_path, capsys, argv, message, status):
    # "skcrowd aggregate: error: ..." for a usage mistake, "skcrowd: ..." for
    # a file's: two prefixes for one program
    path, empty = tmp_path / "r.csv", tmp_path / "empty.csv"
    path.write_text("item,rater,label\n1,a,0\n1,b,1\n")
    empty.write_text("")
    argv = [a.format(path=path, empty=empty) for a in argv]
    got, err = _error(capsys, argv)
    assert got == status and message in err


@pytest.mark.parametrize("delimiter", ["\t", ";"])
def test_tab_and_semicolon_files_are_read_as_comma_files(tmp_path, capsys, delimiter):
    # a tab-separated file was "no column(s) ['item', 'rater']; it has
    # ['task\tworker\tlabel']", with no word of the delimiter
    rows = ["task,worker,label", "1,a,x", "1,b,y", "2,a,y", "2,b,y", "3,a,x", "3,b,x"]
    tables = []
    for sep in (",", delimiter):
        path = tmp_path / "r.csv"
        path.write_text("\n".join(r.replace(",", sep) for r in rows) + "\n")
        gold = tmp_path / "gold.csv"
        gold.write_text(f"task{sep}label\n1{sep}y\n")
        assert cli.main(["aggregate", str(path), "--model", "majority-vote",
                         "--gold", str(gold)]) == 0
        captured = capsys.readouterr()
        assert "with 1 gold items" in captured.err
        tables.append(captured.out)
    assert tables[1] == tables[0] and tables[0].splitlines()[1].startswith("1,y,1,")


def test_an_unknown_delimiter_is_named_in_the_error(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("item|rater|label\n1|a|x\n")
    status, err = _error(capsys, ["aggregate", str(path)])
    assert status == 1 and "it has ['item|rater|label'], read as comma-separated" in err
    assert "comma, tab, semicolon" in err


@pytest.mark.parametrize("flags, message", [
    (["--output-format", "parquet"], "--output-format parquet needs -o FILE"),
    (["--output-format", "parquet", "-o", "-"], "--output-format parquet needs -o FILE"),
    (["--model", "median", "--n-init", "3"], "median does not take --n-init"),
    (["--model", "mace", "--classes", "a,,b"], "has an empty level"),
])
def test_option_conflicts_are_found_before_the_file_is_read(tmp_path, capsys, flags,
                                                            message):
    # --output-format parquet without -o failed after the file was read and
    # the model fitted: here the file does not even exist
    status, err = _error(capsys, ["aggregate", str(tmp_path / "nope.csv"), *flags])
    assert status == 2 and message in err


def test_the_model_table_matches_the_estimators():
    # the command line checks the flags against its own table, without
    # importing the models: it must agree with their parameters and output
    R = make_ordinal(n_items=30, n_raters=6, ratings_per_item=3, random_state=0).ratings
    for name, (_, _, takes, output) in cli.MODELS.items():
        model = cli._estimator(name)
        # a flag is taken exactly where the model has its parameter
        assert set(takes) == set(cli.FLAGS) & set(model.get_params()), name
        # IRT3PL: binary labels
        R_fit = Ratings(R.item, R.rater, (R.label > 3).astype(int)) if name == "irt3pl" else R
        fitted = model.set_params(**({"n_init": 1} if "n_init" in takes else {})).fit(R_fit)
        columns = fitted.item_table(R_fit).columns
        assert ("probability" in columns) == (output == "class"), name
        assert ("std" in columns) == (output == "value"), name


def test_the_command_line_uses_no_private_estimator_attributes():
    # it called model._encode, _infer_items, _item_diagnostics,
    # _rater_diagnostics and read _rater_counts: the public item_table(),
    # rater_table(), predict_proba() and fit(X, y=gold) give all of it
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(cli))
    private = sorted({node.attr for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and isinstance(node.value, ast.Name) and node.value.id == "model"})
    assert private == []


_IMPORTED = """
import sys, time
start = time.perf_counter()
{prelude}
from skcrowd import cli
try:
    cli.main({argv!r})
except SystemExit:
    pass
heavy = sorted(m for m in ("sklearn", "numba", "pandas", "scipy", "skcrowd._base",
                           "skcrowd._dawid_skene") if m in sys.modules)
print(heavy, file=sys.__stderr__)
"""

# skcrowd.cli without the package's __init__ (the package as a bare
# namespace with its version): what the command line itself imports
_BARE_PACKAGE = """
import importlib.util, types, pathlib
spec = importlib.util.find_spec("skcrowd")
package = types.ModuleType("skcrowd")
package.__path__ = list(spec.submodule_search_locations)
package.__version__ = "0"
sys.modules["skcrowd"] = package
"""


@pytest.mark.parametrize("argv", [["--help"], ["aggregate", "--help"],
                                  ["aggregate", "x.csv", "--model", "bogus"],
                                  ["aggregate", "x.csv", "--output-format", "parquet"]])
def test_help_and_usage_mistakes_import_no_model(argv):
    # skcrowd --help took 6 s: it imported scikit-learn and every model
    # before it parsed the arguments
    result = subprocess.run([sys.executable, "-c", _IMPORTED.format(
        prelude=_BARE_PACKAGE, argv=argv)], capture_output=True, text=True, timeout=300)
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr


def test_help_imports_no_model_through_the_package():
    # the same through skcrowd's own __init__, once it imports lazily
    eager = subprocess.run([sys.executable, "-c", "import sys, skcrowd; "
                            "print('sklearn' in sys.modules)"],
                           capture_output=True, text=True, timeout=300)
    if eager.stdout.strip() == "True":
        pytest.skip("import skcrowd imports scikit-learn (the package imports eagerly)")
    result = subprocess.run([sys.executable, "-c", _IMPORTED.format(
        prelude="", argv=["--help"])], capture_output=True, text=True, timeout=300)
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr


def test_auto_aggregates_as_its_chosen_model(rte_csv, tmp_path, capsys):
    """--model auto writes the labels of AutoCrowd's chosen model."""
    from skcrowd import AutoCrowd
    from skcrowd.datasets import load_rte

    out = tmp_path / "truth.csv"
    assert cli.main(["aggregate", str(rte_csv), "--model", "auto", "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 800 and {"item", "label", "probability"} <= set(rows[0])
    ratings = load_rte().ratings
    auto = AutoCrowd().fit(ratings)
    by_item = {int(r["item"]): int(r["label"]) for r in rows}
    assert [by_item[i] for i in ratings.item_ids] == list(auto.predict(ratings))
    # the log names the chosen model
    fitted = [line for line in capsys.readouterr().err.splitlines() if "fitted" in line]
    assert fitted and fitted[0].endswith(f"; it chose {auto.selected_}")
    status, line = _error(capsys, ["aggregate", str(rte_csv), "--model", "auto",
                                   "--classes", "0,1"])
    assert status == 2 and "--model auto does not take --classes" in line


def test_the_default_model_is_auto(rte_csv, tmp_path, capsys):
    """Without --model the command fits the library's default, AutoCrowd,
    seeded by --random-state; the flags it has no parameter for are
    refused, in one line that names a model that takes them."""
    from skcrowd import AutoCrowd
    from skcrowd.datasets import load_rte

    out = tmp_path / "truth.csv"
    assert cli.main(["aggregate", str(rte_csv), "--random-state", "3", "-o", str(out)]) == 0
    ratings = load_rte().ratings
    auto = AutoCrowd(random_state=3).fit(ratings)
    by_item = {int(r["item"]): int(r["label"]) for r in csv.DictReader(out.open())}
    assert [by_item[i] for i in ratings.item_ids] == list(auto.predict(ratings))
    err = capsys.readouterr().err
    assert "fitted AutoCrowd in " in err and f"; it chose {auto.selected_}" in err
    raters = tmp_path / "raters.csv"
    assert cli.main(["raters", str(rte_csv), "-o", str(raters)]) == 0
    header = raters.read_text().splitlines()[0].split(",")
    expected = AutoCrowd().fit(ratings).rater_table()
    assert header == ["rater", *expected.columns]
    for flags in (["--max-iter", "5"], ["--n-init", "2"], ["--classes", "0,1"]):
        status, line = _error(capsys, ["aggregate", str(rte_csv), *flags])
        assert status == 2, flags
        assert f"--model auto does not take {flags[0]}; name a model" in line, line


def test_raters_take_gold_as_aggregate_does(rte_csv, tmp_path):
    """skcrowd raters --gold: the rater table of the model fitted with the
    known labels clamped (it refused the flag)."""
    import pandas as pd

    from skcrowd import DawidSkene
    from skcrowd.datasets import load_rte

    data = load_rte()
    ids = data.ratings.item_ids
    gold_csv = tmp_path / "gold.csv"
    pd.DataFrame({"item": ids[:200], "label": data.gold[:200].astype(int)}).to_csv(
        gold_csv, index=False)
    out = tmp_path / "raters.csv"
    assert cli.main(["raters", str(rte_csv), "--model", "dawid-skene", "--gold",
                     str(gold_csv), "-o", str(out)]) == 0
    written = pd.read_csv(out, dtype={"rater": str}).set_index("rater")
    y = dict(zip(ids[:200].tolist(), data.gold[:200].astype(int).tolist()))
    expected = DawidSkene().fit(data.ratings, y).rater_table()
    without = DawidSkene().fit(data.ratings).rater_table()
    expected.index = expected.index.astype(str)
    without.index = without.index.astype(str)
    np.testing.assert_allclose(written.loc[expected.index, "accuracy"], expected["accuracy"],
                               rtol=1e-5)
    # the gold moved the raters: the flag is not ignored
    assert np.abs(expected["accuracy"] - without["accuracy"]).max() > 1e-3
