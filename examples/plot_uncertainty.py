"""
How sure are we? Posterior intervals for prevalence and raters
==============================================================

skcrowd fits each model to a point (a MAP estimate); Carpenter's
item-difficulty paper answers its questions with posterior distributions,
sampled by Stan.  :mod:`skcrowd.uncertainty` draws the posterior of a
fitted model's global parameters -- prevalence, rater sensitivities and
specificities, item-population scales -- and turns the draws into
intervals, integrated item probabilities and label sets sampled from the
full posterior (see :ref:`uncertainty`).

Here, on the dental caries X-rays and on RTE, we put the prevalence of
every model of the paper's lattice, with its 90% interval, beside the
paper's Stan posterior mean, and plot the raters' sensitivity and
specificity with their intervals.

The Stan posterior means below are copied from the paper's repository
(bob-carpenter/crowdsource-computo, ``python/results-caries.csv`` and
``python/results-rte.csv``, column ``pi``).  The models use the paper's
fixed item priors (``learn_item_prior=False``), so they are the models
Stan sampled.
"""

# %%
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skcrowd import IRT3PL, DawidSkene, lattice
from skcrowd.datasets import load_caries, load_rte
from skcrowd.uncertainty import interval, posterior_samples, rater_table, sample_labels

warnings.simplefilter("ignore", ConvergenceWarning)

STAN_PI = {
    "caries": {"a": 0.200527, "ab": 0.205874, "abc": 0.195715, "abcd": 0.0777306,
               "abcde": 0.0960824, "abce": 0.166344, "abd": 0.0469596, "abde": 1.0,
               "ac": 0.182347, "acd": 0.0728376, "ad": 0.0469516, "bc": 0.177659,
               "bcd": 0.0758309, "bd": 0.058521, "c": 0.176193, "cd": 0.0744471,
               "d": 0.0587114, "full": 0.157181},
    "rte": {"abc": 0.488029, "full": 0.522942},
}

# %%
# Prevalence per lattice model on caries
# --------------------------------------
# IRT3PL's posterior is drawn by a Gibbs sampler on the model's own
# quadrature grid (each item's class and grid node are drawn exactly, the
# raters by Metropolis steps), started at the fitted MAP.
caries = load_caries().ratings
rows, kept = [], {}
start = time.perf_counter()
for tag, _ in lattice():
    model = IRT3PL.from_tag(tag, learn_item_prior=False, random_state=0).fit(caries)
    draws = posterior_samples(model, caries, 100, n_burnin=100, random_state=0)
    prevalence = draws["class_prior_"][:, 1]
    low, high = interval(prevalence, 0.9)
    rows.append((tag, model.class_prior_[1], prevalence.mean(), low, high,
                 STAN_PI["caries"][tag]))
    if tag in ("full", "abc"):
        kept[tag] = (model, draws)
print(f"{'model':<6} {'MAP':>7} {'mean':>7} {'90% interval':>17} {'Stan':>7}")
for tag, estimate, mean, low, high, stan in rows:
    mark = "" if low - 1e-12 <= stan <= high + 1e-12 else "  outside"
    print(f"{tag:<6} {estimate:7.4f} {mean:7.4f} [{low:6.4f}, {high:6.4f}] {stan:7.4f}{mark}")
print(f"18 models in {time.perf_counter() - start:.0f} s")

# %%
# The intervals against the paper's posterior means (ABDE pins π = 1, as
# in the paper, and is left out of the plot).
shown = [r for r in rows if r[0] != "abde"]
fig, ax = plt.subplots(figsize=(7, 5))
y = np.arange(len(shown))
means = np.array([r[2] for r in shown])
lows, highs = np.array([r[3] for r in shown]), np.array([r[4] for r in shown])
ax.errorbar(means, y, xerr=[means - lows, highs - means], fmt="o", capsize=3,
            label="skcrowd: posterior mean, 90% interval")
ax.plot([r[5] for r in shown], y, "x", color="C3", markersize=8,
        label="Stan posterior mean (paper)")
ax.set_yticks(y, [r[0] for r in shown])
ax.set_xlabel("prevalence of caries")
ax.legend(loc="lower right")
ax.set_title("Caries: prevalence per lattice model")
fig.tight_layout()

# %%
# Raters' sensitivity and specificity with intervals
# --------------------------------------------------
# :func:`~skcrowd.uncertainty.rater_table` adds ``_lower`` and ``_upper``
# columns to the model's rater table, computed from the same draws.  In the
# full model, ``sensitivity_`` is the probability at an item of average
# difficulty *without guessing*; at the paper's guessing prior (mean 0.5)
# much of a rater's accuracy comes from guessing, so these are lower and
# wider than ABC's, where sensitivity is the whole story.
full, full_draws = kept["full"]
table = rater_table(full, caries, 0.9, samples=full_draws)
print(table[["sensitivity", "sensitivity_lower", "sensitivity_upper",
             "specificity", "specificity_lower", "specificity_upper"]].round(3).to_string())

# The points are posterior medians (always inside their equal-tailed
# interval; a MAP need not be).
fig, ax = plt.subplots(figsize=(5, 5))
for (name, (model, draws)), color in zip(kept.items(), ("C1", "C0")):
    centre = {}
    for which in ("sensitivity", "specificity"):
        low, high = interval(draws[f"{which}_"], 0.9)
        median = np.median(draws[f"{which}_"], axis=0)
        centre[which] = (median, [median - low, high - median])
    ax.errorbar(centre["specificity"][0], centre["sensitivity"][0],
                xerr=centre["specificity"][1], yerr=centre["sensitivity"][1],
                fmt="o", color=color, capsize=3, label=f"IRT3PL {name}")
ax.set_xlabel("specificity")
ax.set_ylabel("sensitivity (at an item of average difficulty)")
ax.set_title("Caries raters, 90% intervals")
ax.legend()
fig.tight_layout()

# %%
# RTE: the full model and Dawid-Skene (ABC)
# -----------------------------------------
# 164 raters, most with 20 ratings; the same comparison for the two
# models the issue singles out, and DawidSkene (its own Dirichlet priors,
# an exact Gibbs sampler) beside them.
rte = load_rte().ratings
for tag in ("full", "abc"):
    model = IRT3PL.from_tag(tag, learn_item_prior=False, random_state=0).fit(rte)
    draws = posterior_samples(model, rte, 100, n_burnin=100, random_state=0)
    prevalence = draws["class_prior_"][:, 1]
    low, high = interval(prevalence, 0.9)
    print(f"RTE {tag:<5} MAP {model.class_prior_[1]:.4f} mean {prevalence.mean():.4f} "
          f"90% [{low:.4f}, {high:.4f}]  Stan {STAN_PI['rte'][tag]:.4f}")
ds = DawidSkene().fit(rte)
ds_draws = posterior_samples(ds, rte, 200, random_state=0)
low, high = interval(ds_draws["class_prior_"][:, 1], 0.9)
print(f"RTE DawidSkene MAP {ds.class_prior_[1]:.4f} 90% [{low:.4f}, {high:.4f}]")

# %%
# Labels drawn from the full posterior
# ------------------------------------
# For a training set, the paper recommends sampling labels rather than
# taking each item's most probable one.  Each row of ``labels`` is one
# draw: parameters first, then every item's class given them.  Items whose
# sampled label often differs from the point prediction are the uncertain
# ones.
labels = sample_labels(ds, rte, 200, random_state=0)
disagree = (labels != ds.predict(rte)).mean(axis=0)
print(f"items whose sampled label differs from predict in > 10% of draws: "
      f"{np.sum(disagree > 0.1)} of {len(disagree)}")
