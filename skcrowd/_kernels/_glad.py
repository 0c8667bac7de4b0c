"""GLAD arithmetic: the item pass (each item's MAP log inverse difficulty
b_i, the posterior over its true class, its log marginal likelihood and,
fused into it, the gradient and curvature of the expected complete-data
log-likelihood in each rater's ability α_j) and the Gauss–Hermite item
marginal used by ``score_samples``.

Notation: rating n of item i by rater j with label l; t_n = α_j β_i,
β_i = exp(b_i); P(l = z_i) = σ(t_n), any other label (1 - σ(t_n)) / (K - 1).
Since log σ(t) - log(1 - σ(t)) = t, the log-likelihood of item i's ratings
given z_i = k is

    ll_k(b) = Σ_n [-softplus(t_n) - log(K-1)] + Σ_{n: l_n = k} [t_n + log(K-1)],

so one pass over an item's ratings gives every class at once, and with
dt/db = t the derivatives in b are

    d ll_k / db   = Σ_n -σ_n t_n + T_k,
    d² ll_k / db² = Σ_n [-σ_n (1 - σ_n) t_n² - σ_n t_n] + T_k,
    T_k = Σ_{n: l_n = k} t_n.

With K = 1 there is nothing to get wrong: every rating has probability 1.

Below :data:`NUMPY_MAX_RATINGS` ratings the item pass and the marginal run
numpy twins (:func:`item_step_numpy`, :func:`item_marginal_numpy`) that take
every item's steps in lockstep with the kernels' sums and rounding, so that
a first fit compiles nothing and both paths give the same fit.
"""

import numpy as np
from numba import prange

from ._common import normalize_log_inplace, serial_and_parallel
from ._config import jit, with_numpy_twin

#: largest Newton step on b_i (log units: β changes at most by a factor e)
MAX_STEP = 1.0
#: halvings of a Newton step before giving up on an item for this pass
MAX_HALVINGS = 30
#: largest |α_j β_i| evaluated (see :func:`item_terms`)
T_MAX = 1e6
#: Newton steps at most from a grid point of the global search
SEARCH_STEPS = 100


@jit
def sigmoid(t):
    """1 / (1 + exp(-t)) without overflow."""
    if t >= 0.0:
        return 1.0 / (1.0 + np.exp(-t))
    e = np.exp(t)
    return e / (1.0 + e)


@jit
def item_terms(start, stop, rater, label, alpha, b, log_km1, class_terms, sigma):
    """Class-independent sums over one item's ratings at log inverse
    difficulty ``b``.

    Writes ``class_terms[k]`` = Σ_{n: l_n = k} t_n and ``sigma[n]`` = σ(t_n)
    (kept for the rater statistics), and returns
    ``(base, slope, curvature)`` = (Σ_n -softplus(t_n) - log(K-1),
    Σ_n -σ_n t_n, Σ_n [-σ_n (1 - σ_n) t_n² - σ_n t_n]).
    """
    # Far out in b (a very wide prior's quadrature nodes) α β overflows, and
    # with α = 0 gives NaN; |t| beyond T_MAX changes no probability that
    # matters (σ(-T_MAX) = e^-1e6), so t is held there.
    beta = np.exp(min(b, 700.0))
    # element loops, not ``a[:] = 0``: a slice is a view whose reference
    # count is an atomic the threads contend for
    for k in range(class_terms.shape[0]):
        class_terms[k] = 0.0
    positive = 0.0
    slope = 0.0
    curvature = 0.0
    # Σ log1p(e_n) as the log of a product: one log per item instead of one
    # log1p per rating (each factor is in (1, 2], so 512 of them cannot
    # overflow; a factor's rounding costs < 1.2e-16 absolute, as a log1p's).
    product = 1.0
    factors = 0
    logs = 0.0
    for n in range(start, stop):
        t = alpha[rater[n]] * beta
        if t > T_MAX:
            t = T_MAX
        elif t < -T_MAX:
            t = -T_MAX
        # σ(t) and softplus(t) = max(t, 0) + log1p(e) from e = exp(-|t|).
        e = np.exp(-abs(t))
        if t >= 0.0:
            s = 1.0 / (1.0 + e)
            positive += t
        else:
            s = e / (1.0 + e)
        product *= 1.0 + e
        factors += 1
        if factors == 512:
            logs += np.log(product)
            product = 1.0
            factors = 0
        slope -= s * t
        curvature -= s * (1.0 - s) * t * t + s * t
        sigma[n] = s
        class_terms[label[n]] += t
    base = -positive - (logs + np.log(product)) - (stop - start) * log_km1
    return base, slope, curvature


@jit
def item_objective(start, stop, rater, label, alpha, log_prior, b, log_km1,
                   b_mean, b_precision, class_terms, class_counts, weights, sigma):
    """Item i's log posterior in b and its first two derivatives.

    Returns ``(value, gradient, hessian)`` of
    ℓ_i(b) = log Σ_k π_k exp(ll_k(b)) + log N(b; b_mean, 1/b_precision)
    (the Gaussian's constant omitted); ``weights`` receives the posterior
    P(z_i = k | ratings, b).  ``class_counts[k]`` = number of ratings with
    label k.  The Hessian is exact: E_w[ll_k''] + Var_w[ll_k'] (the
    posterior over z mixes the classes).
    """
    n_classes = log_prior.shape[0]
    d = b - b_mean
    value = -0.5 * b_precision * d * d
    gradient = -b_precision * d
    hessian = -b_precision
    if n_classes == 1 or stop == start:
        # log Σ_k π_k: log π_known for a clamped item (the log joint), else
        # exactly 0 (not Σ π rounded)
        total = 0.0
        clamped = False
        for k in range(n_classes):
            weights[k] = np.exp(log_prior[k])
            total += weights[k]
            clamped = clamped or log_prior[k] == -np.inf
        if not clamped:
            return value, gradient, hessian
        for k in range(n_classes):
            weights[k] /= total
        return value + np.log(total), gradient, hessian
    base, slope, curvature = item_terms(start, stop, rater, label, alpha, b,
                                        log_km1, class_terms, sigma)
    for k in range(n_classes):
        weights[k] = log_prior[k] + class_terms[k] + class_counts[k] * log_km1
    log_marginal = normalize_log_inplace(weights)
    mean_t = 0.0
    for k in range(n_classes):
        mean_t += weights[k] * class_terms[k]
    var_t = 0.0
    for k in range(n_classes):
        dev = class_terms[k] - mean_t
        var_t += weights[k] * dev * dev
    value += base + log_marginal
    gradient += slope + mean_t
    hessian += curvature + mean_t + var_t
    return value, gradient, hessian


@jit
def fit_item(start, stop, rater, label, alpha, log_prior, b, log_km1, b_mean,
             b_precision, max_steps, step_tol, class_terms, class_counts,
             weights, sigma):
    """Safeguarded Newton ascent on one item's log posterior in b.

    A step with a non-negative (or tiny) Hessian falls back to a gradient
    step; every step is capped at ``MAX_STEP`` and halved until the item's
    log posterior does not decrease, so the objective can only go up.
    Returns ``(b, value)`` at the last accepted point; ``weights`` holds the
    posterior over z_i there and ``sigma[start:stop]`` the σ(t_n).
    """
    for k in range(class_counts.shape[0]):
        class_counts[k] = 0.0
    for n in range(start, stop):
        class_counts[label[n]] += 1.0
    value, gradient, hessian = item_objective(
        start, stop, rater, label, alpha, log_prior, b, log_km1, b_mean,
        b_precision, class_terms, class_counts, weights, sigma)
    current = True
    for _ in range(max_steps):
        # The prior alone gives curvature -b_precision; when the likelihood
        # makes the item locally non-concave, step as if it were the prior.
        curv = hessian if hessian < -1e-3 * b_precision else -b_precision
        step = -gradient / curv
        if step > MAX_STEP:
            step = MAX_STEP
        elif step < -MAX_STEP:
            step = -MAX_STEP
        if abs(step) < step_tol:
            break
        accepted = False
        current = False  # ``weights`` now hold a trial point's posterior
        for _h in range(MAX_HALVINGS):
            trial = b + step
            t_value, t_gradient, t_hessian = item_objective(
                start, stop, rater, label, alpha, log_prior, trial, log_km1,
                b_mean, b_precision, class_terms, class_counts, weights, sigma)
            if t_value >= value:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            break
        b = trial
        current = True
        value, gradient, hessian = t_value, t_gradient, t_hessian
        if abs(step) < step_tol:
            break
    if not current:
        # The last evaluation was a rejected trial: leave the posterior of
        # the accepted point in ``weights``.
        value, gradient, hessian = item_objective(
            start, stop, rater, label, alpha, log_prior, b, log_km1, b_mean,
            b_precision, class_terms, class_counts, weights, sigma)
    return b, value


@jit
def grid_maxima(start, stop, rater, label, alpha, log_prior, log_km1, b_mean,
                b_precision, grid, grid_beta, class_counts, terms, values):
    """The two best local maxima of one item's log posterior on ``grid``.

    The item's log posterior in b can have several maxima (one per class
    that some raters favour, when abilities are negative, or where a wide
    prior meets a sigmoid-shaped likelihood), and which one a local ascent
    reaches depends on where it starts; an ascent from these grid points
    depends on (α, π) only, so that fit and predict reach the same mode.

    One pass over the item's ratings fills every grid point's class
    log-likelihoods (``terms``, scratch of shape (n_grid, n_classes);
    ``grid_beta`` = exp(``grid``), ``values`` scratch of n_grid).
    Returns ``(first, second)``: grid indices, best first (-1 when there
    is none).  ``class_counts`` must hold the item's label counts.
    """
    n_grid = grid.shape[0]
    n_classes = log_prior.shape[0]
    for g in range(n_grid):
        values[g] = 0.0
        for k in range(n_classes):
            terms[g, k] = 0.0
    if n_classes > 1:
        for n in range(start, stop):
            a = alpha[rater[n]]
            r = label[n]
            for g in range(n_grid):
                t = a * grid_beta[g]
                if t > T_MAX:
                    t = T_MAX
                elif t < -T_MAX:
                    t = -T_MAX
                # -softplus(t) - log(K-1) for every class, + t + log(K-1) for
                # the rating's own label (see the module docstring); beyond
                # |t| = 36, log1p(e^-|t|) < 2.4e-16 is below the rounding of
                # softplus(t) itself.
                if t > 36.0:
                    values[g] -= t + log_km1
                elif t < -36.0:
                    values[g] -= log_km1
                else:
                    values[g] -= max(t, 0.0) + np.log1p(np.exp(-abs(t))) + log_km1
                terms[g, r] += t
    first = -1
    second = -1
    first_value = -np.inf
    second_value = -np.inf
    for g in range(n_grid):
        top = -np.inf
        for k in range(n_classes):
            terms[g, k] += log_prior[k] + class_counts[k] * log_km1
            if terms[g, k] > top:
                top = terms[g, k]
        total = 0.0
        for k in range(n_classes):
            total += np.exp(terms[g, k] - top)
        d = grid[g] - b_mean
        values[g] += top + np.log(total) - 0.5 * b_precision * d * d
    for g in range(n_grid):
        value = values[g]
        previous = values[g - 1] if g > 0 else -np.inf
        following = values[g + 1] if g + 1 < n_grid else -np.inf
        if value >= previous and value > following:  # a local maximum of the grid
            if value > first_value:
                second, second_value = first, first_value
                first, first_value = g, value
            elif value > second_value:
                second, second_value = g, value
    return first, second


@jit
def add_rater_terms(start, stop, rater, label, beta, weights, sigma, out):
    """Add one item's contributions to the α statistics of its raters.

    For rating n by rater j, with c_n = P(z_i = l_n) = ``weights[label_n]``
    the posterior that it is correct, Q's term is
    c_n log σ(t_n) + (1 - c_n) log(1 - σ(t_n)) + const: a weighted logistic
    regression in α_j with feature β_i, hence ``out[j, :3]`` +=
    (Σ_n (c_n - σ_n) β, -Σ_n σ_n (1 - σ_n) β², Σ_n β² / 4), the gradient,
    the Hessian and Böhning's bound on -Q'' (σ(1-σ) ≤ 1/4), and ``out[j, 3]``
    = max(``out[j, 3]``, β).  The priors are added by the caller.
    """
    b2 = beta * beta
    for n in range(start, stop):
        j = rater[n]
        s = sigma[n]
        out[j, 0] += (weights[label[n]] - s) * beta
        out[j, 1] -= s * (1.0 - s) * b2
        out[j, 2] += 0.25 * b2
        if beta > out[j, 3]:
            out[j, 3] = beta


def n_item_blocks(n_items, n_raters):
    """Blocks of items of the fused local step (a function of the data
    only, so that results do not depend on the number of threads); each
    block keeps its own (n_raters, 3) rater statistics, at most ~2e6
    numbers in all."""
    return max(1, min(256, n_items, 2_000_000 // max(n_raters, 1)))


#: below this many ratings GLAD's item kernels run their numpy twins (its
#: own limit, not :data:`._config.NUMPY_MAX_RATINGS`: a GLAD item pass does
#: a Newton search per item, and its twin pays per pass far more than the
#: Dawid-Skene twins do; measured in doc/first_run.rst)
NUMPY_MAX_RATINGS = 20_000


def libm(ufunc, x):
    """``ufunc(x)`` (``np.exp``, ``np.log``, ``np.log1p``) rounded as the
    compiled kernels round it.

    On CPUs with AVX512 numpy evaluates these over contiguous arrays with
    its own SIMD code, whose last bit differs from the C library's for ~5%
    of the arguments of ``exp``; over a reversed view it calls the C
    library, as numba's scalar code does.  The twins need the same bits:
    near an item's mode a Newton step's gain is below rounding, and its
    acceptance (``t_value >= value``) must go the same way on both paths.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        return ufunc(x[::-1])[::-1]
    flat = np.ascontiguousarray(x).ravel()
    return ufunc(flat[::-1])[::-1].reshape(x.shape)


def _sums(index, weights, minlength):
    """``np.bincount(index, weights, minlength)``, float64 also when there
    is nothing to add (numpy then returns integers)."""
    return np.bincount(index, weights=weights, minlength=minlength).astype(np.float64,
                                                                          copy=False)


class _Rows:
    """The ratings of a set of item pass rows, for the numpy twins: each row
    is one item at one b (the same item may appear in several rows).

    ``source`` indexes the kernel's rating arrays (each row's ratings in
    their order, rows in order), ``local`` gives each of those ratings' row.
    """

    def __init__(self, item_ptr, items):
        lengths = (item_ptr[items + 1] - item_ptr[items]).astype(np.int64)
        first = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(lengths, out=first[1:])
        self.n_rows = len(items)
        self.items = items
        self.lengths = lengths
        self.local = np.repeat(np.arange(len(items)), lengths)
        # position of each rating within its row
        self.position = np.arange(first[-1], dtype=np.int64) - first[self.local]
        self.source = item_ptr[items][self.local] + self.position

    def take(self, keep):
        """The rows ``keep`` (a boolean mask) of these rows."""
        sub = object.__new__(_Rows)
        on = keep[self.local]
        sub.n_rows = int(keep.sum())
        sub.items = self.items[keep]
        sub.lengths = self.lengths[keep]
        sub.local = (np.cumsum(keep) - 1)[self.local[on]]
        sub.position = self.position[on]
        sub.source = self.source[on]
        return sub


def item_terms_numpy(rows, a, label, b, log_km1, n_classes):
    """:func:`item_terms` for every row at once: ``a`` and ``label`` are the
    rows' ratings' abilities and labels, ``b`` one value per row.  Returns
    ``(base, slope, curvature, class_terms, sigma)``, the per-row sums in
    the kernel's order (``np.bincount`` adds in rating order)."""
    local, n = rows.local, rows.n_rows
    beta = libm(np.exp, np.minimum(b, 700.0))
    t = np.minimum(np.maximum(a * beta[local], -T_MAX), T_MAX)
    e = libm(np.exp, -np.abs(t))
    up = t >= 0.0
    s = np.where(up, 1.0 / (1.0 + e), e / (1.0 + e))
    positive = _sums(local, weights=np.where(up, t, 0.0), minlength=n)
    slope = _sums(local, weights=-(s * t), minlength=n)
    curvature = _sums(local, weights=-(s * (1.0 - s) * t * t + s * t), minlength=n)
    class_terms = _sums(local * n_classes + label, weights=t,
                              minlength=n * n_classes).reshape(n, n_classes)
    # Σ log1p(e_n) as the kernel takes it: products of 512 factors in rating
    # order, the log of each full one added up, plus the log of the rest.
    starts = np.flatnonzero(rows.position % 512 == 0)
    products = np.multiply.reduceat(1.0 + e, starts) if len(e) else np.empty(0)
    chunk_row = local[starts]
    full = rows.position[starts] + 512 <= rows.lengths[chunk_row]
    logs = _sums(chunk_row[full], weights=libm(np.log, products[full]), minlength=n)
    rest = np.ones(n)
    rest[chunk_row[~full]] = products[~full]
    base = -positive - (logs + libm(np.log, rest)) - rows.lengths * log_km1
    return base, slope, curvature, class_terms, s


def normalize_log_rows_kernel(weights):
    """:func:`._common.normalize_log_inplace` on every row of ``weights``
    (overwritten), in its order of operations: returns the log normalisers."""
    n, n_classes = weights.shape
    top = weights.max(axis=1)
    with np.errstate(invalid="ignore"):
        shifted = libm(np.exp, weights - top[:, None])
    total = np.zeros(n)
    for k in range(n_classes):
        total += shifted[:, k]
    finite = top != -np.inf
    weights[finite] = shifted[finite] / total[finite, None]
    weights[~finite] = 1.0 / n_classes
    return np.where(finite, top + libm(np.log, np.where(finite, total, 1.0)), -np.inf)


def item_objective_numpy(rows, a, label, prior, counts, b, log_km1, b_mean, b_precision):
    """:func:`item_objective` for every row at once (``prior`` and
    ``counts`` one row each, ``a`` / ``label`` the rows' ratings).  Returns
    ``(value, gradient, hessian, weights, sigma)``."""
    n_classes = prior.shape[1]
    d = b - b_mean
    value = -0.5 * b_precision * d * d
    gradient = -b_precision * d
    hessian = np.full(rows.n_rows, -b_precision)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if n_classes > 1:
            base, slope, curvature, terms, sigma = item_terms_numpy(
                rows, a, label, b, log_km1, n_classes)
            weights = prior + terms + counts * log_km1
            log_marginal = normalize_log_rows_kernel(weights)
            mean_t = np.zeros(rows.n_rows)
            for k in range(n_classes):
                mean_t += weights[:, k] * terms[:, k]
            var_t = np.zeros(rows.n_rows)
            for k in range(n_classes):
                dev = terms[:, k] - mean_t
                var_t += weights[:, k] * dev * dev
            rated = rows.lengths > 0
            value = np.where(rated, value + (base + log_marginal), value)
            gradient = np.where(rated, gradient + (slope + mean_t), gradient)
            hessian = np.where(rated, hessian + (curvature + mean_t + var_t), hessian)
            bare = ~rated
        else:
            sigma = np.empty(len(rows.local))
            weights = np.empty(prior.shape)
            bare = np.ones(rows.n_rows, dtype=bool)
        if bare.any():
            # no ratings (or one class): the prior's weights, normalised and
            # in the value (the log joint) only when some class is clamped
            # out, as in the kernel
            plain = libm(np.exp, prior[bare])
            total = np.zeros(len(plain))
            for k in range(n_classes):
                total += plain[:, k]
            clamped = (prior[bare] == -np.inf).any(axis=1)
            plain[clamped] /= total[clamped, None]
            weights[bare] = plain
            value[bare] = np.where(clamped, value[bare] + libm(np.log, total), value[bare])
    return value, gradient, hessian, weights, sigma


class _ItemProblem:
    """One item pass's data for the numpy twins: each item's ratings, its
    prior (with the evidence) and label counts."""

    def __init__(self, item_ptr, rater, label, alpha, log_prior, evidence, b_mean,
                 b_precision, step_tol):
        n_items = item_ptr.shape[0] - 1
        n_classes = log_prior.shape[0]
        self.item_ptr = item_ptr
        self.a = alpha[rater]
        self.label = label
        self.n_classes = n_classes
        self.log_km1 = np.log(n_classes - 1.0) if n_classes > 1 else 0.0
        self.b_mean, self.b_precision, self.step_tol = b_mean, b_precision, step_tol
        self.prior = np.repeat(log_prior[None, :], n_items, axis=0)
        if evidence.shape[0] > 0:
            self.prior = self.prior + evidence
        self.all = _Rows(item_ptr, np.arange(n_items))
        self.counts = np.bincount(self.all.local * n_classes + label,
                                  minlength=n_items * n_classes).reshape(n_items, n_classes)
        self.counts = self.counts.astype(np.float64)

    def objective(self, rows, b):
        """:func:`item_objective` of ``rows`` at ``b``."""
        return item_objective_numpy(rows, self.a[rows.source], self.label[rows.source],
                                    self.prior[rows.items], self.counts[rows.items], b,
                                    self.log_km1, self.b_mean, self.b_precision)

    def fit(self, rows, b, max_steps):
        """:func:`fit_item` for every row at once, from ``b``: each row's
        steps, halvings and stops as the kernel takes them.  Returns
        ``(b, value)``."""
        b = np.array(b, dtype=np.float64)
        value, gradient, hessian = self.objective(rows, b)[:3]
        active = np.ones(rows.n_rows, dtype=bool)
        precision = self.b_precision
        for _ in range(max_steps):
            if not active.any():
                break
            curv = np.where(hessian < -1e-3 * precision, hessian, -precision)
            step = np.clip(-gradient / curv, -MAX_STEP, MAX_STEP)
            active &= ~(np.abs(step) < self.step_tol)
            pending = active.copy()
            accepted = np.zeros(rows.n_rows, dtype=bool)
            trial = b.copy()
            for _h in range(MAX_HALVINGS):
                if not pending.any():
                    break
                sub = rows.take(pending)
                t_b = b[pending] + step[pending]
                t_value, t_gradient, t_hessian = self.objective(sub, t_b)[:3]
                ok = t_value >= value[pending]
                where = np.flatnonzero(pending)[ok]
                trial[where] = t_b[ok]
                value[where], gradient[where], hessian[where] = (
                    t_value[ok], t_gradient[ok], t_hessian[ok])
                accepted[where] = True
                pending[where] = False
                step[pending] *= 0.5
            b = np.where(accepted, trial, b)
            active &= accepted & ~(np.abs(step) < self.step_tol)
        return b, value

    def grid_maxima(self, grid):
        """:func:`grid_maxima` of every item: ``(first, second)`` grid
        indices, -1 where there is none."""
        rows, n_classes, log_km1 = self.all, self.n_classes, self.log_km1
        n_items, n_grid = rows.n_rows, grid.shape[0]
        values = np.zeros((n_items, n_grid))
        terms = np.zeros((n_items, n_grid, n_classes))
        if n_classes > 1:
            grid_beta = libm(np.exp, np.minimum(grid, 700.0))
            t = np.clip(self.a[:, None] * grid_beta[None, :], -T_MAX, T_MAX)
            with np.errstate(over="ignore"):
                soft = np.maximum(t, 0.0) + libm(np.log1p, libm(np.exp, -np.abs(t))) + log_km1
            cost = np.where(t > 36.0, t + log_km1, np.where(t < -36.0, log_km1, soft))
            cells = rows.local[:, None] * n_grid + np.arange(n_grid)[None, :]
            values = _sums(cells.ravel(), weights=-cost.ravel(),
                                 minlength=n_items * n_grid).reshape(n_items, n_grid)
            terms = _sums((cells * n_classes + self.label[:, None]).ravel(),
                                weights=t.ravel(), minlength=n_items * n_grid * n_classes)
            terms = terms.reshape(n_items, n_grid, n_classes)
        terms += (self.prior + self.counts * log_km1)[:, None, :]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            top = terms.max(axis=2)
            shifted = libm(np.exp, terms - top[:, :, None])
            total = np.zeros((n_items, n_grid))
            for k in range(n_classes):
                total += shifted[:, :, k]
            d = grid - self.b_mean
            values += top + libm(np.log, total) - 0.5 * self.b_precision * d * d
        previous = np.concatenate([np.full((n_items, 1), -np.inf), values[:, :-1]], axis=1)
        following = np.concatenate([values[:, 1:], np.full((n_items, 1), -np.inf)], axis=1)
        candidates = np.where((values >= previous) & (values > following), values, -np.inf)
        first = np.argmax(candidates, axis=1)
        found = candidates[np.arange(n_items), first] > -np.inf
        first = np.where(found, first, -1)
        candidates[np.arange(n_items)[found], first[found]] = -np.inf
        second = np.argmax(candidates, axis=1)
        found = candidates[np.arange(n_items), second] > -np.inf
        second = np.where(found, second, -1)
        return first, second


def add_rater_terms_numpy(rows, rater, label, beta, weights, sigma, block, out):
    """:func:`add_rater_terms` for every item of ``rows`` at once, each into
    the statistics of its block ``out[block[i]]`` (the sums in rating
    order)."""
    n_blocks, n_raters = out.shape[0], out.shape[1]
    local = rows.local
    item_beta = beta[local]
    b2 = item_beta * item_beta
    key = block[local] * n_raters + rater
    size = n_blocks * n_raters
    flat = out.reshape(size, 4)
    flat[:, 0] += _sums(key, weights=(weights[local, label] - sigma) * item_beta,
                              minlength=size)
    flat[:, 1] += _sums(key, weights=-(sigma * (1.0 - sigma) * b2), minlength=size)
    flat[:, 2] += _sums(key, weights=0.25 * b2, minlength=size)
    np.fmax.at(flat[:, 3], key, item_beta)


def item_step_numpy(item_ptr, rater, label, alpha, log_prior, evidence, b_mean, b_precision,
                    max_steps, step_tol, grid, log_beta, beta, posterior, loglik,
                    rater_stats, sigma):
    """:func:`item_step` in numpy: every item's candidates, steps and
    halvings as the kernel takes them, vectorised over the items."""
    problem = _ItemProblem(item_ptr, rater, label, alpha, log_prior, evidence, b_mean,
                           b_precision, step_tol)
    rows = problem.all
    n_items = rows.n_rows
    b = np.array(log_beta, dtype=np.float64)
    value = np.full(n_items, -np.inf)
    if max_steps > 0:
        b, value = problem.fit(rows, b, max_steps)
    if grid.shape[0] > 0:
        for g in problem.grid_maxima(grid):
            keep = g >= 0
            trial_b, trial_value = problem.fit(rows.take(keep), grid[g[keep]], SEARCH_STEPS)
            where = np.flatnonzero(keep)
            better = trial_value > value[where]
            b[where[better]] = trial_b[better]
            value[where[better]] = trial_value[better]
    value, _g, _h, weights, s = problem.objective(rows, b)
    log_beta[:] = b
    beta[:] = libm(np.exp, b)
    d = b - b_mean
    loglik[:] = value + 0.5 * b_precision * d * d
    posterior[:] = weights
    sigma[rows.source] = s
    if rater_stats.shape[0] > 0:
        rater_stats[:] = 0.0
        if problem.n_classes > 1:
            n_blocks = rater_stats.shape[0]
            starts = np.arange(n_blocks) * n_items // n_blocks
            block = np.searchsorted(starts, np.arange(n_items), side="right") - 1
            add_rater_terms_numpy(rows, rater, label, beta, weights, s, block, rater_stats)


def item_marginal_numpy(item_ptr, rater, label, alpha, log_prior, nodes, log_weights,
                        loglik, node_posterior):
    """:func:`item_marginal` in numpy: one row per (item, node)."""
    n_items, n_nodes = item_ptr.shape[0] - 1, nodes.shape[0]
    problem = _ItemProblem(item_ptr, rater, label, alpha, log_prior,
                           np.zeros((0, log_prior.shape[0])), 0.0, 0.0, 0.0)
    # nodes in groups, so that a group's rows hold ~1e6 ratings at most
    group = max(1, min(n_nodes, 1_000_000 // max(rater.shape[0], 1)))
    for first in range(0, n_nodes, group):
        these = nodes[first:first + group]
        rows = _Rows(item_ptr, np.repeat(np.arange(n_items), len(these)))
        value = problem.objective(rows, np.tile(these, n_items))[0]
        node_posterior[:, first:first + group] = (log_weights[first:first + group][None, :]
                                                  + value.reshape(n_items, len(these)))
    loglik[:] = normalize_log_rows_kernel(node_posterior)


#: ratings from which GLAD's item-level kernels run in parallel (its
#: Newton ascents cost far more per rating than a Dawid-Skene E-step)
PARALLEL_MIN_RATINGS = 10_000


def _n_ratings(item_ptr, rater, *rest):
    return rater.shape[0]


@with_numpy_twin(item_step_numpy, size=_n_ratings, limit=NUMPY_MAX_RATINGS)
@serial_and_parallel(parallel_min=PARALLEL_MIN_RATINGS)
def item_step(item_ptr, rater, label, alpha, log_prior, evidence, b_mean, b_precision,
              max_steps, step_tol, grid, log_beta, beta, posterior, loglik,
              rater_stats, sigma):
    """Local step: the MAP b_i of every item, then its posterior and log
    marginal.

    Each item's b is the best of up to three candidates: ``max_steps``
    safeguarded Newton steps from the warm start ``log_beta[i]`` (skipped
    when ``max_steps`` is 0), and Newton ascents to convergence from the two
    best local maxima of the log posterior on ``grid`` (:func:`grid_maxima`;
    skipped when ``grid`` is empty), both always: the second grid maximum
    can lie below the first's mode and still lead to a higher one.  The
    warm candidate keeps the fit's objective from decreasing; the
    search finds the best mode wherever the grid reaches its basin, as a
    function of (α, π) alone, so that fit and predict agree.

    Parameters
    ----------
    item_ptr : int64 (n_items + 1,)
    rater, label : int32 (n_ratings,)
    alpha : float64 (n_raters,)
        Rater abilities, held fixed.
    log_prior : float64 (n_classes,)
        log π.
    evidence : float64 (n_items, n_classes) or (0, n_classes)
        Per-item offsets added to ``log_prior`` (the gold clamp: 0 / -inf),
        or no rows for none.
    b_mean, b_precision : float
        The N(b_mean, 1/b_precision) prior on b_i.
    max_steps : int
        Newton steps from the warm start at most (0: no warm candidate).
    step_tol : float
        Stop an item when its Newton step is below this.
    grid : float64 (n_grid,)
        Start points of the global search, increasing (empty: no search).
    log_beta : float64 (n_items,), input and output
        b_i: the warm start on entry, the result on exit.
    beta : float64 (n_items,), output
        β_i = exp(b_i), for the by-rater pass.
    posterior : float64 (n_items, n_classes), output
        P(z_i = k | ratings, α, b_i, π).
    loglik : float64 (n_items,), output
        log p(ratings of i | α, b_i, π) with z_i summed out (0 without
        ratings).
    rater_stats : float64 (n_blocks, n_raters, 4), output
        Per block of items, the by-rater sums (and maximum β) of
        :func:`add_rater_terms` at the final b_i and posterior (while the
        item's ratings are in cache), or ``n_blocks = 0`` to skip them
        (prediction); the caller sums them (the maximum: maximises) over
        blocks in order.
    sigma : float64 (n_ratings,), output
        σ(α_j β_i) of each rating at the final b_i.
    """
    n_items = item_ptr.shape[0] - 1
    n_classes = log_prior.shape[0]
    log_km1 = np.log(n_classes - 1.0) if n_classes > 1 else 0.0
    with_raters = rater_stats.shape[0] > 0 and n_classes > 1
    grid_beta = np.exp(np.minimum(grid, 700.0))
    n_blocks = rater_stats.shape[0] if rater_stats.shape[0] > 0 else min(n_items, 256)
    # typed int64 like max_steps, so fit_item compiles once (a literal 100
    # made numba compile a second specialisation)
    search_steps = np.int64(SEARCH_STEPS)
    for block in prange(n_blocks):
        if rater_stats.shape[0] > 0:
            rater_stats[block] = 0.0
        class_terms = np.empty(n_classes)
        class_counts = np.empty(n_classes)
        weights = np.empty(n_classes)
        grid_terms = np.empty((grid.shape[0], n_classes))
        grid_values = np.empty(grid.shape[0])
        item_prior = np.empty(n_classes)
        for i in range(block * n_items // n_blocks, (block + 1) * n_items // n_blocks):
            start, stop = item_ptr[i], item_ptr[i + 1]
            for k in range(n_classes):
                item_prior[k] = log_prior[k]
                if evidence.shape[0] > 0:
                    item_prior[k] += evidence[i, k]
            for k in range(n_classes):
                class_counts[k] = 0.0
            for n in range(start, stop):
                class_counts[label[n]] += 1.0
            b = log_beta[i]
            value = -np.inf
            if max_steps > 0:
                b, value = fit_item(start, stop, rater, label, alpha, item_prior, b,
                                    log_km1, b_mean, b_precision, max_steps, step_tol,
                                    class_terms, class_counts, weights, sigma)
            if grid.shape[0] > 0:
                # Ascend from the grid's two best local maxima, both always:
                # a mode whose grid value is below the best candidate so far
                # can still end above it (TREC 2010, item 3020: grid values
                # -7.278 and -7.291, modes -7.2632 and -7.2601), and skipping
                # its ascent left predict in the poorer mode where the fit's
                # warm candidate had the better one.
                first, second = grid_maxima(
                    start, stop, rater, label, alpha, item_prior, log_km1, b_mean,
                    b_precision, grid, grid_beta, class_counts, grid_terms, grid_values)
                for g in (first, second):
                    if g >= 0:
                        trial_b, trial_value = fit_item(
                            start, stop, rater, label, alpha, item_prior, grid[g], log_km1,
                            b_mean, b_precision, search_steps, step_tol, class_terms,
                            class_counts, weights, sigma)
                        if trial_value > value:
                            b, value = trial_b, trial_value
            # The posterior and σ at the chosen b (the last evaluation may
            # have been another candidate's).
            value, _g, _h = item_objective(start, stop, rater, label, alpha, item_prior, b,
                                           log_km1, b_mean, b_precision, class_terms,
                                           class_counts, weights, sigma)
            log_beta[i] = b
            beta[i] = np.exp(b)
            d = b - b_mean
            loglik[i] = value + 0.5 * b_precision * d * d
            for k in range(n_classes):
                posterior[i, k] = weights[k]
            if with_raters:
                add_rater_terms(start, stop, rater, label, beta[i], weights,
                                sigma, rater_stats[block])


@with_numpy_twin(item_marginal_numpy, size=_n_ratings, limit=NUMPY_MAX_RATINGS)
@serial_and_parallel(parallel_min=PARALLEL_MIN_RATINGS)
def item_marginal(item_ptr, rater, label, alpha, log_prior, nodes, log_weights,
                  loglik, node_posterior):
    """log ∫ p(ratings of i | α, b, π) N(b) db by quadrature, z summed out.

    ``nodes`` are the values of b and ``log_weights`` their log weights
    (Gauss–Hermite rule for the N(b_mean, 1/b_precision) prior, summing to
    one).  ``node_posterior[i, q]`` receives P(b_i = nodes[q] | ratings).
    """
    n_items = item_ptr.shape[0] - 1
    n_classes = log_prior.shape[0]
    n_nodes = nodes.shape[0]
    sigma = np.empty(rater.shape[0])  # scratch, one slot per rating
    log_km1 = np.log(n_classes - 1.0) if n_classes > 1 else 0.0
    n_blocks = min(n_items, 256)
    for block in prange(n_blocks):
        class_terms = np.empty(n_classes)
        class_counts = np.empty(n_classes)
        weights = np.empty(n_classes)
        for i in range(block * n_items // n_blocks, (block + 1) * n_items // n_blocks):
            start, stop = item_ptr[i], item_ptr[i + 1]
            for k in range(n_classes):
                class_counts[k] = 0.0
            for n in range(start, stop):
                class_counts[label[n]] += 1.0
            row = node_posterior[i]
            for q in range(n_nodes):
                # Precision 0: the prior term vanishes, leaving log p(y | b).
                value, _g, _h = item_objective(
                    start, stop, rater, label, alpha, log_prior, nodes[q],
                    log_km1, 0.0, 0.0, class_terms, class_counts, weights, sigma)
                row[q] = log_weights[q] + value
            loglik[i] = normalize_log_inplace(row)
