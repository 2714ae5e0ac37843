"""numpydoc validation of the public API.

Every class and function named in the ``__all__`` of ``skhybrid`` or of one of its public
(non-underscore) modules, and every public method and property such a class defines or
inherits from skhybrid code, must pass :func:`numpydoc.validate.validate` except for the
rules in :data:`IGNORED` (scikit-learn's ``maint_tools/test_docstrings.py`` ignores a
similar set). Members inherited from scikit-learn carry scikit-learn's docstrings and are
not checked here.
"""

import importlib
import inspect
import pkgutil

import pytest

import skhybrid

numpydoc_validate = pytest.importorskip("numpydoc.validate", reason="numpydoc (test extra)")

#: Rules ignored everywhere, and why.
IGNORED = {
    # "See Also" and "Examples" sections: the runnable examples are the user guide and the
    # sphinx-gallery scripts, which the docs build executes; doctests in every docstring
    # would fit DP estimators under --doctest-modules for little gain.
    "SA01",
    "EX01",
    # The first line of "Returns" names the value (``self : object``,
    # ``epsilon_hat, delta_hat : float``), as scikit-learn does; numpydoc wants a bare type.
    "RT02",
}
#: Rules ignored for methods and properties only: their one-line summary plus the
#: class's own description is enough (scikit-learn applies ES01 to top-level objects).
IGNORED_FOR_MEMBERS = {"ES01"}


#: Public modules left out, and why: the reproduction scripts behind ``python -m skhybrid
#: reproduce`` (their entry points ``skhybrid.experiments.available`` and ``run`` are
#: checked) are command-line back ends, not API pages.
EXCLUDED_MODULES = ("skhybrid.experiments.",)


def _public_modules():
    modules = [skhybrid]
    for info in pkgutil.walk_packages(skhybrid.__path__, prefix="skhybrid."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        if info.name.startswith(EXCLUDED_MODULES):
            continue
        modules.append(importlib.import_module(info.name))
    return modules


def _defined_in_skhybrid(obj):
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return getattr(obj, "__module__", "").startswith("skhybrid")


def _public_api():
    """``{import path: is_member}`` for every object whose docstring is checked."""
    paths = {}
    seen = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants (e.g. POPULATIONS) have no numpydoc docstring
            key = (obj.__module__, obj.__qualname__)
            if key in seen:  # re-exported under several modules: check it once
                continue
            seen.add(key)
            path = f"{module.__name__}.{name}"
            paths[path] = False
            if not inspect.isclass(obj):
                continue
            for attr in dir(obj):
                if attr.startswith("_"):
                    continue
                static = inspect.getattr_static(obj, attr)
                is_routine = inspect.isfunction(static) or isinstance(
                    static, (property, staticmethod, classmethod))
                if is_routine and _defined_in_skhybrid(static):
                    paths[f"{path}.{attr}"] = True
    return paths


PUBLIC_API = _public_api()


def _errors(path, is_member):
    result = numpydoc_validate.validate(path)
    ignored = IGNORED | (IGNORED_FOR_MEMBERS if is_member else set())
    return [f"{code}: {message}" for code, message in result["errors"] if code not in ignored]


def test_the_public_api_is_found():
    # The walk must see the estimators, their methods and the functional forms.
    assert "skhybrid.DPLogisticRegression" in PUBLIC_API
    assert "skhybrid.transfer.SubsampleTestReweigh.fit" in PUBLIC_API
    assert "skhybrid.mechanisms.laplace_mechanism" in PUBLIC_API
    assert PUBLIC_API["skhybrid.transfer.SubsampleTestReweigh.fit"] is True
    assert len(PUBLIC_API) > 100


@pytest.mark.parametrize("path", sorted(PUBLIC_API))
def test_docstring(path):
    errors = _errors(path, PUBLIC_API[path])
    assert not errors, f"{path}:\n" + "\n".join(errors)


def _broken(x, y):
    """sums two numbers

    Parameters
    ----------
    x : float
    """
    return x + y


def test_a_broken_docstring_fails():
    # The filter must not hide real errors: a missing parameter, a missing Returns section,
    # a summary without capital or period.
    codes = {error.split(":")[0] for error in _errors(f"{__name__}._broken", False)}
    assert {"PR01", "PR07", "RT01", "SS02", "SS03"} <= codes
