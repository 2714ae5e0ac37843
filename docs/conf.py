"""Sphinx configuration for skhybrid.

Build (warnings are errors; no network needed)::

    python -m sphinx -W -b html docs docs/_build/html

What each choice needs, and why it works offline:

* Theme: ``pydata-sphinx-theme`` (as scikit-learn and imbalanced-learn use); its fonts
  and scripts ship inside the package.
* Maths: MathJax 3.2.2 is vendored in ``_static/mathjax`` (one 1.3 MB script with every
  TeX extension built in, plus its fonts; see ``_static/mathjax/README.md``).
  ``sphinx.ext.imgmath`` would need a LaTeX installation on every machine that builds the
  docs, and a CDN copy of MathJax leaves raw LaTeX on a reader's offline machine.
* Intersphinx (links into Python, numpy, scipy and scikit-learn): inventories are read
  from ``docs/_intersphinx/<name>.inv``. A missing file is downloaded once, with a short
  timeout, when the network allows; when it does not, that project is left out of
  ``intersphinx_mapping`` (its references render as plain code, no warning) and the build
  still passes with ``-W``. ``SKHYBRID_DOCS_INTERSPHINX=0`` skips the download attempt;
  drop an ``objects.inv`` into ``docs/_intersphinx/`` under the name above to link offline.
* Gallery: ``sphinx-gallery`` runs every ``examples/plot_*.py`` (about a minute);
  ``-D plot_gallery=0`` skips running them.
"""

import os
import sys
import threading
import urllib.request
from datetime import date
from pathlib import Path

# Build against the checkout, even when another skhybrid is installed.
sys.path.insert(0, os.path.abspath(".."))

import skhybrid  # noqa: E402

# -- Project ---------------------------------------------------------------------------
project = "skhybrid"
author = "skhybrid developers"
copyright = f"{date.today().year}, {author}"
release = skhybrid.__version__
version = ".".join(release.split(".")[:2])

# -- Extensions ------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "_intersphinx", "README.md", "Thumbs.db", ".DS_Store",
                    "_static/mathjax/README.md",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
root_doc = "index"
default_role = "literal"  # `x` in a docstring is code, not an unresolvable reference

# -- Maths (offline) -------------------------------------------------------------------
# Relative to _static; see _static/mathjax/README.md for the source and the checksum.
mathjax_path = "mathjax/tex-chtml-full.js"

# -- Intersphinx (fails soft offline) --------------------------------------------------
_INTERSPHINX_TARGETS = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "scipy": "https://docs.scipy.org/doc/scipy",
    "sklearn": "https://scikit-learn.org/stable",
}
_INVENTORY_DIR = Path(__file__).resolve().parent / "_intersphinx"


def _fetch_inventories(names, timeout=5.0):
    """Download the missing ``objects.inv`` files into ``_INVENTORY_DIR``, best effort.

    Each download runs in a daemon thread and the whole step waits at most ``2 *
    timeout`` seconds, so a network that hangs (not only one that refuses) cannot stall
    the build. A failed download leaves no file behind.
    """

    def fetch(name):
        try:
            with urllib.request.urlopen(f"{_INTERSPHINX_TARGETS[name]}/objects.inv",
                                        timeout=timeout) as response:
                data = response.read()
        except Exception:  # offline, DNS failure, HTTP error: leave the project out
            return
        if data.startswith(b"# Sphinx inventory version"):
            _INVENTORY_DIR.mkdir(exist_ok=True)
            (_INVENTORY_DIR / f"{name}.inv").write_bytes(data)

    threads = [threading.Thread(target=fetch, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(2 * timeout)


_missing = [name for name in _INTERSPHINX_TARGETS
            if not (_INVENTORY_DIR / f"{name}.inv").is_file()]
if _missing and os.environ.get("SKHYBRID_DOCS_INTERSPHINX", "1") != "0":
    _fetch_inventories(_missing)
intersphinx_mapping = {
    name: (url, str(_INVENTORY_DIR / f"{name}.inv"))
    for name, url in _INTERSPHINX_TARGETS.items()
    if (_INVENTORY_DIR / f"{name}.inv").is_file()
}
_unlinked = sorted(set(_INTERSPHINX_TARGETS) - set(intersphinx_mapping))
if _unlinked:
    print(f"intersphinx: no inventory for {', '.join(_unlinked)} (offline?); references "
          "to them render as plain code. See the docstring of docs/conf.py.")

# -- autodoc / autosummary -------------------------------------------------------------
autosummary_generate = True          # stubs go to docs/generated/
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"           # numpydoc sections carry the types

# -- numpydoc --------------------------------------------------------------------------
# Members are listed by the autosummary class template, not by numpydoc (whose member
# tables would need a stub per inherited sklearn method).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False
# Docstring validation runs in the test suite (tests/test_docstrings.py), where a broken
# docstring fails a test; the build only checks that pages render.
numpydoc_validation_checks = set()

# -- sphinx-gallery --------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    # Off by default: the backreference pass imports every name in the examples.
    "backreferences_dir": None,
}

# -- HTML ------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path = ["_static"]
html_title = f"skhybrid {release}"
html_show_sourcelink = False
