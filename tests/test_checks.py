"""Posterior predictive checks (skcrowd.checks), model-agnostic."""


import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from skcrowd import DawidSkene, IRT3PL, MajorityVote, Ratings
from skcrowd.checks import check_statistics, posterior_predictive_check
from skcrowd.datasets import load_caries, make_dawid_skene


@pytest.fixture(scope="module")
def caries():
    return load_caries().ratings


def _naive_statistics(item, rater, codes, n_items, n_raters, n_classes, max_per_item):
    rater_stat = np.zeros((n_raters, n_classes - 1))
    per_item = np.zeros((n_items, n_classes - 1), dtype=int)
    for i, j, c in zip(item, rater, codes):
        if c >= 1:
            rater_stat[j, c - 1] += 1
            per_item[i, c - 1] += 1
    hist = np.zeros((n_classes - 1, max_per_item + 1))
    for k in range(n_classes - 1):
        for i in range(n_items):
            hist[k, per_item[i, k]] += 1
    return rater_stat.ravel(), hist.ravel()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_statistics_match_a_naive_count(n_classes):
    rng = np.random.default_rng(0)
    item = np.sort(rng.integers(0, 30, 200))
    rater = rng.integers(0, 7, 200)
    codes = rng.integers(0, n_classes, 200)
    max_per_item = np.bincount(item, minlength=30).max()
    stats = check_statistics(item, rater, codes, 30, 7, n_classes, max_per_item)
    rater_ref, hist_ref = _naive_statistics(item, rater, codes, 30, 7, n_classes, max_per_item)
    np.testing.assert_array_equal(stats["rater"], rater_ref)
    np.testing.assert_array_equal(stats["ratings"], hist_ref)


def test_caries_rejects_dawid_skene_and_keeps_difficulty_models(caries):
    """Carpenter's conclusion (Crowdsourcing with Difficulty): ABC
    (Dawid–Skene) fails the ratings check, A and AB (IRT 2PL / 1PL with
    sens/spec) pass."""
    ds = DawidSkene().fit(caries)
    assert posterior_predictive_check(ds, caries, random_state=0).p_values["ratings"] < 0.01
    abc = IRT3PL.from_tag("abc", random_state=0).fit(caries)
    assert posterior_predictive_check(abc, caries, random_state=0).p_values["ratings"] < 0.01
    for tag in ("ab", "a"):
        model = IRT3PL.from_tag(tag, random_state=0).fit(caries)
        check = posterior_predictive_check(model, caries, random_state=0)
        assert check.p_values["ratings"] >= 0.05, tag
        assert check.p_values["rater"] >= 0.05, tag


def test_well_specified_model_passes():
    data = make_dawid_skene(n_items=2000, n_raters=6, ratings_per_item=5, random_state=0)
    model = DawidSkene().fit(data.ratings)
    check = posterior_predictive_check(model, data.ratings, n_replicates=500, random_state=0)
    assert check.p_values["rater"] > 0.01
    assert check.p_values["ratings"] > 0.01


def test_result_shapes_and_ranges(caries):
    model = MajorityVote().fit(caries)
    check = posterior_predictive_check(model, caries, n_replicates=50, random_state=0)
    assert check.simulated["rater"].shape == (50, 5)
    assert check.simulated["ratings"].shape == (50, 6)  # 0..5 positive ratings per item
    assert check.observed["ratings"].sum() == caries.shape[0]
    for name in ("rater", "ratings"):
        assert 0 <= check.p_values[name] <= 0.5
        assert np.all((check.component_p[name] >= 0) & (check.component_p[name] <= 1))
    # replicates keep the design: every replicate has as many items per bin total
    np.testing.assert_array_equal(check.simulated["ratings"].sum(axis=1), caries.shape[0])
    assert "rater=" in repr(check)


class _OnlySample(BaseEstimator):
    """A model seen only through ``sample`` (not a skcrowd estimator)."""

    def __init__(self, model=None, output=None):
        self.model = model
        self.output = output

    def fit(self, X):
        return self

    def __sklearn_is_fitted__(self):
        return True

    def sample(self, X, random_state=None):
        if self.output is not None:
            return self.output
        return self.model.sample(X, random_state=random_state)


def test_same_draws_through_the_public_sample(caries):
    """An object that only offers ``sample`` gets the same replicates."""

    model = IRT3PL.from_tag("ab", random_state=0).fit(caries)
    fast = posterior_predictive_check(model, caries, n_replicates=20, random_state=3)
    slow = posterior_predictive_check(_OnlySample(model), caries, n_replicates=20, random_state=3)
    for name in ("rater", "ratings"):
        np.testing.assert_array_equal(fast.simulated[name], slow.simulated[name])


@pytest.mark.parametrize("form", ["long", "wide"])
def test_a_model_seen_only_through_sample_reads_data_frames_as_the_models_do(form):
    """A long table of integer ids is ratings, not an items x 3 matrix
    whose labels would be the item ids; a wide table's raters are its
    columns.  The replicates are the skcrowd model's own."""
    pd = pytest.importorskip("pandas")
    data = make_dawid_skene(n_items=60, n_raters=5, ratings_per_item=3, random_state=0)
    R = data.ratings
    X = pd.DataFrame({"item": R.item, "rater": R.rater, "label": R.label})
    if form == "wide":
        X = X.pivot(index="item", columns="rater", values="label")
    model = DawidSkene().fit(X)
    fast = posterior_predictive_check(model, X, n_replicates=20, random_state=3)
    slow = posterior_predictive_check(_OnlySample(model), X, n_replicates=20, random_state=3)
    for name in ("rater", "ratings"):
        np.testing.assert_array_equal(fast.observed[name], slow.observed[name])
        np.testing.assert_array_equal(fast.simulated[name], slow.simulated[name])


@pytest.mark.parametrize("output", [np.zeros((2, 2)), np.full((4, 3), np.nan),
                                    np.array([[0, 1, np.nan], [1, 1, 0], [1, 0, 1], [0, 0, 0]])])
def test_a_replicate_on_another_design_is_an_error(output):
    """sample(X) must return ratings on X's item/rater pairs: another shape
    was an IndexError, no ratings at all p-values of 0."""
    X = np.array([[0, 1, 0], [1, 1, np.nan], [1, 1, 1], [0, 0, 1]])
    with pytest.raises(ValueError, match="design of X"):
        posterior_predictive_check(_OnlySample(output=output), X, n_replicates=2)


def test_multiclass_model_and_dense_input():
    data = make_dawid_skene(n_items=300, n_raters=5, ratings_per_item=3, n_classes=3,
                            random_state=1)
    model = DawidSkene().fit(data.X)
    check = posterior_predictive_check(model, data.X, n_replicates=30, random_state=0)
    assert check.observed["rater"].shape == (5 * 2,)
    assert check.observed["ratings"].shape == (2 * 4,)


@pytest.mark.parametrize("n_replicates", [1.5, "3", True, np.nan, None, "a"])
def test_n_replicates_must_be_a_positive_integer(caries, n_replicates):
    # 1.5 ran 1 replicate and "3" three, silently; NaN, None and "a" raised
    # int()'s errors ("cannot convert float NaN to integer", a TypeError)
    model = MajorityVote().fit(caries)
    with pytest.raises(ValueError, match="n_replicates must be a positive integer"):
        posterior_predictive_check(model, caries, n_replicates=n_replicates)
    check = posterior_predictive_check(model, caries, n_replicates=np.int64(2), random_state=0)
    assert check.n_replicates == 2 and type(check.n_replicates) is int


def test_bad_calls_raise_clear_errors(caries):
    with pytest.raises(NotFittedError):
        posterior_predictive_check(DawidSkene(), caries)
    model = MajorityVote().fit(caries)
    with pytest.raises(ValueError, match="n_replicates"):
        posterior_predictive_check(model, caries, n_replicates=0)
    with pytest.raises(TypeError, match="sample"):
        posterior_predictive_check(object(), caries)
    # one item rated once: a check still runs and its p-values are valid
    one = Ratings(np.array([0]), np.array([0]), np.array([1]))
    check = posterior_predictive_check(MajorityVote(classes=[0, 1]).fit(one), one,
                                       n_replicates=20, random_state=0)
    assert all(0.0 <= v <= 0.5 for v in check.p_values.values()), check.p_values
