"""Sphinx configuration: `make docs` builds the site into docs/_build/html, warnings as errors."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import projmech  # noqa: E402
from projmech._public_api import PUBLIC_MODULES  # noqa: E402

project = "projmech"
author = "the projmech developers"
copyright = "2026, the projmech developers"
release = version = projmech.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinxcontrib.bibtex",
    "matplotlib.sphinxext.plot_directive",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "amsmath", "deflist"]
myst_heading_anchors = 3

bibtex_bibfiles = ["references.bib"]
bibtex_default_style = "alpha"
bibtex_reference_style = "label"

autodoc_member_order = "bysource"
# Members a class inherits from projmech's own (private) bases are part of its API — every
# mechanism's `release` comes from one — but not those of Python's or other libraries' classes.
autodoc_default_options = {
    "inherited-members": "object,BaseException,Exception,Warning,UserWarning,ValueError,TypeError,RuntimeError,"
                         "KeyError,Enum,IntEnum,str,int,float,tuple,dict,list,LinearOperator",
}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# ```{plot}``` blocks run when the site is built: a figure cannot drift from the code beside it.
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]
plot_rcparams = {"figure.figsize": (6.4, 3.6), "font.size": 10}

html_theme = "pydata_sphinx_theme"
html_title = "projmech"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}


def _write_api_pages(app: Any) -> None:
    """One reference page per public module, from the list the docstring check walks."""
    folder = pathlib.Path(__file__).parent / "api"
    folder.mkdir(exist_ok=True)
    pages = {"index.rst": "API reference\n=============\n\n.. toctree::\n   :maxdepth: 1\n\n" + "".join(
        f"   {module.removeprefix('projmech.')}\n" for module in PUBLIC_MODULES)}
    for module in PUBLIC_MODULES:
        pages[f"{module.removeprefix('projmech.')}.rst"] = (
            f"{module}\n{'=' * len(module)}\n\n.. automodule:: {module}\n   :members:\n")
    for name, text in pages.items():
        page = folder / name
        if not page.exists() or page.read_text() != text:  # unchanged pages keep Sphinx's cache
            page.write_text(text)


def setup(app: Any) -> None:
    app.connect("builder-inited", _write_api_pages)
