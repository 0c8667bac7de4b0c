"""
skcrowd against crowd-kit: recorded accuracy and speed
======================================================

This page draws numbers **recorded** in the tables of :doc:`/which_model`
(accuracy) and :doc:`/performance` (speed), which the project's README
repeats; nothing is re-run when the documentation is built
(a benchmark on a shared build machine would measure the machine).  Every
number came from one run of the command beside it, with skcrowd and
crowd-kit 1.4.2 side by side in the same process:

* accuracy on gold: ``skcrowd demo`` and ``python
  benchmarks/crowdkit_reference.py`` (crowd-kit defaults, ``n_iter=100``;
  MACE: ``python benchmarks/bench_mace.py --only gold``);
* speed: ``python benchmarks/bench_dawid_skene.py --only synthetic``
  (100k items x 5 ratings, 100 raters, K=5, 50 iterations) and ``python
  benchmarks/bench_glad.py --only synthetic`` (10k items x 5 ratings, 100
  raters, K=2, 50 iterations), on the project's 2-core machine (DawidSkene
  quiet, load 0.6-1.1; GLAD busy, load 4-6: crowd-kit's GLAD takes 11
  minutes there).
"""

# %%
# Accuracy on the gold labels
# ---------------------------
# Same files, default settings.  Both implementations of each model agree to
# within a few items; the models differ much more than the implementations.
import matplotlib.pyplot as plt
import numpy as np

datasets = ["rte", "bluebirds", "dog", "web"]
accuracy = {
    "majority vote": [0.9187, 0.7593, 0.8178, 0.7765],
    "skcrowd DawidSkene": [0.9287, 0.8981, 0.8414, 0.8292],
    "crowd-kit DawidSkene": [0.9275, 0.8889, 0.8426, 0.8292],
    "skcrowd GLAD": [0.9250, 0.7222, 0.8340, 0.8228],
    "crowd-kit GLAD": [0.9250, 0.7222, 0.8340, 0.8217],
    "skcrowd MACE": [0.9263, 0.8611, 0.8302, 0.8259],
    "crowd-kit MACE": [0.9250, 0.7222, 0.8352, 0.8115],
}
colors = ["tab:gray", "tab:blue", "lightsteelblue", "tab:orange", "navajowhite",
          "tab:green", "palegreen"]
fig, ax = plt.subplots(figsize=(10, 4.2), constrained_layout=True)
width = 0.12
for i, ((name, values), color) in enumerate(zip(accuracy.items(), colors)):
    ax.bar(np.arange(len(datasets)) + (i - 3) * width, values, width, label=name,
           color=color)
ax.set_xticks(np.arange(len(datasets)), datasets)
ax.set(ylim=(0.65, 0.95), ylabel="accuracy on gold",
       title="recorded accuracy ('Which model to use')")
ax.legend(fontsize=7, ncols=4, loc="upper right")
plt.show()

# %%
# Fit time
# --------
# Wall time of the same fit, same data, same number of iterations (log
# scale).  skcrowd's EM runs in numba kernels over the ratings; crowd-kit's
# in pandas.
workloads = ["DawidSkene\n100k items, K=5", "GLAD\n10k items, K=2"]
skcrowd_seconds = [0.242, 0.579]  # 2 threads
crowdkit_seconds = [9.852, 684.1]
fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
x = np.arange(len(workloads))
ax.bar(x - 0.2, skcrowd_seconds, 0.4, label="skcrowd", color="tab:blue")
ax.bar(x + 0.2, crowdkit_seconds, 0.4, label="crowd-kit 1.4.2", color="tab:gray")
for xi, fast, slow in zip(x, skcrowd_seconds, crowdkit_seconds):
    ax.annotate(f"{slow / fast:.0f}x", (xi, slow), ha="center", xytext=(0, 4),
                textcoords="offset points")
ax.set_yscale("log")
ax.set_xticks(x, workloads)
ax.set(ylabel="seconds (50 iterations)", title="recorded fit times ('Performance')")
ax.legend()
plt.show()
