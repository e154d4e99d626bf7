"""The BudgetWarning on the command line: one line on stderr naming the flag and the least budget,
before the command runs on; none at a budget that leaves the counts their signal."""

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from projmech.cli.commands import main

SIZES = {"a": 4, "b": 5, "c": 3}
N = 300


@pytest.fixture
def files(tmp_path: Path):
    rng = np.random.default_rng(0)
    data = tmp_path / "data.csv"
    pd.DataFrame({name: rng.integers(0, size, size=N) for name, size in SIZES.items()}).to_csv(data, index=False)
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps(SIZES), encoding="utf-8")
    return {"data": str(data), "domain": str(domain), "dir": tmp_path}


def _run(files, command, *extra):
    return main([command, "--data", files["data"], "--domain", files["domain"], "--out",
                 str(files["dir"] / f"{command}.csv"), "--workload", "marginals:2", *extra])


def _budget_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "leaves the measured counts little signal" in line]


@pytest.mark.parametrize("command, flags, flag", [
    ("release", ["--mechanism", "gaussian", "--rho", "0.001", "--noise", "continuous", "--seed", "0"], "--rho"),
    ("release", ["--mechanism", "laplace", "--epsilon", "0.05", "--noise", "continuous", "--seed", "0"], "--epsilon"),
    ("synthesize", ["--epsilon", "0.05", "--delta", "1e-9", "--noise", "continuous", "--seed", "0"], "--epsilon"),
])
def test_a_swamping_budget_warns_in_one_line_naming_the_flag(files, capsys, command, flags, flag):
    assert _run(files, command, *flags) == 0  # a warning: the command runs on
    err = capsys.readouterr().err
    [line] = _budget_lines(err)
    prefix = f"projmech {command}: warning: {flag}: "
    assert line.startswith(prefix) and err.count(prefix) == 1, err
    assert "is the least at which the typical one reaches the noise" in line
    assert "Warning" not in line and ".py" not in line  # in the command's words, without Python's file and line


@pytest.mark.parametrize("command, flags", [
    ("release", ["--mechanism", "gaussian", "--rho", "1", "--noise", "continuous", "--seed", "0"]),
    ("synthesize", ["--epsilon", "10", "--delta", "1e-9", "--noise", "continuous", "--seed", "0"]),
])
def test_a_sufficient_budget_prints_no_budget_warning(files, capsys, command, flags):
    assert _run(files, command, *flags) == 0
    assert _budget_lines(capsys.readouterr().err) == []


@pytest.mark.parametrize("command, flags, private", [
    ("release", ["--mechanism", "gaussian", "--rho", "0.001", "--noise", "continuous", "--seed", "0"],
     "projmech.mechanisms._additive.CountingMechanism._measured_counts"),
    ("synthesize", ["--epsilon", "0.05", "--delta", "1e-9", "--noise", "continuous", "--seed", "0"],
     "projmech.mechanisms.adaptive._mechanism.public_size"),
])
def test_the_budget_warning_is_shown_before_the_measurements(files, capsys, monkeypatch, command, flags, private):
    """The measurements fail here after the check: the warning is on stderr all the same, shown
    when it was raised rather than when the command ends."""
    def fail(*args, **kwargs):
        raise RuntimeError("measured")

    monkeypatch.setattr(private, fail)
    assert _run(files, command, *flags) != 0
    err = capsys.readouterr().err.splitlines()
    assert len(_budget_lines("\n".join(err))) == 1 and "RuntimeError: measured" in err[-1], err


@pytest.mark.parametrize("flags, part, flag", [
    (["--rho", "1"], "rho", "--rho"),
    (["--epsilon", "1", "--delta", "1e-9"], "epsilon", "--epsilon"),
    (["--epsilon", "1", "--delta", "1e-9"], "rho", "--epsilon"),  # a part the user did not give: the budget's flag
])
def test_the_flag_comes_from_the_warning_s_argument_not_its_text(files, capsys, monkeypatch, flags, part, flag):
    import projmech.cli._inputs as inputs
    from projmech.mechanisms import BudgetWarning

    read_inputs = inputs.read_inputs

    def warning_read(*args, **kwargs):
        warnings.warn(BudgetWarning(part, "too small"), stacklevel=1)
        return read_inputs(*args, **kwargs)

    monkeypatch.setattr(inputs, "read_inputs", warning_read)
    assert _run(files, "release", "--mechanism", "gaussian", "--noise", "continuous", *flags) == 0
    assert f"projmech release: warning: {flag}: too small\n" in capsys.readouterr().err
