"""The default estimator (AutoCrowd) against every model, on synthetic crowds
that reproduce the known failures of single models, and on the shipped sets.

    python benchmarks/bench_default.py                  # everything
    python benchmarks/bench_default.py --only synthetic # the simulated crowds
    python benchmarks/bench_default.py --only shipped   # the shipped sets with gold
    python benchmarks/bench_default.py --only cost      # AutoCrowd's cost / DawidSkene's
    python benchmarks/bench_default.py --only mace      # MACE on imbalanced crowds
    python benchmarks/bench_default.py --only candidates  # which models could join
    python benchmarks/bench_default.py --only random    # crowds drawn at random
    python benchmarks/bench_default.py --only random --all-models  # and every model
    python benchmarks/bench_default.py --only random --first-crowd 100  # other crowds

caries has no gold: it is in the cost table only.

The crowds (each a function ``crowd(seed, small=False)`` returning
``(Ratings, true_labels)``; ``small=True`` is the size the tests use):

sparse        many raters with a handful of ratings each (as many raters as
              items, activity falling as rank^-0.5: most raters give 1-5
              ratings), 2 classes (75% / 25%), 5 ratings per item, one-coin
              raters 0.55-0.95 right (entity linking style)
many_classes  K = 8 or 10 (alternating with the seed), 2-3 ratings per
              item, 60 raters with a Dawid-Skene confusion, accuracy 0.4-0.9
imbalanced    88% of the items in one class, 3 ratings per item, 30 raters
difficulty    IRT-style items (IRT3PL "full": difficulty, discrimination
              and guessing per item), 2 classes, 5 ratings per item
schools       40 ratings per item, raters in three camps: a camp of 40%
              and two of 30% that each read a different third of the items
              the other way (consistently, so a camp is not noise)
spammers      25% of the raters answer from one fixed distribution whatever
              the truth, 3 classes, 4 ratings per item
dawid_skene   a well-behaved Dawid-Skene crowd: 3 classes, 5 ratings per
              item, 30 raters, accuracy 0.6-0.95

Every model at its defaults (``random_state=0``), crowd-kit 1.4.2's methods
where it is installed (its defaults), and AutoCrowd.  Accuracy on all the
items (the simulated truth) or on the gold items (shipped sets).
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from skcrowd import (EBCC, GLAD, IRT3PL, MACE, AutoCrowd, DawidSkene,  # noqa: E402
                     MajorityVote, PooledDawidSkene, Ratings)
from skcrowd._auto import choose, default_candidates, difficulty_score  # noqa: E402
from skcrowd.datasets import (load_bluebirds, load_caries, load_dog,  # noqa: E402
                              load_rte, load_web, make_dawid_skene, make_irt)

# -- the crowds ------------------------------------------------------------------


def _ratings(item, rater, label, n_items):
    return Ratings(item, rater, label, item_ids=np.arange(n_items))


def sparse_raters(seed, small=False):
    """Many raters, most with a handful of ratings (Zipf-like activity)."""
    rng = np.random.default_rng(seed)
    n_items, n_raters, per_item = (400, 400, 5) if small else (1500, 1500, 5)
    truth = (rng.random(n_items) < 0.75).astype(np.int64)
    activity = 1.0 / np.arange(1, n_raters + 1) ** 0.5
    activity /= activity.sum()
    accuracy = rng.uniform(0.55, 0.95, n_raters)
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False, p=activity)
                            for _ in range(n_items)])
    right = rng.random(item.size) < accuracy[rater]
    label = np.where(right, truth[item], 1 - truth[item])
    return _ratings(item, rater, label, n_items), truth


def many_classes(seed, small=False):
    """K = 8 or 10, 2-3 ratings per item, 60 raters."""
    n_classes = 8 if seed % 2 == 0 else 10
    n_items = 400 if small else 1500
    data = make_dawid_skene(n_items, 60, 3, n_classes, accuracy=(0.4, 0.9),
                            class_prior=np.full(n_classes, 1 / n_classes), random_state=seed)
    # drop one rating of half the items: 2-3 ratings per item
    rng = np.random.default_rng(seed)
    R = data.ratings
    first = np.flatnonzero(np.r_[True, R.item[1:] != R.item[:-1]])
    drop = first[rng.random(first.size) < 0.5]
    keep = np.ones(R.n_ratings, dtype=bool)
    keep[drop] = False
    return (_ratings(R.item[keep], R.rater[keep], R.label[keep], len(R)), data.true_labels)


def imbalanced(seed, small=False):
    """88% prevalence, 3 ratings per item."""
    data = make_dawid_skene(400 if small else 1500, 30, 3, 2, accuracy=(0.6, 0.95),
                            class_prior=[0.88, 0.12], random_state=seed)
    return data.ratings, data.true_labels


def difficulty(seed, small=False):
    """Items that differ in difficulty, discrimination and guessing."""
    data = make_irt(400 if small else 1500, 20, 5, tag="full", prevalence=0.4,
                    difficulty_scale=1.5, random_state=seed)
    return data.ratings, data.true_labels


def schools(seed, small=False):
    """Three camps of raters; each minority camp reads its own third of the
    items the other way, consistently."""
    rng = np.random.default_rng(seed)
    n_items, n_raters, per_item = (200, 50, 40) if small else (600, 50, 40)
    truth = rng.integers(0, 2, n_items)
    camp = np.repeat([0, 1, 2], [20, 15, 15])
    third = rng.integers(0, 3, n_items)  # items camp 1 (third 1) or 2 (third 2) reverse
    view = np.repeat(truth[:, None], 3, axis=1)
    view[third == 1, 1] ^= 1
    view[third == 2, 2] ^= 1
    accuracy = rng.uniform(0.75, 0.95, n_raters)
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False)
                            for _ in range(n_items)])
    agree = rng.random(item.size) < accuracy[rater]
    seen = view[item, camp[rater]]
    label = np.where(agree, seen, 1 - seen)
    return _ratings(item, rater, label, n_items), truth


def spammers(seed, small=False):
    """25% of the raters answer from a fixed distribution."""
    data = make_dawid_skene(400 if small else 1500, 40, 4, 3, accuracy=(0.55, 0.9),
                            spammer_fraction=0.25, class_prior=np.full(3, 1 / 3),
                            random_state=seed)
    return data.ratings, data.true_labels


def dawid_skene(seed, small=False):
    """A crowd the Dawid-Skene model describes."""
    data = make_dawid_skene(400 if small else 1500, 30, 5, 3, accuracy=(0.6, 0.95),
                            random_state=seed)
    return data.ratings, data.true_labels


def random_crowd(seed):
    """A crowd with every property drawn at random (none of the crowds the
    rule was designed on): classes, items, ratings per item, how many
    raters and how unevenly active, prevalence, each rater's confusion,
    spammers and item difficulty.  Returns ``(Ratings, truth, description)``."""
    rng = np.random.default_rng(1000 + seed)
    K = int(rng.choice([2, 2, 2, 3, 4, 5, 8]))
    n_items = int(rng.integers(300, 2001))
    per_item = int(rng.integers(2, 9))
    # few busy raters, or many raters with a handful of ratings each
    n_raters = int(rng.choice([rng.integers(max(per_item, 8), 60),
                               rng.integers(n_items // 10, n_items + 1)]))
    n_raters = max(n_raters, per_item)
    activity = 1.0 / np.arange(1, n_raters + 1) ** rng.uniform(0.0, 1.0)
    activity = rng.permutation(activity / activity.sum())
    prevalence = rng.dirichlet(np.full(K, rng.choice([0.5, 1.0, 5.0])))
    prevalence = (prevalence + 0.01) / (1 + 0.01 * K)
    truth = rng.choice(K, n_items, p=prevalence)
    # each rater: right with probability `accuracy`; a wrong answer from a
    # row of its own (class-dependent confusion) or, with one coin, uniform
    one_coin = rng.random() < 0.5
    accuracy = rng.uniform(rng.uniform(1.0 / K, 0.6), rng.uniform(0.75, 0.98), (n_raters, K))
    if one_coin:
        accuracy[:] = accuracy[:, :1]
    wrong = rng.dirichlet(np.full(K - 1, 1.0 if not one_coin else 50.0), (n_raters, K))
    spam_share = rng.choice([0.0, rng.uniform(0.05, 0.35)])
    spammer = rng.random(n_raters) < spam_share
    spam_row = rng.dirichlet(np.full(K, 1.0), n_raters)
    hard = rng.uniform(0.3, 2.0) if rng.random() < 0.35 else 0.0
    item_hardness = rng.normal(0.0, 1.0, n_items) * hard
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False, p=activity)
                            for _ in range(n_items)])
    z = truth[item]
    acc = accuracy[rater, z]
    # item difficulty on the log-odds of being right
    logit = np.log(acc / (1 - acc)) - item_hardness[item]
    right = rng.random(item.size) < 1 / (1 + np.exp(-logit))
    offset = np.array([rng.choice(K - 1, p=wrong[j, k]) for j, k in zip(rater, z)])
    label = np.where(right, z, (z + 1 + offset) % K)
    spam = spammer[rater]
    label[spam] = [rng.choice(K, p=spam_row[j]) for j in rater[spam]]
    description = (f"K={K} items={n_items} per_item={per_item} raters={n_raters} "
                   f"max_prev={prevalence.max():.2f} one_coin={int(one_coin)} "
                   f"spam={spam_share:.2f} hard={hard:.2f}")
    return _ratings(item, rater, label, n_items), truth, description


CROWDS = {"sparse": sparse_raters, "many_classes": many_classes, "imbalanced": imbalanced,
          "difficulty": difficulty, "schools": schools, "spammers": spammers,
          "dawid_skene": dawid_skene}

SHIPPED = {"rte": load_rte, "bluebirds": load_bluebirds, "dog": load_dog, "web": load_web}


def skcrowd_models(n_classes):
    """Every skcrowd model at its defaults (IRT3PL: binary only)."""
    models = {
        "MajorityVote": MajorityVote(),
        "DawidSkene": DawidSkene(),
        "DawidSkene one_coin": DawidSkene(confusion="one_coin"),
        "PooledDawidSkene": PooledDawidSkene(),
        "GLAD": GLAD(),
        "MACE": MACE(random_state=0),
    }
    if n_classes == 2:
        models["IRT3PL"] = IRT3PL(random_state=0)
    return models


# -- crowd-kit ------------------------------------------------------------------------


def crowdkit_labels(R):
    """crowd-kit's methods at their defaults: {name: labels aligned with
    R.item_ids}; empty when crowd-kit is not installed."""
    try:
        from crowdkit import aggregation as agg
    except ImportError:
        return {}
    from _crowdkit import make_frame

    frame = make_frame(R._item, R._rater, R.label.astype(np.int64))
    out = {}
    # (crowd-kit's GLAD is left out for its time: 40-60 s a crowd here;
    # its Wawa and ZeroBasedSkill fail under pandas 3)
    methods = {"ck DS": agg.DawidSkene(n_iter=100), "ck OneCoinDS": agg.OneCoinDawidSkene(),
               "ck MACE": agg.MACE(random_state=0)}
    for name, model in methods.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                labels = model.fit_predict(frame)
            except Exception as error:  # report, do not stop the table
                print(f"  ({name} failed: {type(error).__name__})")
                continue
        out[name] = labels.reindex(np.arange(len(R))).to_numpy().astype(np.float64)
    return out


ONLY_EXTRA = []  # --extra NAME: study only these of EXTRA
AUTO_ONLY = False  # --auto-only: MajorityVote and AutoCrowd alone


def accuracies(R, truth, gold_mask=None, crowdkit=True):
    """{method: accuracy}, and the AutoCrowd fitted on R."""
    n_classes = len(np.unique(R.label))
    gold_mask = np.ones(len(truth), dtype=bool) if gold_mask is None else gold_mask
    out = {}
    models = skcrowd_models(n_classes)
    if AUTO_ONLY:
        models = {"MajorityVote": models["MajorityVote"]}
        crowdkit = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, model in models.items():
            out[name] = np.mean(model.fit_predict(R)[gold_mask] == truth[gold_mask])
        auto = AutoCrowd(random_state=0)
        cpu = time.process_time()
        out["AutoCrowd"] = np.mean(auto.fit_predict(R)[gold_mask] == truth[gold_mask])
        auto.cost_ = (time.process_time() - cpu) / _timed(lambda: DawidSkene().fit(R), 3)[1]
    if crowdkit:
        for name, labels in crowdkit_labels(R).items():
            out[name] = np.mean(labels[gold_mask] == truth[gold_mask])
    return out, auto


def _row(name, acc, columns):
    cells = [f"{acc[c]:.4f}" if c in acc and np.isfinite(acc[c]) else "--" for c in columns]
    return f"| {name} | " + " | ".join(cells) + " |"


SKCROWD = ("MajorityVote", "DawidSkene", "DawidSkene one_coin", "PooledDawidSkene", "GLAD",
           "MACE", "IRT3PL")


SUMMARY_HEADER = ("| AutoCrowd | best skcrowd model | MajorityVote | Auto - best (points) | "
                  "Auto - MV (points) | cost (CPU, x one DawidSkene fit) |\n"
                  "|---|---|---|---|---|---|---|")


def summary_row(name, acc, cost=np.nan):
    best_name = max((m for m in SKCROWD if m in acc), key=lambda m: acc[m])
    return (f"| {name} | {acc['AutoCrowd']:.4f} | {acc[best_name]:.4f} ({best_name}) | "
            f"{acc['MajorityVote']:.4f} | {100 * (acc['AutoCrowd'] - acc[best_name]):+.1f} | "
            f"{100 * (acc['AutoCrowd'] - acc['MajorityVote']):+.1f} | {cost:.1f} |")


def run_synthetic(seeds, crowdkit=True, crowds=None):
    crowds = list(CROWDS) if crowds is None else crowds
    print("\n## Synthetic crowds: accuracy on every item, mean over seeds", list(seeds))
    table, summary, means = {}, [], []
    for crowd_name in crowds:
        crowd = CROWDS[crowd_name]
        runs, chosen, costs = [], [], []
        for seed in seeds:
            R, truth = crowd(seed)
            acc, auto = accuracies(R, truth, crowdkit=crowdkit)
            runs.append(acc)
            chosen.append(auto.selected_)
            costs.append(auto.cost_)
        names = sorted(set().union(*runs), key=lambda n: list(runs[0]).index(n)
                       if n in runs[0] else 99)
        mean = {n: np.mean([r.get(n, np.nan) for r in runs]) for n in names}
        table[crowd_name] = mean
        # per seed: AutoCrowd against that seed's best skcrowd model
        for seed, acc, sel, cost in zip(seeds, runs, chosen, costs):
            summary.append(summary_row(f"{crowd_name} (seed {seed}, chose {sel})", acc, cost))
        means.append(summary_row(f"{crowd_name} (mean over seeds)", mean, np.mean(costs)))
        print(f"  {crowd_name}: chose {chosen}", flush=True)
    columns = sorted(set().union(*table.values()), key=lambda n: (
        n not in SKCROWD + ("AutoCrowd",), n))
    print("\n| method | " + " | ".join(crowds) + " |")
    print("|---" * (len(crowds) + 1) + "|")
    for method in columns:
        cells = [table[c].get(method, np.nan) for c in crowds]
        print(f"| {method} | " + " | ".join("--" if not np.isfinite(v) else f"{v:.4f}"
                                            for v in cells) + " |")
    print("\nPer crowd (the means over seeds; the best model is the best mean):")
    print("\n| crowd " + SUMMARY_HEADER)
    print("\n".join(means))
    print("\nPer seed:")
    print("\n| crowd " + SUMMARY_HEADER)
    print("\n".join(summary))


def run_shipped(crowdkit=True):
    print("\n## Shipped sets with gold: accuracy on the gold items")
    rows = []
    for name, load in SHIPPED.items():
        bunch = load()
        R = bunch.ratings
        gold = np.asarray(bunch.gold, dtype=np.float64)
        mask = ~np.isnan(gold)
        acc, auto = accuracies(R, gold, mask, crowdkit=crowdkit)
        rows.append((name, acc, auto))
        print(f"  {name}: chose {auto.selected_}", flush=True)
    methods = list(rows[0][1])
    for _, acc, _ in rows[1:]:
        methods += [m for m in acc if m not in methods]
    print("\n| method | " + " | ".join(r[0] for r in rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for m in methods:
        print(_row(m, {r[0]: r[1].get(m, np.nan) for r in rows}, [r[0] for r in rows]))
    print("\n| set " + SUMMARY_HEADER)
    for name, acc, auto in rows:
        print(summary_row(f"{name} (chose {auto.selected_})", acc, auto.cost_))


def _timed(fit, repeats):
    """Best (wall, CPU) seconds of ``repeats`` calls of ``fit``."""
    best = (np.inf, np.inf)
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        fit()
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def large_binary(seed, n_raters=100, accuracy=(0.6, 0.95), skew=None, hardness=0.0):
    """100,000 binary ratings: 20,000 items, 5 ratings per item, one-coin
    raters ``accuracy`` right, 60% prevalence; ``n_raters`` equally busy,
    or with ``skew`` their activity falling as rank^-skew; with
    ``hardness``, item difficulties N(0, hardness²) on the log odds of a
    right rating (Carpenter's reduction AB)."""
    rng = np.random.default_rng(seed)
    n_items, per_item = 20_000, 5
    truth = (rng.random(n_items) < 0.6).astype(np.int64)
    right_share = rng.uniform(*accuracy, n_raters)
    activity = None
    if skew is not None:
        activity = 1.0 / np.arange(1, n_raters + 1) ** skew
        activity /= activity.sum()
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False, p=activity)
                            for _ in range(n_items)])
    if hardness:
        log_odds = np.log(right_share / (1 - right_share))
        difficulty = rng.normal(0.0, hardness, n_items)
        right = rng.random(item.size) < 1 / (1 + np.exp(difficulty[item] - log_odds[rater]))
    else:
        right = rng.random(item.size) < right_share[rater]
    return _ratings(item, rater, np.where(right, truth[item], 1 - truth[item]), n_items)


def many_raters(seed):
    """:func:`large_binary` by 20,000 raters 0.55-0.95 right, activity
    falling as rank^-0.7: most raters give a few ratings, so every
    per-rater step works on 20,000 rows."""
    return large_binary(seed, n_raters=20_000, accuracy=(0.55, 0.95), skew=0.7)


def run_cost(repeats=5):
    print("\n## Cost: AutoCrowd's fit against one DawidSkene fit (defaults), best of",
          repeats)
    print(f"load before: {open('/proc/loadavg').read().strip()}")
    print("| data | DawidSkene wall / CPU (s) | AutoCrowd wall / CPU (s) | "
          "ratio wall | ratio CPU |")
    print("|---|---|---|---|---|")
    data = {name: load().ratings for name, load in SHIPPED.items()}
    data["caries"] = load_caries().ratings
    data["sparse (synthetic)"] = sparse_raters(0)[0]
    data["many_classes (synthetic)"] = many_classes(0)[0]
    # the crowd where one DawidSkene fit converges in 3 passes
    data["schools (synthetic)"] = schools(1)[0]
    data["100,000 binary ratings (synthetic)"] = large_binary(0)
    data["100,000 ratings by 20,000 raters (synthetic)"] = many_raters(0)
    # where the item-difficulty candidate is fitted on large data
    data["100,000 binary ratings, item difficulty (synthetic)"] = large_binary(0, hardness=1.0)
    # what most users pass: every fit reads the ids of a table
    data["rte, long DataFrame"] = data["rte"].to_long()
    data["100,000 binary ratings, long DataFrame"] = large_binary(0).to_long()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, R in data.items():
            AutoCrowd(random_state=0).fit(R)  # compile
            ds = _timed(lambda: DawidSkene().fit(R), repeats)
            auto = _timed(lambda: AutoCrowd(random_state=0).fit(R), repeats)
            print(f"| {name} | {ds[0]:.4f} / {ds[1]:.4f} | {auto[0]:.4f} / {auto[1]:.4f} | "
                  f"{auto[0] / ds[0]:.1f} | {auto[1] / max(ds[1], 1e-9):.1f} |")
        print("\nEach candidate's fit on all the items and its fold fits and scores, "
              "CPU seconds (best of 3), and their sum over one DawidSkene fit:")
        print("| data | candidate | fit | folds | (fit + folds) / DawidSkene |")
        print("|---|---|---|---|---|")
        for name in ("rte", "100,000 binary ratings (synthetic)",
                     "100,000 ratings by 20,000 raters (synthetic)",
                     "100,000 binary ratings, item difficulty (synthetic)"):
            ds = _timed(lambda: DawidSkene().fit(data[name]), repeats)[1]
            for candidate, (fit, folds) in candidate_costs(data[name]).items():
                print(f"| {name} | {candidate} | {fit:.4f} | {folds:.4f} | "
                      f"{(fit + folds) / ds:.1f} |")
    print(f"load after: {open('/proc/loadavg').read().strip()}")


def candidate_costs(R, repeats=3):
    """Each default candidate's share of AutoCrowd's fit: CPU seconds of its
    fit on all the items and of its fold fits and scores (best of
    ``repeats``), on the encoding AutoCrowd shares."""
    from sklearn.model_selection import KFold

    from skcrowd._auto import FOLD_PASSES
    from skcrowd._held_out import held_out_scores

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoCrowd(random_state=0).fit(R)
        reference = auto.estimators_["MajorityVote"]
        data = reference._encode(R, reset=False)
        splits = list(KFold(5, shuffle=True, random_state=0).split(np.arange(data.n_items)))
        costs = {}
        for name, fitted in auto.estimators_.items():
            model = default_candidates(0, len(auto.classes_))[name]
            fit = _timed(lambda: model.fit(R), repeats)[1]
            folds = _timed(lambda: held_out_scores({name: fitted}, data, reference, splits,
                                                   FOLD_PASSES, None), repeats)[1]
            costs[name] = (fit, folds)
    return costs


def run_mace(seeds):
    """MACE's degenerate optimum at 85-90% prevalence, 3 ratings per item."""
    from bench_mace import crowdkit_labels as crowdkit_mace

    print("\n## MACE on imbalanced crowds (3 ratings per item, 30 raters)")
    print("| prevalence | seed | MajorityVote | MACE, uniform prevalence (bound) | "
          "MACE, learned (the default) (bound) | crowd-kit MACE |")
    print("|---|---|---|---|---|---|")
    for prevalence in (0.85, 0.88, 0.9):
        for seed in seeds:
            data = make_dawid_skene(1500, 30, 3, 2, accuracy=(0.6, 0.95),
                                    class_prior=[prevalence, 1 - prevalence],
                                    random_state=seed)
            R, truth = data.ratings, data.true_labels
            cells = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mv = np.mean(MajorityVote().fit_predict(R) == truth)
                for class_prior in ("uniform", "learn"):
                    mace = MACE(random_state=0, class_prior=class_prior).fit(R)
                    cells.append(f"{np.mean(mace.predict(R) == truth):.4f} "
                                 f"({mace.lower_bound_:.4f})")
                try:
                    ck = np.mean(crowdkit_mace(R)[0] == truth)
                except ImportError:
                    ck = np.nan
            print(f"| {prevalence} | {seed} | {mv:.4f} | {cells[0]} | {cells[1]} | {ck:.4f} |")


# -- which models could join the default candidates -----------------------------

#: the models studied as further candidates (each beside the default four)
EXTRA = {"PooledDawidSkene": lambda K: PooledDawidSkene(), "GLAD": lambda K: GLAD(),
         "IRT3PL": lambda K: IRT3PL(random_state=0) if K == 2 else None,
         "IRT3PL difficulty": lambda K: (IRT3PL(guessing=False, discrimination=False, n_init=1,
                                                tol=1e-4, random_state=0) if K == 2 else None),
         "DawidSkene scaled prior": lambda K: (DawidSkene(prior_wrong=0.5 / (K - 1))
                                              if K > 2 else None),
         "EBCC": lambda K: EBCC(random_state=0)}


def _difficulty(auto, R):
    """AutoCrowd's score test for item difficulty
    (skcrowd._auto.difficulty_score) at the DawidSkene candidate of the
    fitted ``auto``; NaN with more than two classes."""
    ds = auto.estimators_["DawidSkene"]
    if len(ds.classes_) != 2:
        return np.nan
    return difficulty_score(ds, ds._encode(R, reset=False))


def _choice(row, names):
    """AutoCrowd's rule (skcrowd._auto.choose) over the candidates
    ``names`` of a study row, the item-difficulty model among them only
    where the ratings show item difficulty, as AutoCrowd fits it."""
    names = [n for n in names if n != "IRT3PL difficulty" or row["difficulty"] > 0]
    return choose({n: row["scores"][n] for n in names if n in row["scores"]},
                  row["agreement"])[0]


def study(R, truth, mask):
    """Every default candidate and every model of EXTRA scored as AutoCrowd
    scores its candidates: held-out log likelihood, agreement with the
    clear majorities, accuracy, and the CPU time of its fit over one
    DawidSkene fit."""
    n_classes = len(np.unique(R.label))
    candidates = default_candidates(0, n_classes)
    for name, make in EXTRA.items():
        if ONLY_EXTRA and name not in ONLY_EXTRA:
            continue
        model = make(n_classes)
        if model is not None:
            candidates[name] = model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoCrowd(candidates=candidates, random_state=0).fit(R)
        ds = _timed(lambda: DawidSkene().fit(R), 3)[1]
        cost = {}
        for name, model in candidates.items():
            cost[name] = _timed(lambda: model.fit(R), 1)[1] / ds
    accuracy = {name: float(np.mean(np.asarray(m.predict(R))[mask] == truth[mask]))
                for name, m in auto.estimators_.items()}
    return {"cv": auto.cv_scores_, "scores": auto.held_out_scores_, "agreement": auto.agreement_,
            "acc": accuracy, "cost": cost, "difficulty": _difficulty(auto, R)}


def run_candidates(seeds, only=None):
    print("\n## Candidates: held-out log likelihood per item, agreement with the clear "
          "majorities, accuracy, CPU of one fit over one DawidSkene fit")
    rows = {}
    for crowd_name, crowd in CROWDS.items():
        if only and crowd_name not in only:
            continue
        for seed in seeds:
            R, truth = crowd(seed)
            rows[f"{crowd_name} {seed}"] = study(R, np.asarray(truth),
                                                 np.ones(len(truth), dtype=bool))
    for name, load in SHIPPED.items():
        bunch = load()
        gold = np.asarray(bunch.gold, dtype=np.float64)
        rows[name] = study(bunch.ratings, gold, ~np.isnan(gold))
    print("\n| data | model | held-out | agreement | accuracy | fit cost |")
    print("|---|---|---|---|---|---|")
    for key, row in rows.items():
        for name in row["cv"]:
            print(f"| {key} | {name} | {row['cv'][name]:.4f} | {row['agreement'][name]:.3f} | "
                  f"{row['acc'][name]:.4f} | {row['cost'][name]:.1f} |")
    # every default candidate (a row without one, the item-difficulty
    # model of two classes, skips it)
    default = list(default_candidates(None, 2))
    print("\nThe rule over the default candidates and one or more of EXTRA: accuracy "
          "minus the best model's of the row (points); crowds: mean over seeds [worst seed]")
    extra_names = [n for n in EXTRA if not ONLY_EXTRA or n in ONLY_EXTRA]
    columns = [[], *[[n] for n in extra_names], extra_names]
    print("\n| data | " + " | ".join("+".join(c) or "default" for c in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    groups = {}
    for key in rows:
        groups.setdefault(key.split(" ")[0], []).append(key)
    for group, keys in groups.items():
        cells = []
        for extra in columns:
            gaps = []
            for key in keys:
                row = rows[key]
                chosen = _choice(row, default + extra)
                gaps.append(100 * (row["acc"][chosen] - max(row["acc"].values())))
            cells.append(f"{np.mean(gaps):+.1f}" + (f" [{min(gaps):+.1f}]" if len(gaps) > 1
                                                    else f" ({chosen})"))
        print(f"| {group} | " + " | ".join(cells) + " |")


def _kappa(labels, reference):
    """Cohen's kappa between two labellings of the same items."""
    _, codes = np.unique(np.concatenate([np.asarray(labels, dtype=np.float64),
                                         np.asarray(reference, dtype=np.float64)]),
                         return_inverse=True)
    a, b = codes[:len(labels)], codes[len(labels):]
    K = int(codes.max()) + 1
    joint = np.bincount(a * K + b, minlength=K * K).reshape(K, K) / len(a)
    chance = joint.sum(axis=1) @ joint.sum(axis=0)
    return 1.0 if chance >= 1 else float((np.trace(joint) - chance) / (1 - chance))


#: the models beside AutoCrowd's candidates in ``--only random --all-models``
OTHER_MODELS = {"PooledDawidSkene": lambda: PooledDawidSkene(), "GLAD": lambda: GLAD(),
                "EBCC": lambda: EBCC(random_state=0)}


def run_random(n_crowds, all_models=False, first_crowd=0):
    """AutoCrowd on crowds with every property drawn at random: its choice
    against the best of its own candidates (chosen with the truth) and
    majority vote; and the same choice with a guard by Cohen's kappa with
    majority vote's labels (eligible at half the highest kappa).  With
    ``all_models``, every other skcrowd model is fitted and scored beside
    the candidates (as candidates of one AutoCrowd, so the default rule is
    the rule over the default candidates): each model alone, the rule,
    and the rule with EBCC as a candidate, against the best of them all."""
    print(f"\n## Random crowds ({n_crowds}): AutoCrowd's choice against the best "
          "of its candidates, accuracy on every item")
    print("| crowd | chose | best candidate | Auto - best | Auto - MV | described |")
    print("|---|---|---|---|---|---|")
    rows = []
    for seed in range(first_crowd, first_crowd + n_crowds):
        R, truth, description = random_crowd(seed)
        K = len(np.unique(R.label))
        candidates = default_candidates(0, K)
        default = list(candidates)
        if all_models:
            candidates.update({name: make() for name, make in OTHER_MODELS.items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            auto = AutoCrowd(candidates=candidates, random_state=0).fit(R)
        labels = {name: model.predict(R) for name, model in auto.estimators_.items()}
        acc = {name: float(np.mean(lab == truth)) for name, lab in labels.items()}
        kappa = {name: _kappa(lab, labels["MajorityVote"]) for name, lab in labels.items()}
        # the default candidates' item posteriors averaged with equal weights
        average = np.mean([np.asarray(auto.estimators_[name].predict_proba(R))
                           for name in default], axis=0)
        classes = np.asarray(auto.estimators_["MajorityVote"].classes_)
        row = {"cv": auto.cv_scores_, "scores": auto.held_out_scores_,
               "agreement": auto.agreement_, "kappa": kappa,
               "difficulty": _difficulty(auto, R),
               "acc": acc, "default": default,
               "average": float(np.mean(classes[average.argmax(axis=1)] == truth))}
        rows.append(row)
        chosen = _choice(row, default)
        best = max((n for n in default), key=acc.get)
        print(f"| {seed} | {chosen} | {best} {acc[best]:.4f} | "
              f"{100 * (acc[chosen] - acc[best]):+.1f} | "
              f"{100 * (acc[chosen] - acc['MajorityVote']):+.1f} | {description} |",
              flush=True)

    def by_kappa(row, names):
        floor = 0.5 * max(row["kappa"][n] for n in names)
        return max((n for n in names if row["kappa"][n] >= floor), key=row["cv"].get)

    def over_mace(row, names, margin=0.2):
        # MACE unless the likeliest eligible candidate is ``margin`` nats
        # per item likelier held out
        pick = _choice(row, names)
        return pick if row["cv"][pick] - row["cv"]["MACE"] > margin else "MACE"

    def summary(label, choose, among):
        gaps, over_mv, accuracy = [], [], []
        for row in rows:
            names = [n for n in among(row) if n in row["acc"]]
            best = max(row["acc"][n] for n in names)
            pick = choose(row)
            correct = row[pick] if pick == "average" else row["acc"][pick]
            gaps.append(100 * (correct - best))
            over_mv.append(100 * (correct - row["acc"]["MajorityVote"]))
            accuracy.append(correct)
        gaps, over_mv = np.array(gaps), np.array(over_mv)
        print(f"| {label} | {np.mean(accuracy):.4f} | {np.sum(gaps >= -1)} / {len(rows)} | "
              f"{gaps.mean():+.2f} | {gaps.min():+.1f} | {np.sum(over_mv < -1)} | "
              f"{over_mv.mean():+.2f} |")

    header = ("| method | mean accuracy | within 1 point of best | mean gap | worst crowd | "
              "below majority vote by over 1 point | mean over majority vote |")
    print("\nAgainst the best of AutoCrowd's candidates:\n" + header)
    print("|---" * 7 + "|")
    summary("AutoCrowd (the rule)", lambda r: _choice(r, r["default"]), lambda r: r["default"])
    summary("guard by kappa, half the highest", lambda r: by_kappa(r, r["default"]),
            lambda r: r["default"])
    summary("MACE unless another is 0.2 nats per item likelier",
            lambda r: over_mace(r, r["default"]), lambda r: r["default"])
    summary("the candidates' posteriors averaged", lambda r: "average",
            lambda r: r["default"])
    for name in dict.fromkeys(n for row in rows for n in row["default"]):
        kept = [row for row in rows if name in row["acc"]]
        gaps = np.array([100 * (row["acc"][name] - max(row["acc"][n] for n in row["default"]))
                         for row in kept])
        over_mv = np.array([100 * (row["acc"][name] - row["acc"]["MajorityVote"])
                            for row in kept])
        print(f"| {name} alone | {np.mean([row['acc'][name] for row in kept]):.4f} | "
              f"{np.sum(gaps >= -1)} / {len(kept)} | {gaps.mean():+.2f} | {gaps.min():+.1f} | "
              f"{np.sum(over_mv < -1)} | {over_mv.mean():+.2f} |")
    if not all_models:
        return
    print("\nAgainst the best of every skcrowd model:\n" + header)
    print("|---" * 7 + "|")
    summary("AutoCrowd (the rule)", lambda r: _choice(r, r["default"]), lambda r: r["acc"])
    summary("AutoCrowd with EBCC as a candidate",
            lambda r: _choice(r, r["default"] + ["EBCC"]), lambda r: r["acc"])
    summary("AutoCrowd with PooledDawidSkene as a candidate",
            lambda r: _choice(r, r["default"] + ["PooledDawidSkene"]), lambda r: r["acc"])
    names = list(dict.fromkeys(n for row in rows for n in row["acc"]))
    for name in names:
        kept = [row for row in rows if name in row["acc"]]
        gaps = np.array([100 * (row["acc"][name] - max(row["acc"].values())) for row in kept])
        over_mv = np.array([100 * (row["acc"][name] - row["acc"]["MajorityVote"])
                            for row in kept])
        print(f"| {name} | {np.mean([row['acc'][name] for row in kept]):.4f} | "
              f"{np.sum(gaps >= -1)} / {len(kept)} | {gaps.mean():+.2f} | {gaps.min():+.1f} | "
              f"{np.sum(over_mv < -1)} | {over_mv.mean():+.2f} |")
    print(f"| the best of every model on each crowd | "
          f"{np.mean([max(row['acc'].values()) for row in rows]):.4f} | {len(rows)} / "
          f"{len(rows)} | 0 | 0 | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("synthetic", "shipped", "cost", "mace",
                                           "candidates", "random"))
    parser.add_argument("--n-crowds", type=int, default=60,
                        help="--only random: how many random crowds")
    parser.add_argument("--first-crowd", type=int, default=0,
                        help="--only random: the seed of the first crowd")
    parser.add_argument("--all-models", action="store_true",
                        help="--only random: every other skcrowd model beside the "
                             "candidates")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--crowd", action="append", choices=list(CROWDS),
                        help="only these synthetic crowds (repeatable)")
    parser.add_argument("--extra", action="append", choices=list(EXTRA),
                        help="--only candidates: study only these further "
                             "candidates (repeatable; default all)")
    parser.add_argument("--no-crowdkit", action="store_true")
    parser.add_argument("--auto-only", action="store_true",
                        help="MajorityVote and AutoCrowd only (the other models' "
                             "columns do not depend on AutoCrowd's settings)")
    args = parser.parse_args()
    global AUTO_ONLY
    AUTO_ONLY = args.auto_only
    ONLY_EXTRA.extend(args.extra or [])
    seeds = range(args.seeds)
    crowdkit = not args.no_crowdkit
    print(f"load at start: {open('/proc/loadavg').read().strip()}")
    if args.only in (None, "mace"):
        run_mace(seeds)
    if args.only in (None, "synthetic"):
        run_synthetic(seeds, crowdkit, args.crowd)
    if args.only in (None, "shipped"):
        run_shipped(crowdkit)
    if args.only in (None, "cost"):
        run_cost()
    if args.only == "candidates":
        run_candidates(seeds, args.crowd)
    if args.only == "random":
        run_random(args.n_crowds, args.all_models, args.first_crowd)


if __name__ == "__main__":
    main()
