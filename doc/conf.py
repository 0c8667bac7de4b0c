"""Sphinx configuration for the skcrowd documentation.

Build (offline, warnings are errors)::

    pip install ".[doc]"
    sphinx-build -W -b html doc doc/_build/html

Decisions, so that the build needs no network:

* **Intersphinx** links to Python, NumPy, SciPy and scikit-learn are made only
  when ``SKCROWD_DOCS_INTERSPHINX=1`` (their inventories are fetched from the
  web, which this project's build machines cannot reach).  Without it, names
  such as ``sklearn.model_selection.GridSearchCV`` render as code, unlinked.
* **MathJax** is served from the built site itself: the ``doc`` extra installs
  ``django-static-mathjax`` (MathJax 3 as plain files, no dependencies) and
  the build copies the files it needs into ``_static/mathjax``, so the math
  renders in a browser without network.  Without that package the page
  falls back to MathJax from its CDN.
* **Gallery time**: the long experiments (the spam sweeps of the ordinal
  paper, the IRT lattice) read ``SKCROWD_DOCS_REDUCED``; it is set to ``1``
  here unless already set, so the docs build runs the documented reduced
  settings and each page says so.  ``SKCROWD_DOCS_REDUCED=0 sphinx-build ...``
  runs the full experiments; running an example as a script runs it in full.
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Document (and run the gallery against) the checkout being built; HERE holds
# the gallery's sort key (_gallery_order.py).
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("SKCROWD_DOCS_REDUCED", "1")

import skcrowd  # noqa: E402

project = "skcrowd"
copyright = "skcrowd developers, BSD-3-Clause"
release = skcrowd.__version__
version = release
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "_gallery_order.py"]

# API reference: one page per public class/function (doc/api.rst), each class
# page listing its methods and attributes (doc/_templates/autosummary).
autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_attributes_as_param_list = False

if os.environ.get("SKCROWD_DOCS_INTERSPHINX") == "1":
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
        "pandas": ("https://pandas.pydata.org/docs", None),
    }
else:
    intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    # A module whose name starts with "_" is never a gallery entry.
    "ignore_pattern": r"(__init__|/_[^/]*)\.py$",
    "within_subsection_order": "_gallery_order.ExampleOrder",
    "download_all_examples": False,
    "reset_modules_order": "both",
    # Problems in an example fail the build.
    "only_warn_on_example_error": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"skcrowd {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # The performance page's wide table gets the right sidebar's width.
    "secondary_sidebar_items": {"**": ["page-toc"], "performance": []},
}
# The left sidebar lists a page's siblings in the API reference and the
# gallery.  On the top-level guide pages the theme's section navigation would
# be empty, and the header shows only the first five pages (the API
# reference, the CLI and the gallery are behind "More"), so there the sidebar
# is the whole site's table of contents (_templates/sidebar-site-nav.html).
# The landing page lists the same contents in its body.
html_sidebars = {page.stem: ["sidebar-site-nav.html"]
                 for page in HERE.glob("*.rst") if page.stem not in ("api", "index")}
html_sidebars["index"] = []
html_static_path = ["_static"]
html_css_files = ["skcrowd.css"]
html_show_sourcelink = False


def _mathjax_dir():
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    es5 = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax" / "es5"
    return es5 if (es5 / "tex-chtml.js").exists() else None


MATHJAX_DIR = _mathjax_dir()
if MATHJAX_DIR is not None:
    # relative to _static of the built site
    mathjax_path = "mathjax/tex-chtml.js"


def _copy_mathjax(app, exception):
    if exception is not None or MATHJAX_DIR is None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    if (target / "tex-chtml.js").exists():
        return
    # tex-chtml.js plus what it loads on demand (TeX extensions, CHTML fonts,
    # the menu); the other combined builds are not used.
    unused = shutil.ignore_patterns("tex-svg*", "tex-mml-*", "mml-*", "tex-chtml-full*",
                                    "node-main.js", "svg", "sre")
    shutil.copytree(MATHJAX_DIR, target, ignore=unused)


def setup(app):
    app.connect("build-finished", _copy_mathjax)
