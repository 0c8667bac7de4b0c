"""Regression tests for the bugs a fuzzing pass found (issue 11), one or more
per bug, named after it."""

import io
import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.integrate import simpson
from scipy.special import logsumexp

from skcrowd import (GLAD, IRT3PL, DawidSkene, MajorityVote, MeanRating, MedianRating,
                     OrdinalMixture)
from skcrowd import cli
from skcrowd._kernels import _glad as glad_kernels
from skcrowd.datasets import load_trec2010, make_ordinal

ISSUE_X = np.array([[1, 2, 3, np.nan], [3, 3, 2, 3], [1, np.nan, 1, 2], [2, 2, 3, 3],
                    [3, 3, 3, 2], [1, 1, 2, np.nan]])


# -- bug 1: OrdinalMixture(link="gaussian") scores were -inf / NaN ----------------------
@pytest.mark.parametrize("spam", [True, False])
def test_bug1_gaussian_link_score_is_finite(spam):
    model = OrdinalMixture(link="gaussian", spam=spam, n_init=1).fit(ISSUE_X)
    scores = model.score_samples(ISSUE_X)
    assert np.all(np.isfinite(scores)), scores
    assert np.isfinite(model.score(ISSUE_X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = make_ordinal(random_state=0)
        fitted = OrdinalMixture(link="gaussian", spam=spam, n_init=1, max_iter=100).fit(data.X)
    assert np.all(np.isfinite(fitted.score_samples(data.X)))


def test_bug1_gaussian_link_score_matches_dense_integration():
    """p(r | z) = ε N(value_r; z, 1/τ̄δ̄) width_r + (1 - ε) π_r, z over its
    prior: the density-times-width mass of DESIGN §6.4 with the finite bins."""
    model = OrdinalMixture(link="gaussian", n_init=1).fit(ISSUE_X)
    ours = model.score_samples(ISSUE_X)
    z = np.linspace(-40, 45, 40001)
    log_prior = stats.norm.logpdf(z, model.classes_.mean(), 1 / np.sqrt(model.prior_precision))
    width = np.diff(model.thresholds_)
    spam = 1.0 / len(model.classes_)
    rho = model.rater_precision_ * model.group_difficulty_[0]
    eps = model.rater_reliability_
    for i, row in enumerate(ISSUE_X):
        total = log_prior.copy()
        for j in np.flatnonzero(~np.isnan(row)):
            k = np.searchsorted(model.classes_, row[j])
            density = stats.norm.pdf(model.classes_[k], z, 1 / np.sqrt(rho[j]))
            total += np.log(eps[j] * density * width[k] + (1 - eps[j]) * spam)
        assert ours[i] == pytest.approx(np.log(simpson(np.exp(total), x=z)), abs=1e-6)


def test_bug1_grid_search_over_link_compares_finite_scores():
    from sklearn.model_selection import GridSearchCV

    data = make_ordinal(n_items=120, n_raters=10, ratings_per_item=4, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(OrdinalMixture(n_init=1, max_iter=100),
                              {"link": ["ordinal", "gaussian"]}, cv=3).fit(data.ratings)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


# -- bug 2: GLAD fit_predict differed from fit().predict ------------------------------
def _glad_item_objective(model, X, i, b):
    """Item i's log posterior at each b (numpy), at the fitted abilities
    (the Gaussian prior's constant left out)."""
    b = np.atleast_1d(np.asarray(b, dtype=float))
    rated = np.flatnonzero(~np.isnan(X[i]))
    labels = np.searchsorted(model.classes_, X[i, rated])
    K = len(model.classes_)
    t = model.rater_ability_[rated][None, :] * np.exp(b)[:, None]
    right = -np.logaddexp(0, -t)
    wrong = -np.logaddexp(0, t) - np.log(K - 1)
    ll = np.stack([np.where(labels == k, right, wrong).sum(axis=1) for k in range(K)], axis=1)
    return (logsumexp(np.log(model.class_prior_) + ll, axis=1)
            - 0.5 * (b - model.b_prior_mean) ** 2 / model.b_prior_std ** 2)


def test_bug2_glad_fit_predict_equals_fit_then_predict():
    X = np.random.default_rng(22).integers(0, 6, (18, 8)).astype(float)
    labels = GLAD(random_state=0).fit_predict(X)
    model = GLAD(random_state=0).fit(X)
    np.testing.assert_array_equal(labels, model.predict(X))
    # Item 13 had two modes in b (one per class); the fit keeps the better.
    grid = np.linspace(-5, 7, 2401)
    b_fit = -np.log(model.item_difficulty_[13])
    assert _glad_item_objective(model, X, 13, b_fit)[0] >= _glad_item_objective(
        model, X, 13, grid).max() - 1e-9


def test_bug2_glad_item_inference_is_the_global_map_in_both_paths():
    """On random sets with K = 6 and 8 raters (where 4 of 40 differed):
    fit_predict equals predict, and every training item's b is the best
    point of a fine grid."""
    grid = np.linspace(-5, 7, 601)
    for seed in range(40):
        X = np.random.default_rng(seed).integers(0, 6, (18, 8)).astype(float)
        model = GLAD(random_state=0)
        labels = model.fit_predict(X)
        np.testing.assert_array_equal(labels, model.predict(X), err_msg=f"seed {seed}")
        items = model._infer_items(model._encode(X, reset=False))
        np.testing.assert_allclose(items["log_beta"], -np.log(model.item_difficulty_),
                                   atol=1e-4, err_msg=f"seed {seed}")
        for i in range(len(X)):
            best = _glad_item_objective(model, X, i, grid).max()
            assert _glad_item_objective(model, X, i, items["log_beta"][i])[0] >= best - 1e-7


def test_glad_fit_predict_equals_predict_on_trec2010():
    """On TREC 2010 the default GLAD's fit_predict and predict disagreed on
    2 of 20,232 items: predict's search skipped the ascent that reaches the
    item's better mode (tests/test_glad.py has the two items)."""
    ratings = load_trec2010().ratings
    model = GLAD()
    labels = model.fit_predict(ratings)
    np.testing.assert_array_equal(np.asarray(labels), np.asarray(model.predict(ratings)))


# -- bug 3: GLAD score NaN for a wide b prior, -inf for many quadrature nodes ----------
@pytest.fixture(scope="module")
def binary_X():
    return np.random.default_rng(0).integers(0, 2, (30, 5)).astype(float)


@pytest.mark.parametrize("b_prior_std", [30.0, 100.0])
def test_bug3_glad_score_is_finite_for_a_wide_b_prior(binary_X, b_prior_std):
    model = GLAD(b_prior_std=b_prior_std).fit(binary_X)
    assert np.all(np.isfinite(model.score_samples(binary_X)))
    assert np.all(np.isfinite(model.predict_proba(binary_X)))
    assert np.all(np.isfinite(model.objective_history_))


def test_bug3_glad_score_with_many_quadrature_nodes_matches_a_few(binary_X):
    few = GLAD(n_quadrature=60).fit(binary_X)
    for n in (300, 500, 2000):
        many = GLAD(n_quadrature=n).fit(binary_X)
        np.testing.assert_allclose(many.score_samples(binary_X), few.score_samples(binary_X),
                                   rtol=0, atol=1e-8)


def test_bug3_glad_b_prior_std_beyond_100_is_a_clear_error(binary_X):
    with pytest.raises(ValueError, match="b_prior_std"):
        GLAD(b_prior_std=1e3).fit(binary_X)


def test_bug3_glad_score_for_a_wide_prior_converges_to_adaptive_quadrature(binary_X):
    """A wide prior needs many nodes (measured: error 0.024 with 200 nodes
    and b_prior_std=10, 2e-4 with 1000): the error shrinks as they grow."""
    def errors(n_quadrature):
        model = GLAD(b_prior_std=10.0, n_quadrature=n_quadrature).fit(binary_X)
        scores = model.score_samples(binary_X)
        out = []
        for i in (0, 1, 2):
            value, _ = integrate.quad(
                lambda b: np.exp(_glad_item_objective(model, binary_X, i, b)[0]
                                 + 0.5 * ((b - 1) / 10.0) ** 2) * stats.norm.pdf(b, 1, 10.0),
                -60, 60, points=[-5, 0, 5, 10], epsabs=0, epsrel=1e-10, limit=500)
            out.append(abs(scores[i] - np.log(value)))
        return np.max(out)

    coarse, fine = errors(200), errors(1000)
    assert fine < 1e-3 and fine < coarse / 10


def test_bug3_glad_item_objective_is_finite_far_out_in_b():
    rater = np.array([0, 1, 2], dtype=np.int32)
    label = np.array([0, 1, 1], dtype=np.int32)
    alpha = np.array([0.0, 2.0, -3.0])
    for b in (-800.0, 50.0, 800.0, 1e5):
        value, gradient, hessian = glad_kernels.item_objective(
            0, 3, rater, label, alpha, np.log([0.5, 0.5]), b, 0.0, 1.0, 1e-8,
            np.empty(2), np.array([1.0, 2.0]), np.empty(2), np.empty(3))
        assert np.isfinite(value) and np.isfinite(gradient) and np.isfinite(hessian)


# -- bug 5: fit(X, foo=1) named a private method -------------------------------------
@pytest.mark.parametrize("Model", [MajorityVote, MeanRating, MedianRating, DawidSkene,
                                   GLAD, IRT3PL, OrdinalMixture])
@pytest.mark.parametrize("argument", ["foo", "groups"])
def test_bug5_unexpected_fit_argument_names_the_public_method(Model, argument):
    if Model is OrdinalMixture and argument == "groups":
        return  # OrdinalMixture takes groups
    X = np.array([[1, 2, 1], [2, 2, np.nan], [1, 1, 2]], dtype=float)
    for method in ("fit", "fit_predict"):
        with pytest.raises(TypeError) as info:
            getattr(Model(), method)(X, **{argument: np.arange(3)})
        message = str(info.value)
        assert f"{Model.__name__}.fit" in message and repr(argument) in message
        assert "_fit" not in message and "._" not in message


# -- bug 8: the CLI printed tracebacks for user errors ----------------------------------
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
def test_bug8_cli_user_errors_are_one_line_on_stderr(csv_dir, capsys, args, message):
    code = cli.main([a.format(d=csv_dir) for a in args])
    captured = capsys.readouterr()
    assert code == 1
    errors = [line for line in captured.err.splitlines() if line.startswith("skcrowd: error")]
    assert len(errors) == 1, captured.err
    assert message in errors[0]
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_bug8_cli_reads_a_utf8_bom_header(csv_dir, capsys):
    assert cli.main(["aggregate", str(csv_dir / "bom.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("item,label,probability")
    assert [line.split(",")[0] for line in lines[1:]] == ["1", "2"]


def test_bug8_cli_dash_reads_standard_input(csv_dir, capsys, monkeypatch):
    content = (csv_dir / "bom.csv").read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(content)))
    assert cli.main(["aggregate", "-", "--model", "majority-vote"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("item,label,probability") and len(lines) == 3


def test_bug8_cli_dash_reads_standard_input_in_a_subprocess(csv_dir):
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


# -- empty input at predict time: empty results and a NaN score ---------------------
def _empty_forms(X):
    import pandas as pd

    from skcrowd import Ratings

    R = Ratings.from_matrix(X)
    return {"long": R.to_long().iloc[:0], "ratings": R[[]],
            "wide": pd.DataFrame(X).iloc[:0], "array": X[:0]}


@pytest.mark.parametrize("name", ["DawidSkene", "GLAD", "IRT3PL", "MACE", "MajorityVote",
                                  "MeanRating", "MedianRating", "OrdinalMixture"])
def test_empty_input_after_fit_is_a_value_error_naming_it(name):
    # A long table with no rows (or a Ratings with no items) gave empty
    # predictions and score() = nan (the mean of nothing); arrays and wide
    # frames already got scikit-learn's "Found array with 0 sample(s)".
    import skcrowd
    from skcrowd.metrics import consistency, posterior_entropy, uncertainty

    from test_common import all_estimators, fast_instance

    assert name in {c.__name__ for c in all_estimators()}  # the list is every estimator
    X = np.array([[0, 0, 1, np.nan], [1, 1, 1, 0], [0, np.nan, 0, 0], [1, 0, 1, 1]] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fast_instance(getattr(skcrowd, name)).fit(X)
    methods = ["predict", "predict_proba", "score", "score_samples", "transform",
               "item_table"]
    metrics = [lambda E: posterior_entropy(model, E), lambda E: uncertainty(model, E)]
    if model._prediction_name == "label":
        metrics.append(lambda E: consistency(model, E))
    for form, empty in _empty_forms(X).items():
        message = "0 sample" if form in ("wide", "array") else "X is empty: it has no items"
        calls = [getattr(model, m) for m in methods if hasattr(model, m)] + metrics
        for call in calls:
            with pytest.raises(ValueError, match=message):
                call(empty)


def test_fitting_a_table_without_rows_does_not_say_its_entries_are_missing():
    # fit on a long table with no rows said "every entry is missing": there
    # are no entries; the message now covers both cases, in memory and on Dask
    pd = pytest.importorskip("pandas")
    empty = pd.DataFrame({"item": [], "rater": [], "label": []})
    with pytest.raises(ValueError, match=r"X has no ratings \(no rows, or every entry "
                                         r"missing\): nothing to fit\."):
        DawidSkene().fit(empty)
    with pytest.raises(ValueError, match=r"X has no ratings \(no rows, or every entry"):
        DawidSkene().fit(np.full((3, 2), np.nan))


# -- fuzz round 4 ------------------------------------------------------------------------
@pytest.mark.parametrize("Model", [DawidSkene, GLAD, IRT3PL, OrdinalMixture])
def test_n_jobs_zero_is_refused_as_joblib_refuses_it(Model):
    # n_jobs=0 ran on every core (max(1, available + 1 + 0)) without a word
    X = (ISSUE_X > 2).astype(float) + 1
    with pytest.raises(ValueError, match="'n_jobs' parameter"):
        Model(n_jobs=0).fit(X)
    for n_jobs in (None, 1, -1, -100):
        Model(n_jobs=n_jobs, max_iter=2, n_init=1).fit(X)
