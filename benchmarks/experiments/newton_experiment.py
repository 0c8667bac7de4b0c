"""An experiment, not shipped: safeguarded Newton steps on DawidSkene's log
posterior, counted in passes over the data on the shipped sets.

Run::

    PYTHONPATH=. python benchmarks/experiments/newton_experiment.py
    PYTHONPATH=. python benchmarks/experiments/newton_experiment.py --sets dog,rte --tol 1e-12 --check

The goal was at most half the plain passes on every shipped set, and
two-point extrapolation (SQUAREM, Anderson) does not get there on sets that
plain EM solves in 16-40 passes (doc/acceleration.rst, "Where the passes
go").  Newton's method converges quadratically, and one pass over the
ratings gives everything it needs: the gradient of the observed-data log
posterior is the expected complete-data gradient (Fisher's identity), and
its Hessian is the expected complete-data Hessian plus the covariance of the
complete-data score under the items' posteriors (Louis 1982),

    ∇²ℓ = Σ_i E[∇² log p(y_i, z_i | θ)] + Σ_i Cov_{z_i | y_i}[∇ log p(y_i, z_i | θ)]
          + ∇² log p(θ).

Coordinates: every confusion row and π in reduced softmax coordinates
η_l = log θ_l - log θ_K (l < K), so the Hessian has no null direction.  The
score of item i under class k has, for each of its ratings (rater r,
label l), the block (r, k) entry e_l - θ_r[k] (its first K - 1 entries), and
the π block e_k - π; the covariance term is S_iᵀ (diag p_i - p_i p_iᵀ) S_i
with S_i the K score vectors as rows, built for all items at once as sparse
matrices.

The loop: from each kept state, one pass gives the posteriors, the
objective, the EM update and the Newton point (when -∇²ℓ is positive
definite there); the Newton point is evaluated (one pass) and kept when the
objective did not fall, otherwise the EM update is evaluated (one more pass)
— the shipped loop's safeguard, so the kept objective never decreases.  The
plain stopping rule: stop when a kept step changes the objective by less
than ``tol``.
"""

import argparse
import os
import sys
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from _newton import from_reduced, reduced, safeguarded_newton, timed_fit_predict  # noqa: E402

from skcrowd import DawidSkene, datasets  # noqa: E402

SETS = ("bluebirds", "caries", "dog", "rte", "trec2010", "web")


def _row_hessian(theta):
    """-(diag θ' - θ'θ'ᵀ) for each row (θ' the first K - 1 entries)."""
    t = theta[..., :-1]
    return t[..., :, None] * t[..., None, :] - np.eye(t.shape[-1]) * t[..., None, :]


def newton_point(model, data, params, items, stats):
    """The Newton point from the state at ``params`` (None when -H is not
    positive definite there), and the gradient's norm."""
    J, K = data.n_raters, data.n_classes
    L = K - 1
    n_rows = J * K * L
    theta, pi = params["confusion"], params["class_prior"]
    gradient, hessian = _gradient_and_hessian(model, data, params, items, stats)
    try:
        factor = scipy.linalg.cho_factor(-hessian)
    except np.linalg.LinAlgError:
        return None, float(np.linalg.norm(gradient))
    step = scipy.linalg.cho_solve(factor, gradient)
    eta_rows = reduced(theta) + step[:n_rows].reshape(J, K, L)
    eta_pi = reduced(pi) + step[n_rows:]
    new = {"confusion": from_reduced(eta_rows), "class_prior": from_reduced(eta_pi)}
    return new, float(np.linalg.norm(gradient))


def _gradient_and_hessian(model, data, params, items, stats):
    """Gradient and Hessian of the log posterior (not per item) in reduced
    softmax coordinates, from the state's posteriors and expected counts."""
    J, K = data.n_raters, data.n_classes
    theta, pi = params["confusion"], params["class_prior"]
    counts = stats["confusion_counts"] + model._prior_counts(data)  # [r, true, given]
    row_total = counts.sum(axis=2)  # n_rk
    grad_rows = counts[..., :-1] - row_total[..., None] * theta[..., :-1]
    class_counts = stats["class_counts"] + model.prior_class
    grad_pi = class_counts[:-1] - class_counts.sum() * pi[:-1]
    gradient = np.concatenate([grad_rows.ravel(), grad_pi])
    L = K - 1
    n_rows = J * K * L
    P = n_rows + L
    hessian = np.zeros((P, P))
    # complete-data part: block diagonal, one (K-1)^2 block per row and for π
    blocks = (row_total[..., None, None] * _row_hessian(theta)).reshape(J * K, L, L)
    first = (np.arange(J * K) * L)[:, None, None]
    hessian[first + np.arange(L)[:, None], first + np.arange(L)[None, :]] = blocks
    hessian[n_rows:, n_rows:] = class_counts.sum() * _row_hessian(pi)
    # missing-information part: Σ_i S_iᵀ (diag p_i - p_i p_iᵀ) S_i
    p = items["proba"]
    item, rater, label = data.item, data.rater, data.label
    n = len(item)
    onehot = np.zeros((n, K))
    onehot[np.arange(n), label] = 1.0
    rows_, cols_, vals_ = [], [], []
    for k in range(K):
        u = onehot[:, :L] - theta[rater, k, :L]  # n, L
        row_index = np.repeat(item * K + k, L)
        col_index = ((rater * K + k) * L)[:, None] + np.arange(L)
        rows_.append(row_index)
        cols_.append(col_index.ravel())
        vals_.append(u.ravel())
        w = np.eye(K)[k, :L] - pi[:L]
        rows_.append(np.repeat(np.arange(data.n_items) * K + k, L))
        cols_.append(np.tile(n_rows + np.arange(L), data.n_items))
        vals_.append(np.tile(w, data.n_items))
    S = sp.csr_matrix((np.concatenate(vals_), (np.concatenate(rows_), np.concatenate(cols_))),
                      shape=(data.n_items * K, P))
    weights = p.ravel()
    SD = S.multiply(weights[:, None]).tocsr()
    A = sp.csr_matrix((weights, (np.repeat(np.arange(data.n_items), K),
                                 np.arange(data.n_items * K))),
                      shape=(data.n_items, data.n_items * K))
    M = A @ S
    hessian += (S.T @ SD).toarray() - (M.T @ M).toarray()
    return gradient, hessian


def check_derivatives(seed=0):
    """The analytic gradient and Hessian against central differences of the
    log posterior (the objective times the number of items) in the same
    coordinates, on a small simulated set; returns the largest relative
    errors.  ``--check`` runs it before the table."""
    sim = datasets.make_dawid_skene(60, 6, 4, 3, random_state=seed)
    model = DawidSkene()
    data = model._prepare(model._encode(sim.ratings, reset=True))
    params = model._init_params(data, np.random.RandomState(seed), 0)
    for _ in range(3):  # somewhere off the start, not at the optimum
        state = model._evaluate(data, params)
        params = model._global_update(data, params, state.stats)
    state = model._evaluate(data, params)
    J, K = data.n_raters, data.n_classes
    L = K - 1
    x0 = np.concatenate([reduced(params["confusion"]).ravel(), reduced(params["class_prior"])])

    def log_posterior(x):
        p = {"confusion": from_reduced(x[:J * K * L].reshape(J, K, L)),
             "class_prior": from_reduced(x[J * K * L:])}
        return model._evaluate(data, p).objective * data.n_items

    def gradient_at(x):
        p = {"confusion": from_reduced(x[:J * K * L].reshape(J, K, L)),
             "class_prior": from_reduced(x[J * K * L:])}
        st = model._evaluate(data, p)
        return _gradient_and_hessian(model, data, p, st.items, st.stats)[0]

    gradient, hessian = _gradient_and_hessian(model, data, params, state.items, state.stats)
    h = 1e-5
    unit = np.eye(len(x0))
    numeric_gradient = np.array([(log_posterior(x0 + h * e) - log_posterior(x0 - h * e)) / (2 * h)
                                 for e in unit])
    numeric_hessian = np.array([(gradient_at(x0 + h * e) - gradient_at(x0 - h * e)) / (2 * h)
                                for e in unit])
    grad_error = np.abs(gradient - numeric_gradient).max() / np.abs(numeric_gradient).max()
    hess_error = np.abs(hessian - numeric_hessian).max() / np.abs(numeric_hessian).max()
    return grad_error, hess_error


def newton_fit(ratings, tol, max_iter=1000):
    """A DawidSkene fit (defaults otherwise) by the loop above; returns the
    model, the passes after the first, the kept Newton steps, the kept
    objectives, the predicted labels and the seconds spent on Newton's
    linear algebra (the score matrices, the Hessian and its Cholesky)."""
    model = DawidSkene(tol=tol)
    data = model._prepare(model._encode(ratings, reset=True))
    params = model._init_params(data, np.random.RandomState(0), 0)
    state, passes, n_newton, history, algebra, _ = safeguarded_newton(
        model, data, model._evaluate(data, params), tol, max_iter,
        lambda state: newton_point(model, data, state.params, state.items, state.stats)[0])
    model._set_fitted(data, state.params, state.items)
    labels = model.classes_[state.items["proba"].argmax(axis=1)]
    return model, passes, n_newton, history, labels, algebra


def _timed_fit(ratings, **params):
    return timed_fit_predict(DawidSkene, ratings, **params)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="bluebirds,caries,dog,rte,web")
    parser.add_argument("--tol", default="1e-12,1e-6")
    parser.add_argument("--check", action="store_true",
                        help="first compare the derivatives with central differences")
    args = parser.parse_args()
    if args.check:
        grad_error, hess_error = check_derivatives()
        print(f"derivatives against central differences (relative): gradient "
              f"{grad_error:.1e}, Hessian {hess_error:.1e}")
    _timed_fit(datasets.load_rte().ratings)  # compile the kernels
    print("passes (plain / SQUAREM / Newton, kept Newton steps), the Newton fit's optimum "
          "against the plain fit's, and wall seconds (plain / SQUAREM / Newton, of which "
          "Newton's linear algebra)")
    print(f"{'data':10} {'tol':>6} {'passes':>18} {'steps':>5} {'rel obj':>8} {'param':>8} "
          f"{'labels':>6} {'seconds':>26}")
    for name in args.sets.split(","):
        ratings = getattr(datasets, f"load_{name}")().ratings
        for tol in (float(t) for t in args.tol.split(",")):
            plain, plain_labels, plain_s = _timed_fit(ratings, tol=tol, accelerate=False)
            squarem, _, squarem_s = _timed_fit(ratings, tol=tol)
            start = time.perf_counter()
            model, passes, n_newton, history, labels, algebra = newton_fit(ratings, tol)
            newton_s = time.perf_counter() - start
            if np.any(np.diff(history) < 0):
                raise AssertionError("the kept objective fell")
            rel = abs(history[-1] - plain.lower_bound_) / abs(plain.lower_bound_)
            diff = max(np.abs(model.confusion_ - plain.confusion_).max(),
                       np.abs(model.class_prior_ - plain.class_prior_).max())
            same = np.array_equal(labels, plain_labels)
            counts = f"{plain.n_iter_} / {squarem.n_iter_} / {passes}"
            seconds = f"{plain_s:.3f} / {squarem_s:.3f} / {newton_s:.2f} ({algebra:.2f})"
            print(f"{name:10} {tol:6.0e} {counts:>18} {n_newton:5d} {rel:8.1e} {diff:8.1e} "
                  f"{'yes' if same else 'no':>6} {seconds:>26}", flush=True)


if __name__ == "__main__":
    main()
