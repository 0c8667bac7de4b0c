"""IRT3PL: kernels against numpy, quadrature against brute-force integration,
the lattice, recovery of simulated parameters, monotone objective, and the
binary versions of the common checks that cannot be fed binary data."""

import pickle
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, logsumexp, roots_hermitenorm
from scipy.stats import norm, spearmanr
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV, KFold

import skcrowd
from skcrowd import DawidSkene, IRT3PL, Ratings, lattice, lattice_grid
from skcrowd._irt import LATTICE_TAGS, _group_sequences, _patterns
from skcrowd._kernels import _irt as kernels
from skcrowd._kernels._config import kernel_path
from skcrowd.datasets import load_caries, make_irt

SEED_TAGS = {
    "a", "ab", "abc", "abcd", "abcde", "abce", "abd", "abde", "ac", "acd", "ad",
    "bc", "bcd", "bd", "c", "cd", "d", "full",
}


@contextmanager
def quiet():
    """Short runs (small max_iter) stop before convergence on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


@pytest.fixture(scope="module")
def caries():
    return load_caries().ratings


@pytest.fixture(scope="module")
def small():
    return make_irt(n_items=300, n_raters=6, ratings_per_item=4, random_state=3)


@pytest.fixture(scope="module")
def caries_fits(caries):
    """Every lattice model fitted on caries (a few seconds in all)."""
    return {tag: IRT3PL(**params, random_state=0).fit(caries) for tag, params in lattice()}


# -- lattice ------------------------------------------------------------------
def test_lattice_has_the_seeds_18_models():
    pairs = list(lattice())
    assert {tag for tag, _ in pairs} == SEED_TAGS
    configs = {tuple(sorted(p.items())) for _, p in pairs}
    assert len(configs) == 18
    for tag, params in pairs:
        assert IRT3PL.from_tag(tag).get_params() == IRT3PL(**params).get_params()
        assert IRT3PL(**params).tag == tag
    assert len(lattice_grid()) == 18


def test_from_tag_flags_and_bad_tag():
    model = IRT3PL.from_tag("ab", n_quadrature=5)
    assert not model.guessing and not model.discrimination and model.difficulty
    assert model.sens_spec and model.rater_effects and model.n_quadrature == 5
    for bad in ["x", "aa", "", "fullx"]:
        with pytest.raises(ValueError, match="lattice tag"):
            IRT3PL.from_tag(bad)


# -- kernels against numpy -------------------------------------------------------
def _numpy_table(sens, spec, b, d, lam):
    M = len(b)
    table = np.empty((len(sens), 2, 2 * M))
    for z, alpha in ((0, spec), (1, sens)):
        x = d[None, :] * (alpha[:, None] - b[None, :])
        correct = lam + (1 - lam) * expit(x)
        table[:, z, z * M:(z + 1) * M] = np.log(correct)
        table[:, 1 - z, z * M:(z + 1) * M] = np.log(1 - correct)
    return table


@pytest.fixture(scope="module")
def kernel_case():
    rng = np.random.default_rng(0)
    J, M = 4, 6
    sens, spec = rng.normal(1, 1, J), rng.normal(2, 1, J)
    b, d, lam = rng.normal(0, 1, M), np.exp(rng.normal(0, 0.3, M)), rng.uniform(0.05, 0.5, M)
    return sens, spec, b, d, lam


def test_rating_log_table_matches_numpy(kernel_case):
    sens, spec, b, d, lam = kernel_case
    table = np.empty((len(sens), 2, 2 * len(b)))
    kernels.rating_log_table(sens, spec, b, d, np.log(lam), np.log1p(-lam), table)
    np.testing.assert_allclose(table, _numpy_table(sens, spec, b, d, lam), rtol=1e-12)
    # no guessing: log λ = -inf must stay finite in the table
    kernels.rating_log_table(sens, spec, b, d, np.full(len(b), -np.inf), np.zeros(len(b)), table)
    np.testing.assert_allclose(table, _numpy_table(sens, spec, b, d, 0 * lam), rtol=1e-12)


def test_pattern_posteriors_match_numpy(kernel_case):
    sens, spec, b, d, lam = kernel_case
    rng = np.random.default_rng(1)
    J, M = len(sens), len(b)
    table = _numpy_table(sens, spec, b, d, lam)
    lengths = np.array([3, 0, 2, 4, 1])
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rater = rng.integers(0, J, ptr[-1]).astype(np.int32)
    label = rng.integers(0, 2, ptr[-1]).astype(np.int32)
    count = np.array([1.0, 2.0, 3.0, 1.0, 5.0])
    log_prior = np.log(np.concatenate([0.7 * np.full(M, 1 / M), 0.3 * np.full(M, 1 / M)]))
    values = np.stack([b, d, lam])
    for chunk_ptr in (np.array([0, 5]), np.array([0, 2, 3, 5])):
        n_chunks = len(chunk_ptr) - 1
        for kernel in (kernels.pattern_posteriors, kernels.pattern_posteriors_serial):
            # garbage where a chunk meets no rating of a rater: never read
            W = np.full((n_chunks, J, 2, 2 * M), np.nan)
            touched = np.empty((n_chunks, J), dtype=bool)
            p1, eff, ll = np.empty(5), np.empty((5, 3)), np.empty(5)
            kernel(ptr, rater, label, count, log_prior, table, chunk_ptr.astype(np.int64),
                   values, W, touched, p1, eff, ll)
            W_ref = np.zeros((J, 2, 2 * M))
            for p in range(5):
                joint = log_prior + sum(table[rater[n], label[n]] for n in range(ptr[p], ptr[p + 1]))
                assert ll[p] == pytest.approx(logsumexp(joint), rel=1e-12)
                post = np.exp(joint - logsumexp(joint))
                assert p1[p] == pytest.approx(post[M:].sum(), rel=1e-12)
                np.testing.assert_allclose(eff[p], values @ (post[:M] + post[M:]), rtol=1e-12)
                for n in range(ptr[p], ptr[p + 1]):
                    W_ref[rater[n], label[n]] += count[p] * post
            for c in range(n_chunks):
                met = np.unique(rater[ptr[chunk_ptr[c]]:ptr[chunk_ptr[c + 1]]])
                np.testing.assert_array_equal(np.flatnonzero(touched[c]), met)
            for add in (kernels.sum_chunks, kernels.sum_chunks.serial):
                total = np.empty((J - 1, 2, 2 * M))  # rows below len(out) only
                add(W, touched, total)
                np.testing.assert_allclose(total, W_ref[:J - 1], rtol=1e-12, atol=1e-15)
                # the same bits as numpy's sum over zeroed chunks
                np.testing.assert_array_equal(
                    total, np.where(touched[:, :, None, None], W, 0.0).sum(axis=0)[:J - 1])
    assert ll[1] == pytest.approx(0.0, abs=1e-12)  # an empty pattern has likelihood 1


def _kernel_terms(sens, spec, b, d, log_guess, log_noguess, groups=None, out=None):
    G, M = len(sens), len(b)
    if out is None:
        out = (np.empty((G, 2, 2 * M)),) + tuple(np.empty((G, 2 * M)) for _ in range(3))
    groups = np.arange(G) if groups is None else np.asarray(groups, dtype=np.int64)
    kernels.rater_node_terms(sens, spec, b, d, log_guess, log_noguess, groups, *out)
    return out


@pytest.mark.parametrize("guessing", [True, False])
def test_rater_node_terms_match_numpy(kernel_case, guessing):
    sens, spec, b, d, lam = kernel_case
    lam = lam if guessing else 0 * lam
    # repeated (b, d) pairs, as on the tensor grid: the shared logistic
    lam = np.tile([0.05, 0.3, 0.6], len(b)) * (lam.max() > 0)
    b, d = np.repeat(b, 3), np.repeat(d, 3)
    M = len(b)
    with np.errstate(divide="ignore"):
        log_guess, log_noguess = np.log(lam), np.log1p(-lam)
    table, sigma, slope, ratio = _kernel_terms(sens, spec, b, d, log_guess, log_noguess)
    np.testing.assert_allclose(table, _numpy_table(sens, spec, b, d, lam), rtol=1e-12)
    # the local step's table, to the bit
    reference = np.empty_like(table)
    for kernel in (kernels.rating_log_table, kernels.rating_log_table.serial):
        kernel(sens, spec, b, d, log_guess, log_noguess, reference)
        np.testing.assert_array_equal(table, reference)
    for z, alpha in ((0, spec), (1, sens)):
        cols = slice(z * M, (z + 1) * M)
        x = d[None, :] * (alpha[:, None] - b[None, :])
        s = expit(x)
        correct = lam + (1 - lam) * s
        np.testing.assert_allclose(sigma[:, cols], s, rtol=1e-12)
        np.testing.assert_allclose(slope[:, cols], (1 - lam) * s * (1 - s) / correct, rtol=1e-12)
        np.testing.assert_allclose(ratio[:, cols], (1 - lam) / correct if guessing else 0 * s,
                                   rtol=1e-12)
    # only the listed groups' rows are written (the line search's subsets)
    partial = tuple(np.full_like(a, np.nan) for a in (table, sigma, slope, ratio))
    kernels.rater_node_terms.serial(sens, spec, b, d, log_guess, log_noguess,
                                    np.array([2, 0], dtype=np.int64), *partial)
    for full, part in zip((table, sigma, slope, ratio), partial):
        np.testing.assert_array_equal(part[[0, 2]], full[[0, 2]])
        assert np.isnan(part[[1, 3]]).all()


def test_rater_derivatives_match_finite_differences(kernel_case):
    sens, spec, b, d, lam = kernel_case
    rng = np.random.default_rng(2)
    J, M = len(sens), len(b)
    W = rng.uniform(0, 3, (J, 2, 2 * M))
    W[1, :, :M] = 0.0  # terms of zero weight are skipped
    args = (b, d, np.log(lam), np.log1p(-lam))

    def run(s, p, kernel=kernels.rater_derivatives):
        table, sigma, slope, _ = _kernel_terms(s, p, *args)
        v, g, h = np.empty(J), np.empty((J, 2)), np.empty((J, 2))
        kernel(W, table, sigma, slope, d, v, g, h)
        return v, g, h

    v, g, h = run(sens, spec)
    table = _numpy_table(sens, spec, b, d, lam)
    np.testing.assert_allclose(v, (W * table).sum(axis=(1, 2)), rtol=1e-12)
    for part, ref in zip(run(sens, spec, kernels.rater_derivatives.serial), (v, g, h)):
        np.testing.assert_array_equal(part, ref)
    # the line search's value-only kernel: the same numbers, to the bit
    kernel_table = _kernel_terms(sens, spec, *args)[0]
    for kernel in (kernels.rater_values, kernels.rater_values.serial):
        alone = np.full(J, np.nan)
        kernel(W, kernel_table, np.arange(J), alone)
        np.testing.assert_array_equal(alone, v)
        alone[:] = np.nan
        kernel(W, kernel_table, np.array([3, 1]), alone)
        np.testing.assert_array_equal(alone[[1, 3]], v[[1, 3]])
        assert np.isnan(alone[[0, 2]]).all()
    eps = 1e-6
    for k, (ds, dp) in enumerate([(0, eps), (eps, 0)]):  # 0: spec, 1: sens
        vp, gp, _ = run(sens + ds, spec + dp)
        vm, gm, _ = run(sens - ds, spec - dp)
        np.testing.assert_allclose(g[:, k], (vp - vm) / (2 * eps), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(h[:, k], (gp[:, k] - gm[:, k]) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("guessing", [True, False])
def test_node_derivatives_match_finite_differences(kernel_case, guessing):
    sens, spec, b, d, lam = kernel_case
    rng = np.random.default_rng(4)
    J, M = len(sens), len(b)
    W = rng.uniform(0, 3, (J, 2, 2 * M))
    t = np.log(lam / (1 - lam))

    def logs(t_):
        log_guess = -np.logaddexp(0, -t_) if guessing else np.full(M, -np.inf)
        log_noguess = -np.logaddexp(0, t_) if guessing else np.zeros(M)
        return log_guess, log_noguess

    def run(b_, d_, t_, kernel=kernels.node_derivatives, weights=W):
        log_guess, log_noguess = logs(t_)
        table, sigma, slope, ratio = _kernel_terms(sens, spec, b_, d_, log_guess, log_noguess)
        value, grad, hess = np.empty(M), np.empty((3, M)), np.empty((6, M))
        kernel(weights, sens, spec, b_, d_, log_guess, table, sigma, slope, ratio, value, grad,
               hess)
        return value, grad, hess

    value, grad, hess = run(b, d, t)
    table = _numpy_table(sens, spec, b, d, lam if guessing else 0 * lam)
    per_node = (W * table).sum(axis=(0, 1))
    np.testing.assert_allclose(value, per_node[:M] + per_node[M:], rtol=1e-12)
    for part, ref in zip(run(b, d, t, kernels.node_derivatives.serial), (value, grad, hess)):
        np.testing.assert_array_equal(part, ref)
    # the line search's value-only kernel: the same numbers, to the bit
    kernel_table = _kernel_terms(sens, spec, b, d, *logs(t))[0]
    sparse = np.where(np.arange(2 * M) % 3 == 0, 0.0, W)
    for kernel in (kernels.node_values, kernels.node_values.serial):
        alone = np.empty(M)
        kernel(W, kernel_table, alone)
        np.testing.assert_array_equal(alone, value)
        # terms of zero weight are skipped
        kernel(sparse, kernel_table, alone)
        np.testing.assert_array_equal(alone, run(b, d, t, weights=sparse)[0])
        per_node = (sparse * table).sum(axis=(0, 1))
        np.testing.assert_allclose(alone, per_node[:M] + per_node[M:], rtol=1e-12)
    eps = 1e-6
    pair = {(0, 0): 0, (1, 1): 1, (2, 2): 2, (0, 1): 3, (0, 2): 4, (1, 2): 5}
    for k in range(3 if guessing else 2):
        shift = [np.zeros(M), np.zeros(M), np.zeros(M)]
        shift[k][:] = eps  # every node at once: nodes do not interact
        up = run(b + shift[0], d + shift[1], t + shift[2])
        down = run(b - shift[0], d - shift[1], t - shift[2])
        np.testing.assert_allclose(grad[k], (up[0] - down[0]) / (2 * eps), rtol=1e-5, atol=1e-6)
        for l in range(3 if guessing else 2):
            fd = (up[1][l] - down[1][l]) / (2 * eps)
            np.testing.assert_allclose(hess[pair[min(k, l), max(k, l)]], fd, rtol=1e-5, atol=1e-5)
    if not guessing:
        np.testing.assert_array_equal(grad[2], 0)
        np.testing.assert_array_equal(hess[[2, 4, 5]], 0)


def test_node_kernels_over_several_blocks():
    """More nodes than one parallel block: every block's nodes match numpy,
    and the threaded kernels equal the serial ones to the bit."""
    rng = np.random.default_rng(5)
    J, M = 7, 2 * kernels.NODE_BLOCK + 5
    sens, spec = rng.normal(1, 1, J), rng.normal(2, 1, J)
    b, d, lam = rng.normal(0, 1, M), np.exp(rng.normal(0, 0.3, M)), rng.uniform(0.05, 0.5, M)
    log_guess, log_noguess = np.log(lam), np.log1p(-lam)
    W = rng.uniform(0, 3, (J, 2, 2 * M))
    terms = _kernel_terms(sens, spec, b, d, log_guess, log_noguess)
    outputs = []
    for kernel in (kernels.node_derivatives, kernels.node_derivatives.serial):
        value, grad, hess = np.empty(M), np.empty((3, M)), np.empty((6, M))
        kernel(W, sens, spec, b, d, log_guess, *terms, value, grad, hess)
        outputs.append((value, grad, hess))
    for part, ref in zip(*outputs):
        np.testing.assert_array_equal(part, ref)
    per_node = (W * _numpy_table(sens, spec, b, d, lam)).sum(axis=(0, 1))
    np.testing.assert_allclose(outputs[0][0], per_node[:M] + per_node[M:], rtol=1e-12)
    alone = np.empty(M)
    kernels.node_values(W, terms[0], alone)
    np.testing.assert_array_equal(alone, outputs[0][0])


def test_hyper_derivatives_match_finite_differences(small):
    """The chain rule from node derivatives to (log σ_β, log σ_δ, μ_λ, log σ_λ)."""
    model = IRT3PL(max_iter=5, n_init=1, random_state=0)
    with quiet():
        model.fit(small.ratings)
    params = model._fitted_params()
    _, stats = model._local_step(model._encode(small.ratings, reset=False), params)
    W, sens, spec = stats["expected_counts"], params["alpha_sens"], params["alpha_spec"]
    names, grid = model._hyper_names(), model._grid()
    vec = np.array([0.3, -1.2, -1.0, 0.2])
    _, grad, hess = model._hyper_objective(vec, W, sens, spec, grid)
    eps = 1e-6
    for k in range(len(names)):
        step = np.zeros(len(vec))
        step[k] = eps
        up = model._hyper_objective(vec + step, W, sens, spec, grid)
        down = model._hyper_objective(vec - step, W, sens, spec, grid)
        assert grad[k] == pytest.approx((up[0] - down[0]) / (2 * eps), rel=1e-5, abs=1e-5)
        np.testing.assert_allclose(hess[k], (up[1] - down[1]) / (2 * eps), rtol=1e-5, atol=1e-4)


def test_patterns_are_exact_compression(caries):
    model = IRT3PL.from_tag("ab", max_iter=3, n_init=1)
    with quiet():
        model.fit(caries)
    data = model._encode(caries, reset=False)
    pat = _patterns(data)
    assert pat["n_patterns"] == 32  # caries' 3,869 items have 32 rating patterns
    assert pat["count"].sum() == caries.shape[0]
    # the compressed log likelihood of each item equals an uncompressed run's:
    # the item scored alone (a pattern of one item)
    item_ll = model.score_samples(caries)
    for p in range(pat["n_patterns"]):
        i = np.flatnonzero(pat["of_item"] == p)[0]
        alone = model.score_samples(caries[np.array([i])])[0]
        assert alone == pytest.approx(item_ll[i], rel=1e-12, abs=1e-12)
    assert item_ll.sum() == pytest.approx(
        sum(model.score_samples(caries[np.flatnonzero(pat["of_item"] == p)[:1]])[0]
            * pat["count"][p] for p in range(pat["n_patterns"])), rel=1e-12)



@pytest.mark.parametrize("seed", range(40))
def test_group_sequences_match_a_scan_over_the_items(seed):
    # the reference: one pass over the items, a new group at each sequence
    # not seen before (empty items form one group too); a few distinct
    # codes below 2, 5, 2^9, 2^21 or 2^41, so that several codes share a
    # packed sort key (63 // bits of them), or one does, and sequences repeat
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, rng.integers(1, 13), rng.integers(0, 80))
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    top = int(rng.choice([2, 5, 2**9, 2**21, 2**41]))
    values = rng.integers(0, top, rng.integers(1, 5))
    code = rng.choice(values, ptr[-1]).astype(np.int64)
    seen, of_item, first = {}, [], []
    for i in range(len(lengths)):
        key = tuple(code[ptr[i]:ptr[i + 1]])
        if key not in seen:
            seen[key] = len(first)
            first.append(i)
        of_item.append(seen[key])
    got_of_item, got_first = _group_sequences(code, ptr)
    np.testing.assert_array_equal(got_of_item, of_item)
    np.testing.assert_array_equal(got_first, first)


# -- quadrature -------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny():
    """Four items with 2-3 ratings each, for brute-force integration."""
    item = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3, 3])
    rater = np.array([0, 1, 2, 0, 2, 0, 1, 2, 1, 2])
    label = np.array([1, 1, 0, 0, 0, 1, 0, 1, 1, 1])
    return Ratings(item, rater, label)


def _brute_force(model, ratings, tag):
    """Per-item marginal likelihood by adaptive numerical integration (scipy)."""
    sens, spec, pi = model.alpha_sens_, model.alpha_spec_, model.class_prior_[1]
    prior = model.item_prior_
    dims = model._dims()
    out = []
    for i in range(ratings.shape[0]):
        sel = ratings.item == i
        raters, labels = ratings.rater[sel], ratings.label[sel]

        def like(*u):
            eff = dict(zip(dims, u))
            b = prior.get("difficulty_scale", 0) * eff.get("difficulty", 0.0)
            dd = np.exp(prior.get("discrimination_scale", 0) * eff.get("discrimination", 0.0))
            lam = (expit(prior["guessing_mean"] + prior["guessing_scale"] * eff["guessing"])
                   if "guessing" in eff else 0.0)
            total = 0.0
            for z, alpha, weight in ((1, sens, pi), (0, spec, 1 - pi)):
                term = weight
                for j, y in zip(raters, labels):
                    correct = lam + (1 - lam) * expit(dd * (alpha[j] - b))
                    term = term * (correct if y == z else 1 - correct)
                total = total + term
            density = 1.0
            for x in u:
                density = density * norm.pdf(x)
            return total * density

        opts = {"epsabs": 0, "epsrel": 1e-11, "limit": 200}
        if len(dims) == 1:
            value = integrate.quad(like, -12, 12, **opts)[0]
        elif len(dims) == 2:
            # Nested adaptive quadrature takes minutes in Python: a 400-point
            # Gauss–Legendre product rule on [-10, 10]^2 instead (independent
            # of the Gauss–Hermite grid under test).
            x, w = np.polynomial.legendre.leggauss(400)
            x, w = 10 * x, 10 * w
            u0, u1 = np.meshgrid(x, x, indexing="ij")
            value = np.sum(np.outer(w, w) * like(u0, u1))
        else:
            # Likewise a 160-point product rule on [-8, 8]^3.
            x, w = np.polynomial.legendre.leggauss(160)
            x, w = 8 * x, 8 * w
            u0, u1 = np.meshgrid(x, x, indexing="ij")
            value = 0.0
            for xk, wk in zip(x, w):
                value += wk * np.sum(np.outer(w, w) * like(u0, u1, xk))
        out.append(np.log(value))
    return np.array(out)


@pytest.mark.parametrize("tag,n_fine", [("ab", 60), ("a", 40), ("full", 24)])
def test_quadrature_matches_brute_force_integration(tiny, tag, n_fine):
    model = IRT3PL.from_tag(tag, max_iter=5, n_init=1)
    with quiet():  # max_iter=5 stops early; parameters are what they are
        model.fit(tiny)
    reference = _brute_force(model, tiny, tag)
    coarse = model.set_params(n_quadrature=3).score_samples(tiny)
    fine = model.set_params(n_quadrature=n_fine).score_samples(tiny)
    np.testing.assert_allclose(fine, reference, rtol=1e-6)
    assert np.abs(fine - reference).max() < np.abs(coarse - reference).max()


def test_marginal_likelihood_converges_with_nodes(caries):
    model = IRT3PL(max_iter=10, n_init=1)
    with quiet():
        model.fit(caries)
    totals = {n: model.set_params(n_quadrature=n).score_samples(caries).sum()
              for n in (5, 9, 13, 17, 25)}
    errors = [abs(totals[n] - totals[25]) for n in (5, 9, 13, 17)]
    assert all(a > b for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 1e-6 * abs(totals[25])


def test_default_grid_resolves_a_wide_difficulty_population():
    """The default grid has 21 difficulty nodes (5 discrimination, 7 guessing):
    with a wide difficulty population an item's likelihood in β is narrower
    than the spacing of 9 uniform nodes, which biased the fit (doc/irt.rst)."""
    data = make_irt(n_items=2000, n_raters=8, ratings_per_item=8, random_state=0, **RECOVERY)
    model = IRT3PL(n_init=1)
    with quiet():
        model.fit(data.ratings)
    reference = model.set_params(n_quadrature=31).score_samples(data.ratings).sum()
    default = model.set_params(n_quadrature=None).score_samples(data.ratings).sum()
    uniform9 = model.set_params(n_quadrature=9).score_samples(data.ratings).sum()
    assert abs(default - reference) < 1e-5 * abs(reference)
    assert abs(default - reference) < 0.1 * abs(uniform9 - reference)


# -- fits on caries ---------------------------------------------------------------
def test_abc_agrees_with_dawid_skene_on_caries(caries, caries_fits):
    ds = DawidSkene().fit(caries)
    irt = caries_fits["abc"]
    r = np.corrcoef(ds.predict_proba(caries)[:, 1], irt.predict_proba(caries)[:, 1])[0, 1]
    assert r > 0.99
    np.testing.assert_allclose(irt.class_prior_, ds.class_prior_, atol=0.01)


def test_cooperative_constraint_holds_in_every_fit(caries_fits):
    for tag, model in caries_fits.items():
        if model._rater_mode() == "none":  # abde: no rater parameters (α = 0, π = 1)
            assert np.all(model.alpha_sens_ == 0) and model.class_prior_[1] == 1
            continue
        assert np.all(model.alpha_sens_ + model.alpha_spec_ > 0), tag
        if not model.sens_spec:
            np.testing.assert_array_equal(model.alpha_sens_, model.alpha_spec_)
        if not model.rater_effects:
            assert np.ptp(model.alpha_sens_) == 0 and np.ptp(model.alpha_spec_) == 0


def test_objective_never_decreases(caries_fits):
    for tag, model in caries_fits.items():
        history = model.objective_history_
        assert len(history) >= 2
        assert np.all(np.diff(history) >= -1e-12 * np.abs(history[:-1])), tag


def test_objective_never_decreases_on_multi_rater_data(small):
    with quiet():
        model = IRT3PL(n_init=1, max_iter=40, tol=0, random_state=0).fit(small.ratings)
    assert np.all(np.diff(model.objective_history_) >= -1e-12 * np.abs(model.objective_history_[:-1]))


def test_reductions_reach_their_item_effects(caries_fits, caries):
    n = caries.shape[0]
    full = caries_fits["full"]
    assert full.item_difficulty_.shape == (n,)
    assert set(full.item_prior_) == {"difficulty_scale", "discrimination_scale",
                                     "guessing_mean", "guessing_scale"}
    abc = caries_fits["abc"]
    assert abc.item_prior_ == {}
    np.testing.assert_array_equal(abc.item_difficulty_, 0)
    np.testing.assert_array_equal(abc.item_discrimination_, 1)
    np.testing.assert_array_equal(abc.item_guessing_, 0)
    assert np.all((full.item_guessing_ > 0) & (full.item_guessing_ < 1))


def test_paper_priors_give_the_papers_prevalence(caries):
    """Held at Carpenter's priors, π matches the paper's posterior mean (Stan)."""
    seed_pi = {"abc": 0.196, "ab": 0.206, "a": 0.201, "d": 0.059, "bd": 0.059}
    for tag, pi in seed_pi.items():
        model = IRT3PL.from_tag(tag, learn_item_prior=False, random_state=0).fit(caries)
        assert model.class_prior_[1] == pytest.approx(pi, abs=0.012), tag
        assert model.item_prior_ == {
            k: v for k, v in skcrowd._irt.PAPER_ITEM_PRIOR.items() if k in model.item_prior_
        }


# -- recovery -----------------------------------------------------------------------
# 10,000 items, each rated by the same 8 raters, from the full model with real
# guessing (mean λ ≈ 0.12).  The raters' abilities are spread evenly rather than
# drawn, so that the result does not hinge on where eight random draws land
# (with drawn abilities the difficulty a design can reveal varies from 0.73 to
# 0.84 across seeds, see doc/irt.rst).  Difficulty must be wide against the
# rating slope for eight binary ratings to rank items at all: with make_irt's
# defaults even the true parameters rank difficulty at only 0.55.
RECOVERY_ABILITIES = np.c_[np.linspace(-3, 7, 8), np.linspace(-2, 8, 8)[[5, 7, 6, 3, 1, 4, 0, 2]]]
RECOVERY = dict(difficulty_scale=3.0, guessing_mean=-2.0, guessing_scale=0.5,
                rater_abilities=RECOVERY_ABILITIES)


@pytest.fixture(scope="module", params=[0, 1])
def recovery(request):
    """The full model with its defaults on 10,000 items x 8 raters."""
    data = make_irt(n_items=10_000, n_raters=8, ratings_per_item=8,
                    random_state=request.param, **RECOVERY)
    model = IRT3PL(random_state=0).fit(data.ratings)
    return data, model


def test_recovers_simulated_parameters(recovery):
    data, model = recovery
    assert model.converged_
    assert np.abs(model.sensitivity_ - data.sensitivity).max() < 0.05
    assert np.abs(model.specificity_ - data.specificity).max() < 0.05
    assert abs(model.class_prior_[1] - data.true_labels.mean()) < 0.02


def test_recovers_item_difficulty_ranking(recovery):
    """Rank correlation above the issue's 0.8, and as good as the true
    parameters allow: eight binary ratings bound how well one item's
    difficulty can be known, so the posterior means computed with the TRUE
    parameters (the oracle) are the ceiling."""
    data, model = recovery
    truth = {"alpha_sens": data.alpha_sens, "alpha_spec": data.alpha_spec,
             "prior": data.prevalence,
             "hyper": {"difficulty_scale": 3.0, "discrimination_scale": 0.25,
                       "guessing_mean": -2.0, "guessing_scale": 0.5}}
    oracle_items, _ = model._local_step(model._encode(data.ratings, reset=False), truth)
    oracle = spearmanr(oracle_items["difficulty"], data.difficulty).correlation
    fitted = spearmanr(model.item_difficulty_, data.difficulty).correlation
    assert fitted > 0.8
    assert fitted > oracle - 0.01


def test_recovers_dawid_skene_reduction():
    data = make_irt(n_items=3000, n_raters=10, ratings_per_item=5, tag="abc", random_state=1)
    model = IRT3PL.from_tag("abc", random_state=0).fit(data.ratings)
    assert np.abs(model.sensitivity_ - data.sensitivity).max() < 0.06
    assert np.abs(model.specificity_ - data.specificity).max() < 0.06
    assert abs(model.class_prior_[1] - data.true_labels.mean()) < 0.02


# -- API and binary versions of the common checks ---------------------------------
def test_non_binary_ratings_raise_a_clear_error():
    X = np.array([[0, 1, 2], [1, 1, 0]])
    with pytest.raises(ValueError, match="binary ratings"):
        IRT3PL().fit(X)
    with pytest.raises(ValueError, match="at least 2 classes"):
        IRT3PL().fit(np.ones((3, 2)))
    model = IRT3PL(classes=[0, 1], max_iter=5, n_init=1).fit(np.ones((3, 2)))
    assert model.predict_proba(np.ones((3, 2))).shape == (3, 2)
    with pytest.raises(ValueError, match="not one of the classes"):
        model.predict(np.array([[0, 2]]))


def test_binary_common_properties(small):
    X = small.X
    X_before = X.copy()
    model = IRT3PL.from_tag("ab", max_iter=30, random_state=0)
    with pytest.raises(NotFittedError):
        model.predict(X)
    params = model.get_params()
    assert model.fit(X) is model  # fit returns self
    assert model.get_params() == params  # parameters untouched
    np.testing.assert_array_equal(X, X_before)  # input untouched
    assert model.n_features_in_ == X.shape[1]
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :-1])
    state = pickle.dumps(model.__dict__)
    proba = model.predict_proba(X)
    model.predict(X)
    model.score(X)
    assert pickle.dumps(model.__dict__) == state  # predict changes no fitted value
    # fit_predict / fit_transform are the final local step of the fit
    np.testing.assert_array_equal(clone(model).fit_predict(X), model.predict(X))
    np.testing.assert_allclose(clone(model).fit_transform(X), proba)
    # idempotent, pickle round trip
    np.testing.assert_allclose(clone(model).fit(X).predict_proba(X), proba)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(model)).predict_proba(X), proba)
    # subset and order invariance of the item-level inference
    idx = np.random.default_rng(0).permutation(len(X))[:50]
    np.testing.assert_allclose(model.predict_proba(X[idx]), proba[idx], rtol=1e-12)
    np.testing.assert_allclose(model.score_samples(X[idx]), model.score_samples(X)[idx], rtol=1e-12)
    # dtypes, memory layout, read-only input
    for variant in (X.astype(np.float32), np.asfortranarray(X)):
        np.testing.assert_allclose(clone(model).fit(variant).predict_proba(variant), proba)
    read_only = X.copy()
    read_only.flags.writeable = False
    np.testing.assert_allclose(model.predict_proba(read_only), proba)
    strings = np.where(np.isnan(X), None, np.where(X == 1, "yes", "no")).astype(object)
    fitted = clone(model).fit(strings)
    assert list(fitted.classes_) == ["no", "yes"]
    np.testing.assert_allclose(fitted.predict_proba(strings), proba)


def test_one_item_and_one_rater(small):
    model = IRT3PL.from_tag("ab", max_iter=5, n_init=1)
    with quiet():
        model.fit(np.array([[0.0, 1.0, 1.0]]))
    assert model.predict_proba(np.array([[0.0, 1.0, 1.0]])).shape == (1, 2)
    with quiet():
        model.fit(np.array([[0.0], [1.0], [1.0]]))
    assert np.all(np.isfinite(model.score_samples(np.array([[0.0], [1.0]]))))


def test_empty_item_gets_prior_and_zero_score(small):
    model = IRT3PL.from_tag("a", max_iter=20, random_state=0)
    with quiet():
        model.fit(small.ratings)
    X = small.X[:3].copy()
    X[1] = np.nan
    np.testing.assert_allclose(model.predict_proba(X)[1], model.class_prior_)
    assert model.score_samples(X)[1] == 0.0


@pytest.fixture
def compiled():
    """The compiled kernels whatever the size: the tests below are about
    their threads (small fits run the numpy twins)."""
    with kernel_path("jit"):
        yield


def test_results_do_not_depend_on_n_jobs(small, monkeypatch, compiled):
    import threading

    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here: the threaded kernel cannot run")
    # The small set is below the threading threshold: lower it, and count the
    # threaded kernel's calls, so that n_jobs=2 really runs it; with two
    # restarts they run in two threads (serial kernels while both run).
    monkeypatch.setattr(skcrowd._irt, "PARALLEL_WORK", -1)
    threaded = kernels.pattern_posteriors
    calls, threads = [], set()

    def counting(*args):
        calls.append(numba.get_num_threads())
        return threaded(*args)

    local_step = IRT3PL._local_step

    def recording(self, data, params):
        threads.add(threading.get_ident())
        return local_step(self, data, params)

    monkeypatch.setattr(kernels, "pattern_posteriors", counting)
    monkeypatch.setattr(IRT3PL, "_local_step", recording)
    for n_init in (1, 2):
        a = IRT3PL(max_iter=15, n_init=n_init, n_jobs=1, random_state=0)
        b = IRT3PL(max_iter=15, n_init=n_init, n_jobs=2, random_state=0)
        with quiet():
            a.fit(small.ratings)
            threads.clear()
            b.fit(small.ratings)
        if n_init == 1:
            assert 2 in calls, "the n_jobs=2 fit must run the threaded local step on 2 threads"
        else:
            assert len(threads) >= 2, "two restarts with n_jobs=2 run in two threads"
        np.testing.assert_array_equal(a.objective_history_, b.objective_history_)
        np.testing.assert_array_equal(a._restart_histories[-1], b._restart_histories[-1])
        np.testing.assert_array_equal(a.predict_proba(small.ratings),
                                      b.predict_proba(small.ratings))


def test_parallel_and_serial_local_steps_agree(small, monkeypatch, compiled):
    model = IRT3PL(max_iter=5, n_init=1, random_state=0)
    with quiet():
        model.fit(small.ratings)
    serial = model.score_samples(small.ratings)
    monkeypatch.setattr(skcrowd._irt, "PARALLEL_WORK", -1)
    np.testing.assert_array_equal(model.score_samples(small.ratings), serial)


def test_sample_keeps_the_design_and_draws_from_the_model(small):
    model = IRT3PL.from_tag("ab", random_state=0).fit(small.ratings)
    sim = model.sample(small.ratings, random_state=0)
    np.testing.assert_array_equal(sim.item, small.ratings.item)
    np.testing.assert_array_equal(sim.rater, small.ratings.rater)
    assert set(np.unique(sim.label)) <= {0, 1}
    dense = model.sample(small.X, random_state=1)
    np.testing.assert_array_equal(np.isnan(dense), np.isnan(small.X))
    # the positive rate of replicates matches the data's on average
    rates = [model.sample(small.ratings, random_state=s).label.mean() for s in range(50)]
    assert abs(np.mean(rates) - small.ratings.label.mean()) < 0.02


def test_grid_search_over_the_lattice(small):
    grid = GridSearchCV(IRT3PL(max_iter=30, n_init=1, random_state=0),
                        lattice_grid(["abc", "ab", "abcd"]), cv=KFold(3))
    with quiet():
        grid.fit(small.ratings)
    scores = grid.cv_results_["mean_test_score"]
    assert len(grid.cv_results_["params"]) == 3
    assert np.all(np.isfinite(scores))
    # three different models score differently, and the refit one is the best
    assert len(set(scores.round(12))) == 3
    assert grid.best_estimator_.tag == IRT3PL(**grid.cv_results_["params"][np.argmax(scores)]).tag


def test_make_irt_follows_its_tag():
    data = make_irt(n_items=50, n_raters=4, ratings_per_item=3, tag="abd", random_state=0)
    np.testing.assert_array_equal(data.alpha_sens, data.alpha_spec)
    np.testing.assert_array_equal(data.guessing, 0)
    np.testing.assert_array_equal(data.discrimination, 1)
    assert np.std(data.difficulty) > 0
    data = make_irt(n_items=50, n_raters=4, ratings_per_item=3, tag="abce", random_state=0)
    assert np.ptp(data.alpha_sens) == 0 and np.all(data.difficulty == 0)
    assert data.ratings.shape == (50, 4)
    assert LATTICE_TAGS[-1] == "full"
    sparse = make_irt(n_items=50, n_raters=40, ratings_per_item=3, random_state=0)
    assert sparse.ratings.n_ratings == 150
    assert np.all(sparse.alpha_sens + sparse.alpha_spec > 0)


def test_make_irt_takes_given_rater_abilities():
    given = np.array([[1.0, 2.0], [-0.5, 3.0], [4.0, 0.0]])
    data = make_irt(n_items=20, n_raters=3, ratings_per_item=3, rater_abilities=given,
                    random_state=0)
    np.testing.assert_array_equal(data.alpha_sens, given[:, 0])
    np.testing.assert_array_equal(data.alpha_spec, given[:, 1])
    with pytest.raises(ValueError, match="shape"):
        make_irt(n_items=20, n_raters=4, rater_abilities=given)
    with pytest.raises(ValueError, match="spam line"):
        make_irt(n_items=20, n_raters=3, rater_abilities=[[1, 2], [-3, 1], [0, 1]])


def test_starts_seed_and_dawid_skene(caries):
    seed = IRT3PL.from_tag("ab", n_init=1, max_iter=0).fit(caries)
    np.testing.assert_array_equal(seed.alpha_sens_, 1.0)
    np.testing.assert_array_equal(seed.alpha_spec_, 2.0)
    assert seed.item_prior_ == {"difficulty_scale": 1.0}
    ds = DawidSkene(max_iter=50).fit(caries)
    warm = IRT3PL.from_tag("ab", init="dawid_skene", n_init=1, max_iter=0).fit(caries)
    np.testing.assert_allclose(expit(warm.alpha_sens_), np.clip(ds.confusion_[:, 1, 1], 0.02, 0.98))
    np.testing.assert_allclose(expit(warm.alpha_spec_), np.clip(ds.confusion_[:, 0, 0], 0.02, 0.98))
    with pytest.raises(ValueError, match="'init' parameter of IRT3PL must be"):
        IRT3PL(init="nope").fit(caries)


# -- output conventions ------------------------------------------------------------------------
def test_predict_proba_columns_follow_classes(small):
    """Column 1 is P(z = 1): it grows with the share of positive ratings, and
    an item every rater calls positive is positive (a column swap fails)."""
    with quiet():
        model = IRT3PL.from_tag("ab", n_init=1, random_state=0).fit(small.ratings)
    np.testing.assert_array_equal(model.classes_, [0, 1])
    proba = model.predict_proba(small.ratings)
    share = np.nanmean(small.X, axis=1)
    assert spearmanr(proba[:, 1], share)[0] > 0.8
    X = np.full((2, small.X.shape[1]), np.nan)
    X[0, :5], X[1, :5] = 1, 0
    p = model.predict_proba(X)
    assert p[0, 1] > 0.9 and p[1, 0] > 0.9
    np.testing.assert_array_equal(model.predict(X), [1, 0])


def test_objective_never_decreases_for_every_restart_and_fixed_item_prior(small):
    for kwargs in ({"n_init": 3}, {"n_init": 2, "learn_item_prior": False}):
        model = IRT3PL(max_iter=25, tol=0, random_state=0, **kwargs)
        rng = np.random.RandomState(0)
        data = model._encode(small.ratings, reset=True)
        for restart in range(model.n_init):
            with quiet():
                history = model._run(data, model._init_params(data, rng, restart))[2]
            assert len(history) >= 10  # kept states (a rejected extrapolation is not one)
            assert np.all(np.isfinite(history)), (kwargs, restart)
            assert np.all(np.diff(history) >= -1e-12 * np.abs(history[:-1])), (kwargs, restart)


def test_pattern_node_cdf_matches_numpy():
    rng = np.random.default_rng(0)
    n_raters, M = 4, 6
    table = np.log(rng.dirichlet(np.ones(2), size=(n_raters, 2 * M)).transpose(0, 2, 1))
    log_prior = np.log(rng.dirichlet(np.ones(2 * M)))
    pattern_ptr = np.array([0, 0, 2, 5], dtype=np.int64)
    rater = np.array([0, 3, 1, 2, 3], dtype=np.int32)
    label = np.array([1, 0, 0, 1, 1], dtype=np.int32)
    cdf = np.empty((3, M))
    kernels.pattern_node_cdf(pattern_ptr, rater, label, log_prior, table, cdf)
    for p in range(3):
        post = log_prior.copy()
        for n in range(pattern_ptr[p], pattern_ptr[p + 1]):
            post += table[rater[n], label[n]]
        post = np.exp(post - logsumexp(post))
        np.testing.assert_allclose(cdf[p], np.cumsum(post[:M] + post[M:]), rtol=1e-12)
    assert cdf[0, -1] == pytest.approx(1.0)


# -- the monitored objective, computed independently ---------------------------
def _irt_log_posterior(model, ratings, counts):
    """Per item: Σ_i log Σ_z π_z Σ_m w_m Π_n P(y_n | z, node m) on the tensor
    Gauss–Hermite rule (``counts`` nodes per active dimension, scipy's
    probabilists' rule, weights normalised), P(correct) = λ + (1 - λ)
    σ(δ (α^z - β)) with β = σ_β u, log δ = σ_δ u, logit λ = μ_λ + σ_λ u; plus
    the log priors up to constants (Carpenter's priors): α^sens ~ N(1, 2),
    α^spec ~ N(2, 2) (one accuracy: N(1, 2); one group without rater
    effects), π ~ Beta(2, 2), and with learn_item_prior a N(paper's value, 1)
    hyperprior on each log scale and on the guessing mean."""
    prior = model.item_prior_
    dims = model._dims()
    rules = [roots_hermitenorm(n) for n in counts]
    mesh = np.meshgrid(*[x for x, _ in rules], indexing="ij")
    u = dict(zip(dims, (g.ravel() for g in mesh)))
    weight = (np.prod(np.meshgrid(*[w / w.sum() for _, w in rules], indexing="ij"), axis=0)
              .ravel() if rules else np.ones(1))
    b = prior.get("difficulty_scale", 0.0) * u.get("difficulty", 0.0)
    d = np.exp(prior.get("discrimination_scale", 0.0) * u.get("discrimination", 0.0))
    lam = (expit(prior["guessing_mean"] + prior["guessing_scale"] * u["guessing"])
           if "guessing" in u else 0.0)
    pi = model.class_prior_[1]
    total = 0.0
    for i in range(ratings.shape[0]):
        sel = ratings.item == i
        like = 0.0
        for z, alpha, p_z in ((1, model.alpha_sens_, pi), (0, model.alpha_spec_, 1 - pi)):
            term = p_z * weight
            for j, y in zip(ratings.rater[sel], ratings.label[sel]):
                correct = lam + (1 - lam) * expit(d * (alpha[j] - b))
                term = term * (correct if y == z else 1 - correct)
            like = like + np.sum(term)
        total += np.log(like)
    sens, spec = model.alpha_sens_, model.alpha_spec_
    if not model.rater_effects:
        sens, spec = sens[:1], spec[:1]
    if model.sens_spec:
        total += np.sum(-0.5 * ((sens - 1) / 2) ** 2 - 0.5 * ((spec - 2) / 2) ** 2)
    else:
        assert np.array_equal(sens, spec)
        total += np.sum(-0.5 * ((sens - 1) / 2) ** 2)
    total += np.log(pi) + np.log(1 - pi)
    if model.learn_item_prior:
        seed = {"difficulty_scale": np.log(1.0), "discrimination_scale": np.log(0.25),
                "guessing_mean": 0.0, "guessing_scale": 0.5 * np.log(2 * (np.pi**2 / 6 - 1))}
        for name, value in prior.items():
            x = value if name == "guessing_mean" else np.log(value)
            total += -0.5 * (x - seed[name]) ** 2
    return total / ratings.shape[0]


@pytest.mark.parametrize("tag,learn,n_quadrature", [
    ("full", True, 5), ("full", False, 4), ("ab", True, None), ("a", True, 7),
    ("d", True, 5), ("abcde", True, None), ("ae", True, 9),
])
def test_objective_is_the_quadrature_log_posterior(small, tag, learn, n_quadrature):
    """lower_bound_ (and the first and a middle entry of the history) is the
    quadrature marginal log posterior per item computed in numpy from the
    fitted abilities, π and item population."""
    R = small.ratings[:60]
    model = IRT3PL.from_tag(tag, learn_item_prior=learn, n_quadrature=n_quadrature,
                            n_init=1, max_iter=300, tol=1e-9)
    with quiet():
        model.fit(R)
    counts = ([n_quadrature] * len(model._dims()) if n_quadrature is not None
              else [{"difficulty": 21, "discrimination": 5, "guessing": 7}[d]
                    for d in model._dims()])
    assert model.lower_bound_ == pytest.approx(_irt_log_posterior(model, R, counts), rel=1e-10)
    for max_iter in (0, 2):
        early = IRT3PL.from_tag(tag, learn_item_prior=learn, n_quadrature=n_quadrature,
                                n_init=1, max_iter=max_iter, tol=0)
        with quiet():
            early.fit(R)
        assert early.lower_bound_ == pytest.approx(
            _irt_log_posterior(early, R, counts), rel=1e-10), max_iter
