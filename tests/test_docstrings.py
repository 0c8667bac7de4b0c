"""Every public class and function is documented: a numpydoc docstring with
an Examples section (run as a doctest by ``pytest --doctest-modules skcrowd``)
and an entry in the API reference (doc/api.rst)."""

import importlib
import inspect
import re
from pathlib import Path

import pytest

PUBLIC_MODULES = ["skcrowd", "skcrowd.datasets", "skcrowd.checks", "skcrowd.metrics",
                  "skcrowd.plotting"]
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
