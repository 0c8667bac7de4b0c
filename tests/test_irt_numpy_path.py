"""IRT3PL's numpy twins: a small fit runs them (and nothing compiled), they
give the compiled kernels' fit to 1e-10, and a fit above the limit runs the
compiled kernels."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import skcrowd._irt
from skcrowd import IRT3PL
from skcrowd._irt import _patterns
from skcrowd._kernels import _irt as kernels
from skcrowd._kernels._config import kernel_path
from skcrowd._ratings import encode
from skcrowd.datasets import load_caries, load_rte, make_irt

TWINNED = ("rating_log_table", "rater_node_terms", "pattern_posteriors", "sum_chunks",
           "pattern_node_cdf", "rater_derivatives", "rater_values", "node_values",
           "node_derivatives")


@pytest.fixture(scope="module")
def rte():
    return load_rte().ratings


@pytest.fixture(scope="module")
def caries():
    return load_caries().ratings


@pytest.fixture(scope="module")
def synthetic():
    return make_irt(n_items=250, n_raters=7, ratings_per_item=4, guessing_mean=-1.0,
                    random_state=3)


def _fit_both(make, X, **fit_params):
    fits = {}
    for path in ("numpy", "jit"):
        with kernel_path(path), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X, **fit_params)
            fits[path] = (model, model.predict_proba(X), model.score(X))
    return fits["numpy"], fits["jit"]


def _assert_same(numpy_fit, jit_fit):
    (a, proba_a, score_a), (b, proba_b, score_b) = numpy_fit, jit_fit
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(proba_a, proba_b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(score_a, score_b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a.objective_history_, b.objective_history_, rtol=1e-10,
                               atol=1e-10)
    for name in ("alpha_sens_", "alpha_spec_", "class_prior_", "item_difficulty_",
                 "item_discrimination_", "item_guessing_"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-10,
                                   err_msg=name)
    assert a.item_prior_.keys() == b.item_prior_.keys()
    for name in a.item_prior_:
        np.testing.assert_allclose(a.item_prior_[name], b.item_prior_[name], rtol=1e-10,
                                   err_msg=name)


@pytest.mark.parametrize("tag", ["full", "d", "abc"])
def test_same_fit_on_both_paths_on_caries(caries, tag):
    _assert_same(*_fit_both(lambda: IRT3PL.from_tag(tag, random_state=0), caries))


def test_same_default_fit_on_both_paths_on_rte(rte):
    _assert_same(*_fit_both(lambda: IRT3PL(random_state=0), rte))


# every reduction once: a (no guessing), b, c, d (one accuracy), e (shared
# raters), abde (no rater parameters), and the item prior held fixed
@pytest.mark.parametrize("tag", ["a", "b", "c", "e", "ad", "abde", "bcd"])
def test_same_fit_on_both_paths_on_the_lattice(synthetic, tag):
    _assert_same(*_fit_both(lambda: IRT3PL.from_tag(tag, n_init=3, random_state=0),
                            synthetic.ratings))


def test_same_fit_with_gold_and_a_fixed_item_prior(synthetic):
    gold = np.where(np.arange(len(synthetic.true_labels)) % 4 == 0, synthetic.true_labels,
                    np.nan)
    _assert_same(*_fit_both(lambda: IRT3PL(learn_item_prior=False, n_quadrature=6,
                                           random_state=0), synthetic.ratings, y=gold))


def test_same_warm_start_on_both_paths(synthetic):
    def make():
        model = IRT3PL.from_tag("d", warm_start=True, max_iter=5, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(synthetic.ratings)
    _assert_same(*_fit_both(make, synthetic.ratings))


def test_sample_is_the_same_on_both_paths(synthetic):
    model = IRT3PL(random_state=0).fit(synthetic.ratings)
    with kernel_path("numpy"):
        a = model.sample(synthetic.ratings, random_state=1)
    with kernel_path("jit"):
        b = model.sample(synthetic.ratings, random_state=1)
    np.testing.assert_array_equal(a.label, b.label)


class _Refused:
    """A kernel that may not be compiled or run: only its numpy twin."""

    def __init__(self, kernel):
        self.numpy_twin = kernel.numpy_twin

    def __call__(self, *args):
        raise AssertionError("a small fit ran a compiled kernel")

    def pick(self, size):
        return self

    serial = property(lambda self: self)


def test_small_fits_run_no_compiled_kernel(rte, caries, monkeypatch):
    """What a first fit in a fresh process would compile: nothing, for the
    shipped sets (the default model, fit, predict_proba, score, sample)."""
    for name in TWINNED:
        monkeypatch.setattr(kernels, name, _Refused(getattr(kernels, name)))
    monkeypatch.setattr(kernels, "pattern_posteriors_serial", kernels.pattern_posteriors)
    for X in (rte, caries):
        model = IRT3PL(random_state=0).fit(X)
        assert np.isfinite(model.score(X))
        assert np.allclose(model.predict_proba(X).sum(axis=1), 1.0)
        model.sample(X, random_state=0)


def test_limit_chooses_the_path(caries, monkeypatch):
    model = IRT3PL()
    data = encode(model, caries, reset=True)
    work = len(_patterns(data)["rater"]) * 2 * len(model._grid()[1])
    assert model._numpy_path(data)
    monkeypatch.setattr(skcrowd._irt, "NUMPY_MAX_WORK", work)
    assert not model._numpy_path(data)  # the limit is exclusive
    with kernel_path("numpy"):
        assert model._numpy_path(data)
    # above the limit a fit is the compiled one, bit for bit
    default = IRT3PL(random_state=0).fit(caries)
    with kernel_path("jit"):
        compiled = IRT3PL(random_state=0).fit(caries)
    np.testing.assert_array_equal(default.objective_history_, compiled.objective_history_)
    np.testing.assert_array_equal(default.alpha_sens_, compiled.alpha_sens_)


@pytest.fixture(scope="module")
def terms_case():
    rng = np.random.default_rng(0)
    G, n_b, n_d, n_t = 6, 5, 3, 4
    b = np.repeat(rng.normal(0, 2, n_b * n_d), n_t)  # runs of guessing nodes, as the grid
    d = np.repeat(np.exp(rng.normal(0, 0.5, n_b * n_d)), n_t)
    t = np.tile(rng.normal(-1, 2, n_t), n_b * n_d)
    sens, spec = rng.normal(1, 2, G), rng.normal(2, 2, G)
    W = rng.random((G, 2, 2 * len(b))) * 5
    W[1, :, :7] = 0.0  # terms of zero weight
    return sens, spec, b, d, t, W


def _terms(kernel, case, guessing, groups):
    sens, spec, b, d, t, _ = case
    G, M = len(sens), len(b)
    log_guess = -np.logaddexp(0, -t) if guessing else np.full(M, -np.inf)
    log_noguess = -np.logaddexp(0, t) if guessing else np.zeros(M)
    out = [np.full((G, 2, 2 * M), 7.0)] + [np.full((G, 2 * M), 7.0) for _ in range(3)]
    kernel(sens, spec, b, d, log_guess, log_noguess, groups, *out)
    return (b, d, log_guess), out


@pytest.mark.parametrize("guessing", [True, False])
@pytest.mark.parametrize("groups", [None, [4, 1]])
def test_global_step_twins_match_the_kernels(terms_case, guessing, groups):
    sens, spec, b, d, t, W = terms_case
    groups = np.arange(len(sens)) if groups is None else np.array(groups, dtype=np.int64)
    nodes, jit = _terms(kernels.rater_node_terms.serial, terms_case, guessing, groups)
    _, twin = _terms(kernels.rater_node_terms.numpy_twin, terms_case, guessing, groups)
    for a, c in zip(twin, jit):  # the rows not listed are left as they were
        np.testing.assert_allclose(a, c, rtol=1e-13, atol=1e-13)
    table, sigma, slope, ratio = jit
    G, M = len(sens), len(b)
    outputs = {}
    for side in ("numpy", "jit"):
        pick = (lambda k: k.numpy_twin) if side == "numpy" else (lambda k: k.serial)
        value, grad, hess = np.empty(G), np.empty((G, 2)), np.empty((G, 2))
        pick(kernels.rater_derivatives)(W, table, sigma, slope, d, value, grad, hess)
        some = np.full(G, 7.0)
        pick(kernels.rater_values)(W, table, groups, some)
        node_value = np.empty(M)
        pick(kernels.node_values)(W, table, node_value)
        nv, ng, nh = np.empty(M), np.empty((3, M)), np.empty((6, M))
        pick(kernels.node_derivatives)(W, sens, spec, b, d, nodes[2], table, sigma, slope, ratio,
                                       nv, ng, nh)
        outputs[side] = (value, grad, hess, some, node_value, nv, ng, nh)
    for a, c in zip(outputs["numpy"], outputs["jit"]):
        scale = np.abs(c).max()
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12 * scale)


def test_rating_log_table_twin_where_both_parts_underflow():
    """P(correct) = λ + (1-λ)σ(x) below 1e-300 takes the kernel's log-space
    branch: the same values, finite."""
    b = np.array([0.0, 0.0])
    d = np.array([1.0, 1.0])
    log_guess = np.array([-800.0, -1.0])
    log_noguess = np.log1p(-np.exp(log_guess))
    sens, spec = np.array([-700.0, 1.0]), np.array([3.0, 1.0])
    tables = []
    for kernel in (kernels.rating_log_table.serial, kernels.rating_log_table.numpy_twin):
        table = np.empty((2, 2, 4))
        kernel(sens, spec, b, d, log_guess, log_noguess, table)
        tables.append(table)
    assert np.isfinite(tables[1]).all()
    np.testing.assert_allclose(tables[1], tables[0], rtol=1e-13)


def test_local_step_twin_matches_the_kernel_over_chunks(synthetic):
    model = IRT3PL()
    data = encode(model, synthetic.ratings, reset=True)
    pat = _patterns(data)
    rng = np.random.default_rng(1)
    J, M, P = data.n_raters, 20, pat["n_patterns"]
    table = np.log(rng.uniform(0.05, 0.95, (J, 1, 2 * M)))
    table = np.concatenate([table, np.log1p(-np.exp(table))], axis=1)
    log_prior = np.log(rng.dirichlet(np.ones(2 * M)))
    chunk_ptr = np.array([0, P // 3, P], dtype=np.int64)
    node_values = rng.normal(size=(3, M))
    results = []
    for kernel, summing in ((kernels.pattern_posteriors_serial, kernels.sum_chunks.serial),
                            (kernels.pattern_posteriors.numpy_twin, kernels.sum_chunks.numpy_twin)):
        out = [np.full((2, J, 2, 2 * M), np.nan), np.zeros((2, J), bool), np.empty(P),
               np.empty((P, 3)), np.empty(P)]
        kernel(pat["ptr"], pat["rater"], pat["label"], pat["count"], log_prior, table,
               chunk_ptr, node_values, *out)
        summed = np.empty((J, 2, 2 * M))
        summing(out[0], out[1], summed)
        results.append(out[1:] + [summed])
    for a, c in zip(*results):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
