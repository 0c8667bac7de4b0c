"""Active collection, simulated on a shipped data set: which item gets the
next rating.

Start from one rating per item (drawn from the item's real ratings); then
add ratings one at a time, each the real rating of a rater who rated that
item in the data set (drawn at random among its not yet revealed ones).
The item is chosen at random, by posterior entropy
(:func:`skcrowd.active.uncertainty_ranking`), or by expected information
gain over the item's remaining raters
(:func:`skcrowd.active.expected_information_gain`).  The model is refitted
(``warm_start=True``) every ``--refit`` ratings; between refits only the
rated item's score is updated.  Accuracy against the gold of every item at
each refit, averaged over ``--seeds`` runs.

Usage::

    PYTHONPATH=. python benchmarks/bench_active.py [--dataset rte] [--seeds 3]
"""

import argparse
import os
import time

import numpy as np

from skcrowd import DawidSkene, Ratings
from skcrowd.active import expected_information_gain
from skcrowd.datasets import load_bluebirds, load_dog, load_rte, load_web
from skcrowd.metrics import posterior_entropy

DATASETS = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}


def simulate(R, gold, strategy, rng, refit, budget):
    n_items = len(R)
    ptr = R._item_ptr
    # the order in which each item's real ratings are revealed
    queue = [list(rng.permutation(np.arange(ptr[i], ptr[i + 1]))) for i in range(n_items)]
    shown = [q.pop() for q in queue]
    model = DawidSkene(warm_start=True, classes=np.unique(R.label))
    curve = []

    def current():
        take = np.sort(np.array(shown))
        return Ratings._from_sorted(R._item[take], R._rater[take], R.label[take],
                                    R.item_ids, R.rater_ids)

    def scores(X, items):
        if strategy == "entropy":
            return posterior_entropy(model, X[items])
        pools = [R.rater_ids[R._rater[queue[i]]] for i in items]
        return expected_information_gain(model, X[items], raters=pools)

    known = ~np.isnan(gold)
    while True:
        X = current()
        model.fit(X)
        curve.append((len(shown), np.mean(model.predict(X)[known] == gold[known])))
        if len(shown) >= budget:
            return curve
        open_items = np.array([i for i in range(n_items) if queue[i]])
        if strategy != "random":
            score = np.full(n_items, -np.inf)
            score[open_items] = scores(X, open_items)
        for _ in range(refit):
            if len(open_items) == 0:
                break
            if strategy == "random":
                i = rng.choice(open_items)
            else:
                top = np.flatnonzero(score == score.max())
                i = rng.choice(top)  # ties at random
            shown.append(queue[i].pop())
            if not queue[i]:
                open_items = open_items[open_items != i]
                if strategy != "random":
                    score[i] = -np.inf
            elif strategy != "random":
                score[i] = scores(current(), np.array([i]))[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="rte", choices=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--refit", type=int, default=200)
    parser.add_argument("--per-item", type=float, default=5.0,
                        help="budget in ratings per item (the data set's mean at most)")
    args = parser.parse_args()
    data = DATASETS[args.dataset]()
    R, gold = data.ratings, data.gold
    budget = int(min(args.per_item * len(R), R.n_ratings))
    print(f"# bench_active.py --dataset {args.dataset}: DawidSkene, {len(R)} items, budget "
          f"{budget} ratings, refit every {args.refit}, {args.seeds} seeds; "
          f"load {os.getloadavg()[0]:.2f}")
    curves = {}
    for strategy in ("random", "entropy", "information_gain"):
        start = time.perf_counter()
        runs = [simulate(R, gold, strategy, np.random.default_rng(s), args.refit, budget)
                for s in range(args.seeds)]
        n = min(len(r) for r in runs)
        curves[strategy] = (np.array([r[k][0] for k in range(n) for r in runs[:1]]),
                            np.mean([[r[k][1] for k in range(n)] for r in runs], axis=0))
        print(f"- {strategy}: {time.perf_counter() - start:.1f} s", flush=True)
    counts = curves["random"][0]
    print("\n| ratings | ratings/item | random | entropy | information gain |")
    print("|---|---|---|---|---|")
    for k, c in enumerate(counts):
        if k % 2 == 0 or k == len(counts) - 1:
            cells = [f"{curves[s][1][k]:.4f}" for s in curves]
            print(f"| {c} | {c / len(R):.2f} | " + " | ".join(cells) + " |")
    target = curves["random"][1][-1]
    print(f"\nRandom choice reaches {target:.4f} with {counts[-1]} ratings.")
    for s in ("entropy", "information_gain"):
        reached = np.flatnonzero(curves[s][1] >= target)
        if len(reached):
            c = curves[s][0][reached[0]]
            print(f"{s}: reaches it with {c} ratings ({100 * (1 - c / counts[-1]):.0f}% fewer)")
        else:
            print(f"{s}: does not reach it within the budget")


if __name__ == "__main__":
    main()
