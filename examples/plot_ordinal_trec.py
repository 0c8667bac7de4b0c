"""
OrdinalMixture on TREC 2010 and web (the seed's Table 1)
========================================================

Lakshminarayanan & Teh (2013) compare their ordinal mixture model, with
instance difficulty per query-URL (``difficulty="item"``), per query
(``"group"``) or not modelled (``None``), against majority vote, the mean and
the median of the ratings, Dawid–Skene and GLAD, by the mean squared error
and the correlation of the estimates with the gold labels and by NDCG
averaged over queries.

TREC 2010 is used with the paper's preprocessing (drop the "broken link"
ratings, map 0/1/2 to 1/2/3: 91,783 ratings, 762 raters, 20,026 items, 100
queries; gold for 3,277 items).  The web data set (5 levels) has no queries,
so only MSE and correlation there, and no ``"group"`` variant.  Run::

    PYTHONPATH=. python examples/plot_ordinal_trec.py
"""

import os
import sys

import matplotlib

if __name__ == "__main__":
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _ordinal_experiments import baselines, evaluate  # noqa: E402

from skcrowd import OrdinalMixture  # noqa: E402
from skcrowd.datasets import load_trec2010, load_web  # noqa: E402

# %%
# The methods: every baseline that skcrowd has (GLAD when present) and the
# three difficulty granularities, with the paper's defaults (10 restarts,
# at most 1000 iterations, tol 0.1 on the lower bound).


def methods(difficulties):
    out = {name: cls() for name, cls in baselines().items()}
    for difficulty in difficulties:
        out[f"OrdinalMixture(difficulty={difficulty!r})"] = OrdinalMixture(
            difficulty=difficulty, random_state=0)
    return out


# %%
# TREC 2010: the query of each item is both the difficulty group and the
# NDCG group.
trec = load_trec2010(preprocess="paper")
print("TREC 2010")
trec_rows = evaluate(methods([None, "group", "item"]), trec.ratings, trec.gold,
                     groups=trec.groups, ndcg_groups=trec.groups)

# %%
# Web (5 levels).
web = load_web()
print("\nweb")
web_rows = evaluate(methods([None, "item"]), web.ratings, web.gold)

# %%
# A picture of the table: each method's MSE and correlation on both data
# sets (the dashed line marks the best baseline among mean, median and
# majority vote).
fig, axes = plt.subplots(2, 2, figsize=(11, 7))
for row, (name, rows) in enumerate([("TREC 2010", trec_rows), ("web", web_rows)]):
    for col, metric in enumerate(["mse", "correlation"]):
        ax = axes[row, col]
        labels = list(rows)
        values = [rows[k][metric] for k in labels]
        colors = ["tab:orange" if k.startswith("OrdinalMixture") else "tab:gray" for k in labels]
        ax.barh(np.arange(len(labels)), values, color=colors)
        ax.set_yticks(np.arange(len(labels)), labels, fontsize=7)
        simple = [rows[k][metric] for k in ("majority vote", "mean", "median")]
        ax.axvline(min(simple) if metric == "mse" else max(simple), ls="--", c="k")
        lo, hi = min(values), max(values)
        ax.set_xlim(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo))
        ax.set_title(f"{name}: {metric}")
fig.tight_layout()
fig.savefig("ordinal_trec_table1.png", dpi=100)
