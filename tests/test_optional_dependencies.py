"""cvxpy (the ``exact`` extra) and matplotlib (``examples``) are optional: the default path of
every estimator neither imports nor needs them, and asking for them says how to install."""

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from skhybrid.__main__ import main

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "skhybrid"


def test_every_learner_fits_without_trying_cvxpy_or_matplotlib():
    # The demo fits every public learner with its defaults. An import hook makes cvxpy and
    # matplotlib unimportable (as on a plain `pip install .`) and records every attempt,
    # so an optional import that is tried and caught is caught here too.
    code = textwrap.dedent("""
        import io, sys

        tried = []

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("cvxpy", "matplotlib"):
                    tried.append(name)
                    raise ImportError(f"{name} blocked by the test")
                return None

        for name in list(sys.modules):
            if name.split(".")[0] in ("cvxpy", "matplotlib"):
                del sys.modules[name]
        sys.meta_path.insert(0, Block())
        from skhybrid.__main__ import demo
        out = io.StringIO()
        demo(seed=0, out=out)
        assert "central: spent" in out.getvalue()
        assert not tried, tried
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(PACKAGE.parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_reproduce_without_matplotlib_says_how_to_install(monkeypatch, capsys):
    from skhybrid import experiments

    name = sorted(experiments.available())[0]
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["reproduce", name, "--quick"]) == 1  # refused before any computation
    err = capsys.readouterr().err
    assert "matplotlib" in err and 'pip install "skhybrid[examples]"' in err


def test_no_global_matplotlib_state_is_touched():
    # Static: no module selects a backend or goes through pyplot (its figures live in a
    # global registry and its first import picks a backend).
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "use" and getattr(
                    node.value, "id", None) == "matplotlib":
                offenders.append((path.name, node.lineno, "matplotlib.use"))
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                names += [a.name for a in node.names]
                if any("pyplot" in n for n in names):
                    offenders.append((path.name, node.lineno, "pyplot"))
    assert offenders == []


def test_figures_are_saved_without_pyplot(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    from skhybrid.experiments._plotting import new_figure

    def pyplot_figures():
        pyplot = sys.modules.get("matplotlib.pyplot")  # only if something else imported it
        return None if pyplot is None else pyplot.get_fignums()

    backend = dict.__getitem__(matplotlib.rcParams, "backend")  # without resolving it
    before = pyplot_figures()
    fig, axes = new_figure(1, 2, figsize=(4, 2))
    axes[0].plot([0, 1], [1, 0])
    fig.savefig(tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0
    assert dict.__getitem__(matplotlib.rcParams, "backend") == backend
    assert pyplot_figures() == before
