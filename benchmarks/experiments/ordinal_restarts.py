"""OrdinalMixture's restarts at the paper's defaults: could a shortcut skip
the losing ones, and does SQUAREM cut the passes without changing the result?

Run::

    PYTHONPATH=. python benchmarks/experiments/ordinal_restarts.py            # TREC and web
    PYTHONPATH=. python benchmarks/experiments/ordinal_restarts.py --data trec --accelerate

Sections, per data set (TREC 2010 with the paper's preprocessing; web):

race       one default fit (10 restarts, tol 0.1, random_state=0): each
           restart's passes and final bound F, and F minus the best final F
           after 25, 50, ..., 250 passes.  A restart shortcut would abandon a
           restart whose bound trails; the rows show whether the restart that
           wins was ever behind, and for how long.
plateaus   per restart, the largest ratio of the gain still to come
           (final F - F after pass k) to the mean gain of the last 10 passes,
           over k >= 20, and where it occurs: an extrapolation of a restart's
           final bound from its recent progress has to allow at least that
           factor not to abandon it wrongly.
accelerate (``--accelerate``) the same fit with ``accelerate=True`` (SQUAREM on
           q(τ), (α, β) and a shared q(δ), as shipped) and with a variant that
           also extrapolates logit ε and the items' q(z) (``--full-vector``):
           passes, final F per restart, the chosen restart and the metrics.

Pass counts and bounds do not depend on the machine; CPU seconds are
``time.process_time`` of the whole process (restarts run in two threads).
"""

import argparse
import os
import sys
import time

import numpy as np
from scipy.special import expit

sys.path.insert(0, os.path.dirname(__file__))

from skcrowd import OrdinalMixture  # noqa: E402
from skcrowd.datasets import load_trec2010, load_web  # noqa: E402
from skcrowd.metrics import ordinal_scores  # noqa: E402

CHECKPOINTS = (25, 50, 75, 100, 150, 200, 250)


class FullVectorOrdinal(OrdinalMixture):
    """OrdinalMixture with logit ε and the items' (μ, log λ) extrapolated as
    well (an experiment; not shipped)."""

    def _params_to_vector(self, params):
        with np.errstate(divide="ignore"):
            logit_eps = np.log(params["eps"]) - np.log(params["eps_c"])
        return np.concatenate([super()._params_to_vector(params), logit_eps,
                               params["mu"], np.log(params["lam"])])

    def _params_from_vector(self, vector, params):
        J, n = len(params["tau_shape"]), len(params["mu"])
        head = len(vector) - J - 2 * n
        new = super()._params_from_vector(vector[:head], params)
        logit_eps = vector[head:head + J]
        new["eps"], new["eps_c"] = expit(logit_eps), expit(-logit_eps)
        new["mu"] = vector[head + J:head + J + n]
        new["lam"] = np.exp(np.clip(vector[head + J + n:], -50.0, 50.0))
        return new


def _load(name):
    if name == "trec":
        data = load_trec2010(preprocess="paper")
        return data, data.groups
    return load_web(), None


def _fit(model, data, groups):
    cpu = time.process_time()
    z = model.fit_predict(data.ratings, groups=groups)
    cpu = time.process_time() - cpu
    scores = ordinal_scores(data.gold, z, groups)
    return model, z, cpu, scores


def _scores_text(scores):
    return ", ".join(f"{k} {v:.4f}" for k, v in scores.items())


def race(name, data, groups):
    model, z, cpu, scores = _fit(OrdinalMixture(random_state=0, n_jobs=2), data, groups)
    histories = model._restart_histories
    finals = np.array([h[-1] for h in histories])
    best = int(np.argmax(finals))
    print(f"\n## {name}: default fit, {cpu:.1f} s CPU, "
          f"{sum(model._restart_n_iter)} passes in all; chosen restart {best + 1}; "
          f"{_scores_text(scores)}\n")
    header = " | ".join(f"after {k}" for k in CHECKPOINTS)
    print(f"| restart | passes | final F | {header} |")
    print("|---" * (3 + len(CHECKPOINTS)) + "|")
    for r, h in enumerate(histories):
        gaps = " | ".join(f"{h[min(k, len(h) - 1)] - finals[best]:.1f}" for k in CHECKPOINTS)
        mark = " (chosen)" if r == best else ""
        print(f"| {r + 1}{mark} | {len(h) - 1} | {h[-1]:.2f} | {gaps} |")
    # when the winner last trailed another restart at the same pass count
    trailing = [k for k in range(1, len(histories[best]))
                if any(histories[best][k] < h[min(k, len(h) - 1)]
                       for r, h in enumerate(histories) if r != best)]
    if trailing:
        print(f"\nThe chosen restart trails another restart at the same pass count "
              f"{len(trailing)} times, last after pass {trailing[-1]} "
              f"(it ends after {len(histories[best]) - 1}).")
    print(f"\n## {name}: remaining gain over the mean gain of the last 10 passes (k >= 20)\n")
    print("| restart | largest ratio | at pass | gain still to come there |")
    print("|---|---|---|---|")
    for r, h in enumerate(histories):
        h = np.asarray(h)
        gains = np.diff(h)
        ks = np.arange(20, len(h) - 1)
        if not len(ks):
            continue
        recent = np.array([gains[k - 10:k].mean() for k in ks])
        ratio = (h[-1] - h[ks]) / recent
        at = int(np.argmax(ratio))
        print(f"| {r + 1} | {ratio[at]:.0f} | {ks[at]} | {h[-1] - h[ks[at]]:.1f} |")
    return model, z


def accelerate(name, data, groups, plain, plain_z, full_vector):
    variants = [("accelerate=True (q(τ), (α, β), shared q(δ))",
                 OrdinalMixture(random_state=0, n_jobs=2, accelerate=True))]
    if full_vector:
        variants.append(("accelerate=True, also logit ε and the items' q(z)",
                         FullVectorOrdinal(random_state=0, n_jobs=2, accelerate=True)))
    plain_best = int(np.argmax([h[-1] for h in plain._restart_histories]))
    print(f"\n## {name}: SQUAREM against plain VB at the paper's defaults\n")
    print("| fit | passes in all | chosen restart | best F | max abs diff of z | metrics |")
    print("|---|---|---|---|---|---|")
    print(f"| plain | {sum(plain._restart_n_iter)} | {plain_best + 1} | "
          f"{plain.lower_bound_:.2f} | 0 | {_scores_text(ordinal_scores(data.gold, plain_z, groups))} |")
    for label, model in variants:
        model, z, cpu, scores = _fit(model, data, groups)
        best = int(np.argmax([h[-1] for h in model._restart_histories]))
        print(f"| {label} | {sum(model._restart_n_iter)} | {best + 1} | "
              f"{model.lower_bound_:.2f} | {np.max(np.abs(z - plain_z)):.3g} | "
              f"{_scores_text(scores)} |", flush=True)
        finals = ", ".join(f"{h[-1]:.1f}" for h in model._restart_histories)
        print(f"|   final F per restart | {finals} | | | | |")
    finals = ", ".join(f"{h[-1]:.1f}" for h in plain._restart_histories)
    print(f"| plain: final F per restart | {finals} | | | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="trec,web")
    parser.add_argument("--accelerate", action="store_true")
    parser.add_argument("--full-vector", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    for name in args.data.split(","):
        data, groups = _load(name)
        plain, plain_z = race(name, data, groups)
        if args.accelerate or args.full_vector:
            accelerate(name, data, groups, plain, plain_z, args.full_vector)
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
