"""Sphinx configuration for skhybrid.

Build (offline, warnings are errors)::

    python -m sphinx -b html -W --keep-going docs docs/_build/html

Nothing here touches the network: the theme is the built-in ``alabaster``, MathJax is
only referenced by the generated pages (it loads in the reader's browser), and
intersphinx is off unless ``SKHYBRID_DOCS_INTERSPHINX=1`` is set in the environment.
"""

import os
import sys
from datetime import date

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
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# Cross-links to numpy/scipy/sklearn need their inventories, i.e. the network: opt-in.
if os.environ.get("SKHYBRID_DOCS_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "scipy": ("https://docs.scipy.org/doc/scipy", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
    }

templates_path = ["_templates"]
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip"]
root_doc = "index"
default_role = "literal"  # `x` in a docstring is code, not an unresolvable reference

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
# Docstring validation is the linters' job; the build only checks that pages render.
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
    "reference_url": {"skhybrid": None},
    # Off by default: the backreference pass imports every name in the examples.
    "backreferences_dir": None,
}

# -- HTML ------------------------------------------------------------------------------
html_theme = "alabaster"
html_theme_options = {
    "description": "Differentially private learners for mixed-trust data",
    "fixed_sidebar": True,
    "show_related": False,
}
html_static_path = []
html_title = f"skhybrid {release}"
