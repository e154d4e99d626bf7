"""Every benchmark script runs: its ``--help``, and its ``--smoke`` end to end.

``--smoke`` runs a script's whole code path on tiny sizes (``benchmarks/README.md``, "Smoke
runs"). Each runs in a fresh process as ``make benchmarks-smoke`` runs it, from a temporary
working folder with ``TMPDIR`` pointing into it: what it writes must land in its
``projmech-smoke-*`` folder there, nothing under ``results/`` (neither the repository's nor one
relative to the working folder). ``--help`` runs in this process (the scripts import their
neighbours, so ``benchmarks/`` goes first on ``sys.path``), except for ``_aim_runner.py``, which
re-executes itself to fix the hash seed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
BENCHMARKS = REPOSITORY / "benchmarks"
#: The scripts, and the helper that runs as a script of its own (``_common.py`` does not).
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if not path.name.startswith("_")) + ["_aim_runner.py"]
#: Scripts whose smoke run prints only (no output file): the reason.
PRINTS_ONLY = {
    "online_pmw_clipping.py": "prints its table, writes no file",
    "_aim_runner.py": "prints one JSON line (and, without mbi or a checkout, that it skipped AIM)",
}
SMOKE_TIMEOUT_S = 600


def test_every_script_is_listed():
    assert len(SCRIPTS) >= 20, SCRIPTS
    assert "_common.py" not in SCRIPTS


@pytest.mark.parametrize("script", [name for name in SCRIPTS if name != "_aim_runner.py"])
def test_help_in_process(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / script), "--help"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    assert exit_info.value.code in (0, None)
    assert "--smoke" in out.getvalue()


def test_aim_runner_help():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "_aim_runner.py"), "--help"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr
    assert "--smoke" in done.stdout and "https://github.com/ryan112358/private-pgm" in done.stdout


def _smoke(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir()
    environment = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.run([sys.executable, str(BENCHMARKS / script), "--smoke"], cwd=work, env=environment,
                          capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S)


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """Every script's smoke run, one per usable core at a time (most of their time is starting
    Python and importing; the runs are independent processes)."""
    folders = {script: tmp_path_factory.mktemp(script.replace(".", "_")) for script in SCRIPTS}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, cores)) as pool:
        runs = {script: pool.submit(_smoke, script, folder) for script, folder in folders.items()}
        return {script: (run.result(), folders[script]) for script, run in runs.items()}


@pytest.mark.parametrize("script", SCRIPTS)
def test_smoke(script, smoke_runs):
    done, tmp_path = smoke_runs[script]
    work = tmp_path / "work"
    assert done.returncode == 0, (f"{script} --smoke: exit {done.returncode}\n{done.stdout[-3000:]}\n"
                                  f"{done.stderr[-3000:]}")
    written = [path for folder in tmp_path.glob("projmech-smoke-*") for path in folder.rglob("*") if path.is_file()]
    if script in PRINTS_ONLY:
        assert done.stdout.strip()
    else:
        assert any(path.suffix == ".csv" for path in written), f"{script} --smoke wrote no CSV into {tmp_path}"
    assert not (work / "results").exists(), f"{script} --smoke wrote into results/ of its working folder"
    assert str(REPOSITORY / "results") not in done.stdout + done.stderr
