"""Every private or version-dependent scikit-learn import lives in skhybrid/utils/_sklearn_compat.py."""

import ast
import pathlib
import re

import sklearn

from skhybrid.utils import _sklearn_compat as compat

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "skhybrid"
COMPAT = PACKAGE / "utils" / "_sklearn_compat.py"


def _private_sklearn_imports(path):
    """(line, what) for each import of a private scikit-learn module or name in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "sklearn":
                continue
            private_module = any(part.startswith("_") for part in node.module.split("."))
            private_names = [a.name for a in node.names if a.name.startswith("_")]
            if private_module or private_names:
                found.append((node.lineno, f"from {node.module} import ..."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("sklearn") and any(
                        p.startswith("_") for p in alias.name.split(".")):
                    found.append((node.lineno, f"import {alias.name}"))
    return found


def test_private_sklearn_imports_only_in_the_compat_module():
    offenders = {
        str(path.relative_to(PACKAGE.parent)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != COMPAT and (hits := _private_sklearn_imports(path))
    }
    assert offenders == {}, "import these through skhybrid.utils._sklearn_compat"
    assert _private_sklearn_imports(COMPAT)  # the scan does see them where they belong


def test_version_bounds_agree_with_pyproject():
    assert compat.SKLEARN_VERSION >= compat.MIN_SKLEARN_VERSION
    assert compat.SKLEARN_VERSION[0] < 2
    assert compat.SKLEARN_VERSION == compat._release(sklearn.__version__)
    pyproject = PACKAGE.parent / "pyproject.toml"
    if pyproject.exists():  # a source checkout
        bound = re.search(r'"scikit-learn>=([\d.]+),<2"', pyproject.read_text())
        assert bound, "pyproject.toml must declare scikit-learn>=X.Y,<2"
        assert compat._release(bound.group(1)) == compat.MIN_SKLEARN_VERSION


def test_release_parsing():
    assert compat._release("1.6.1") == (1, 6, 1)
    assert compat._release("1.10.0rc1") == (1, 10, 0)
    assert compat._release("1.9.dev0") == (1, 9, 0)
    assert compat._release("1.8.0+local.1") == (1, 8, 0)
