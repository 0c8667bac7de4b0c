"""skcrowd.plotting: each plot draws what the fitted model says, on the Axes asked for."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from skcrowd import GLAD, IRT3PL, MACE, DawidSkene, MajorityVote, OrdinalMixture  # noqa: E402
from skcrowd.checks import posterior_predictive_check  # noqa: E402
from skcrowd.datasets import make_dawid_skene, make_irt, make_ordinal  # noqa: E402
from skcrowd.plotting import (  # noqa: E402
    plot_confusion_matrices,
    plot_convergence,
    plot_item_uncertainty,
    plot_ordinal_raters,
    plot_predictive_check,
    plot_rater_ranking,
    plot_sensitivity_specificity,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def binary():
    data = make_dawid_skene(300, 8, 4, 2, random_state=0)
    return data.ratings, DawidSkene().fit(data.ratings)


@pytest.fixture(scope="module")
def three_class():
    data = make_dawid_skene(300, 6, 4, 3, random_state=1)
    return data.ratings, DawidSkene().fit(data.ratings)


@pytest.fixture(scope="module")
def irt():
    data = make_irt(n_items=300, n_raters=5, ratings_per_item=5, random_state=0)
    return data.ratings, IRT3PL.from_tag("ab", random_state=0).fit(data.ratings)


def test_confusion_matrices_one_panel_per_rater_with_the_values(three_class):
    _, model = three_class
    axes = plot_confusion_matrices(model, raters=[0, 2, 5], ncols=2)
    assert len(axes) == 4  # a 2 x 2 grid for three raters
    assert [a.get_visible() for a in axes] == [True, True, True, False]
    for panel, j in zip(axes, [0, 2, 5]):
        image = panel.get_images()[0].get_array()
        np.testing.assert_allclose(image, model.confusion_[j])
        assert panel.get_title() == f"rater {model.rater_ids_[j]}"
        texts = [t.get_text() for t in panel.texts]
        assert texts == [f"{v:.2f}" for v in model.confusion_[j].ravel()]


def test_confusion_matrices_on_given_axes(three_class):
    _, model = three_class
    fig, given = plt.subplots(1, 2)
    axes = plot_confusion_matrices(model, raters=[1, 3], ax=given)
    assert list(axes) == list(given)
    with pytest.raises(ValueError, match="2 Axes for 3 raters"):
        plot_confusion_matrices(model, raters=[0, 1, 2], ax=given)
    with pytest.raises(ValueError, match="column indices"):
        plot_confusion_matrices(model, raters=[6])
    with pytest.raises(ValueError, match="no confusion_"):
        plot_confusion_matrices(MajorityVote().fit(np.array([[0, 1], [1, 1]])))


@pytest.mark.parametrize("raters", [[0.5], ["1"], [True, False], np.array([2.0])])
def test_confusion_matrices_raters_must_be_integer_positions(three_class, raters):
    # read with dtype=int: 0.5 drew rater 0, '1' rater 1, True rater 1
    _, model = three_class
    with pytest.raises(ValueError, match="raters must be rater column indices"):
        plot_confusion_matrices(model, raters=raters)
    assert plot_confusion_matrices(model, raters=np.array([2], dtype=np.uint8))[0] \
        .get_title() == "rater 2"


@pytest.mark.parametrize("ncols", [0, -1, 1.5, None, True])
def test_confusion_matrices_ncols_must_be_a_positive_integer(three_class, ncols):
    # ncols=0 and -1 drew one column, 1.5 one, None raised int()'s TypeError
    _, model = three_class
    with pytest.raises(ValueError, match="ncols must be a positive integer"):
        plot_confusion_matrices(model, ncols=ncols)
    assert plot_confusion_matrices(model, ncols=100).shape == (6,)


def test_sensitivity_specificity_points_and_spam_line(binary):
    _, model = binary
    fig, given = plt.subplots()
    ax = plot_sensitivity_specificity(model, ax=given, annotate=True)
    assert ax is given
    points = ax.collections[0].get_offsets()
    np.testing.assert_allclose(points[:, 0], model.confusion_[:, 0, 0])
    np.testing.assert_allclose(points[:, 1], model.confusion_[:, 1, 1])
    spam_line = ax.lines[0]
    x, y = spam_line.get_xdata(), spam_line.get_ydata()
    np.testing.assert_allclose(np.asarray(x) + np.asarray(y), 1.0)
    assert len(ax.texts) == model.n_features_in_


def test_sensitivity_specificity_of_irt3pl(irt):
    _, model = irt
    ax = plot_sensitivity_specificity(model)
    points = ax.collections[0].get_offsets()
    np.testing.assert_allclose(points[:, 0], model.specificity_)
    np.testing.assert_allclose(points[:, 1], model.sensitivity_)


def test_sensitivity_specificity_needs_a_binary_model(three_class):
    _, model = three_class
    with pytest.raises(ValueError, match="sensitivity and specificity"):
        plot_sensitivity_specificity(model)


def test_rater_ranking_bars_are_sorted_values(binary, irt):
    ratings, ds = binary
    ax = plot_rater_ranking(ds)
    widths = [bar.get_width() for bar in ax.patches]
    np.testing.assert_allclose(widths, np.sort(ds.rater_accuracy_))
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks == [str(r) for r in ds.rater_ids_[np.argsort(ds.rater_accuracy_,
                                                              kind="stable")]]
    glad = GLAD().fit(ratings)
    ax = plot_rater_ranking(glad, top=2)
    widths = [bar.get_width() for bar in ax.patches]
    sorted_ability = np.sort(glad.rater_ability_)
    np.testing.assert_allclose(widths, np.r_[sorted_ability[:2], sorted_ability[-2:]])
    _, model = irt
    ax = plot_rater_ranking(model)
    assert ax.get_xlabel() == "sensitivity + specificity - 1"
    np.testing.assert_allclose([b.get_width() for b in ax.patches],
                               np.sort(model.sensitivity_ + model.specificity_ - 1))
    with pytest.raises(ValueError, match="no attribute 'rater_ability_'"):
        plot_rater_ranking(ds, attribute="rater_ability_")


def _bars(ax):
    return np.array([bar.get_width() for bar in ax.patches])


def test_rater_ranking_uses_each_models_own_measure(binary):
    # MACE was ranked by its accuracy and labelled "accuracy (DawidSkene)",
    # not by its spam measure, rater_competence_; MajorityVote raised
    # although its rater_table() has an agreement column
    ratings, ds = binary
    ordinal_data = make_ordinal(200, 10, 4, random_state=0).ratings
    cases = [
        (MACE(random_state=0).fit(ratings), ratings, "rater_competence_", "competence", None),
        (MajorityVote().fit(ratings), ratings, "rater_agreement_", "agreement", "agreement"),
        (OrdinalMixture(n_init=1, random_state=0).fit(ordinal_data), ordinal_data,
         "rater_reliability_", "reliability", "reliability"),
        (GLAD().fit(ratings), ratings, "rater_ability_", "ability", None),
        (ds, ratings, "rater_accuracy_", "accuracy", "accuracy"),
    ]
    for model, _, attribute, word, column in cases:
        ax = plot_rater_ranking(model)
        name = type(model).__name__
        np.testing.assert_allclose(_bars(ax), np.sort(getattr(model, attribute)))
        label = ax.get_xlabel()
        assert label.startswith(word) and label.endswith(name), (name, label)
        if column is not None:  # the rater table's column of the same measure
            np.testing.assert_allclose(_bars(ax), np.sort(model.rater_table()[column]))


@pytest.mark.parametrize("top", [0, -1, 1.5, True])
def test_rater_ranking_top_must_be_a_positive_integer(binary, top):
    # top=0 drew every rater and top=-1 drew raters twice, silently
    _, model = binary
    with pytest.raises(ValueError, match="top must be a positive integer"):
        plot_rater_ranking(model, top=top)
    assert len(plot_rater_ranking(model, top=1).patches) == 2


@pytest.mark.parametrize("attribute", ["confusion_", "classes_", "class_prior_"])
def test_rater_ranking_attribute_must_be_one_number_per_rater(binary, attribute):
    # confusion_ raised matplotlib's "shape mismatch: objects cannot be
    # broadcast"; classes_ and class_prior_ drew 2 bars named after raters 0, 1
    _, model = binary
    with pytest.raises(ValueError, match=f"{attribute!r} is not one number per rater"):
        plot_rater_ranking(model, attribute=attribute)
    assert len(plot_rater_ranking(model, attribute="rater_accuracy_").patches) == 8


@pytest.mark.parametrize("bins", [0, -3, 2.5])
def test_item_uncertainty_bins_must_be_a_positive_integer(binary, bins):
    # bins=0 drew an empty histogram, bins=2.5 raised a numpy TypeError
    ratings, model = binary
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        plot_item_uncertainty(model, ratings, bins=bins)


def test_ordinal_raters_reliability_against_precision():
    data = make_ordinal(300, 20, 5, random_state=0)
    model = OrdinalMixture(n_init=1, random_state=0).fit(data.ratings)
    ax = plot_ordinal_raters(model)
    points = ax.collections[0].get_offsets()
    np.testing.assert_allclose(points[:, 0], model.rater_reliability_)
    np.testing.assert_allclose(points[:, 1], model.rater_precision_)


def _savefig_extents(ax, tmp_path):
    """The y label's and the figure's extents (pixels) after a savefig at
    the default size and bbox, and the y tick labels."""
    ax.figure.savefig(tmp_path / "raters.png")
    renderer = ax.figure.canvas.get_renderer()
    return (ax.yaxis.label.get_window_extent(renderer), ax.figure.bbox,
            [t.get_text() for t in ax.get_yticklabels()])


def test_ordinal_raters_axis_is_readable(tmp_path):
    # a log axis over precisions 0.5-2.7 (TREC) printed ticks such as
    # 2x10^0 and 6x10^-1, and a default-size savefig cut off the y label
    data = make_ordinal(300, 20, 5, random_state=0)
    model = OrdinalMixture(n_init=1, random_state=0).fit(data.ratings)
    ax = plot_ordinal_raters(model)
    assert ax.get_yscale() == "linear"
    label, figure, ticks = _savefig_extents(ax, tmp_path)
    assert figure.x0 <= label.x0 and label.x1 <= figure.x1
    assert figure.y0 <= label.y0 and label.y1 <= figure.y1
    assert ticks and all(t and "$" not in t and "10^" not in t for t in ticks), ticks
    for t in ticks:
        float(t.replace("\u2212", "-"))  # plain numbers


def test_ordinal_raters_needs_an_ordinal_model(binary):
    with pytest.raises(ValueError, match="OrdinalMixture"):
        plot_ordinal_raters(binary[1])


def test_item_uncertainty_histogram_counts_every_item(binary):
    ratings, model = binary
    ax = plot_item_uncertainty(model, ratings, bins=10)
    heights = [bar.get_height() for bar in ax.patches]
    assert len(heights) == 10
    assert sum(heights) == ratings.shape[0]
    mean_line = ax.lines[0].get_xdata()[0]
    assert mean_line == pytest.approx(model.predict_proba(ratings).max(axis=1).mean())
    assert ax.get_yscale() == "linear"
    assert plot_item_uncertainty(model, ratings, log=True).get_yscale() == "log"


def test_predictive_check_boxes_and_data(irt):
    ratings, model = irt
    check = posterior_predictive_check(model, ratings, n_replicates=50, random_state=0)
    for statistic in ("ratings", "rater"):
        _, given = plt.subplots()
        ax = plot_predictive_check(check, statistic, ax=given)
        assert ax is given
        observed = check.observed[statistic]
        data_line = ax.lines[-1]
        np.testing.assert_allclose(data_line.get_ydata(), observed)
        # one box per component: 2 whiskers, 2 caps, the box and the median
        assert len(ax.lines) == 6 * len(observed) + 1
        assert f"p = {check.p_values[statistic]:.3f}" in ax.get_title()
    assert ax.get_yscale() == "linear"
    with pytest.raises(ValueError, match="statistic must be one of"):
        plot_predictive_check(check, "items")


@pytest.mark.parametrize("not_a_check", ["model", {"observed": {}}, None])
def test_predictive_check_plot_needs_a_check(binary, not_a_check):
    # the model in place of its check raised "AttributeError: 'DawidSkene'
    # object has no attribute 'observed'"
    _, model = binary
    given = model if not_a_check == "model" else not_a_check
    with pytest.raises(TypeError, match="must be the result of posterior_predictive_check"):
        plot_predictive_check(given)


def test_convergence_draws_the_objective_history(binary):
    _, model = binary
    ax = plot_convergence(model)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), model.objective_history_)
    assert f"{len(model.objective_history_)} iterations" in ax.get_title()


def test_plots_need_a_fitted_model():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        plot_convergence(DawidSkene())
