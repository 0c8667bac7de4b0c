"""Determinism and persistence for every estimator: the same random_state
gives bit-identical fits across runs and n_jobs; pickle, joblib and clone
round trips; read-only, memory-mapped, Fortran-order, float32 and int32
inputs give the same answer as a float64 C-order array.  And numerical
stress: items with hundreds of ratings, near-deterministic raters, very
small and very large prior hyperparameters."""

import pickle
import warnings

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from skcrowd import (GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, MeanRating, MedianRating,
                     OrdinalMixture)
from skcrowd.datasets import make_dawid_skene, make_irt, make_ordinal

MODELS = {
    "MajorityVote": lambda **kw: MajorityVote(),
    "MeanRating": lambda **kw: MeanRating(),
    "MedianRating": lambda **kw: MedianRating(),
    "DawidSkene": lambda **kw: DawidSkene(init="random", n_init=2, **kw),
    "GLAD": lambda **kw: GLAD(init="random", n_init=2, max_iter=50, **kw),
    "OrdinalMixture": lambda **kw: OrdinalMixture(n_init=2, max_iter=60, **kw),
    "IRT3PL": lambda **kw: IRT3PL.from_tag("ab", n_init=2, max_iter=30, **kw),
}


@pytest.fixture(scope="module")
def inputs():
    """A rating matrix each model can fit (integer labels: ordinal levels
    for OrdinalMixture, binary for IRT3PL)."""
    return {
        "categorical": make_dawid_skene(80, 6, 4, 3, random_state=0).X,
        "ordinal": make_ordinal(n_items=80, n_raters=6, ratings_per_item=4, n_levels=4,
                                random_state=0).X,
        "binary": make_irt(n_items=80, n_raters=6, ratings_per_item=4, random_state=0).X,
    }


def data_for(name, inputs):
    return inputs["ordinal" if name in ("OrdinalMixture", "MeanRating", "MedianRating")
                  else "binary" if name == "IRT3PL" else "categorical"]


def fitted_state(model, X):
    return (model.predict_proba(X), model.predict(X), model.score_samples(X),
            getattr(model, "objective_history_", None))


def assert_same_state(a, b):
    for x, y in zip(a, b):
        if x is None:
            assert y is None
        else:
            np.testing.assert_array_equal(x, y)


def stress_model(name, **kwargs):
    """The default start (random starts may land in a label-permuted mode,
    which is not what these tests are about)."""
    model = MODELS[name](**kwargs)
    if model.get_params().get("init") == "random":
        model.set_params(init="majority", n_init=1)
    return model


def quiet_fit(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_same_random_state_is_bit_identical_across_runs_and_n_jobs(name, inputs):
    X = data_for(name, inputs)
    extra = {} if name.startswith(("Majority", "Mean", "Median")) else {"random_state": 3}
    runs = []
    for n_jobs in (None, 1, 2):
        kwargs = dict(extra, n_jobs=n_jobs) if extra else {}
        runs.append(fitted_state(quiet_fit(MODELS[name](**kwargs), X), X))
    for other in runs[1:]:
        assert_same_state(runs[0], other)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pickle_joblib_and_clone_round_trips(name, inputs, tmp_path):
    X = data_for(name, inputs)
    kwargs = {} if name.startswith(("Majority", "Mean", "Median")) else {"random_state": 0}
    model = quiet_fit(MODELS[name](**kwargs), X)
    state = fitted_state(model, X)
    assert_same_state(fitted_state(pickle.loads(pickle.dumps(model)), X), state)
    joblib.dump(model, tmp_path / "model.joblib")
    assert_same_state(fitted_state(joblib.load(tmp_path / "model.joblib"), X), state)
    fresh = clone(model)
    assert fresh.get_params() == model.get_params()
    assert not hasattr(fresh, "classes_")
    assert_same_state(fitted_state(quiet_fit(fresh, X), X), state)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_input_layouts_and_dtypes_give_the_same_fit(name, inputs, tmp_path):
    X = data_for(name, inputs)
    kwargs = {} if name.startswith(("Majority", "Mean", "Median")) else {"random_state": 0}
    reference = fitted_state(quiet_fit(MODELS[name](**kwargs), X), X)
    read_only = X.copy()
    read_only.flags.writeable = False
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    variants = {
        "read-only": read_only,
        "memory-mapped": mapped,
        "Fortran order": np.asfortranarray(X),
        "float32": X.astype(np.float32),
    }
    for label, variant in variants.items():
        state = fitted_state(quiet_fit(MODELS[name](**kwargs), variant), variant)
        for x, y in zip(reference, state):
            if x is not None:
                np.testing.assert_array_equal(x, y, err_msg=label)
    # int32: an integer array has no NaN, so every pair rated (the missing
    # ones get the lowest label)
    full = np.where(np.isnan(X), np.nanmin(X), X)
    as_float = fitted_state(quiet_fit(MODELS[name](**kwargs), full), full)
    as_int = full.astype(np.int32)
    state = fitted_state(quiet_fit(MODELS[name](**kwargs), as_int), as_int)
    for x, y in zip(as_float, state):
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg="int32")


# -- numerical stress -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(MODELS))
def test_items_with_hundreds_of_ratings_do_not_underflow(name):
    """600 ratings per item: likelihoods of e^-600 and below stay in log space."""
    rng = np.random.default_rng(0)
    n_items, n_raters = 30, 600
    binary = name == "IRT3PL"
    K = 2 if binary else 3
    truth = rng.integers(0, K, n_items)
    right = rng.random((n_items, n_raters)) < 0.7
    X = np.where(right, truth[:, None], rng.integers(0, K, (n_items, n_raters))).astype(float)
    if name in ("OrdinalMixture", "MeanRating", "MedianRating"):
        X += 1
    model = quiet_fit(stress_model(name, **({} if name.startswith(("Majority", "Mean", "Median"))
                                            else {"random_state": 0})), X)
    scores = model.score_samples(X)
    assert np.all(np.isfinite(scores)) and np.all(scores < -100), scores
    proba = model.predict_proba(X)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    if name not in ("OrdinalMixture", "MeanRating", "MedianRating"):
        assert np.mean(model.predict(X) == truth) == 1.0


@pytest.mark.parametrize("name", ["DawidSkene", "GLAD", "IRT3PL", "OrdinalMixture"])
def test_near_deterministic_raters_give_finite_output(name):
    """Raters who are right 999 times in 1,000 (and one who always is)."""
    rng = np.random.default_rng(1)
    n_items, n_raters = 400, 5
    K = 2 if name == "IRT3PL" else 3
    truth = rng.integers(0, K, n_items)
    wrong = rng.random((n_items, n_raters)) < 0.001
    wrong[:, 0] = False
    X = np.where(wrong, (truth[:, None] + 1) % K, truth[:, None]).astype(float)
    if name == "OrdinalMixture":
        X += 1
    model = quiet_fit(stress_model(name, random_state=0), X)
    for values in (model.predict_proba(X), model.score_samples(X), model.objective_history_):
        assert np.all(np.isfinite(values))
    history = model.objective_history_
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))
    if name != "OrdinalMixture":
        assert np.mean(model.predict(X) == truth) == 1.0
    else:
        assert np.corrcoef(model.predict(X), truth)[0, 1] > 0.99


#: Every prior hyperparameter of every model (IRT3PL has none: its priors
#: are Carpenter's, fixed), swept from 1e-8 to 1e8 (means from -1e8 to 1e8),
#: one at a time, with the settings that make it matter.
PRIOR_SWEEPS = [
    (DawidSkene, {}, "prior_correct", "scale"),
    (DawidSkene, {}, "prior_wrong", "scale"),
    (DawidSkene, {}, "prior_class", "scale"),
    (DawidSkene, {"confusion": "one_coin"}, "prior_correct", "scale"),
    (DawidSkene, {"confusion": "one_coin"}, "prior_wrong", "scale"),
    (GLAD, {}, "alpha_prior_mean", "mean"),
    (GLAD, {}, "alpha_prior_std", "scale"),
    (GLAD, {}, "b_prior_mean", "mean"),
    (GLAD, {}, "b_prior_std", "scale"),
    (GLAD, {"class_prior": "learn"}, "prior_class", "scale"),
    (MACE, {}, "prior_knowing", "scale"),
    (MACE, {}, "prior_spamming", "scale"),
    (MACE, {}, "prior_strategy", "scale"),
    (MACE, {"method": "em"}, "smoothing", "scale"),
    (MACE, {"class_prior": "learn"}, "prior_class", "scale"),
    (OrdinalMixture, {}, "prior_mean", "mean"),
    (OrdinalMixture, {}, "prior_precision", "scale"),
    (OrdinalMixture, {}, "difficulty_shape", "scale"),
    (OrdinalMixture, {}, "difficulty_rate", "scale"),
    (OrdinalMixture, {"difficulty": "item"}, "difficulty_shape", "scale"),
    (OrdinalMixture, {"difficulty": "item"}, "difficulty_rate", "scale"),
]
SWEEP_VALUES = {"scale": [1e-8, 1e-4, 1e4, 1e8], "mean": [-1e8, -1e4, -100.0, 100.0, 1e4, 1e8]}


@pytest.mark.parametrize("Model,settings,param,kind", PRIOR_SWEEPS,
                         ids=[f"{M.__name__}-{p}-{'-'.join(map(str, s.values()))}"
                              for M, s, p, _ in PRIOR_SWEEPS])
def test_extreme_prior_hyperparameters(Model, settings, param, kind):
    """Very small and very large prior hyperparameters give finite
    predict_proba (rows summing to 1), score_samples, lower_bound_ and a
    monotone objective (up to |value| = 1e4), or a ValueError from the
    parameter's constraint that names it (GLAD bounds b's prior: β = e^b
    overflows beyond)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (30, 6)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    if Model is OrdinalMixture:
        X += 1
    n_init = {"n_init": 2} if Model in (MACE, OrdinalMixture) else {}
    refused = []
    for value in SWEEP_VALUES[kind]:
        model = Model(**settings, **n_init, random_state=0, **{param: value})
        try:
            quiet_fit(model, X)
        except ValueError as error:
            assert param in str(error) and "range" in str(error), error
            refused.append(value)
            continue
        proba, scores = model.predict_proba(X), model.score_samples(X)
        assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1)), value
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, err_msg=str(value))
        assert np.all(np.isfinite(scores)) and np.isfinite(model.score(X)), value
        history = model.objective_history_
        assert np.isfinite(model.lower_bound_) and np.all(np.isfinite(history)), value
        if abs(value) <= 1e4:
            # (beyond, the Beta/Dirichlet normalisers of a pseudo-count v are
            # ~v ln v ≈ 2e9 at 1e8, and their rounding alone is ~1e-7)
            assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:])), value
    # only GLAD's b prior is bounded, and only beyond |b| = 100
    expected = [v for v in SWEEP_VALUES[kind] if Model is GLAD and param.startswith("b_prior")
                and abs(v) > 100]
    assert refused == expected
