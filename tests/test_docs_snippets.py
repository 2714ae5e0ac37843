"""The documentation's code runs as written.

Every ``.. code-block:: python`` of a page (and every python block of the README) runs, top to bottom, in one namespace: a reader
who copies a page's snippets in order gets no NameError, no exception and no
PrivacyLeakWarning (the docs show the safe way).
"""

import re
import textwrap
import warnings
from pathlib import Path

import pytest
import sklearn

from skhybrid import PrivacyLeakWarning

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: Pages whose snippets need something a test machine does not have, and where the same
#: calls are tested instead.
NOT_RUN = {
    # a running Dask scheduler / Ray cluster: tests/test_cluster.py runs these calls on a
    # real LocalCluster
    "cluster.rst",
}


def _snippets(page):
    """The dedented bodies of the page's ``code-block:: python`` directives, in order."""
    if page.suffix == ".md":
        return re.findall(r"^```python\n(.*?)^```$", page.read_text(encoding="utf-8"),
                          flags=re.M | re.S)
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if re.fullmatch(r"\s*\.\. code-block:: python\s*", lines[i]):
            i += 1
            body = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(body)))
        else:
            i += 1
    return blocks


PAGES = sorted(p for p in [ROOT / "README.md", *DOCS.glob("*.rst"),
                           *DOCS.glob("user_guide/*.rst")]
               if _snippets(p) and p.name not in NOT_RUN)


def test_every_page_with_code_is_run_or_excused():
    with_code = {p.name for p in [*DOCS.glob("*.rst"), *DOCS.glob("user_guide/*.rst")]
                 if _snippets(p)}
    assert NOT_RUN <= with_code  # no stale excuse
    assert {"README.md", "transfer.rst", "adaptation.rst"} <= {p.name for p in PAGES}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_snippets_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # snippets may write a ledger file
    namespace = {"__name__": "__docs__"}
    with sklearn.config_context(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number, code in enumerate(_snippets(page), 1):
            exec(compile(code, f"{page.name}, snippet {number}", "exec"), namespace)
    leaks = [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert not leaks, leaks
