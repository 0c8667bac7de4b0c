"""An experiment, not shipped: safeguarded Newton steps on GLAD's log
posterior, counted in passes over the data on the shipped sets (the GLAD
counterpart of ``newton_experiment.py``).

Run::

    PYTHONPATH=. python benchmarks/experiments/glad_newton_experiment.py --check
    PYTHONPATH=. python benchmarks/experiments/glad_newton_experiment.py --sets dog,rte --tol 1e-12
    PYTHONPATH=. python benchmarks/experiments/glad_newton_experiment.py --damped
    PYTHONPATH=. python benchmarks/experiments/glad_newton_experiment.py --cost

Results and conclusion: doc/acceleration.rst, "Newton steps for GLAD".

The objective is GLAD's (``GLAD._objective`` times the number of items):

    F(α, b, η) = Σ_i ℓ_i + log p(α) + log p(b) [+ log p(π)],
    ℓ_i = log Σ_k π_k Π_n p(l_n | z_i = k, α_{j_n}, b_i),

b_i = log β_i as the model stores it, Gaussian priors on α and b, π in
reduced softmax coordinates η_l = log π_l - log π_K (l < K) when it is
learned (with the Dirichlet term ``prior_class`` Σ log π_k), held fixed
otherwise (the default ``class_prior="uniform"``: no η).

Derivatives, per item, by Louis (1982): with t_n = α_j β_i, σ_n = σ(t_n),
w_ik the posterior P(z_i = k) and c_n = w_{i, l_n} (the posterior that
rating n is right), the complete-data log-likelihood of class k has score
(1{l_n = k} - σ_n) β_i in α_j, Σ_n -σ_n t_n + T_ik in b_i (T_ik = Σ_{n:
l_n = k} t_n) and e_k - π in η; so

    ∂F/∂α_j = Σ_n (c_n - σ_n) β_i                   - (α_j - μ_α)/s_α²
    ∂F/∂b_i = Σ_n (c_n - σ_n) t_n                   - (b_i - μ_b)/s_b²
    ∂F/∂η   = Σ_i (w_i - π)    + prior_class (1 - K π)

and the Hessian is E_w[complete-data Hessian] + Cov_w[score] + priors':

    α_j α_j : Σ_n -σ(1-σ) β²                         (diagonal)
    α_j b_i : Σ_n β [(c_n - σ_n) - σ_n (1-σ_n) t_n]
    b_i b_i : Σ_n [-σ(1-σ) t² + (c_n - σ_n) t_n]     (diagonal in i)
    η η     : -(n_items + K prior_class) (diag π - π πᵀ)
    Cov     : Σ_i S_iᵀ (diag w_i - w_i w_iᵀ) S_i, S_i's row k holding the
              class-dependent part of the score: β_i at each α_j whose
              rating of i is k, T_ik at b_i, e_k at η.

Item i's b_i meets only its own raters' α, η and itself: the Hessian is an
arrowhead, its b block diagonal.  Newton's system -H Δ = g is solved by
eliminating the b's: with D = -H_bb (must be > 0) the Schur complement
-H_gg - H_gb D⁻¹ H_bg over the J (+ K - 1) global coordinates (must have a
Cholesky factor) gives Δα, Δη, and Δb_i = (g_b,i - H_bg,i Δg) / D_i.

The loop: from each kept state (α, π and the b_i its local step produced),
the Newton point (α + Δα, π(η + Δη), b + Δb) is evaluated (one pass) and
kept when the objective did not fall, else the model's plain update
(``_global_update``) is evaluated (one more pass).  The model's local step
takes the passed b as the warm start of one safeguarded Newton step per
item, which cannot lower the objective, so the evaluated state is at least
as good as the Newton point itself: this is Newton on the joint (α, b, η),
followed by GLAD's own free b refinement, not Newton on a profile.  Plain
stopping rule: stop when a kept step changes the objective by less than
``tol``.  The fitted items then get the model's own final pass (the global
search over each b_i, ``GLAD._final_step``), as the shipped fit does.
"""

import argparse
import os
import sys
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.special import expit

sys.path.insert(0, os.path.dirname(__file__))
from _newton import from_reduced, reduced, safeguarded_newton, timed_fit_predict  # noqa: E402

import skcrowd._glad as glad_module  # noqa: E402
from skcrowd import GLAD, datasets  # noqa: E402
from skcrowd._base import _Run  # noqa: E402

SETS = ("bluebirds", "caries", "dog", "rte", "trec2010", "web")


def _learns_prior(model, data):
    return model._fixed_prior(data.n_classes) is None


def derivatives(model, data, alpha, b, pi, proba):
    """Gradient and negated Hessian of F at (α, b, π) given the items'
    posteriors there, in the arrowhead's blocks: global coordinates g =
    (α, η) and the b's.  Returns (grad_g, grad_b, N_gg dense, N_gb sparse,
    d_b) with N = -H and d_b the diagonal of N_bb."""
    J, I, K = data.n_raters, data.n_items, data.n_classes
    learn = _learns_prior(model, data)
    L = K - 1 if learn else 0
    G = J + L
    item, rater, label = data.item, data.rater, data.label
    a_prec = 1.0 / float(model.alpha_prior_std) ** 2
    b_prec = 1.0 / float(model.b_prior_std) ** 2
    beta = np.exp(b)
    bn = beta[item]
    t = alpha[rater] * bn
    s = expit(t)
    c = proba[item, label]
    v = s * (1.0 - s)
    # gradient
    grad_a = np.bincount(rater, (c - s) * bn, J) - a_prec * (alpha - model.alpha_prior_mean)
    grad_b = np.bincount(item, (c - s) * t, I) - b_prec * (b - model.b_prior_mean)
    parts = [grad_a]
    if learn:
        pc = float(model.prior_class)
        grad_eta = (proba[:, :L] - pi[:L]).sum(axis=0) + pc * (1.0 - K * pi[:L])
        parts.append(grad_eta)
    grad_g = np.concatenate(parts)
    # expected complete-data Hessian (negated) and the priors
    n_gg = np.zeros((G, G))
    n_gg[np.arange(J), np.arange(J)] = np.bincount(rater, v * bn * bn, J) + a_prec
    if learn:
        pl = pi[:L]
        n_gg[J:, J:] = (I + K * pc) * (np.diag(pl) - np.outer(pl, pl))
    d_b = np.bincount(item, v * t * t - (c - s) * t, I) + b_prec
    n_gb = sp.coo_matrix((-(bn * ((c - s) - v * t)), (rater, item)), shape=(G, I)).tocsr()
    # missing information: Σ_i S_iᵀ (diag w_i - w_i w_iᵀ) S_i, columns (α, η, b)
    T = np.bincount(item * K + label, t, I * K)  # T_ik
    rows = [item * K + label, np.arange(I * K)]
    cols = [rater, G + np.repeat(np.arange(I), K)]
    vals = [bn, T]
    if learn:
        k_of_row = np.tile(np.arange(K), I)
        has = k_of_row < L
        rows.append(np.arange(I * K)[has])
        cols.append(J + k_of_row[has])
        vals.append(np.ones(has.sum()))
    S = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(I * K, G + I))
    weights = proba.ravel()
    A = sp.csr_matrix((weights, (np.repeat(np.arange(I), K), np.arange(I * K))),
                      shape=(I, I * K))
    M = (A @ S).tocsc()
    SD = S.multiply(weights[:, None]).tocsc()
    S = S.tocsc()
    # the covariance, block by block (subtracted: N = -H, and Cov enters H with +)
    Sg, Sb, SDg, SDb, Mg, Mb = S[:, :G], S[:, G:], SD[:, :G], SD[:, G:], M[:, :G], M[:, G:]
    n_gg -= (Sg.T @ SDg).toarray() - (Mg.T @ Mg).toarray()
    n_gb = n_gb - ((Sg.T @ SDb) - (Mg.T @ Mb)).tocsr()
    cov_bb = (Sb.T @ SDb) - (Mb.T @ Mb)
    off = cov_bb - sp.diags(cov_bb.diagonal())
    assert abs(off).max() == 0 if off.nnz else True  # the b block is diagonal
    d_b = d_b - cov_bb.diagonal()
    return grad_g, grad_b, n_gg, n_gb, d_b


def newton_point(model, data, state, damped=False):
    """The Newton point from a kept state, or None when -H is not positive
    definite there (a b diagonal entry ≤ 0 or no Cholesky factor of the
    Schur complement).  With ``damped`` (Levenberg–Marquardt), λ is added
    to every diagonal entry of -H instead, λ growing fourfold from
    max(0, -min d_b) + 1e-6 · mean diagonal until both tests pass.
    Returns (the point, λ)."""
    params = state.params
    alpha, pi = params["alpha"], params["class_prior"]
    b = state.items["log_beta"]
    grad_g, grad_b, n_gg, n_gb, d_b = derivatives(model, data, alpha, b, pi,
                                                  state.items["proba"])
    lam, scale = 0.0, 1e-6 * np.concatenate([np.diag(n_gg), d_b]).mean()
    eye = np.eye(len(grad_g))
    while True:
        if np.all(d_b + lam > 0):
            inv_d = 1.0 / (d_b + lam)
            scaled = n_gb.multiply(np.sqrt(inv_d)[None, :]).tocsr()
            schur = n_gg + lam * eye - (scaled @ scaled.T).toarray()
            try:
                factor = scipy.linalg.cho_factor(schur)
                break
            except np.linalg.LinAlgError:
                pass
        if not damped:
            return None, None
        lam = max(0.0, -d_b.min()) + scale if lam == 0.0 else 4.0 * lam
    rhs = grad_g - n_gb @ (grad_b * inv_d)
    step_g = scipy.linalg.cho_solve(factor, rhs)
    step_b = (grad_b - n_gb.T @ step_g) * inv_d
    J = data.n_raters
    new = dict(params, alpha=alpha + step_g[:J], log_beta=b + step_b)
    if _learns_prior(model, data):
        new["class_prior"] = from_reduced(reduced(pi) + step_g[J:])
    return new, lam


def check_derivatives(seed=0, learn=False):
    """The analytic gradient and Hessian against central differences of F
    (the model's objective times the number of items, evaluated with the
    item Newton step switched off so that b stays where it is put) on a
    small simulated set; returns the largest relative errors."""
    sim = datasets.make_glad(60, 6, 4, 3, random_state=seed)
    model = GLAD(class_prior="learn" if learn else "uniform")
    data = model._prepare(model._encode(sim.ratings, reset=True))
    J, I, K = data.n_raters, data.n_items, data.n_classes
    L = K - 1 if learn else 0
    rng = np.random.RandomState(seed)
    params = model._init_params(data, rng, 1)  # random α, π
    state = model._evaluate(data, params)
    for _ in range(3):  # somewhere off the start, not at the optimum
        state = model._evaluate(data, model._global_update(data, state.params, state.stats))
    alpha, pi = state.params["alpha"], state.params["class_prior"]
    b = state.items["log_beta"] + rng.normal(0.0, 0.3, I)  # and b off its item optimum

    def unpack(x):
        p = dict(state.params, alpha=x[:J], log_beta=x[J + L:].copy())
        if learn:
            p["class_prior"] = from_reduced(x[J:J + L])
        return p

    def evaluate(x):
        saved = glad_module._ITEM_FIT_STEPS
        glad_module._ITEM_FIT_STEPS = 0  # no item step: the state is at x's b
        try:
            st = model._evaluate(data, unpack(x))
        finally:
            glad_module._ITEM_FIT_STEPS = saved
        assert np.array_equal(st.items["log_beta"], x[J + L:])
        return st

    def log_posterior(x):
        return evaluate(x).objective * I

    def analytic(x):
        p = unpack(x)
        g_g, g_b, n_gg, n_gb, d_b = derivatives(model, data, p["alpha"], p["log_beta"],
                                                p["class_prior"], evaluate(x).items["proba"])
        hessian = -np.block([[n_gg, n_gb.toarray()], [n_gb.toarray().T, np.diag(d_b)]])
        return np.concatenate([g_g, g_b]), hessian

    x0 = np.concatenate([alpha, reduced(pi) if learn else [], b])
    gradient, hessian = analytic(x0)
    h = 1e-5
    unit = np.eye(len(x0))
    numeric_gradient = np.array([(log_posterior(x0 + h * e) - log_posterior(x0 - h * e)) / (2 * h)
                                 for e in unit])
    numeric_hessian = np.array([(analytic(x0 + h * e)[0] - analytic(x0 - h * e)[0]) / (2 * h)
                                for e in unit])
    grad_error = np.abs(gradient - numeric_gradient).max() / np.abs(numeric_gradient).max()
    hess_error = np.abs(hessian - numeric_hessian).max() / np.abs(numeric_hessian).max()
    return grad_error, hess_error, len(x0)


def newton_fit(ratings, tol, max_iter=1000, damped=False):
    """A GLAD fit (defaults otherwise) by the loop above; returns the model,
    the passes after the first, the kept Newton steps, the states where -H
    was not positive definite (no Newton point, or a damped one), the kept
    objectives
    (the final item pass's last), the predicted labels and the seconds
    spent on Newton's linear algebra (derivatives, Schur complement,
    Cholesky)."""
    model = GLAD(tol=tol)
    data = model._prepare(model._encode(ratings, reset=True))
    params = model._init_params(data, np.random.RandomState(0), 0)
    n_indefinite = 0

    def point(state):
        nonlocal n_indefinite
        trial, lam = newton_point(model, data, state, damped)
        n_indefinite += trial is None or lam > 0
        return trial

    state, passes, n_newton, history, algebra, converged = safeguarded_newton(
        model, data, model._evaluate(data, params), tol, max_iter, point)
    run = _Run(state.params, state.items, history, passes, converged, n_newton, 0.0)
    run = model._final_step(data, run)
    model._set_fitted(data, run.params, run.items)
    labels = model.classes_[run.items["proba"].argmax(axis=1)]
    return model, passes, n_newton, n_indefinite, run.history, labels, algebra


def _timed_fit(ratings, **params):
    return timed_fit_predict(GLAD, ratings, **params)


def cost(name, repeat=7):
    """Best-of-``repeat`` milliseconds of one pass, of the derivatives and
    of the whole Newton point (derivatives, Schur complement, Cholesky) at
    the plain fit's optimum (``--cost``)."""
    ratings = getattr(datasets, f"load_{name}")().ratings
    plain = _timed_fit(ratings, tol=1e-12, accelerate=False)[0]
    model = GLAD(tol=1e-12)
    data = model._prepare(model._encode(ratings, reset=True))
    params = dict(plain._fitted_params(), log_beta=-np.log(plain.item_difficulty_))
    state = model._evaluate(data, params)

    def best(f):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            f()
            times.append(time.perf_counter() - start)
        return 1e3 * min(times)

    one_pass = best(lambda: model._evaluate(data, params))
    derivs = best(lambda: derivatives(model, data, params["alpha"], state.items["log_beta"],
                                      params["class_prior"], state.items["proba"]))
    point = best(lambda: newton_point(model, data, state))
    return one_pass, derivs, point


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="bluebirds,caries,dog,rte,web,trec2010")
    parser.add_argument("--tol", default="1e-12,1e-6")
    parser.add_argument("--check", action="store_true",
                        help="first compare the derivatives with central differences")
    parser.add_argument("--damped", action="store_true",
                        help="Levenberg-Marquardt damping where -H is not positive definite")
    parser.add_argument("--cost", action="store_true",
                        help="only time a pass against a Newton point on each set")
    args = parser.parse_args()
    if args.cost:
        _timed_fit(datasets.load_rte().ratings)  # compile the kernels
        for name in args.sets.split(","):
            one_pass, derivs, point = cost(name)
            print(f"{name:10} pass {one_pass:7.2f} ms, derivatives {derivs:7.2f} ms, Newton "
                  f"point {point:7.2f} ms ({point / one_pass:.1f} passes)", flush=True)
        return
    if args.check:
        for learn in (False, True):
            grad_error, hess_error, n = check_derivatives(learn=learn)
            print(f"derivatives against central differences (relative, {n} coordinates, "
                  f"class_prior={'learn' if learn else 'uniform'}): gradient "
                  f"{grad_error:.1e}, Hessian {hess_error:.1e}", flush=True)
    _timed_fit(datasets.load_rte().ratings)  # compile the kernels
    print("passes (plain / SQUAREM / Newton; kept Newton steps; states with no Newton point, "
          "-H not positive definite), the Newton fit's optimum "
          "against the plain fit's, and wall seconds (plain / SQUAREM / Newton, of which "
          "Newton's linear algebra)")
    print(f"{'data':10} {'tol':>6} {'passes':>18} {'steps':>5} {'indef':>5} {'rel obj':>9} "
          f"{'alpha':>8} "
          f"{'labels':>6} {'seconds':>28}")
    for name in args.sets.split(","):
        ratings = getattr(datasets, f"load_{name}")().ratings
        for tol in (float(t) for t in args.tol.split(",")):
            plain, plain_labels, plain_s = _timed_fit(ratings, tol=tol, accelerate=False)
            squarem, _, squarem_s = _timed_fit(ratings, tol=tol)
            start = time.perf_counter()
            model, passes, n_newton, n_indefinite, history, labels, algebra = \
                newton_fit(ratings, tol, damped=args.damped)
            newton_s = time.perf_counter() - start
            # the final item pass re-sums every item's terms: rounding of
            # order 1e-16 there, hence the tests' relative tolerance
            if np.any(np.diff(history) < -1e-12 * np.abs(history[1:])):
                raise AssertionError("the kept objective fell")
            # signed: > 0 when the Newton fit ends higher than the plain fit
            rel = (history[-1] - plain.lower_bound_) / abs(plain.lower_bound_)
            diff = np.abs(model.rater_ability_ - plain.rater_ability_).max()
            # against the plain fit's own fitted labels (fit_predict)
            same = np.array_equal(labels, plain_labels)
            counts = f"{plain.n_iter_} / {squarem.n_iter_} / {passes}"
            seconds = f"{plain_s:.3f} / {squarem_s:.3f} / {newton_s:.2f} ({algebra:.2f})"
            print(f"{name:10} {tol:6.0e} {counts:>18} {n_newton:5d} {n_indefinite:5d} {rel:9.1e} "
                  f"{diff:8.1e} "
                  f"{'yes' if same else 'no':>6} {seconds:>28}", flush=True)


if __name__ == "__main__":
    main()
