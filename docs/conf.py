"""Sphinx configuration: `make docs` builds the site into docs/_build/html, warnings as errors."""

from __future__ import annotations

import html.parser
import importlib.util
import pathlib
import re
import shutil
import sys
from typing import Any

from sphinx.errors import ExtensionError

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

# MathJax ships with the site, so that a site built and read offline renders its math (Sphinx's
# default loads it from a CDN). The django-static-mathjax wheel carries MathJax 3.2.2's files and
# nothing else (no Django); _copy_mathjax puts its browser build into _static/mathjax.
mathjax_path = "mathjax/tex-mml-chtml.js"

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
    for stale in folder.glob("*.rst"):  # a module moved or dropped from the list leaves no page behind
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        page = folder / name
        if not page.exists() or page.read_text() != text:  # unchanged pages keep Sphinx's cache
            page.write_text(text)


def _mathjax_files() -> pathlib.Path:
    """MathJax's browser build (es5) from the installed django-static-mathjax package."""
    spec = importlib.util.find_spec("mathjax")
    folder = pathlib.Path(spec.origin).parent / "static" / "mathjax" / "es5" if spec and spec.origin else None
    if folder is None or not (folder / "tex-mml-chtml.js").is_file():
        raise ExtensionError("MathJax's files are missing: install the docs extra (pip install -e '.[docs]', "
                             "or make docs), which brings django-static-mathjax")
    return folder


def _copy_mathjax(app: Any, exception: Exception | None) -> None:
    """The one MathJax component the pages load, and the fonts and extensions it loads on demand;
    the other combined components (8 MB more) are left out."""
    if exception is not None or app.builder.format != "html":
        return
    source = _mathjax_files()
    bundles = {path.name for path in source.glob("*.js")} - {pathlib.Path(mathjax_path).name}
    shutil.copytree(source, pathlib.Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True,
                    ignore=lambda folder, names: [name for name in names if pathlib.Path(folder) == source
                                                  and name in bundles])


#: What a page loads (not what it links to): each tag's attribute naming a file to fetch.
_LOADING_ATTRIBUTES = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
                       "audio": "src", "embed": "src", "object": "data", "link": "href"}
#: A link tag loads its href only for these relations (a rel="canonical" or "next" does not).
_LOADING_RELATIONS = {"stylesheet", "preload", "modulepreload", "prefetch", "preconnect", "dns-prefetch", "icon",
                      "shortcut", "manifest", "apple-touch-icon"}
_CSS_URL = re.compile(r"""(?:url\(\s*|@import\s+)['"]?([^'")\s]+)""")


def _is_remote(address: str) -> bool:
    return address.startswith("//") or re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*://", address) is not None


class _RemoteLoads(html.parser.HTMLParser):
    """The addresses on another host that a page loads: scripts, styles, images, frames, fonts."""

    def __init__(self) -> None:
        super().__init__()
        self.remote: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self._in_style = tag == "style"
        attribute = _LOADING_ATTRIBUTES.get(tag)
        if attribute is None or not _is_remote(values.get(attribute, "")):
            return
        if tag == "link" and not set(values.get("rel", "").lower().split()) & _LOADING_RELATIONS:
            return
        self.remote.append(f"<{tag} {attribute}={values[attribute]}>")

    def handle_endtag(self, tag: str) -> None:
        self._in_style = self._in_style and tag != "style"

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.remote.extend(address for address in _CSS_URL.findall(data) if _is_remote(address))


def _check_offline(app: Any, exception: Exception | None) -> None:
    """Fail the build if any page, or any style sheet it ships, loads a file from another host: the
    site must read the same with no internet (links to other sites are fine; they are not loaded)."""
    if exception is not None or app.builder.format != "html":
        return
    out = pathlib.Path(app.outdir)
    found: list[str] = []
    for page in sorted(out.rglob("*.html")):
        parser = _RemoteLoads()
        parser.feed(page.read_text(encoding="utf-8"))
        found.extend(f"{page.relative_to(out)}: {address}" for address in parser.remote)
    for sheet in sorted(out.rglob("*.css")):
        found.extend(f"{sheet.relative_to(out)}: url({address})"
                     for address in _CSS_URL.findall(sheet.read_text(encoding="utf-8", errors="replace"))
                     if _is_remote(address))
    if found:
        raise ExtensionError(f"{len(found)} remote load(s); the site must work offline:\n  " + "\n  ".join(found[:20]))


def setup(app: Any) -> None:
    app.connect("builder-inited", _write_api_pages)
    app.connect("builder-inited", lambda app: _mathjax_files())  # missing files fail before the build
    app.connect("build-finished", _copy_mathjax)
    app.connect("build-finished", _check_offline)
