"""The order of the gallery: from a first fit to the paper reproductions.

sphinx-gallery imports this class by name (``within_subsection_order`` in
``conf.py``); an example not listed here comes after the listed ones, by
file name.
"""

ORDER = [
    "plot_quick_start.py",
    "plot_long_form.py",
    "plot_from_crowdkit.py",
    "plot_rater_diagnostics.py",
    "plot_bad_raters.py",
    "plot_model_selection.py",
    "plot_many_classes.py",
    "plot_gold.py",
    "plot_glad_abilities.py",
    "plot_mace_spammers.py",
    "plot_ordinal_trec.py",
    "plot_ordinal_spam.py",
    "plot_irt_lattice.py",
    "plot_uncertainty.py",
    "plot_crowd_classifier.py",
    "plot_dask.py",
    "plot_benchmark.py",
]


class ExampleOrder:
    """Sort key: position in ``ORDER``, then file name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __repr__(self):
        return "<ExampleOrder>"

    def __call__(self, filename):
        name = str(filename)
        return (ORDER.index(name) if name in ORDER else len(ORDER), name)
