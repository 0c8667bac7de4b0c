"""PooledDawidSkene: Dawid–Skene with a population Dirichlet on the confusion
rows, learned by variational empirical Bayes (Paun et al. 2018)."""

import numpy as np
import pytest

from skcrowd import DawidSkene, PooledDawidSkene, Ratings
from skcrowd._population import update_population
from skcrowd.datasets import load_rte


@pytest.fixture(scope="module")
def rte():
    return load_rte()


def simulate(seed, n_items=3000, n_raters=60, per_item=4):
    """Ratings drawn from the model itself: each rater's confusion rows from
    the population Dirichlet, each item's class from π."""
    rng = np.random.default_rng(seed)
    population = np.array([[12.0, 2.0, 1.0], [1.5, 9.0, 1.5], [1.0, 3.0, 8.0]])
    prevalence = np.array([0.5, 0.3, 0.2])
    confusion = np.stack([[rng.dirichlet(row) for row in population]
                          for _ in range(n_raters)])
    truth = rng.choice(3, n_items, p=prevalence)
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate([rng.choice(n_raters, per_item, replace=False)
                            for _ in range(n_items)])
    rows = confusion[rater, truth[item]]
    label = (rng.random(item.size)[:, None] > np.cumsum(rows, axis=1)).sum(axis=1)
    ratings = Ratings(item, rater, np.minimum(label, 2), item_ids=np.arange(n_items))
    return ratings, truth, population, prevalence, confusion


@pytest.mark.parametrize("accelerate", [False, True])
def test_the_objective_never_decreases(rte, accelerate):
    for R in (rte.ratings, simulate(0, n_items=600)[0]):
        model = PooledDawidSkene(accelerate=accelerate, tol=1e-9, max_iter=300).fit(R)
        steps = np.diff(model.objective_history_)
        assert np.all(steps >= -1e-10), steps.min()
        assert model.n_iter_ > 3


def test_recovers_its_own_simulated_parameters():
    R, truth, population, prevalence, confusion = simulate(1)
    model = PooledDawidSkene(random_state=0).fit(R)
    mean = population / population.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.population_confusion_, mean, atol=0.05)
    np.testing.assert_allclose(model.class_prior_, prevalence, atol=0.03)
    # the population's concentration (how alike the raters are), per row,
    # against the Dirichlet fitted to the 60 raters' true rows themselves
    oracle = update_population(population, np.log(confusion), 1e-9, steps=500)
    strength = model.population_.sum(axis=1) / oracle.sum(axis=1)
    assert np.all((strength > 0.5) & (strength < 2.0)), strength
    # each rater's rows, nearer the truth than the population mean is
    own = np.abs(model.confusion_ - confusion).mean()
    pooled = np.abs(mean[None] - confusion).mean()
    assert own < 0.8 * pooled, (own, pooled)
    assert np.mean(model.predict(R) == truth) > np.mean(
        DawidSkene().fit(R).predict(R) == truth) - 0.01


def test_few_ratings_are_shrunk_towards_the_population():
    R, *_ = simulate(2, n_items=800)
    # one more rater, without ratings, and one with a single rating
    R = Ratings(np.r_[R.item, 0], np.r_[R.rater, 60], np.r_[R.label, 0],
                item_ids=R.item_ids, rater_ids=np.arange(62))
    model = PooledDawidSkene().fit(R)
    counts = np.bincount(R._rater, minlength=62)
    # a rater's posterior is α_k plus its expected counts, so its mean is
    # the population's mean shifted by its counts' share
    added = model.confusion_posterior_ - model.population_[None]
    np.testing.assert_allclose(added.sum(axis=(1, 2)), counts, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(model.confusion_[61], model.population_confusion_)
    distance = np.abs(model.confusion_ - model.population_confusion_[None]).sum(axis=(1, 2))
    assert distance[60] < np.min(distance[:60])


def test_predict_and_score_use_the_fitted_weights(rte):
    R = rte.ratings
    model = PooledDawidSkene()
    labels = model.fit_predict(R)
    np.testing.assert_array_equal(labels, model.predict(R))
    assert np.isfinite(model.score(R))
    assert np.mean(labels == rte.gold) > 0.9
    np.testing.assert_allclose(model.confusion_.sum(axis=2), 1.0)


def test_an_unknown_rater_is_a_draw_from_the_population(rte):
    R = rte.ratings
    model = PooledDawidSkene(unknown_raters="prior").fit(R)
    new = Ratings(item=[0, 0, 0], rater=["new", R.rater_ids[0], R.rater_ids[1]],
                  label=[1, 1, 0])
    proba = model.predict_proba(new)
    assert proba.shape == (1, 2) and np.all(np.isfinite(proba))
    unknown = model._population_rater()
    np.testing.assert_allclose(unknown["confusion_posterior_"], model.population_)


def test_warm_start_begins_at_the_fitted_state(rte):
    R = rte.ratings
    first = PooledDawidSkene().fit(R)
    again = PooledDawidSkene(warm_start=True).fit(R)
    again.fit(R)
    assert again.n_iter_ < first.n_iter_
    assert again.lower_bound_ >= first.lower_bound_ - 1e-6
    np.testing.assert_allclose(again.population_, first.population_, rtol=1e-2)


def test_bad_parameters_are_refused(rte):
    with pytest.raises(ValueError, match="prior_rate"):
        PooledDawidSkene(prior_rate=0.0).fit(rte.ratings)
    with pytest.raises(ValueError, match="prior_params"):
        PooledDawidSkene().fit(rte.ratings, prior_params=DawidSkene().fit(rte.ratings))
