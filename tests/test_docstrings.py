"""Every public class and function is documented: a numpydoc docstring with
an Examples section (run as a doctest by ``pytest --doctest-modules skcrowd``)
and an entry in the API reference (doc/api.rst)."""

import importlib
import inspect
import re
from pathlib import Path

import pytest

PUBLIC_MODULES = ["skcrowd", "skcrowd.datasets", "skcrowd.checks", "skcrowd.metrics",
                  "skcrowd.active", "skcrowd.plotting", "skcrowd.uncertainty"]
API_RST = Path(__file__).resolve().parents[1] / "doc" / "api.rst"


def public_objects():
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield module_name, name, obj


PUBLIC = list(public_objects())


@pytest.mark.parametrize("module_name, name, obj", PUBLIC,
                         ids=[f"{m}.{n}" for m, n, _ in PUBLIC])
def test_has_a_docstring_with_examples(module_name, name, obj):
    doc = inspect.getdoc(obj) or ""
    assert doc, f"{module_name}.{name} has no docstring"
    assert re.search(r"^Examples\n-{8}", doc, re.M), (
        f"{module_name}.{name} has no numpydoc Examples section")
    assert ">>> " in doc.split("Examples", 1)[1], (
        f"{module_name}.{name}: its Examples section has no doctest")


@pytest.mark.skipif(not API_RST.exists(), reason="run from a source checkout")
@pytest.mark.parametrize("module_name, name, obj", PUBLIC,
                         ids=[f"{m}.{n}" for m, n, _ in PUBLIC])
def test_is_in_the_api_reference(module_name, name, obj):
    text = API_RST.read_text(encoding="utf-8")
    # autosummary entries are listed under a ".. currentmodule::"
    sections = re.split(r"^\.\. currentmodule:: ", text, flags=re.M)[1:]
    listed = {
        (section.split("\n", 1)[0].strip(), entry)
        for section in sections
        for entry in re.findall(r"^ {3}(\w[\w.]*)\s*$", section, re.M)
    }
    assert (module_name, name) in listed, f"{module_name}.{name} is not listed in doc/api.rst"


# reStructuredText recognises ``literal`` only when the opening backquotes
# follow whitespace or one of these characters, and the closing ones are
# followed by whitespace or one of these (docutils' inline markup rules);
# otherwise the backquotes are printed as they are, as in make_glad's
# "N(``alpha_mean``, ``alpha_std``²)" (rendered "alpha_std``²") and
# make_ordinal's "1..``n_levels``".
_OPEN_AFTER = set(" \n\t-:/'\"<([{")
_CLOSE_BEFORE = set(" \n\t-.,:;!?\\/'\")]}>")


def _broken_literals(doc):
    broken = []
    for match in re.finditer(r"``(?=\S)(.+?)(?<=\S)``", doc, re.S):
        before = doc[match.start() - 1] if match.start() else " "
        after = doc[match.end()] if match.end() < len(doc) else " "
        if before not in _OPEN_AFTER or after not in _CLOSE_BEFORE:
            broken.append(doc[max(0, match.start() - 10):match.end() + 10])
    return broken


PUBLIC_DOCS = [(m, n, o) for m, n, o in PUBLIC] + [
    (m, f"{n}.{attr}", getattr(o, attr)) for m, n, o in PUBLIC if inspect.isclass(o)
    for attr in dir(o)
    if not attr.startswith("_") and inspect.isfunction(getattr(o, attr, None))
]


@pytest.mark.parametrize("module_name, name, obj", PUBLIC_DOCS,
                         ids=[f"{m}.{n}" for m, n, _ in PUBLIC_DOCS])
def test_inline_literals_render(module_name, name, obj):
    doc = inspect.getdoc(obj) or ""
    assert not _broken_literals(doc), (
        f"{module_name}.{name}: ``...`` that reStructuredText shows raw: "
        f"{_broken_literals(doc)}")
