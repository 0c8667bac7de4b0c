"""Every kernel equals a plain numpy reference on small random data."""

import numpy as np
import pytest
from numba import njit

from skcrowd._kernels import _common, _config, _dawid_skene
from skcrowd._ratings import RatingData, Ratings
from skcrowd.datasets import make_dawid_skene


def _small_data(K):
    rng = np.random.default_rng(0)
    n_items, n_raters = 40, 7
    item = rng.integers(0, n_items, 150)
    rater = rng.integers(0, n_raters, 150)
    label = rng.integers(0, K, 150)
    R = Ratings(item, rater, label, item_ids=np.arange(n_items + 2),
                rater_ids=np.arange(n_raters))
    data = RatingData(R._item, R._rater, R.label.astype(np.int32), R._item_ptr, n_raters, K)
    return data, rng


@pytest.fixture(params=["jit", "numpy"])
def path(request):
    """Each test using it runs once per side of a kernel with a numpy twin."""
    return request.param


def side(kernel, path):
    """The compiled or the numpy side of ``kernel``."""
    return kernel.numpy if path == "numpy" else getattr(kernel, "jit", kernel)


@pytest.fixture(scope="module")
def small():
    return _small_data(3)


# the e_step handles four classes per pass, then the rest one at a time
@pytest.fixture(scope="module", params=[2, 3, 4, 5, 9])
def small_any_k(request):
    return _small_data(request.param)


def _unsigned(data):
    """The e_step's index arrays: unsigned views of item_ptr and cell."""
    return data.item_ptr.view(np.uint64), data.cell.view(np.uint32)


def _reference_posteriors(data, log_prior, log_conf):
    logp = np.tile(log_prior, (data.n_items, 1))
    np.add.at(logp, data.item, log_conf[data.rater, :, data.label])
    top = logp.max(axis=1, keepdims=True)
    loglik = top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))
    posterior = np.exp(logp - loglik[:, None])
    # an item without ratings scores 0 (its prior sums to one)
    loglik[np.diff(data.item_ptr) == 0] = 0.0
    return posterior, loglik


def _reference_counts(data, posterior):
    counts = np.zeros((data.n_raters, data.n_classes, data.n_classes))
    for n in range(data.n_ratings):
        counts[data.rater[n], :, data.label[n]] += posterior[data.item[n]]
    return counts


@pytest.mark.parametrize("n_chunks", [1, 3, 7])
def test_e_step_matches_numpy(small_any_k, n_chunks, path):
    data, rng = small_any_k
    K = data.n_classes
    prior = rng.dirichlet(np.ones(K))
    conf = rng.dirichlet(np.ones(K), size=(data.n_raters, K))
    chunk_ptr = np.linspace(0, data.n_items, n_chunks + 1).astype(np.int64)
    post = np.empty((data.n_items, K))
    ll = np.empty(data.n_items)
    partial = np.empty((n_chunks, K, data.n_raters * K))
    partial_class = np.empty((n_chunks, K))
    log_lik = np.ascontiguousarray(np.log(conf).transpose(1, 0, 2).reshape(K, -1))
    side(_dawid_skene.e_step, path)(*_unsigned(data), np.log(prior), np.zeros((0, K)),
                                    log_lik, chunk_ptr, post, ll, partial, partial_class)
    ref_post, ref_ll = _reference_posteriors(data, np.log(prior), np.log(conf))
    np.testing.assert_allclose(post, ref_post, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ll, ref_ll, rtol=1e-12)
    # items without ratings: the prior, and log-likelihood 0
    np.testing.assert_allclose(post[-1], prior)
    assert ll[-1] == 0.0
    counts = partial.sum(axis=0).reshape(K, data.n_raters, K).transpose(1, 0, 2)
    np.testing.assert_allclose(counts, _reference_counts(data, ref_post), rtol=1e-12)
    np.testing.assert_allclose(partial_class.sum(axis=0), ref_post.sum(axis=0), rtol=1e-12)


def test_confusion_counts_match_numpy(small, path):
    data, rng = small
    K = data.n_classes
    post = rng.dirichlet(np.ones(K), size=data.n_items)
    counts = np.empty((data.n_raters, K, K))
    side(_dawid_skene.confusion_counts, path)(data.item, data.rater, data.label, post, counts)
    np.testing.assert_allclose(counts, _reference_counts(data, post), rtol=1e-12)


def test_vote_means_medians_match_numpy(small, path):
    data, rng = small
    K = data.n_classes
    counts = np.empty((data.n_items, K))
    side(_common.vote_counts, path)(data.item_ptr, data.label, K, counts)
    ref = np.zeros((data.n_items, K))
    np.add.at(ref, (data.item, data.label), 1.0)
    np.testing.assert_array_equal(counts, ref)

    values = rng.normal(size=data.n_ratings)
    means, medians = np.empty(data.n_items), np.empty(data.n_items)
    side(_common.item_means, path)(data.item_ptr, values, means)
    side(_common.item_medians, path)(data.item_ptr, values, medians)
    for i in range(data.n_items):
        v = values[data.item_ptr[i]:data.item_ptr[i + 1]]
        if len(v) == 0:
            assert np.isnan(means[i]) and np.isnan(medians[i])
        else:
            assert means[i] == pytest.approx(np.mean(v), rel=1e-12)
            assert medians[i] == pytest.approx(np.median(v), rel=1e-12)


def test_normalize_log_survives_minus_infinity():
    row = np.array([-np.inf, np.log(0.25), np.log(0.75)])
    assert _common.normalize_log_inplace(row) == pytest.approx(0.0)
    np.testing.assert_allclose(row, [0.0, 0.25, 0.75])
    row = np.array([-1e5, -1e5 + np.log(3.0)])  # would underflow without the shift
    _common.normalize_log_inplace(row)
    np.testing.assert_allclose(row, [0.25, 0.75])


def test_generator_design_has_distinct_raters_per_item():
    data = make_dawid_skene(500, 12, 5, 3, random_state=1)
    R = data.ratings
    for i in range(0, 500, 37):
        raters = R._rater[R._item_ptr[i]:R._item_ptr[i + 1]]
        assert len(raters) == 5 and len(set(raters)) == 5


def test_e_step_with_gold_evidence_matches_numpy(small_any_k, path):
    """Per-item offsets (the gold clamp) enter as a per-item log prior."""
    data, rng = small_any_k
    K = data.n_classes
    prior = rng.dirichlet(np.ones(K))
    conf = rng.dirichlet(np.ones(K), size=(data.n_raters, K))
    evidence = np.zeros((data.n_items, K))
    known = rng.random(data.n_items) < 0.3
    gold = rng.integers(0, K, data.n_items)
    evidence[known] = -np.inf
    evidence[np.flatnonzero(known), gold[known]] = 0.0
    chunk_ptr = np.linspace(0, data.n_items, 4).astype(np.int64)
    post, ll = np.empty((data.n_items, K)), np.empty(data.n_items)
    partial, partial_class = np.empty((3, K, data.n_raters * K)), np.empty((3, K))
    log_lik = np.ascontiguousarray(np.log(conf).transpose(1, 0, 2).reshape(K, -1))
    side(_dawid_skene.e_step, path)(*_unsigned(data), np.log(prior), evidence, log_lik,
                                    chunk_ptr, post, ll, partial, partial_class)
    logp = np.log(prior) + evidence
    np.add.at(logp, data.item, np.log(conf)[data.rater, :, data.label])
    top = logp.max(axis=1, keepdims=True)
    ref_ll = top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))
    np.testing.assert_allclose(post, np.exp(logp - ref_ll[:, None]), atol=1e-14)
    # a log-likelihood within rounding of 0 has no relative accuracy
    np.testing.assert_allclose(ll, ref_ll, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(post[known].argmax(axis=1), gold[known])
    assert np.all(post[known].max(axis=1) == 1.0)


def test_serial_and_parallel_variants_agree_exactly(small):
    data, rng = small
    K = data.n_classes
    prior = rng.dirichlet(np.ones(K))
    conf = rng.dirichlet(np.ones(K), size=(data.n_raters, K))
    chunk_ptr = np.linspace(0, data.n_items, 5).astype(np.int64)
    outputs = []
    log_lik = np.ascontiguousarray(np.log(conf).transpose(1, 0, 2).reshape(K, -1))
    for kernel in (_dawid_skene.e_step, _dawid_skene.e_step.serial):
        post, ll = np.empty((data.n_items, K)), np.empty(data.n_items)
        partial, partial_class = np.empty((4, K, data.n_raters * K)), np.empty((4, K))
        kernel(*_unsigned(data), np.log(prior), np.zeros((0, K)), log_lik,
               chunk_ptr, post, ll, partial, partial_class)
        outputs.append((post, ll, partial, partial_class))
    for a, b in zip(*outputs):
        np.testing.assert_array_equal(a, b)
    assert _dawid_skene.e_step.pick(10) is _dawid_skene.e_step.numpy
    with _config.kernel_path("jit"):
        assert _dawid_skene.e_step.pick(10) is _dawid_skene.e_step.serial


def test_vectorised_exp_is_within_two_ulp_of_numpy():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708, 0, 20_000), rng.uniform(-1, 0, 5_000),
                        [0.0, -1e-300, -0.5 * np.log(2), -np.log(2), -707.99]])
    top = 3.5
    out = x + top
    ref = np.exp(out - top)  # the kernel exponentiates the same rounded difference
    total = _common.exp_shifted_inplace(out, top)
    assert np.all(np.abs(out - ref) <= 2 * np.spacing(ref))
    assert total == pytest.approx(ref.sum(), rel=1e-14)
    # below exp(-708) and -inf: exactly 0, never NaN
    out = np.array([-709.0, -1e4, -np.inf, 0.0])
    _common.exp_shifted_inplace(out, 0.0)
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0, 1.0])


@njit
def _map_exp_log(x, exps, logs):
    # a loop, so the vectorised form (the one the kernels run) is tested
    for k in range(x.shape[0]):
        exps[k] = _common.exp_fast(-x[k])
        logs[k] = _common.log_fast(x[k])


def test_branch_free_exp_and_log_are_within_two_ulp_and_one_ulp_of_numpy():
    rng = np.random.default_rng(3)
    x = np.concatenate([np.exp(rng.uniform(-700, 700, 20_000)), rng.uniform(0, 708, 20_000),
                        rng.uniform(0.5, 2.0, 5_000),
                        [1.0, np.sqrt(2.0), np.nextafter(np.sqrt(2.0), 3), 2.2250738585072014e-308,
                         1.7976931348623157e308, 707.99, 1e-300]])
    exps, logs = np.empty_like(x), np.empty_like(x)
    _map_exp_log(x, exps, logs)
    ref_log = np.log(x)
    assert np.all(np.abs(logs - ref_log) <= np.spacing(np.abs(ref_log)))
    keep = x <= 708
    ref_exp = np.exp(-x[keep])
    assert np.all(np.abs(exps[keep] - ref_exp) <= 2 * np.spacing(ref_exp))
    # below exp(-708) and at -inf: exactly 0
    out, logs = np.empty(3), np.empty(3)
    _map_exp_log(np.array([709.0, 1e4, np.inf]), out, logs)
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0])


def test_normalize_log_rows_matches_normalize_log_inplace():
    rng = np.random.default_rng(1)
    for n in (1, 3, 4, 7, 1470):
        row = rng.normal(-50, 30, n)
        row[rng.random(n) < 0.1] = -np.inf
        row[0] = -20.0
        a, b = row.copy(), row.copy()
        assert _common.normalize_log_rows(a) == pytest.approx(
            _common.normalize_log_inplace(b), rel=1e-14)
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-300)
    row = np.full(5, -np.inf)
    assert _common.normalize_log_rows(row) == -np.inf
    np.testing.assert_array_equal(row, np.full(5, 0.2))


def test_row_argmax_matches_numpy_with_ties_and_nan(path):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 3, size=(200, 5)).astype(float)  # many ties
    values[::7, 2] = np.nan
    values[::11, 0] = np.nan
    values[::13] = -np.inf
    out = np.empty(len(values), dtype=np.intp)
    side(_common.row_argmax, path)(values, out)
    np.testing.assert_array_equal(out, np.argmax(values, axis=1))


def test_vote_share_counts_match_numpy(small_any_k, path):
    """The majority start's counts: each item's vote shares (+1e-12 per
    class) into its ratings' cells."""
    data, _ = small_any_k
    K = data.n_classes
    votes = np.zeros((data.n_items, K))
    np.add.at(votes, (data.item, data.label), 1.0)
    shares = (votes + 1e-12) / (votes + 1e-12).sum(axis=1, keepdims=True)
    counts, class_counts = np.empty((data.n_raters * K, K)), np.empty(K)
    item_ptr, cell = _unsigned(data)
    side(_dawid_skene.vote_share_counts, path)(item_ptr, data.label, cell, K, counts,
                                               class_counts)
    counts = counts.reshape(data.n_raters, K, K).transpose(0, 2, 1)
    np.testing.assert_allclose(counts, _reference_counts(data, shares), rtol=1e-12)
    np.testing.assert_allclose(class_counts, shares.sum(axis=0), rtol=1e-12)


def test_count_and_lookup_codes_match_numpy(path):
    rng = np.random.default_rng(5)
    for dtype in (np.int64, np.int32):
        codes = rng.integers(0, 9, 300).astype(dtype)
        counts = np.ones(12, dtype=np.int64)  # added to, not overwritten
        side(_common.count_codes, path)(codes, counts)
        np.testing.assert_array_equal(counts, 1 + np.bincount(codes, minlength=12))
    table = np.array([2, -1, 0, 1], dtype=np.int32)
    offsets = rng.integers(0, 4, 50)
    out = np.empty(50, dtype=np.int32)
    bad = side(_common.lookup_codes, path)(table, offsets, out)
    np.testing.assert_array_equal(out, table[offsets])
    assert bad == (np.flatnonzero(offsets == 1)[0] if np.any(offsets == 1) else -1)
    assert side(_common.lookup_codes, path)(table, np.array([0, 2, 3]), out[:3]) == -1


def test_kernel_path_picks_by_size_and_can_be_forced():
    small_size, large_size = 10, _config.NUMPY_MAX_RATINGS
    assert _config.use_numpy(small_size) and not _config.use_numpy(large_size)
    with _config.kernel_path("jit"):
        assert not _config.use_numpy(small_size)
        with _config.kernel_path("numpy"):
            assert _config.use_numpy(large_size)
        assert not _config.use_numpy(small_size)
    assert _config.use_numpy(small_size)
    with pytest.raises(ValueError, match="numpy"):
        with _config.kernel_path("fast"):
            pass


def test_omp_wait_policy_is_not_left_in_the_environment():
    """The passive wait policy is set while numba starts its threads only
    (at the first fit, not at import): the user's environment (set or not)
    is what children see afterwards."""
    import os
    import subprocess
    import sys

    code = ("import os, numba; from skcrowd._kernels import _config; _config.start_threads(); "
            "numba.get_num_threads(); print(os.environ.get('OMP_WAIT_POLICY', 'unset'))")
    for value in (None, "ACTIVE"):
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if value is not None:
            env["OMP_WAIT_POLICY"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert out == (value or "unset")


@pytest.mark.parametrize("variational", [True, False])
def test_mace_kernels_numpy_twins_match_compiled(small_any_k, variational):
    """Every MACE kernel with a numpy twin: both sides, the same outputs."""
    from skcrowd._kernels import _mace

    data, _ = small_any_k
    rng = np.random.default_rng(11)
    J, K = data.n_raters, data.n_classes
    know, count = rng.uniform(0, 3, J * K), rng.uniform(3, 6, J * K)

    def rater_side(path):
        outs = [np.empty(J), np.empty(J), np.empty((J, K)), np.empty(J), np.empty(J),
                np.empty((J, K)), np.empty(J * K), np.empty(J * K), np.empty(J * K)]
        term = side(_mace.rater_update, path)(know, count, variational, 2.0, 1.5, 0.7, 0.1,
                                              *outs)
        return term, outs

    (term_jit, outs_jit), (term_np, outs_np) = rater_side("jit"), rater_side("numpy")
    assert term_np == pytest.approx(term_jit, rel=1e-12)
    for a, b in zip(outs_np, outs_jit):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    off, gain, share = outs_jit[-3:]

    prior = np.log(rng.dirichlet(np.ones(K)))
    chunk_ptr = np.linspace(0, data.n_items, 4).astype(np.int64)
    results = []
    for path in ("jit", "numpy"):
        post, ll = np.empty((data.n_items, K)), np.empty(data.n_items)
        know_out, class_out = np.empty((3, J * K)), np.empty((3, K))
        side(_mace.e_step, path)(data.item_ptr, data.label, data.cell, prior, np.zeros((0, K)),
                                 off, gain, share, chunk_ptr, post, ll, know_out, class_out)
        counts = [np.empty(J * K), np.empty(J * K), np.empty(K)]
        side(_mace.start_counts, path)(data.item_ptr, data.label, data.cell, post, 0.8, *counts)
        results.append([post, ll, know_out, class_out, *counts])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_numpy_twins_take_no_items():
    """A Dask partition can hold no items: the twins return empty outputs."""
    from skcrowd._kernels import _mace

    K, J = 2, 3
    item_ptr, none = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    chunk_ptr = np.zeros(2, dtype=np.int64)
    tables = [np.full(J * K, -0.5), np.full(J * K, 0.3), np.full(J * K, 0.4)]
    know, klass = np.full((1, J * K), np.nan), np.full((1, K), np.nan)
    _mace.e_step.numpy(item_ptr, none, none, np.log([0.5, 0.5]), np.zeros((0, K)), *tables,
                       chunk_ptr, np.empty((0, K)), np.empty(0), know, klass)
    np.testing.assert_array_equal(know, 0.0)
    np.testing.assert_array_equal(klass, 0.0)
    counts, klass = np.full((1, K, J * K), np.nan), np.full((1, K), np.nan)
    _dawid_skene.e_step.numpy(item_ptr.view(np.uint64), none.view(np.uint32), np.log([0.5, 0.5]),
                              np.zeros((0, K)), np.zeros((K, J * K)), chunk_ptr,
                              np.empty((0, K)), np.empty(0), counts, klass)
    np.testing.assert_array_equal(counts, 0.0)
    np.testing.assert_array_equal(klass, 0.0)
