"""``import skhybrid`` is cheap: public names load on first use, optional parts never."""

import subprocess
import sys
import types

import pytest

import skhybrid

OPTIONAL = ("cvxpy", "matplotlib")


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_import_loads_no_submodule_and_no_optional_dependency():
    loaded = _run(
        "import sys, skhybrid\n"
        f"print(*[m for m in sys.modules if m.startswith('skhybrid.') or m in {OPTIONAL}])"
    )
    assert loaded == []


def test_every_subpackage_imports_without_optional_dependencies():
    names = " ".join(f"skhybrid.{m}" for m in skhybrid._SUBMODULES)
    loaded = _run(f"import sys, {names.replace(' ', ', ')}\n"
                  f"print(*[m for m in {OPTIONAL} if m in sys.modules])")
    assert loaded == []


def test_public_names_resolve_on_first_use():
    assert skhybrid.__all__ == list(skhybrid._EXPORTS)
    for name, module in skhybrid._EXPORTS.items():
        submodule = sys.modules.get(f"skhybrid.{module}") or getattr(skhybrid, module)
        assert getattr(skhybrid, name) is getattr(submodule, name)
        assert name in dir(skhybrid)
    for name in skhybrid._SUBMODULES:
        assert isinstance(getattr(skhybrid, name), types.ModuleType)
        assert name in dir(skhybrid)
    namespace = {}
    exec("from skhybrid import *", namespace)
    assert set(skhybrid.__all__) <= set(namespace)


def test_unknown_attribute_raises_attribute_error():
    assert not hasattr(skhybrid, "NoSuchEstimator")
    with pytest.raises(ImportError):
        exec("from skhybrid import NoSuchEstimator", {})
