"""The Dask path (DESIGN §9) on a real in-process LocalCluster, and once
with worker processes: the same fit as in memory, item outputs as dask
collections, clear errors."""

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from skcrowd import GLAD, MACE, DawidSkene, IRT3PL, OrdinalMixture  # noqa: E402
from skcrowd.datasets import load_caries, make_dawid_skene, make_mace  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster) as client:
            yield client


def long_frame(ratings, npartitions, interleave=True):
    """A dask frame of the ratings; ``interleave`` sorts by rater so that
    every item's ratings start out spread over several partitions."""
    frame = pd.DataFrame({"item": ratings.item, "rater": ratings.rater, "label": ratings.label})
    if interleave:
        frame = frame.sort_values(["rater", "item"], kind="stable").reset_index(drop=True)
    return dd.from_pandas(frame, npartitions=npartitions, sort=False)


@pytest.fixture(scope="module")
def synthetic():
    return make_dawid_skene(n_items=3000, n_raters=30, ratings_per_item=5, n_classes=3,
                            random_state=0).ratings


def aligned(proba_frame, ratings):
    """A dask posterior frame as an array in the rows of ``ratings``' items."""
    frame = proba_frame.compute()
    return frame.loc[ratings.item_ids].to_numpy()


def test_dawid_skene_on_dask_equals_in_memory(client, synthetic):
    ddf = long_frame(synthetic, npartitions=4)
    on_dask = DawidSkene().fit(ddf)
    in_memory = DawidSkene().fit(synthetic)
    # Same loop, stats summed over partitions in a fixed order: equal up to
    # the order of floating-point sums.
    np.testing.assert_allclose(on_dask.confusion_, in_memory.confusion_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(on_dask.class_prior_, in_memory.class_prior_, atol=1e-12)
    np.testing.assert_allclose(on_dask.objective_history_, in_memory.objective_history_,
                               rtol=1e-12)
    assert on_dask.n_iter_ == in_memory.n_iter_
    np.testing.assert_array_equal(on_dask.rater_ids_, in_memory.rater_ids_)
    np.testing.assert_array_equal(on_dask.classes_, in_memory.classes_)
    proba = on_dask.predict_proba(ddf)
    assert isinstance(proba, dd.DataFrame) and list(proba.columns) == list(on_dask.classes_)
    np.testing.assert_allclose(aligned(proba, synthetic), in_memory.predict_proba(synthetic),
                               atol=1e-12)
    labels = on_dask.predict(ddf).compute().loc[synthetic.item_ids].to_numpy()
    np.testing.assert_array_equal(labels, in_memory.predict(synthetic))
    fit_predict = DawidSkene().fit_predict(ddf).compute().loc[synthetic.item_ids].to_numpy()
    np.testing.assert_array_equal(fit_predict, labels)
    loglik = on_dask.score_samples(ddf).compute().loc[synthetic.item_ids].to_numpy()
    np.testing.assert_allclose(loglik, in_memory.score_samples(synthetic), rtol=1e-12)
    assert on_dask.score(ddf) == pytest.approx(in_memory.score(synthetic), rel=1e-12)
    with pytest.raises(ValueError, match="sample"):
        on_dask.sample(ddf)


def test_random_restarts_on_dask_keep_the_best(client, synthetic):
    ddf = long_frame(synthetic, npartitions=3)
    model = DawidSkene(init="random", n_init=2, random_state=0).fit(ddf)
    history = model.objective_history_
    assert np.all(np.diff(history) >= -1e-12)
    assert model.converged_
    # a random start on Dask finds the same optimum as in memory
    in_memory = DawidSkene().fit(synthetic)
    np.testing.assert_allclose(model.lower_bound_, in_memory.lower_bound_, rtol=1e-6)


def test_irt_on_dask_equals_in_memory(client):
    caries = load_caries().ratings
    ddf = long_frame(caries, npartitions=3)
    # both default starts, the second a Dawid–Skene fit that also runs on Dask
    on_dask = IRT3PL.from_tag("ab", random_state=0).fit(ddf)
    in_memory = IRT3PL.from_tag("ab", random_state=0).fit(caries)
    np.testing.assert_allclose(on_dask.alpha_sens_, in_memory.alpha_sens_, atol=1e-9)
    np.testing.assert_allclose(on_dask.alpha_spec_, in_memory.alpha_spec_, atol=1e-9)
    np.testing.assert_allclose(on_dask.lower_bound_, in_memory.lower_bound_, rtol=1e-12)
    assert on_dask.item_difficulty_ is None  # the training items stay on the workers
    np.testing.assert_allclose(aligned(on_dask.predict_proba(ddf), caries),
                               in_memory.predict_proba(caries), atol=1e-9)


@pytest.mark.parametrize("init", ["majority", "random"])
def test_glad_on_dask_equals_in_memory(client, init):
    """GLAD's per-item difficulties stay on the workers as warm starts; the
    ridge step needs only their sum, so the fit is the in-memory one."""
    from skcrowd.datasets import make_glad

    ratings = make_glad(n_items=2000, n_raters=30, ratings_per_item=5, random_state=0).ratings
    ddf = long_frame(ratings, npartitions=4)
    kwargs = {"init": init, "n_init": 2 if init == "random" else 1, "random_state": 1}
    on_dask = GLAD(**kwargs).fit(ddf)
    in_memory = GLAD(**kwargs).fit(ratings)
    assert on_dask.n_iter_ == in_memory.n_iter_
    # in memory the history ends with the final item pass (the search over
    # each b_i, which predict runs); on Dask the items stay on the workers
    np.testing.assert_allclose(on_dask.objective_history_, in_memory.objective_history_[:-1],
                               rtol=1e-10)
    assert in_memory.objective_history_[-1] >= in_memory.objective_history_[-2]
    np.testing.assert_allclose(on_dask.rater_ability_, in_memory.rater_ability_, atol=1e-8)
    np.testing.assert_allclose(on_dask.class_prior_, in_memory.class_prior_, atol=1e-10)
    assert on_dask.item_difficulty_ is None
    np.testing.assert_allclose(aligned(on_dask.predict_proba(ddf), ratings),
                               in_memory.predict_proba(ratings), atol=1e-8)


@pytest.mark.parametrize("method", ["vb", "em"])
def test_mace_on_dask_equals_in_memory(client, method):
    """MACE's global step needs only summed per-rater counts."""
    ratings = make_mace(n_items=3000, n_raters=30, ratings_per_item=4, n_classes=3,
                        random_state=0).ratings
    ddf = long_frame(ratings, npartitions=4)
    kwargs = {"method": method, "class_prior": "learn", "n_init": 1}
    on_dask = MACE(**kwargs).fit(ddf)
    in_memory = MACE(**kwargs).fit(ratings)
    assert on_dask.n_iter_ == in_memory.n_iter_
    np.testing.assert_allclose(on_dask.objective_history_, in_memory.objective_history_,
                               rtol=1e-12)
    np.testing.assert_allclose(on_dask.rater_competence_, in_memory.rater_competence_,
                               atol=1e-10)
    np.testing.assert_allclose(on_dask.spam_distribution_, in_memory.spam_distribution_,
                               atol=1e-10)
    np.testing.assert_allclose(aligned(on_dask.predict_proba(ddf), ratings),
                               in_memory.predict_proba(ratings), atol=1e-10)
    loglik = on_dask.score_samples(ddf).compute().loc[ratings.item_ids].to_numpy()
    np.testing.assert_allclose(loglik, in_memory.score_samples(ratings), rtol=1e-10)
    # random restarts start each partition from its own seed: other paths,
    # to optima as good (within a small margin) as the majority start's
    restarts = MACE(method=method, init="random", n_init=2, random_state=0).fit(ddf)
    assert np.all(np.diff(restarts.objective_history_) >= -1e-12)
    assert restarts.lower_bound_ > in_memory.lower_bound_ - 0.01


def test_dask_input_errors(client, synthetic):
    ddf = long_frame(synthetic, npartitions=2)
    with pytest.raises(ValueError, match="columns"):
        DawidSkene().fit(ddf.rename(columns={"label": "answer"}))
    with pytest.raises(ValueError, match="does not run on Dask"):
        OrdinalMixture().fit(ddf)
    model = DawidSkene().fit(ddf)
    stranger = pd.DataFrame({"item": [0], "rater": [10_000], "label": [0]})
    with pytest.raises(ValueError, match="not seen in fit"):
        model.predict_proba(dd.from_pandas(stranger, npartitions=1)).compute()
    three = make_dawid_skene(n_items=50, n_raters=5, ratings_per_item=3, n_classes=3,
                             random_state=1).ratings
    with pytest.raises(ValueError, match="binary"):
        IRT3PL().fit(long_frame(three, npartitions=2))


def test_worker_processes():
    """Once with separate worker processes: data, model and stats cross
    process boundaries by pickling."""
    ratings = make_dawid_skene(n_items=500, n_raters=10, ratings_per_item=4,
                               random_state=2).ratings
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster):
            model = DawidSkene().fit(long_frame(ratings, npartitions=2))
            proba = aligned(model.predict_proba(long_frame(ratings, npartitions=2)), ratings)
            # GLAD's warm starts live in the worker processes between tasks
            glad = GLAD().fit(long_frame(ratings, npartitions=3))
            caries = load_caries().ratings
            irt = IRT3PL.from_tag("ab", random_state=0).fit(long_frame(caries, npartitions=3))
            irt_proba = aligned(irt.predict_proba(long_frame(caries, npartitions=3)), caries)
    in_memory = DawidSkene().fit(ratings)
    np.testing.assert_allclose(model.confusion_, in_memory.confusion_, atol=1e-12)
    np.testing.assert_allclose(proba, in_memory.predict_proba(ratings), atol=1e-12)
    glad_in_memory = GLAD().fit(ratings)
    assert glad.n_iter_ == glad_in_memory.n_iter_
    np.testing.assert_allclose(glad.rater_ability_, glad_in_memory.rater_ability_, atol=1e-8)
    irt_in_memory = IRT3PL.from_tag("ab", random_state=0).fit(caries)
    np.testing.assert_allclose(irt.alpha_sens_, irt_in_memory.alpha_sens_, atol=1e-9)
    np.testing.assert_allclose(irt.lower_bound_, irt_in_memory.lower_bound_, rtol=1e-12)
    np.testing.assert_allclose(irt_proba, irt_in_memory.predict_proba(caries), atol=1e-9)


def test_grid_search_on_the_dask_joblib_backend(client, synthetic):
    """Model selection spreads over the cluster through joblib's dask backend
    (DESIGN §9): the same scores as on one process."""
    import joblib
    from sklearn.model_selection import GridSearchCV, KFold

    grid = {"prior_wrong": [0.1, 0.5], "confusion": ["full", "one_coin"]}
    local = GridSearchCV(DawidSkene(), grid, cv=KFold(3)).fit(synthetic)
    with joblib.parallel_backend("dask"):
        spread = GridSearchCV(DawidSkene(), grid, cv=KFold(3), n_jobs=-1).fit(synthetic)
    np.testing.assert_allclose(spread.cv_results_["mean_test_score"],
                               local.cv_results_["mean_test_score"], rtol=1e-12)
    assert spread.best_params_ == local.best_params_
