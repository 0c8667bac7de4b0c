"""Save or compare the results of every model on the shipped data sets.

A refactoring check: results that must not move when the package's
structure changes.  ``save OUT.npz`` fits every model (``random_state=0``)
on every shipped data set it accepts and records ``predict_proba``,
``predict``, ``fit_predict``, ``score``, ``score_samples``, the numeric
columns of the rater and item tables and every fitted attribute ending in
``_``; plus a fit with known labels (gold), a warm start, a ``partial_fit``
stream of three batches, the input forms of one data set (matrix, sparse,
wide and long DataFrame), small Dask fits on a
``distributed.LocalCluster`` and short posterior chains of every sampled
model (``skcrowd.uncertainty``).  ``compare OUT.npz`` runs the same fits and
reports every entry that differs by more than ``--tol`` (relative to
``1 + |reference|``), appears or disappears.

Usage::

    python benchmarks/reference_results.py save reference.npz
    python benchmarks/reference_results.py compare reference.npz [--tol 1e-7]
    python benchmarks/reference_results.py save draws.npz --parts posterior_draws

The script uses only the public API (and the data sets' loaders), so a
reference saved from one commit can be compared with any later one.
"""

import argparse
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from skcrowd import (EBCC, GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, OrdinalMixture,
                     PooledDawidSkene)
from skcrowd.datasets import (load_bluebirds, load_caries, load_dog, load_rte, load_trec2010,
                              load_web)

#: Every shipped data set.
DATASETS = {
    "bluebirds": load_bluebirds,
    "caries": load_caries,
    "dog": load_dog,
    "rte": load_rte,
    "web": load_web,
    "trec": lambda: load_trec2010(preprocess="paper"),
}


def models(dataset):
    """Every model, default settings; OrdinalMixture with 2 restarts (1 on
    TREC) instead of 10, for time."""
    trec = dataset == "trec"
    return {
        "DawidSkene": DawidSkene(random_state=0),
        "GLAD": GLAD(random_state=0),
        "MACE": MACE(random_state=0),
        "OrdinalMixture": OrdinalMixture(random_state=0, n_init=1 if trec else 2),
        "IRT3PL": IRT3PL(random_state=0),
        "MajorityVote": MajorityVote(),
    }


def as_array(value):
    """A result as a plain numpy array (pandas objects by their values)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    value = np.asarray(value)
    if value.dtype.kind == "O":
        value = value.astype(str)
    return value


def record_model(out, key, model, X, fit_predicted=None):
    """Every result of the fitted ``model`` on ``X`` under ``key/...``."""
    out[f"{key}/predict_proba"] = as_array(model.predict_proba(X))
    out[f"{key}/predict"] = as_array(model.predict(X))
    out[f"{key}/score"] = np.float64(model.score(X))
    out[f"{key}/score_samples"] = as_array(model.score_samples(X))
    if fit_predicted is not None:
        out[f"{key}/fit_predict"] = as_array(fit_predicted)
    for name in sorted(vars(model)):
        if not name.endswith("_") or name.startswith("_"):
            continue
        value = getattr(model, name)
        if isinstance(value, (bool, int, float, np.number, np.bool_)):
            out[f"{key}/attr/{name}"] = np.asarray(value)
        elif isinstance(value, np.ndarray):
            out[f"{key}/attr/{name}"] = as_array(value)
    for table_name, table in (("rater_table", model.rater_table()),
                              ("item_table", model.item_table(X))):
        for column in table.columns:
            values = table[column].to_numpy()
            if values.dtype.kind in "biuf":
                out[f"{key}/{table_name}/{column}"] = values
        out[f"{key}/{table_name}/index"] = as_array(table.index)


def guarded(out, key, function):
    """Run ``function``; a refusal (ValueError) is recorded, not raised."""
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            function()
    except ValueError as error:
        out[f"{key}/refused"] = np.asarray(str(error).splitlines()[0])
    print(f"  {key}: {time.perf_counter() - started:.1f}s", flush=True)


def every_model_every_dataset(out):
    for dataset, loader in DATASETS.items():
        ratings = loader().ratings
        for name, model in models(dataset).items():
            key = f"fit/{dataset}/{name}"

            def run(model=model, key=key):
                labels = model.fit_predict(ratings)
                record_model(out, key, model, ratings, labels)

            guarded(out, key, run)


def masked_gold(gold, every=3):
    """Every ``every``-th known label kept, the others unknown (NaN)."""
    y = np.array(gold, dtype=np.float64, copy=True)
    keep = np.zeros(len(y), dtype=bool)
    keep[::every] = True
    y[~keep] = np.nan
    return y


def gold_fits(out):
    rte, web = load_rte(), load_web()
    for name, model in models("rte").items():
        data = web if name == "OrdinalMixture" else rte
        key = f"gold/{name}"

        def run(model=model, key=key, data=data):
            labels = model.fit_predict(data.ratings, masked_gold(data.gold))
            record_model(out, key, model, data.ratings, labels)

        guarded(out, key, run)


def warm_starts(out):
    data = load_rte()
    half = data.ratings[np.arange(data.ratings.shape[0] // 2)]
    for name, model in models("rte").items():
        if name in ("MajorityVote", "OrdinalMixture"):
            continue
        key = f"warm/{name}"

        def run(model=model, key=key):
            model.set_params(warm_start=True).fit(half)
            labels = model.fit_predict(data.ratings)
            record_model(out, key, model, data.ratings, labels)

        guarded(out, key, run)
    web = load_web()
    half = web.ratings[np.arange(web.ratings.shape[0] // 2)]
    model = OrdinalMixture(random_state=0, n_init=2, warm_start=True)

    def run_ordinal():
        model.fit(half)
        labels = model.fit_predict(web.ratings)
        record_model(out, "warm/OrdinalMixture", model, web.ratings, labels)

    guarded(out, "warm/OrdinalMixture", run_ordinal)


def streams(out):
    data = load_dog()
    n = data.ratings.shape[0]
    batches = np.array_split(np.arange(n), 3)
    for name in ("DawidSkene", "GLAD", "MACE"):
        model = models("dog")[name]
        key = f"stream/{name}"

        def run(model=model, key=key):
            for rows in batches:
                y = masked_gold(data.gold[rows], every=4)
                model.partial_fit(data.ratings[rows], y)
            record_model(out, key, model, data.ratings)

        guarded(out, key, run)


def input_forms(out):
    """One data set in every input form (the input boundary's paths)."""
    ratings = load_bluebirds().ratings
    long = ratings.to_long()
    dense = ratings.to_dense()
    forms = {
        "ratings": ratings,
        "long": long,
        "matrix": dense,
        "sparse": sp.csr_matrix(np.nan_to_num(dense, nan=0.0) + 1.0),
        "wide": long.pivot(index="item", columns="rater", values="label"),
    }
    for form, X in forms.items():
        for name in ("DawidSkene", "MajorityVote"):
            model = models("bluebirds")[name]
            key = f"form/{form}/{name}"

            def run(model=model, key=key, X=X):
                labels = model.fit_predict(X)
                record_model(out, key, model, X, labels)

            guarded(out, key, run)
    # groups, passed through fit / predict_proba / score (OrdinalMixture)
    trec = load_trec2010(preprocess="paper")
    rows = np.flatnonzero(np.isin(trec.groups, np.unique(trec.groups)[:10]))
    sub, groups = trec.ratings[rows], trec.groups[rows]
    model = OrdinalMixture(random_state=0, n_init=2, difficulty="group")

    def run_groups():
        labels = model.fit_predict(sub, groups=groups)
        out["groups/OrdinalMixture/fit_predict"] = as_array(labels)
        out["groups/OrdinalMixture/predict"] = as_array(model.predict(sub, groups=groups))
        out["groups/OrdinalMixture/predict_proba"] = as_array(
            model.predict_proba(sub, groups=groups))
        out["groups/OrdinalMixture/score"] = np.float64(model.score(sub, groups=groups))
        out["groups/OrdinalMixture/group_difficulty_"] = model.group_difficulty_
        out["groups/OrdinalMixture/rater_precision_"] = model.rater_precision_

    guarded(out, "groups/OrdinalMixture", run_groups)


def dask_fits(out):
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    long = load_rte().ratings.to_long()
    frame = dd.from_pandas(long, npartitions=2)
    ordinal_long = load_web().ratings.to_long()
    ordinal_frame = dd.from_pandas(ordinal_long, npartitions=2)
    with LocalCluster(n_workers=2, processes=False, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster):
        for name, model, X, local in (
                ("DawidSkene", DawidSkene(random_state=0), frame, long),
                ("OrdinalMixture", OrdinalMixture(random_state=0, n_init=2), ordinal_frame,
                 ordinal_long)):
            key = f"dask/{name}"

            def run(model=model, key=key, X=X, local=local):
                model.fit(X)
                proba = model.predict_proba(X).compute().sort_index()
                out[f"{key}/predict_proba"] = as_array(proba)
                out[f"{key}/index"] = as_array(proba.index)
                out[f"{key}/score"] = np.float64(model.score(X))
                # the fitted model on the in-memory ratings
                out[f"{key}/local_predict_proba"] = as_array(model.predict_proba(local))
                for attr in sorted(vars(model)):
                    value = getattr(model, attr)
                    if attr.endswith("_") and not attr.startswith("_") and isinstance(
                            value, (np.ndarray, float, int, np.number)):
                        out[f"{key}/attr/{attr}"] = as_array(value)

            guarded(out, key, run)


def record_draws(out, key, draws):
    """Every drawn array of ``draws`` under ``key/...`` (a dict of arrays,
    IRT3PL's item population, entry by entry; an attribute a draw leaves
    None, not at all)."""
    for attr, value in draws.items():
        if isinstance(value, dict):
            for part, array in value.items():
                out[f"{key}/{attr}/{part}"] = as_array(array)
        elif value is not None:
            out[f"{key}/{attr}"] = as_array(value)


def posterior_draws(out):
    """Short chains (20 draws after 20 burn-in sweeps, thin 2) of every
    model with a posterior sampler, and labels drawn from them; DawidSkene
    also with known labels and by the bootstrap."""
    rte, web = load_rte(), load_web()
    sampled = {
        "DawidSkene": (DawidSkene(random_state=0), rte),
        "MACE": (MACE(random_state=0), rte),
        "GLAD": (GLAD(random_state=0), rte),
        "IRT3PL": (IRT3PL(random_state=0), rte),
        "OrdinalMixture": (OrdinalMixture(random_state=0, n_init=1), web),
        "EBCC": (EBCC(random_state=0), rte),
        "PooledDawidSkene": (PooledDawidSkene(random_state=0), rte),
    }
    chain = {"n_burnin": 20, "thin": 2, "random_state": 0}
    for name, (model, data) in sampled.items():
        key = f"posterior/{name}"

        def run(model=model, key=key, X=data.ratings):
            model.fit(X)
            draws = model.posterior_samples(X, 20, **chain)
            record_draws(out, key, draws)
            out[f"{key}/sample_labels"] = as_array(model.sample_labels(X, samples=draws,
                                                                       random_state=0))
            out[f"{key}/integrated"] = as_array(model.predict_proba_integrated(X, samples=draws))

        guarded(out, key, run)

    def run_variants():
        y = masked_gold(rte.gold)
        model = DawidSkene(random_state=0).fit(rte.ratings, y)
        record_draws(out, "posterior/DawidSkene gold",
                     model.posterior_samples(rte.ratings, 20, y=y, **chain))
        model = DawidSkene(random_state=0).fit(rte.ratings)
        record_draws(out, "posterior/DawidSkene bootstrap",
                     model.posterior_samples(rte.ratings, 5, method="bootstrap",
                                             random_state=0))

    guarded(out, "posterior/variants", run_variants)


PARTS = {part.__name__: part for part in (every_model_every_dataset, gold_fits, warm_starts,
                                          streams, input_forms, dask_fits, posterior_draws)}


def collect(parts=None):
    out = {}
    for name in parts or PARTS:
        print(name, flush=True)
        PARTS[name](out)
    return out


def compare(reference, current, tol):
    """Lines naming every difference; empty when all agree."""
    problems = []
    for key in sorted(set(reference) - set(current)):
        problems.append(f"missing now: {key}")
    for key in sorted(set(current) - set(reference)):
        problems.append(f"new: {key}")
    worst = 0.0
    for key in sorted(set(reference) & set(current)):
        ref, now = reference[key], current[key]
        if ref.shape != now.shape:
            problems.append(f"{key}: shape {ref.shape} -> {now.shape}")
            continue
        if ref.dtype.kind in "biuf" and now.dtype.kind in "biuf":
            ref, now = ref.astype(np.float64), now.astype(np.float64)
            same_nan = np.isnan(ref) == np.isnan(now)
            with np.errstate(invalid="ignore"):
                both_inf = np.isinf(ref) & (ref == now)
                diff = np.where(np.isnan(ref) | both_inf, 0.0,
                                np.abs(ref - now) / (1.0 + np.abs(ref)))
            diff = np.where(np.isnan(diff), np.inf, diff)
            size = float(diff.max()) if diff.size else 0.0
            worst = max(worst, size if np.isfinite(size) else worst)
            if not same_nan.all() or size > tol:
                problems.append(f"{key}: max relative difference {size:.3g}")
        elif not np.array_equal(ref.astype(str), now.astype(str)):
            problems.append(f"{key}: values differ")
    return problems, worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["save", "compare"])
    parser.add_argument("path")
    parser.add_argument("--tol", type=float, default=1e-7)
    parser.add_argument("--parts", nargs="+", choices=list(PARTS),
                        help="only these parts (default: all)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    out = collect(args.parts)
    if args.mode == "save":
        np.savez_compressed(args.path, **out)
        print(f"saved {len(out)} entries to {args.path} in {time.perf_counter() - started:.0f}s")
        return 0
    reference = dict(np.load(args.path, allow_pickle=False))
    problems, worst = compare(reference, out, args.tol)
    for line in problems:
        print(line)
    print(f"{len(reference)} reference entries, {len(out)} now; {len(problems)} differ "
          f"(tol {args.tol:g}); largest relative difference {worst:.3g}; "
          f"{time.perf_counter() - started:.0f}s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
