"""The error-against-n experiment's helpers: no global state, options by keyword."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import projmech.analysis._experiments as experiments

ROOT = Path(__file__).resolve().parents[2]

PLOT = """
import sys
import matplotlib
{before}
import pandas as pd
from projmech.analysis._experiments import plot_error_vs_n
results = pd.DataFrame({{"mechanism": ["a", "a"], "n": [10, 100], "rmse_mean": [0.1, 0.01],
                         "rmse_ci_low": [0.09, 0.009], "rmse_ci_high": [0.11, 0.011]}})
plot_error_vs_n(results, sys.argv[1], "title", bounds={{"bound": ([10, 100], [0.2, 0.02])}})
print(matplotlib.get_backend())
"""


def _plot(tmp_path: Path, before: str = "") -> tuple[str, Path]:
    path = tmp_path / "plot.png"
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}
    environment["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PLOT.format(before=before), str(path)], env=environment,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip(), path


def test_plot_works_headless_without_choosing_a_backend(tmp_path):
    backend, path = _plot(tmp_path)
    assert path.read_bytes().startswith(b"\x89PNG")
    assert backend.lower() == "agg"  # matplotlib's own choice without a display


def test_plot_leaves_the_callers_backend_alone(tmp_path):
    backend, path = _plot(tmp_path, before='matplotlib.use("svg")')
    assert backend == "svg" and path.read_bytes().startswith(b"\x89PNG")


def test_library_code_never_selects_a_backend():
    source = Path(experiments.__file__).read_text(encoding="utf-8")
    assert "matplotlib.use(" not in source


def test_options_are_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        experiments.plot_error_vs_n(None, "plot.png", "title", {})
    with pytest.raises(TypeError, match="positional"):
        experiments.error_vs_n(None, {}, [], 2, None, False)
    with pytest.raises(TypeError, match="^progress: expected True or False"):
        experiments.error_vs_n(None, {}, [], 2, None, progress="no")
