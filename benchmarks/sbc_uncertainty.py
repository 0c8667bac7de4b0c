"""Simulation-based calibration of skcrowd.uncertainty (Talts et al. 2018).

Each replication draws the global parameters from the model's own prior,
simulates ratings from its likelihood, fits the model and draws its
posterior; the central 50% and 90% intervals of the prevalence and of
every rater parameter must then contain the true value at those rates.
Coverage is pooled over replications (prevalence) and over raters and
replications (rater parameters); the binomial standard error is printed
beside it (for the rater rows it counts replications, not raters, which is
the conservative count: the raters of one replication share its items).

Two sizes: "few" (many raters, about 9 ratings each) and "many" (few
raters, hundreds of ratings each).  The "few" runs also compare the item
probabilities integrated over the posterior with the plug-in ones on the
true labels (log loss, expected calibration error).

    python benchmarks/sbc_uncertainty.py --reps 200 --sizes few
    python benchmarks/sbc_uncertainty.py --reps 100 --sizes many
    python benchmarks/sbc_uncertainty.py --reps 200 --sizes many --thin 1 --burnin 100
    python benchmarks/sbc_uncertainty.py --reps 50 --n-samples 40 --method bootstrap
    python benchmarks/sbc_uncertainty.py --model irt --reps 40 --n-samples 150
    python benchmarks/sbc_uncertainty.py --model irt --reps 40 --n-samples 150 --thin 3
    python benchmarks/sbc_uncertainty.py --model mace --reps 200 --seed 2
    python benchmarks/sbc_uncertainty.py --model glad --reps 200 --sizes few --seed 2
    python benchmarks/sbc_uncertainty.py --model glad --reps 200 --sizes many --seed 4
    python benchmarks/sbc_uncertainty.py --model ordinal --reps 200 --seed 5
    python benchmarks/sbc_uncertainty.py --model pooled --reps 100 --seed 6 --thin 5
    python benchmarks/sbc_uncertainty.py --model pooled --reps 60 --sizes many --thin 20 --seed 6
    python benchmarks/sbc_uncertainty.py --model ebcc --reps 200

OrdinalMixture's rater rows are its reliability ε_n and its noise
precision τ_n δ (the product the ratings identify; τ and δ apart only
through their priors); its prevalence (the share of items per level) is
also scored by its rank among the draws with ties split at random
("prev. rank"), as a share of 60 items takes few values.

EBCC is simulated with ``prior_class=1`` (its default empirical prior is
computed from the ratings themselves, not a prior to simulate from); its
rater rows are the subtype-marginal confusion entries Σ_m π_km v_jkm
(specificity k = 0, sensitivity k = 1) and the accuracy Σ_k τ_k
confusion_kk, which do not depend on how the subtypes are numbered.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcrowd import (EBCC, GLAD, MACE, DawidSkene, IRT3PL, OrdinalMixture, PooledDawidSkene,
                     Ratings)
from skcrowd._pooled import dirichlet_log_draw, identifying_relabelling
from skcrowd.datasets import make_irt
from skcrowd.datasets._generators import random_design
from skcrowd._ordinal import _PRECISION_HYPERPRIOR
from skcrowd.uncertainty import interval, posterior_samples, predict_proba

SIZES = {
    # n_items, n_raters, ratings_per_item
    "few": (60, 20, 3),
    "many": (400, 4, 4),
}
LEVELS = (0.5, 0.9)


def simulate_dawid_skene(model, n_items, n_raters, per_item, rng):
    """π, θ from DawidSkene's Dirichlet priors (α = pseudo-count + 1), then
    ratings from its likelihood."""
    K = 2
    pi = rng.dirichlet(np.full(K, model.prior_class + 1.0))
    pseudo = model._pseudo_counts(K) + 1.0
    theta = np.stack([[rng.dirichlet(pseudo[k]) for k in range(K)] for _ in range(n_raters)])
    z = rng.choice(K, size=n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, rng)
    u = rng.random(len(item))
    label = (u > theta[rater, z[item], 0]).astype(int)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return ratings, z, {"prevalence": pi[1:], "specificity": theta[:, 0, 0],
                        "sensitivity": theta[:, 1, 1]}


def simulate_irt(n_items, n_raters, per_item, rng):
    """IRT3PL (full, the paper's fixed item priors) from its priors: π ~
    Beta(2, 2), α^sens ~ N(1, 2²), α^spec ~ N(2, 2²) above the spam line."""
    pi = rng.beta(2, 2)
    abilities = np.empty((n_raters, 2))
    for j in range(n_raters):
        while True:
            a = rng.normal([1.0, 2.0], 2.0)
            if a.sum() > 0:
                abilities[j] = a
                break
    data = make_irt(n_items, n_raters, per_item, tag="full", prevalence=pi,
                    rater_abilities=abilities, difficulty_scale=1.0,
                    discrimination_scale=0.25, guessing_mean=0.0,
                    guessing_scale=float(np.sqrt(2 * (np.pi**2 / 6 - 1))),
                    random_state=rng.randint(2**31 - 1))
    return data.ratings, data.true_labels, {"prevalence": np.array([pi]),
                                            "alpha_sens": abilities[:, 0],
                                            "alpha_spec": abilities[:, 1]}


def simulate_mace(model, n_items, n_raters, per_item, rng):
    """MACE from its priors (Hovy et al. 2013): θ_j ~ Beta(prior_knowing,
    prior_spamming), ξ_j ~ Dirichlet(prior_strategy), π ~
    Dirichlet(prior_class + 1); a rater knows (gives the true class) with
    probability θ_j, else draws from ξ_j."""
    K = 2
    pi = rng.dirichlet(np.full(K, model.prior_class + 1.0))
    theta = rng.beta(model.prior_knowing, model.prior_spamming, n_raters)
    xi = rng.dirichlet(np.full(K, model.prior_strategy), n_raters)
    z = rng.choice(K, size=n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, rng)
    knew = rng.random(len(item)) < theta[rater]
    spam = (rng.random(len(item)) < xi[rater, 1]).astype(int)
    label = np.where(knew, z[item], spam)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return ratings, z, {"prevalence": pi[1:], "competence": theta, "spam_1": xi[:, 1]}


def simulate_glad(model, n_items, n_raters, per_item, rng):
    """GLAD from its priors (Whitehill et al. 2009): α_j ~ N(1, 1), b_i ~
    N(1, 1), π ~ Dirichlet(prior_class + 1) (learned prevalence); a rater
    is right with probability σ(α_j exp(b_i))."""
    K = 2
    pi = rng.dirichlet(np.full(K, model.prior_class + 1.0))
    alpha = rng.normal(model.alpha_prior_mean, model.alpha_prior_std, n_raters)
    b = rng.normal(model.b_prior_mean, model.b_prior_std, n_items)
    z = rng.choice(K, size=n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, rng)
    right = rng.random(len(item)) < 1 / (1 + np.exp(-alpha[rater] * np.exp(b[item])))
    label = np.where(right, z[item], 1 - z[item])
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return ratings, z, {"prevalence": pi[1:], "ability": alpha}


def simulate_ordinal(model, n_items, n_raters, per_item, rng):
    """OrdinalMixture (Lakshminarayanan & Teh 2013) from the sampler's
    priors: α, β from the hyperprior, τ_n ~ Gamma(α, β), δ ~ Gamma(φ, η),
    ε_n ~ U(0, 1), z_m ~ N(μ, 1/λ); a genuine rating bins x ~ N(z_m,
    1/(τ_n δ)) at the model's thresholds (outer bins open-ended), a spam
    one is uniform over the levels.  The prevalence is the share of the
    items whose z falls in each bin."""
    values = np.asarray(model.classes, dtype=float)
    K = len(values)
    (a_alpha, b_alpha), (a_beta, b_beta) = _PRECISION_HYPERPRIOR
    alpha = rng.gamma(a_alpha, 1.0 / b_alpha)
    beta = rng.gamma(a_beta, 1.0 / b_beta)
    tau = rng.gamma(alpha, 1.0 / beta, n_raters)
    delta = rng.gamma(model.difficulty_shape, 1.0 / model.difficulty_rate)
    eps = rng.random(n_raters)
    z = rng.normal(values.mean(), 1.0 / np.sqrt(model.prior_precision), n_items)
    item, rater = random_design(n_items, n_raters, per_item, rng)
    x = z[item] + rng.standard_normal(len(item)) / np.sqrt(tau[rater] * delta)
    inner = np.asarray(model.thresholds, dtype=float)[1:-1]
    label = np.searchsorted(inner, x, side="right")
    spam = rng.random(len(item)) >= eps[rater]
    label[spam] = rng.randint(0, K, int(spam.sum()))
    ratings = Ratings(item, rater, values[label], item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    share = np.bincount(np.searchsorted(inner, z, side="right"), minlength=K) / n_items
    return ratings, z, {"prevalence": share[1:], "reliability": eps,
                        "noise_precision": tau * delta}


def simulate_pooled(model, n_items, n_raters, per_item, rng):
    """PooledDawidSkene (Paun et al. 2018) from the sampler's priors: each
    population row's mean m_k uniform and its concentration s_k = 1/u² - 1
    (u uniform: density ½(1 + s)^(-3/2)), the rows renamed into the
    identified labelling; θ_j[k] ~ Dir(s_k m_k), π ~ Dir(prior_class + 1)."""
    K = 2
    pi = rng.dirichlet(np.full(K, model.prior_class + 1.0))
    mean = rng.dirichlet(np.ones(K), size=K)
    mean = mean[identifying_relabelling(mean)]
    concentration = 1.0 / rng.uniform(0, 1, K) ** 2 - 1.0
    alpha = concentration[:, None] * mean
    theta = np.exp(dirichlet_log_draw(np.repeat(alpha[None], n_raters, axis=0), rng))
    z = rng.choice(K, size=n_items, p=pi)
    item, rater = random_design(n_items, n_raters, per_item, rng)
    label = (rng.random(len(item)) > theta[rater, z[item], 0]).astype(int)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    return ratings, z, {"prevalence": pi[1:], "specificity": theta[:, 0, 0],
                        "sensitivity": theta[:, 1, 1], "pop_spec": mean[:1, 0],
                        "pop_sens": mean[1:, 1], "log_conc": np.log(concentration)}


def simulate_ebcc(model, n_items, n_raters, per_item, rng):
    """EBCC (Li, Rubinstein & Cohn 2019) from the priors of its fit: τ ~
    Dirichlet(prior_class), π_k ~ Dirichlet(a_π / M, ...), each row v_jkm
    ~ Dirichlet(β_k) (β_kk = prior_correct, β_kl = prior_wrong); an item's
    class from τ, its subtype from π_z, each rating from v_{j z g}.  The
    rater truths are the subtype-marginal confusion Σ_m π_km v_jkm."""
    K, M = 2, model.n_subtypes
    tau = rng.dirichlet(np.full(K, model.prior_class))
    # Gamma(a) = Gamma(a + 1) U^(1/a), in logs: a = a_π / M = 0.01 underflows
    a = model.prior_subtype / M
    log_gamma = (np.log(rng.gamma(a + 1.0, size=(K, M)))
                 + np.log1p(-rng.random_sample((K, M))) / a)
    pi = np.exp(log_gamma - log_gamma.max(axis=1, keepdims=True))
    pi /= pi.sum(axis=1, keepdims=True)
    beta = np.where(np.eye(K, dtype=bool), model.prior_correct, model.prior_wrong)
    v = np.stack([[[rng.dirichlet(beta[k]) for _ in range(M)] for k in range(K)]
                  for _ in range(n_raters)])
    z = rng.choice(K, size=n_items, p=tau)
    g = np.array([rng.choice(M, p=pi[k]) for k in z])
    item, rater = random_design(n_items, n_raters, per_item, rng)
    label = (rng.random_sample(len(item)) > v[rater, z[item], g[item], 0]).astype(int)
    ratings = Ratings(item, rater, label, item_ids=np.arange(n_items),
                      rater_ids=np.arange(n_raters))
    confusion = np.einsum("km,jkml->jkl", pi, v)
    return ratings, z, {"prevalence": tau[1:], "specificity": confusion[:, 0, 0],
                        "sensitivity": confusion[:, 1, 1],
                        "accuracy": np.diagonal(confusion, axis1=1, axis2=2) @ tau}


def drawn(name, samples):
    if name == "prevalence":
        return samples["class_prior_"][:, 1:]
    if name == "specificity":
        return samples["confusion_"][:, :, 0, 0]
    if name == "sensitivity":
        return samples["confusion_"][:, :, 1, 1]
    if name == "competence":
        return samples["rater_competence_"]
    if name == "spam_1":
        return samples["spam_distribution_"][:, :, 1]
    if name == "ability":
        return samples["rater_ability_"]
    if name == "accuracy":
        return samples["rater_accuracy_"]
    if name == "reliability":
        return samples["rater_reliability_"]
    if name == "pop_spec":
        return samples["population_confusion_"][:, :1, 0]
    if name == "pop_sens":
        return samples["population_confusion_"][:, 1:, 1]
    if name == "log_conc":
        return np.log(samples["population_"].sum(axis=-1))
    if name == "noise_precision":
        return samples["rater_precision_"] * samples["group_difficulty_"][:, :1]
    return samples[name + "_"]


def calibration(proba, truth, n_bins=10):
    """Log loss and expected calibration error (equal-width bins of the
    probability of class 1) on the true labels."""
    p = np.clip(proba[:, 1], 1e-12, 1 - 1e-12)
    log_loss = -np.mean(np.where(truth == 1, np.log(p), np.log1p(-p)))
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    ece = sum(abs(p[bins == b].mean() - truth[bins == b].mean()) * np.mean(bins == b)
              for b in range(n_bins) if np.any(bins == b))
    return log_loss, ece


def run(model_name, method, size, reps, n_samples, seed, thin=None, n_burnin=None):
    rng = np.random.RandomState(seed)
    ties = np.random.RandomState(seed + 1)
    hits = {}
    plug, integrated, truths = [], [], []
    start = time.perf_counter()
    for _ in range(reps):
        n_items, n_raters, per_item = SIZES[size]
        if model_name == "dawid_skene":
            model = DawidSkene(classes=[0, 1])
            ratings, z, truth = simulate_dawid_skene(model, n_items, n_raters, per_item, rng)
        elif model_name == "mace":
            model = MACE(classes=[0, 1], random_state=0)
            ratings, z, truth = simulate_mace(model, n_items, n_raters, per_item, rng)
        elif model_name == "ordinal":
            model = OrdinalMixture(classes=[1, 2, 3, 4, 5], prior_precision=1.0,
                                   thresholds=[-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf],
                                   n_init=2, random_state=0)
            ratings, z, truth = simulate_ordinal(model, n_items, n_raters, per_item, rng)
        elif model_name == "pooled":
            model = PooledDawidSkene(classes=[0, 1])
            ratings, z, truth = simulate_pooled(model, n_items, n_raters, per_item, rng)
        elif model_name == "ebcc":
            model = EBCC(classes=[0, 1], prior_class=1.0, random_state=0)
            ratings, z, truth = simulate_ebcc(model, n_items, n_raters, per_item, rng)
        elif model_name == "glad":
            model = GLAD(classes=[0, 1], class_prior="learn")
            ratings, z, truth = simulate_glad(model, n_items, n_raters, per_item, rng)
        else:
            model = IRT3PL(learn_item_prior=False, classes=[0, 1], random_state=0)
            ratings, z, truth = simulate_irt(n_items, n_raters, per_item, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            # PooledDawidSkene's chain renames a fit in the labelling its
            # hyperprior excludes, and says so
            warnings.filterwarnings("ignore", message="the fitted population")
            model.fit(ratings)
            options = {} if method == "bootstrap" else {"thin": thin, "n_burnin": n_burnin}
            samples = posterior_samples(model, ratings, n_samples, method=method,
                                        random_state=rng, **options)
        for name, value in truth.items():
            draws = drawn(name, samples)
            for level in LEVELS:
                low, high = interval(draws, level)
                inside = (low <= value) & (value <= high)
                hits.setdefault((name, level), []).append(inside)
                if model_name == "ordinal" and name == "prevalence":
                    # a share of items takes few values: the inclusive
                    # interval over-covers on ties, so also the rank with
                    # ties split at random (Talts et al. 2018)
                    rank = ((draws < value).mean(axis=0)
                            + ties.random(value.shape) * (draws == value).mean(axis=0))
                    inside = np.abs(rank - 0.5) <= level / 2
                    hits.setdefault(("prev. rank", level), []).append(inside)
        if model_name not in ("irt", "ordinal") and size == "few":
            plug.append(model.predict_proba(ratings))
            integrated.append(predict_proba(model, ratings, samples=samples))
            truths.append(z)
    seconds = time.perf_counter() - start
    rows = []
    for (name, level), values in sorted(hits.items()):
        values = np.concatenate(values)
        rate = values.mean()
        se = np.sqrt(level * (1 - level) / reps)
        rows.append((name, level, rate, se, len(values)))
    calib = None
    if plug:
        truth = np.concatenate(truths)
        calib = (calibration(np.concatenate(plug), truth),
                 calibration(np.concatenate(integrated), truth))
    return rows, calib, seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["dawid_skene", "irt", "mace", "glad", "ordinal",
                                            "pooled", "ebcc"],
                        default="dawid_skene")
    parser.add_argument("--method", default="auto")
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--n-samples", type=int, default=200)
    parser.add_argument("--sizes", default="few,many")
    parser.add_argument("--seed", type=int, default=0)
    # default: the library's (200 burn-in sweeps and thin 5 for DawidSkene,
    # MACE and OrdinalMixture, 10 for GLAD, 20 for PooledDawidSkene;
    # IRT3PL 100, thin 1)
    parser.add_argument("--thin", type=int, default=None)
    parser.add_argument("--burnin", type=int, default=None)
    args = parser.parse_args()
    for size in args.sizes.split(","):
        rows, calib, seconds = run(args.model, args.method, size, args.reps, args.n_samples,
                                   args.seed, args.thin, args.burnin)
        n_items, n_raters, per_item = SIZES[size]
        print(f"\n{args.model} method={args.method} size={size} ({n_items} items, "
              f"{n_raters} raters, {per_item} per item, about "
              f"{n_items * per_item // n_raters} ratings per rater), {args.reps} replications, "
              f"{args.n_samples} draws (thin {args.thin or 'default'}, burn-in "
              f"{args.burnin if args.burnin is not None else 'default'}), {seconds:.0f} s")
        print(f"{'parameter':<12} {'level':>5} {'coverage':>8} {'± 2 se':>7} {'n':>6}")
        for name, level, rate, se, n in rows:
            flag = "" if abs(rate - level) <= 2 * se else "  <- outside 2 se"
            print(f"{name:<12} {level:>5.2f} {rate:>8.3f} {2 * se:>7.3f} {n:>6}{flag}")
        if calib is not None:
            (ll_p, ece_p), (ll_i, ece_i) = calib
            print(f"item probabilities on the true labels: plug-in log loss {ll_p:.4f} "
                  f"ECE {ece_p:.4f}; integrated log loss {ll_i:.4f} ECE {ece_i:.4f}")


if __name__ == "__main__":
    main()
