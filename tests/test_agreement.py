"""Agreement metrics: Krippendorff's worked example, the krippendorff and
statsmodels packages, scikit-learn's Cohen's kappa, crowd-kit's examples."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import cohen_kappa_score

from skcrowd import (MACE, DawidSkene, MajorityVote, MeanRating, MedianRating, OrdinalMixture,
                     Ratings)
from skcrowd.metrics import (
    cohen_kappa_matrix,
    consistency,
    fleiss_kappa,
    krippendorff_alpha,
    posterior_entropy,
    uncertainty,
)

krippendorff = pytest.importorskip("krippendorff")

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the
# example with missing values: 4 observers (columns) x 12 units (rows).
NAN = np.nan
EXAMPLE = np.array([
    [1, 1, NAN, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [NAN, 5, 5, 5], [NAN, NAN, 1, 1], [NAN, 3, NAN, NAN],
])
PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


@pytest.mark.parametrize("level", sorted(PUBLISHED))
def test_alpha_equals_krippendorffs_worked_example(level):
    assert round(krippendorff_alpha(EXAMPLE, level), 3) == PUBLISHED[level]


def random_ratings(seed, n_items=60, n_raters=7, K=5, missing=0.4):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, K, n_items)
    X = np.where(rng.random((n_items, n_raters)) < 0.6, truth[:, None],
                 rng.integers(0, K, (n_items, n_raters))).astype(float) + 1
    X[rng.random(X.shape) < missing] = np.nan
    return X


@pytest.mark.parametrize("level", sorted(PUBLISHED))
@pytest.mark.parametrize("seed", range(4))
def test_alpha_equals_the_krippendorff_package(level, seed):
    X = random_ratings(seed)
    expected = krippendorff.alpha(reliability_data=X.T, level_of_measurement=level)
    assert krippendorff_alpha(X, level) == pytest.approx(expected, abs=1e-9)
    # every input form gives the same value
    rows, cols = np.nonzero(~np.isnan(X))
    R = Ratings(rows, cols, X[rows, cols])
    assert krippendorff_alpha(R, level) == pytest.approx(expected, abs=1e-9)
    sparse = sp.csr_matrix((X[rows, cols], (rows, cols)), shape=X.shape)
    assert krippendorff_alpha(sparse, level) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", sorted(PUBLISHED))
def test_alpha_of_integer_and_boolean_labels_is_that_of_their_values(level):
    # level="ratio" on integer labels (an int array, classes=[1, 2, 3]) was
    # a UFuncTypeError from np.divide, "interval"/"ratio" on boolean labels
    # a TypeError (numpy boolean subtract)
    pd = pytest.importorskip("pandas")
    X = random_ratings(0)
    rows, cols = np.nonzero(~np.isnan(X))
    labels = X[rows, cols]
    expected = krippendorff.alpha(reliability_data=X.T, level_of_measurement=level)
    as_int = Ratings(rows, cols, labels.astype(np.int64))
    assert krippendorff_alpha(as_int, level) == pytest.approx(expected, abs=1e-9)
    classes = np.unique(labels).astype(np.int64)
    assert krippendorff_alpha(as_int, level, classes=classes) == pytest.approx(
        expected, abs=1e-9)
    binary = labels > np.median(labels)
    long = pd.DataFrame({"item": rows, "rater": cols, "label": binary})
    assert krippendorff_alpha(long, level) == pytest.approx(
        krippendorff_alpha(long.assign(label=binary.astype(float)), level), abs=1e-12)


@pytest.mark.parametrize("level", sorted(PUBLISHED))
def test_repeated_ratings_are_values_of_their_unit(level):
    """A rater rating an item twice adds a pairable value to that unit: the
    krippendorff package's value-counts form."""
    rng = np.random.default_rng(7)
    item = rng.integers(0, 40, 300)
    rater = rng.integers(0, 5, 300)
    label = rng.integers(1, 5, 300).astype(float)
    R = Ratings(item, rater, label)
    assert len(np.unique(item * 5 + rater)) < 300  # some repeats
    counts = np.zeros((40, 4))
    np.add.at(counts, (item, label.astype(int) - 1), 1)
    expected = krippendorff.alpha(value_counts=counts, value_domain=[1, 2, 3, 4],
                                  level_of_measurement=level)
    assert krippendorff_alpha(R, level) == pytest.approx(expected, abs=1e-9)


def test_alpha_bad_input():
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(EXAMPLE, "cardinal")
    with pytest.raises(ValueError, match="numeric"):
        krippendorff_alpha(np.array([["a", "b"], ["a", "a"]], dtype=object), "interval")
    with pytest.raises(ValueError, match="undefined"):
        krippendorff_alpha(np.ones((3, 2)))
    with pytest.raises(ValueError, match="two ratings"):
        krippendorff_alpha(np.array([[1, np.nan], [np.nan, 2]]))


def test_fleiss_kappa_matches_statsmodels():
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    for seed in range(4):
        X = random_ratings(seed, missing=0.0)
        table, _ = inter_rater.aggregate_raters(X)
        assert fleiss_kappa(X) == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-12)


def test_fleiss_kappa_published_example():
    # Fleiss (1971) as tabulated on Wikipedia: 10 subjects, 14 raters, 5
    # categories (counts per subject); kappa = 0.210.
    counts = np.array([
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ])
    item = np.repeat(np.repeat(np.arange(10), 5), counts.ravel())
    label = np.repeat(np.tile(np.arange(5), 10), counts.ravel())
    rater = np.concatenate([np.arange(14)] * 10)
    assert round(fleiss_kappa(Ratings(item, rater, label)), 3) == 0.210


def test_cohen_kappa_matrix_matches_scikit_learn():
    X = random_ratings(3, n_raters=5, missing=0.3)
    kappa = cohen_kappa_matrix(X)
    assert kappa.shape == (5, 5) and list(kappa.index) == list(range(5))
    for a in range(5):
        assert np.isnan(kappa.iloc[a, a])
        for b in range(5):
            if a != b:
                both = ~np.isnan(X[:, a]) & ~np.isnan(X[:, b])
                expected = cohen_kappa_score(X[both, a], X[both, b])
                assert kappa.iloc[a, b] == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_counts_each_item_once_per_pair():
    # rater "b" rates item 0 twice (labels 0 and 1): each weighs 1/2
    R = Ratings([0, 0, 0, 1, 1, 2, 2], ["a", "b", "b", "a", "b", "a", "b"],
                [0, 0, 1, 1, 1, 0, 0])
    kappa = cohen_kappa_matrix(R)
    # table: (0,0) 0.5 + 1, (0,1) 0.5, (1,1) 1 over 3 items
    po, pa, pb = 2.5 / 3, np.array([2, 1]) / 3, np.array([1.5, 1.5]) / 3
    pe = pa @ pb
    assert kappa.loc["a", "b"] == pytest.approx((po - pe) / (1 - pe))


def test_posterior_entropy_uncertainty_and_consistency():
    X = np.array([[0, 1, np.nan], [0, 0, 0], [1, 1, 0], [1, np.nan, 1]])
    mv = MajorityVote().fit(X)
    proba = mv.predict_proba(X)
    logs = np.log(np.where(proba > 0, proba, 1.0))
    np.testing.assert_allclose(posterior_entropy(mv, X), -np.sum(proba * logs, axis=1))
    # crowd-kit's examples: all agree -> 0, three different labels -> log 3
    assert uncertainty(mv, X, aggregate=False)[1] == 0.0
    three = np.array([["Yes", "No", "Maybe"]], dtype=object)
    assert uncertainty(MajorityVote().fit(three), three) == pytest.approx(np.log(3))
    by_rater = uncertainty(mv, X, by="rater", aggregate=False)
    assert by_rater[0] == pytest.approx(np.log(2)) and by_rater[2] == pytest.approx(
        -(1 / 3) * np.log(1 / 3) - (2 / 3) * np.log(2 / 3))
    # consistency with explicit skills: the one-coin posterior of the label
    skills = np.array([0.9, 0.6, 0.7])
    ds = DawidSkene().fit(X)
    values = consistency(ds, X, skills=skills, aggregate=False)
    weights = np.ones((4, 2))
    for i, row in enumerate(X):
        for j, v in enumerate(row):
            if not np.isnan(v):
                weights[i] *= np.where(np.arange(2) == v, skills[j], 1 - skills[j])
    posterior = weights / weights.sum(axis=1, keepdims=True)
    predicted = ds.predict(X).astype(int)
    np.testing.assert_allclose(values, posterior[np.arange(4), predicted])
    assert consistency(ds, X, skills=skills) == pytest.approx(values.mean())
    # a model's own rater accuracies are the default skills
    mace = MACE(n_init=1).fit(X)
    assert 0 < consistency(mace, X) <= 1
    with pytest.raises(ValueError, match="skills"):
        consistency(ds, X, skills=[0.5, 0.5])
    # a NaN skill gave consistency and uncertainty 0.0 instead of an error
    for metric in (consistency, uncertainty):
        with pytest.raises(ValueError, match="skills"):
            metric(ds, X, skills=[np.nan, 0.5, 0.5])


def test_per_item_metrics_are_tidy_for_pandas_input():
    """Long-form input: per-item (per-rater) values as Series indexed by the
    item (rater) ids, equal to the matrix results in item order."""
    pd = pytest.importorskip("pandas")
    X = np.array([[0, 1, np.nan], [0, 0, 0], [1, 1, 0], [1, np.nan, 1]])
    R = Ratings.from_matrix(X)
    long = pd.DataFrame({"item": [f"i{i}" for i in R.item_ids[R.item]],
                         "rater": [f"r{j}" for j in R.rater_ids[R.rater]],
                         "label": R.label})
    ds_matrix, ds_long = DawidSkene().fit(X), DawidSkene().fit(long)
    for metric, kwargs in ((posterior_entropy, {}), (uncertainty, {"aggregate": False}),
                           (consistency, {"aggregate": False})):
        tidy = metric(ds_long, long, **kwargs)
        assert isinstance(tidy, pd.Series), metric.__name__
        assert tidy.index.tolist() == ["i0", "i1", "i2", "i3"]
        np.testing.assert_allclose(tidy.to_numpy(), metric(ds_matrix, X, **kwargs))
        assert isinstance(metric(ds_matrix, X, **kwargs), np.ndarray)
    by_rater = uncertainty(ds_long, long, by="rater", aggregate=False)
    assert by_rater.index.tolist() == ["r0", "r1", "r2"]
    assert by_rater.index.name == "rater" and by_rater.name == "uncertainty"
    # set_output(transform="pandas") on a matrix: a RangeIndex Series
    ds_matrix.set_output(transform="pandas")
    assert isinstance(posterior_entropy(ds_matrix, X), pd.Series)


@pytest.mark.parametrize("Model", [MeanRating, MedianRating, OrdinalMixture])
def test_consistency_needs_a_model_that_predicts_classes(Model):
    # MeanRating's mean 4/3 of the ratings 1, 1, 2 was taken for the
    # class 2 (np.searchsorted): the consistency of a class nobody chose.
    X = np.array([[1, 2, 3], [3, 3, 3], [1, 1, 2], [3, 3, 3.0]])
    model = Model().fit(X)
    with pytest.raises(ValueError, match="not a class"):
        consistency(model, X, skills=[0.9, 0.9, 0.9])


@pytest.mark.parametrize("metric", [krippendorff_alpha, fleiss_kappa, cohen_kappa_matrix])
def test_empty_input_error_does_not_name_the_internal_reader(metric):
    # the message said "... is required by MajorityVote", a model the user
    # never used
    with pytest.raises(ValueError, match="0 sample") as error:
        metric(np.empty((0, 3)))
    assert "MajorityVote" not in str(error.value)


@pytest.mark.parametrize("Model", [DawidSkene, MACE, MajorityVote])
def test_uncertainty_and_consistency_score_new_raters_with_the_population(Model):
    # With unknown_raters="prior" the models' predict_proba takes a rater
    # never seen in fit, but uncertainty and consistency failed with
    # "IndexError: index 3 is out of bounds for axis 0 with size 3" (the
    # skills had no entry for the population rater).
    pd = pytest.importorskip("pandas")
    long = pd.DataFrame({"item": [0, 0, 0, 1, 1, 1, 2, 2, 3, 3],
                         "rater": ["a", "b", "c", "a", "b", "c", "a", "b", "a", "z"],
                         "label": [0, 0, 1, 1, 1, 1, 0, 1, 1, 0]})
    seen = long[long.rater != "z"]
    model = Model(unknown_raters="prior").fit(seen)
    population = model._with_unknown_raters(model._encode(long, reset=False))
    s_a = getattr(model, "rater_accuracy_", np.ones(3))[0]
    s_z = getattr(population, "rater_accuracy_", np.ones(4))[3]  # the population's
    # item 3: "a" says 1, "z" (the population rater) says 0; per class
    weights = np.array([[1 - s_a, s_a], [s_z, 1 - s_z]])
    shares = weights.sum(axis=0) / weights.sum()
    with np.errstate(invalid="ignore"):
        # skills of 1 that disagree (MajorityVote): no class fits, 0
        posterior = np.nan_to_num(weights.prod(axis=0) / weights.prod(axis=0).sum())
    predicted = int(model.predict(long)[3])
    for metric, item3 in ((uncertainty, -np.sum(shares * np.log(shares))),
                          (consistency, posterior[predicted])):
        values = metric(model, long, aggregate=False)
        assert values.index.tolist() == [0, 1, 2, 3]
        np.testing.assert_allclose(values.iloc[:3], metric(model, seen, aggregate=False)[:3])
        np.testing.assert_allclose(values.iloc[3], item3)
    # by rater: one row per rater seen in fit (the new raters are none of them)
    by_rater = uncertainty(model, long, by="rater", aggregate=False)
    assert by_rater.index.tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(by_rater.iloc[1:], uncertainty(
        model, seen, by="rater", aggregate=False).iloc[1:])
    with pytest.raises(ValueError, match="skills must be 3 probabilities"):
        uncertainty(model, long, skills=[1, 1, 1, 1])


def test_skills_series_is_aligned_by_rater_id():
    # crowd-kit passes skills as a Series indexed by worker; skcrowd took it
    # by position, so skills in another order than rater_ids_ went to other
    # raters, silently (consistency of item 2: 0.2059 instead of 0.8571).
    pd = pytest.importorskip("pandas")
    long = pd.DataFrame({"item": [0, 0, 0, 1, 1, 1, 2, 2, 3, 3],
                         "rater": ["a", "b", "c", "a", "b", "c", "a", "b", "a", "c"],
                         "label": [0, 0, 1, 1, 1, 1, 0, 1, 1, 0]})
    model = MajorityVote().fit(long)
    in_order = np.array([0.9, 0.6, 0.7])  # rater_ids_ a, b, c
    shuffled = pd.Series(in_order, index=["a", "b", "c"])[["c", "a", "b"]]
    for metric, params in ((uncertainty, {}), (uncertainty, {"by": "rater"}),
                           (consistency, {})):
        np.testing.assert_array_equal(
            metric(model, long, skills=shuffled, aggregate=False, **params),
            metric(model, long, skills=in_order, aggregate=False, **params))
    with pytest.raises(ValueError, match="skills is a Series indexed by rater id, but "
                                         "rater 'c' is not in its index"):
        uncertainty(model, long, skills=shuffled[["a", "b"]])


@pytest.mark.parametrize("level", sorted(PUBLISHED))
def test_odd_but_defined_data_keeps_its_value_and_undefined_data_is_named(level):
    # doc/agreement.rst, "Undefined values": an unused class and items with
    # a single rating change nothing; 0/0 is a ValueError for the one-number
    # coefficients and NaN in the cells of the pairwise matrix, never a NaN
    # coefficient.
    X = random_ratings(3)
    alpha, kappa = krippendorff_alpha(X, level), fleiss_kappa(X)
    used = np.unique(X[~np.isnan(X)])
    wider = np.append(used, used.max() + 1)  # a class no one uses
    assert krippendorff_alpha(X, level, classes=wider) == pytest.approx(alpha, abs=1e-12)
    assert fleiss_kappa(X, classes=wider) == pytest.approx(kappa, abs=1e-12)
    lonely = np.vstack([X, np.full((3, X.shape[1]), np.nan)])
    lonely[-3:, 0] = used[:3]  # three items with one rating each
    assert krippendorff_alpha(lonely, level) == pytest.approx(alpha, abs=1e-12)
    assert fleiss_kappa(lonely) == pytest.approx(kappa, abs=1e-12)
    constant = np.full((5, 3), 2.0)
    with pytest.raises(ValueError, match="alpha is undefined"):
        krippendorff_alpha(constant, level)
    with pytest.raises(ValueError, match="kappa is undefined"):
        fleiss_kappa(constant)
    with pytest.raises(ValueError, match="at least two ratings"):
        krippendorff_alpha(constant[:, :1], level)
    with pytest.raises(ValueError, match="at least two ratings"):
        fleiss_kappa(constant[:, :1])
    pairs = np.asarray(cohen_kappa_matrix(np.array([[0, 1, 1], [1, 1, 1], [0, 1, 1.0]])))
    assert np.isnan(pairs[1, 2])  # raters 1 and 2 always gave 1: undefined
    assert np.isfinite(pairs[0, 1]) and np.all(np.isnan(np.diag(pairs)))
