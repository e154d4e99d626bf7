"""The README's and the documentation's Python code runs: each page top to bottom, in a fresh namespace."""

from __future__ import annotations

import pathlib
import re

import matplotlib
import matplotlib.pyplot
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: A fenced block whose info string is exactly ``python`` (MyST's ``{code-cell}`` is not used).
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(page: pathlib.Path) -> list[str]:
    return BLOCK.findall(page.read_text())


def test_the_pages_hold_code() -> None:
    assert blocks(ROOT / "README.md")
    assert blocks(ROOT / "docs" / "getting_started.md")


@pytest.mark.solver
@pytest.mark.parametrize("page", [page for page in PAGES if blocks(page)],
                         ids=lambda page: str(page.relative_to(ROOT)))
def test_page_runs(page: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # files a page writes land in a scratch folder
    namespace: dict[str, object] = {"__name__": "__main__"}
    for number, code in enumerate(blocks(page), 1):
        try:
            exec(compile(code, f"{page.name}, block {number}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"{page.relative_to(ROOT)}, block {number} failed: {error!r}\n{code}") from error
    matplotlib.pyplot.close("all")


def _docs_conf():  # type: ignore[no-untyped-def]
    """docs/conf.py as a module (Sphinx comes with numpydoc, which the tests install)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("projmech_docs_conf", ROOT / "docs" / "conf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_build_refuses_pages_that_load_from_another_host(tmp_path: pathlib.Path) -> None:
    """The build's offline check (docs/conf.py) finds every remote load, planted in pages and a
    style sheet, and passes links, local files and data URLs."""
    import types

    from sphinx.errors import ExtensionError

    conf = _docs_conf()
    app = types.SimpleNamespace(builder=types.SimpleNamespace(format="html"), outdir=str(tmp_path))
    (tmp_path / "_static").mkdir()
    (tmp_path / "index.html").write_text(
        '<html><head><script src="_static/mathjax/tex-mml-chtml.js"></script>'
        '<link rel="stylesheet" href="_static/theme.css"><link rel="canonical" href="https://example.org/">'
        '<style>body { background: url(data:image/png;base64,AAAA) }</style></head>'
        '<body><a href="https://arxiv.org/abs/1212.0297">NTZ13</a><img src="plot.png"></body></html>')
    (tmp_path / "_static" / "theme.css").write_text("@font-face { src: url('fonts/a.woff2') }")
    conf._check_offline(app, None)  # nothing remote: passes
    (tmp_path / "theory.html").write_text(
        '<script async src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>'
        '<link rel="preload stylesheet" href="//fonts.example.com/a.css"><img src="http://example.com/a.png">'
        "<style>@import 'https://example.com/b.css';</style>")
    (tmp_path / "_static" / "extra.css").write_text('h1 { background: url("https://example.com/c.png") }')
    with pytest.raises(ExtensionError) as info:
        conf._check_offline(app, None)
    message = str(info.value)
    assert message.startswith("5 remote load(s)"), message
    for planted in ("cdn.jsdelivr.net", "//fonts.example.com/a.css", "http://example.com/a.png",
                    "https://example.com/b.css", "_static/extra.css: url(https://example.com/c.png)"):
        assert planted in message, (planted, message)
    assert "arxiv" not in message and "canonical" not in message


def test_docs_ship_mathjax() -> None:
    """The site's math renderer comes from an installed package, not a CDN."""
    conf = _docs_conf()
    assert not conf._is_remote(conf.mathjax_path)
    assert (conf._mathjax_files() / conf.mathjax_path.removeprefix("mathjax/")).is_file()
