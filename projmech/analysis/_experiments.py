"""The error-against-n experiment :cite:p:`ENU20` shared by ``projmech demo`` and
``benchmarks/error_vs_n.py``: mean RMSE with confidence intervals, a table and a plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data import Dataset
from ..validation import FLAG, validate_params
from .evaluation import evaluate

__all__ = ["error_vs_n", "plot_error_vs_n", "format_table", "format_number"]


@validate_params(progress=FLAG)
def error_vs_n(
    data: Dataset,
    mechanisms: dict[str, Any],
    sizes: Sequence[int],
    trials: int,
    rng: np.random.Generator,
    *,
    progress: bool = True,
) -> pd.DataFrame:
    """Mean RMSE (95% CI), max error and time of each mechanism on one subsample per size, shared by all."""
    from tqdm.auto import tqdm

    rows = []
    with tqdm(total=len(sizes) * len(mechanisms) * trials, disable=not progress, desc="releases") as bar:
        for n in sizes:
            subsample = data.subsample(int(n), rng) if n < data.n else data
            for name, mechanism in mechanisms.items():
                summary = evaluate(mechanism, subsample, trials, rng, progress=bar.update)
                rows.append({**summary.row(), "mechanism": name})
    return pd.DataFrame(rows)


def format_number(value: float, spec: str) -> str:
    """``format(value, spec)``, or a right-aligned ``-`` of the spec's width for a missing value."""
    width = int(spec.split(".")[0])
    return f"{'-':>{width}}" if pd.isna(value) else format(value, spec)


def format_table(results: pd.DataFrame) -> str:
    """A plain-text table: one row per n, ``RMSE ± half-width`` and mean time per mechanism."""
    lines = []
    names = list(dict.fromkeys(results["mechanism"]))
    header = f"{'n':>7} | " + " | ".join(f"{name + ' RMSE (95% CI)':>30} {'time':>8}" for name in names)
    lines += [header, "-" * len(header)]
    for n, group in results.groupby("n", sort=True):
        cells = []
        for name in names:
            row = group[group["mechanism"] == name].iloc[0]
            half = (row["rmse_ci_high"] - row["rmse_ci_low"]) / 2
            cells.append(f"{row['rmse_mean']:>19.5f} ± {half:<8.5f} {row['time_mean_s'] * 1000:>6.1f}ms")
        lines.append(f"{n:>7} | " + " | ".join(cells))
    if len(names) >= 2:
        first, second = names[0], names[1]
        ratios = results.pivot(index="n", columns="mechanism", values="rmse_mean")
        lines.append("")
        lines.append(f"ratio {first}/{second}: " + ", ".join(
            f"n={n}: {ratios.loc[n, first] / ratios.loc[n, second]:.2f}" for n in ratios.index))
    return "\n".join(lines)


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use: matplotlib is optional (``projmech[plot]``)."""
    try:
        import matplotlib.pyplot as plt
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError("matplotlib is not installed: the plots need it; install the extra with "
                                  "pip install 'projmech[plot]'", name="matplotlib") from error
    return plt


def plot_error_vs_n(results: pd.DataFrame, path: str, title: str, *, bounds: dict[str, Any] | None = None) -> None:
    """Log-log plot of mean RMSE with CI bars against n, ``bounds`` (label to ``(sizes, values)``)
    dashed; written to ``path`` and closed.
    """
    plt = pyplot()

    figure, axes = plt.subplots(figsize=(6.4, 4.4))
    for name, group in results.groupby("mechanism", sort=False):
        group = group.sort_values("n")
        errors = np.vstack([group["rmse_mean"] - group["rmse_ci_low"], group["rmse_ci_high"] - group["rmse_mean"]])
        axes.errorbar(group["n"], group["rmse_mean"], yerr=errors, marker="o", capsize=3, label=name)
    for label, (sizes, values) in (bounds or {}).items():
        axes.plot(sizes, values, linestyle="--", color="black", linewidth=1, zorder=3, label=label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("n (rows)")
    axes.set_ylabel("RMSE over queries")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
