"""The README's and the documentation's Python code runs: each page top to bottom, in a fresh namespace."""

from __future__ import annotations

import pathlib
import re

import matplotlib
import matplotlib.pyplot
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: A fenced block whose info string is exactly ``python`` (MyST's ``{code-cell}`` is not used).
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(page: pathlib.Path) -> list[str]:
    return BLOCK.findall(page.read_text())


def test_the_pages_hold_code() -> None:
    assert blocks(ROOT / "README.md")
    assert blocks(ROOT / "docs" / "getting_started.md")


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
