"""The command line: ``projmech release`` on a CSV file and ``projmech demo``."""

from __future__ import annotations

import errno
import itertools
import json
import math
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import projmech
from oracles import marginal_truth, oracle_sigma
from projmech import workloads
from projmech.cli import _messages as messages
from projmech.cli import _synthesize as synthesize
from projmech.cli._release import MECHANISMS_BY_NAME
from projmech.cli._workload import parse_ranges, parse_workload
from projmech.cli.commands import build_parser, main
from projmech.data import Domain
from projmech.mechanisms import FactorizationMechanism, adaptive
from projmech.privacy import ZCDP

SIZES = {"a": 2, "b": 3, "c": 2}
N = 60


def marginal_labels(way: int) -> list[str]:
    labels = []
    for subset in itertools.combinations(SIZES, way):
        for cell in itertools.product(*(range(SIZES[name]) for name in subset)):
            labels.append(" & ".join(f"{name}={value}" for name, value in zip(subset, cell)))
    return labels


@pytest.fixture
def files(tmp_path: Path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({name: rng.integers(0, size, size=N) for name, size in SIZES.items()})
    frame["ignored"] = "x"  # extra columns are allowed
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps(SIZES), encoding="utf-8")
    return {"data": data, "domain": domain, "frame": frame, "dir": tmp_path}


def release(files, *extra: str, out: str = "out.csv") -> tuple[int, Path]:
    path = files["dir"] / out
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["domain"]),
                 "--out", str(path), *extra])
    return code, path


def read_outputs(path: Path) -> tuple[pd.DataFrame, dict]:
    table = pd.read_csv(path, keep_default_na=False)
    summary = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    return table, summary


# --------------------------------------------------------------------------------------------
# Successful releases
# --------------------------------------------------------------------------------------------


# At n = 60 the noise on a 2-way count (std 10.3) is just above a cell's mean count (10): the
# BudgetWarning has tests of its own.
@pytest.mark.filterwarnings("ignore::projmech.mechanisms._budget.BudgetWarning")
def test_release_gaussian(files, capsys):
    code, out = release(files, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-6", "--seed", "1",
                        "--noise", "continuous")
    assert code == 0
    table, summary = read_outputs(out)
    assert list(table.columns) == ["query", "answer"]
    labels = marginal_labels(2)
    assert len(table) == 16 == len(labels)
    assert list(table["query"]) == labels
    assert list(table["query"]) == list(workloads.marginals(Domain.from_dict(SIZES), 2).labels)
    assert summary["mechanism"] == "gaussian"
    assert summary["guarantee"] == "(1, 1e-06)-DP"
    assert summary["privacy"] == {"type": "ApproxDP", "epsilon": 1.0, "delta": 1e-6}
    assert summary["neighbouring"] == "replace-one"
    assert summary["size"] == N and summary["size_source"] == "public n" and summary["num_queries"] == 16
    assert summary["noise"]["distribution"] == "gaussian"
    # ||F||_{1->2} = sqrt(C(3, 2)) for 2-way marginals on 3 attributes; replace-one moves the counts
    # of a 0/1 workload by at most sqrt(2) times it.
    sensitivity = math.sqrt(2) * math.sqrt(3)
    assert summary["sensitivity"] == pytest.approx(sensitivity, rel=1e-12)
    assert summary["sigma"] == pytest.approx(oracle_sigma(1.0, 1e-6, sensitivity) / N, rel=1e-6)
    assert "solver" not in summary
    printed = capsys.readouterr()
    assert "released 16 answers" in printed.out and printed.err == ""
    # The answers are noisy (the noise is far from negligible at n = 60).
    truth = marginal_truth(files["frame"], labels)
    assert not np.allclose(table["answer"].to_numpy(), truth, atol=1e-3)


def test_release_laplace_with_epsilon_only(files):
    code, out = release(files, "--mechanism", "laplace", "--epsilon", "0.5", "--workload", "marginals:1",
                        "--neighbouring", "add-remove", "--size", "100")
    assert code == 0
    table, summary = read_outputs(out)
    assert list(table["query"]) == marginal_labels(1) == ["a=0", "a=1", "b=0", "b=1", "b=2", "c=0", "c=1"]
    assert summary["guarantee"] == "0.5-DP"
    assert summary["privacy"] == {"type": "PureDP", "epsilon": 0.5}
    assert summary["neighbouring"] == "add-remove"
    assert summary["size"] == 100 and summary["size_source"] == "declared"
    # Integer counts: OpenDP's discrete Laplace. Each row lands in one cell of each of the 3
    # one-way tables: ||F||_{1->1} = 3, the add/remove sensitivity of the counts.
    assert summary["noise"]["distribution"] == "discrete_laplace"
    assert summary["sensitivity"] == pytest.approx(3, rel=1e-12)
    assert summary["noise"]["scale"] == pytest.approx(3 / 0.5, rel=1e-12)
    support = np.arange(-5000, 5001)
    pmf = np.exp(-np.abs(support) / 6.0)
    std = math.sqrt(float((pmf / pmf.sum()) @ support.astype(float) ** 2))
    assert summary["sigma"] == pytest.approx(std / 100, rel=1e-10)  # answers are counts / 100


def test_release_projection_with_solver_stats(files):
    summary_path = files["dir"] / "stats"
    summary_path.mkdir()
    code, out = release(files, "--epsilon", "1", "--delta", "1e-6", "--summary", str(summary_path / "s.json"))
    assert code == 0
    assert not out.with_suffix(".json").exists()
    table = pd.read_csv(out)
    summary = json.loads((summary_path / "s.json").read_text(encoding="utf-8"))
    assert summary["mechanism"] == "projection"  # the default mechanism
    assert summary["guarantee"] == "(1, 1e-06)-DP" and summary["neighbouring"] == "replace-one"
    solver = summary["solver"]
    assert solver["solver"] in {"fast", "CLARABEL", "ECOS", "OSQP", "SCS"}
    assert solver["status"].startswith("optimal")
    assert 0 <= solver["gap"] <= solver["tolerance"]
    assert solver["distance"] > 0 and solver["support_size"] >= 1
    assert list(table["query"]) == marginal_labels(2)
    # Projected answers are consistent marginals: non-negative, each table sums to 1.
    answers = table["answer"].to_numpy()
    assert np.all(answers >= -1e-9)
    for start, stop in [(0, 6), (6, 10), (10, 16)]:
        assert answers[start:stop].sum() == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("mechanism", ["gaussian", "projection"])
def test_release_with_rho(files, mechanism):
    code, out = release(files, "--mechanism", mechanism, "--rho", "0.5", "--neighbouring", "add-remove",
                        "--size", str(N))
    assert code == 0
    table, summary = read_outputs(out)
    assert len(table) == 16
    assert summary["guarantee"] == "0.5-zCDP"
    assert summary["privacy"] == {"type": "ZCDP", "rho": 0.5}
    assert summary["neighbouring"] == "add-remove"
    sensitivity = math.sqrt(3)  # of the counts, add/remove
    assert summary["sensitivity"] == pytest.approx(sensitivity, rel=1e-12)
    # The discrete Gaussian's zCDP is the continuous one's: sigma = Delta / sqrt(2 rho), and at
    # sigma = 1.73 its standard deviation equals sigma to far below 1e-12.
    assert summary["noise"]["scale"] == pytest.approx(sensitivity / math.sqrt(2 * 0.5), rel=1e-12)
    assert summary["sigma"] == pytest.approx(sensitivity / math.sqrt(2 * 0.5) / N, rel=1e-12)
    assert ("solver" in summary) == (mechanism == "projection")


@pytest.mark.parametrize("mechanism", ["gaussian", "projection", "factorization", "factorization+projection"])
@pytest.mark.parametrize("spec", ["marginals:2", "marginals:3", "marginals:0-2", "identity", "prefix:b", "all_range:b"])
def test_release_answers_are_the_truth_when_noise_is_negligible(files, mechanism, spec):
    code, out = release(files, "--mechanism", mechanism, "--rho", "1e14", "--workload", spec)
    assert code == 0
    table = pd.read_csv(out, keep_default_na=False)
    frame = files["frame"]
    # Universe index, row-major over (a, b, c) with sizes (2, 3, 2).
    index = frame["a"].to_numpy() * 6 + frame["b"].to_numpy() * 2 + frame["c"].to_numpy()
    h = np.bincount(index, minlength=12) / N
    b_share = np.bincount(frame["b"].to_numpy(), minlength=3) / N
    if spec == "marginals:0-2":
        labels = ["total"] + marginal_labels(1) + marginal_labels(2)
        truth = np.concatenate([[1.0], marginal_truth(frame, marginal_labels(1)),
                                marginal_truth(frame, marginal_labels(2))])
    elif spec.startswith("marginals"):
        labels = marginal_labels(int(spec.split(":")[1]))
        truth = marginal_truth(frame, labels)
    elif spec == "identity":
        labels = [f"a={a} & b={b} & c={c}" for a in range(2) for b in range(3) for c in range(2)]
        truth = h
    elif spec == "prefix:b":
        labels, truth = [f"b<={t}" for t in range(3)], np.cumsum(b_share)
    else:
        pairs = [(a, b) for a in range(3) for b in range(a, 3)]
        labels = [f"{a}<=b<={b}" for a, b in pairs]
        truth = np.array([b_share[a:b + 1].sum() for a, b in pairs])
    assert list(table["query"]) == labels
    np.testing.assert_allclose(table["answer"].to_numpy(), truth, atol=1e-6)
    summary = json.loads(Path(out).with_suffix(".json").read_text())
    assert summary["mechanism"] == mechanism
    assert ("factorization" in summary) == mechanism.startswith("factorization")


@pytest.mark.solver
@pytest.mark.parametrize("relaxation", [None, "sdp", "local"])
def test_release_projection_onto_the_relaxation(files, relaxation, capsys):
    extra = () if relaxation is None else ("--relaxation", relaxation)
    code, out = release(files, "--body", "relaxed", *extra, "--rho", "1", "--seed", "3", "--noise", "continuous")
    assert code == 0
    table, summary = read_outputs(out)
    body = f"relaxation/{relaxation or 'sdp+local'}"
    assert summary["body"] == summary["solver"]["body"] == body
    assert summary["solver"]["status"] == "optimal"
    assert list(table["query"]) == marginal_labels(2)
    assert body in capsys.readouterr().out
    # Same noise as the Gaussian mechanism with the same seed; projecting onto L ∋ truth never hurts.
    assert release(files, "--mechanism", "gaussian", "--rho", "1", "--seed", "3", "--noise", "continuous",
                   out="plain.csv")[0] == 0
    plain = pd.read_csv(files["dir"] / "plain.csv")["answer"].to_numpy()
    truth = marginal_truth(files["frame"], marginal_labels(2))
    answers = table["answer"].to_numpy()
    assert np.linalg.norm(answers - truth) <= np.linalg.norm(plain - truth) + 1e-6
    if relaxation != "sdp":  # the local constraints: every table a distribution
        assert answers.min() >= -1e-5
        for start, stop in [(0, 6), (6, 10), (10, 16)]:
            assert answers[start:stop].sum() == pytest.approx(1.0, abs=1e-5)


def test_release_body_choice(files):
    code, out = release(files, "--body", "hull", "--rho", "1")
    assert code == 0 and read_outputs(out)[1]["body"] == "hull"
    code, out = release(files, "--rho", "1", out="auto.csv")  # 12 elements: the hull
    assert code == 0 and read_outputs(out)[1]["body"] == "hull"


def test_release_on_20_binary_attributes(tmp_path):
    """2^20 elements: 2-way marginals are built implicitly (the explicit matrix would hold 2e8
    entries); body 'auto' projects onto L (the cost model's choice: the hull's estimate, the
    active-set solver's on this implicit workload, is over 100 times L's), and '--body hull' onto K_Q with the
    active-set solver."""
    d, n = 20, 80
    rng = np.random.default_rng(12)
    frame = pd.DataFrame(rng.integers(0, 2, size=(n, d)), columns=[f"x{i}" for i in range(d)])
    frame.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps({name: 2 for name in frame.columns}), encoding="utf-8")
    runs = {"auto": ("--mechanism", "projection"), "hull": ("--mechanism", "projection", "--body", "hull"),
            "gaussian": ("--mechanism", "gaussian")}
    for name, flags in runs.items():
        out = tmp_path / f"{name}.csv"
        assert main(["release", "--data", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
                     "--out", str(out), *flags, "--rho", "1e14"]) == 0
        table, summary = read_outputs(out)
        assert summary["num_queries"] == len(table) == 4 * math.comb(d, 2)
        assert summary.get("body") == {"auto": "relaxation/sdp+local", "hull": "hull"}.get(name)
        if name == "hull":
            assert summary["solver"]["solver"] == "fast"
            assert summary["solver"]["support_size"] <= 1 + d + math.comb(d, 2) + 1
        assert table["query"].iloc[-1] == f"x{d - 2}=1 & x{d - 1}=1"
        truth = np.concatenate([np.bincount(2 * frame[f"x{i}"] + frame[f"x{j}"], minlength=4) / n
                                for i, j in itertools.combinations(range(d), 2)])
        np.testing.assert_allclose(table["answer"].to_numpy(), truth, atol=1e-4)


def test_release_seed_is_reproducible(files):
    args = ("--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-6", "--noise", "continuous")
    assert release(files, *args, "--seed", "7", out="one.csv")[0] == 0
    assert release(files, *args, "--seed", "7", out="two.csv")[0] == 0
    assert release(files, *args, "--seed", "8", out="three.csv")[0] == 0
    assert release(files, *args, out="four.csv")[0] == 0  # no seed: fresh entropy
    one, two, three, four = (pd.read_csv(files["dir"] / f)["answer"].to_numpy()
                             for f in ("one.csv", "two.csv", "three.csv", "four.csv"))
    np.testing.assert_array_equal(one, two)
    assert not np.any(one == three)
    assert not np.any(one == four)


# --------------------------------------------------------------------------------------------
# Errors: exit code 2, a message on stderr, nothing written
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--mechanism", "gaussian", "--epsilon", "1"], "--delta"),
    (["--epsilon", "1"], "--delta"),  # projection (the default) needs delta too
    (["--mechanism", "laplace", "--epsilon", "1", "--delta", "1e-6"], "--delta"),
    (["--mechanism", "gaussian", "--rho", "0.5", "--epsilon", "1"], "--rho"),
    (["--mechanism", "gaussian", "--rho", "0.5", "--delta", "1e-6"], "--rho"),
    (["--mechanism", "gaussian"], "--epsilon"),
    (["--mechanism", "laplace"], "--epsilon"),
    (["--mechanism", "gaussian", "--epsilon", "-1", "--delta", "1e-6"],
     "--epsilon: must be a positive finite number, got -1"),
    (["--mechanism", "gaussian", "--epsilon", "nan", "--delta", "1e-6"],
     "--epsilon: must be a positive finite number, got nan"),
    (["--mechanism", "gaussian", "--epsilon", "1", "--delta", "1.5"], "--delta: must lie strictly between 0 and 1, "
                                                                      "got 1.5"),
    (["--mechanism", "gaussian", "--epsilon", "1", "--delta", "0"],
     "--delta: must lie strictly between 0 and 1, got 0"),
    (["--mechanism", "gaussian", "--rho", "0"], "--rho: must be a positive finite number, got 0"),
    (["--mechanism", "gaussian", "--rho", "inf"], "--rho: must be a positive finite number, got inf"),
    (["--mechanism", "laplace", "--epsilon", "0"], "--epsilon: must be a positive finite number, got 0"),
    (["--workload", "marginals:x", "--rho", "1"], "--workload"),
    (["--workload", "marginals", "--rho", "1"], "--workload"),
    (["--workload", "foo", "--rho", "1"], "--workload"),
    (["--workload", "identity:3", "--rho", "1"], "--workload"),
    (["--workload", "marginals:4", "--rho", "1"], "--workload: 'marginals:4' asks for 4-way tables, but --domain has "
                                                  "only "
                                                  "3 attributes; use WAY <= 3"),
    (["--workload", "marginals:1-5", "--rho", "1"], "--workload: 'marginals:1-5' asks for 5-way tables, but --domain "
                                                    "has only 3 attributes; use HIGH <= 3"),
    (["--workload", "marginals:2-1", "--rho", "1"], "--workload"),
    (["--workload", "prefix", "--rho", "1"], "--workload: prefix over 3 attributes"),
    (["--workload", "prefix:nope", "--rho", "1"], "--workload"),
    (["--workload", "range-marginals:2", "--rho", "1"], "--ranges"),
    (["--workload", "range-marginals:2", "--ranges", "a=suffix", "--rho", "1"],
     "--ranges: a=suffix: expected one of all_range, identity, prefix"),
    (["--workload", "range-marginals:2", "--ranges", "b=prefix,zz=prefix", "--rho", "1"],
     "--ranges: 'zz' names no attribute of the domain (a, b, c)"),
    (["--workload", "range-marginals:2", "--ranges", "b=prefix, b=all_range", "--rho", "1"], "--ranges: 'b' is given "
                                                                                             "twice"),
    (["--workload", "range-marginals:4", "--ranges", "b=prefix", "--rho", "1"],
     "--workload: 'range-marginals:4': WAY must lie between 1 and the number of attributes (--domain has only 3 "
     "attributes)"),
    (["--workload", "range-marginals:0", "--ranges", "b=prefix", "--rho", "1"], "WAY must lie between 1"),
    (["--workload", "range-marginals:2", "--ranges", "a", "--rho", "1"], "--ranges"),
    (["--workload", "marginals:2", "--ranges", "a=prefix", "--rho", "1"], "--ranges"),
    (["--solver", "NOPE", "--rho", "1"], "--solver: --body auto projects onto the hull K_Q or the relaxation L "
                                         "(sdp+local), which takes auto, fast, CLARABEL, ECOS, OSQP, SCS, admm; got "
                                         "'NOPE'"),
    (["--mechanism", "gaussian", "--body", "relaxed", "--rho", "1"], "--body"),
    (["--mechanism", "laplace", "--relaxation", "sdp", "--epsilon", "1"], "--relaxation"),
    (["--body", "hull", "--relaxation", "sdp", "--rho", "1"], "--relaxation"),
    (["--body", "relaxed", "--workload", "identity", "--rho", "1"],
     "--body relaxed: the relaxation L holds only all 2-way marginals of a domain (--workload marginals:2), not "
     "identity; use --body hull (the hull K_Q), or --mechanism gaussian or factorization"),
    (["--body", "relaxed", "--workload", "marginals:1", "--rho", "1"], "--body relaxed: the relaxation L holds only"),
    (["--relaxation", "sdp", "--workload", "prefix:b", "--rho", "1"],
     "--relaxation sdp: the relaxation L holds only all 2-way marginals of a domain (--workload marginals:2), not "
     "prefix:b; use --body hull without --relaxation (the hull K_Q)"),
    (["--mechanism", "laplace", "--rho", "1"], "--rho: the Laplace mechanism is pure epsilon-DP; give --epsilon alone"),
])
def test_release_errors(files, capsys, args, message):
    code, out = release(files, *args)
    assert code == 2
    printed = capsys.readouterr()
    assert printed.err.startswith("projmech release: error: --")
    assert message in printed.err
    assert_speaks_cli(printed.err)
    assert not out.exists() and not out.with_suffix(".json").exists()


#: What the library's messages say and the command line's must not: argument names and Python reprs.
API_WORDS = re.compile(r"\w+=(True|False|'|\")|(?<![-\w])(max_entries|size_share|implicit|body|noise|solver|relaxation|"
                       r"ways?|ranges|sizes|attributes|domain|data|frame|privacy|epsilon|delta|rho|size|seed)"
                       r"[:=]|Workload\(|Mechanism\b")


def assert_speaks_cli(err: str) -> None:
    """The message names flags (``--size``), never the library's arguments (``size:``, ``body='hull'``)."""
    assert not API_WORDS.search(err), err


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.assign(b=f["b"].where(f.index != 7, 3)), "outside the domain"),
    (lambda f: f.assign(a=f["a"].where(f.index != 2, -1)), "outside the domain"),
    (lambda f: f.assign(c=f["c"].astype(float).where(f.index != 4, 0.5)), "non-integer"),
    (lambda f: f.assign(c=f["c"].astype(float).where(f.index != 4, np.nan)), "row 4"),
    (lambda f: f.drop(columns=["b"]), "missing"),
    (lambda f: f.assign(a=f["a"].astype(str).where(f.index != 3, "yes")), "'a'"),
])
def test_release_rejects_bad_csv(files, capsys, edit, message):
    edit(files["frame"]).to_csv(files["data"], index=False)
    code, out = release(files, "--rho", "1")
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("projmech release: error:") and message in err
    assert not out.exists()


def test_release_out_of_domain_names_column_and_row(files, capsys):
    frame = files["frame"].copy()
    frame.loc[11, "b"] = 9
    frame.to_csv(files["data"], index=False)
    assert release(files, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-6")[0] == 2
    err = capsys.readouterr().err
    assert "'b'" in err and "9" in err and "row 11" in err


def test_release_missing_files(files, capsys):
    code = main(["release", "--data", str(files["dir"] / "nope.csv"), "--domain", str(files["domain"]),
                 "--out", str(files["dir"] / "o.csv"), "--rho", "1"])
    assert code == 2 and "nope.csv" in capsys.readouterr().err
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["dir"] / "nope.json"),
                 "--out", str(files["dir"] / "o.csv"), "--rho", "1"])
    assert code == 2 and "nope.json" in capsys.readouterr().err


FILES = ["--data", "d", "--domain", "d", "--out", "o"]


@pytest.mark.parametrize("args, message", [
    (["release", "--rho", "1"], "projmech release: error: --data, --domain, --out: required"),
    (["release", *FILES, "--mechanism", "exponential"],
     "projmech release: error: --mechanism: expected one of gaussian, laplace, projection, factorization, "
     "factorization+projection, got 'exponential'"),
    (["release", *FILES, "--mechanism", "gausian"],
     "projmech release: error: --mechanism: expected one of gaussian, laplace, projection, factorization, "
     "factorization+projection, got 'gausian'; did you mean gaussian?"),
    (["release", *FILES, "--neighbouring", "swap"], "projmech release: error: --neighbouring: expected one of "
                                                   "replace-one, add-remove, got 'swap'"),
    (["release", *FILES, "--epsilon", "one"], "projmech release: error: --epsilon: expected a number, got 'one'"),
    (["release", *FILES, "--epsilon"], "projmech release: error: --epsilon: expected a value after it"),
    (["release", *FILES, "--body", "ellipsoid"], "projmech release: error: --body: expected one of"),
    (["release", *FILES, "--relaxation", "lp"], "projmech release: error: --relaxation: expected one of"),
    (["release", *FILES, "--epsilom", "1"], "projmech release: error: --epsilom: no such flag; did you mean "
                                             "--epsilon?"),
    (["release", *FILES, "--epsilom=1"], "projmech release: error: --epsilom: no such flag; did you mean --epsilon?\n"),
    (["release", *FILES, "--rho", "1", "2"], "projmech release: error: '2': a value no flag takes"),
    (["release", *FILES, "--e", "1"],
     "projmech release: error: --e: no such flag; did you mean --engine or --epsilon?"),
    (["demo", "--trails", "2"], "projmech demo: error: --trails: no such flag; did you mean --trials?"),
    (["demo", "--outdir", "x"], "projmech demo: error: --outdir: no such flag; did you mean --out-dir?"),
    (["audit", "--trials", "x"], "projmech audit: error: --trials: no such flag"),
    (["demo", "--trials", "2.5"], "projmech demo: error: --trials: expected an integer, got '2.5'"),
    ([],
     "projmech: error: give a command: release, audit, synthesize, demo ('projmech COMMAND --help' describes each)"),
    (["frobnicate"], "projmech: error: frobnicate: no such command (the commands: release, audit, synthesize, demo)"),
    (["relase", "--rho", "1"], "projmech: error: relase: no such command; did you mean release? (the commands: "
                               "release, audit, synthesize, demo)"),
])
def test_argparse_errors_are_one_line_naming_the_flag(args, message, capsys):
    """The parser's errors in the command's words: one line naming the flag (and the closest flag,
    choice or command to a mistyped one), not 13 lines of usage; exit status 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert "usage" not in err and "argument" not in err
    assert_speaks_cli(err)


def test_parse_workload_directly():
    domain = Domain.from_dict(SIZES)
    assert parse_workload("marginals:2", domain).shape == (16, 12)
    prefix = parse_workload("prefix:b", domain)
    assert prefix.domain == domain and prefix.shape == (3, 12)
    np.testing.assert_array_equal(prefix.toarray(), np.kron(np.kron(np.ones((1, 2)), np.tril(np.ones((3, 3)))),
                                                            np.ones((1, 2))))
    assert parse_workload("all_range:a", domain).shape == (3, 12)
    np.testing.assert_array_equal(parse_workload("identity", domain).toarray(), np.eye(12))
    implicit = parse_workload("marginals:2", domain, implicit=True)
    assert implicit.is_implicit and implicit.marginal_way == 2 and implicit.shape == (16, 12)
    assert parse_workload("prefix:b", domain, implicit=True).is_implicit
    ranged = parse_workload("range-marginals:2", domain, ranges=parse_ranges("a=prefix,c=all_range"))
    assert ranged.labels[0] == "a<=0 & b=0" and ranged.shape[1] == 12
    assert parse_workload("marginals:0-1", domain).labels[:2] == ("total", "a=0")
    single = Domain(["x"], [5])
    assert parse_workload("prefix", single).labels == parse_workload("prefix:x", single).labels


def test_release_discrete_noise_is_the_default_and_calibrated_by_opendp(files):
    """Marginal counts are integers: the discrete Gaussian, whose (epsilon, delta) calibration is
    checked with OpenDP's own accountant."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    code, out = release(files, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-6")
    assert code == 0
    table, summary = read_outputs(out)
    assert summary["noise"]["distribution"] == "discrete_gaussian"
    assert summary["noise"]["sampler"].startswith("opendp")
    scale, sensitivity = summary["noise"]["scale"], summary["sensitivity"]
    measurement = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="f64"), scale=scale)
    assert dp.c.make_zCDP_to_approxDP(measurement).map(sensitivity).delta(1.0) <= 1e-6 * (1 + 1e-9)
    # The released counts are integers: answers times n.
    counts = table["answer"].to_numpy() * N
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)


def test_release_add_remove_with_an_estimated_size(files):
    code, out = release(files, "--mechanism", "gaussian", "--rho", "0.5", "--neighbouring", "add-remove",
                        "--size", "estimate", "--size-share", "0.1")
    assert code == 0
    _, summary = read_outputs(out)
    assert summary["size_source"] == "estimated" and summary["size"] >= 1
    # The size estimate has a tenth of rho: sigma_0 = 1 / sqrt(2 * 0.05).
    assert summary["size_noise"]["scale"] == pytest.approx(1 / math.sqrt(2 * 0.05), rel=1e-12)


# --------------------------------------------------------------------------------------------
# Inputs and outputs: nothing overwritten, every error one line naming the flag and the file
# --------------------------------------------------------------------------------------------


def one_line_error(capsys, *flags_and_files: str, command: str = "release") -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"projmech {command}: error:") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert_speaks_cli(err)
    for text in flags_and_files:
        assert text in err, (text, err)
    return err


@pytest.mark.parametrize("target", ["data", "domain"])
def test_out_never_overwrites_an_input(files, capsys, target):
    before = {name: files[name].read_bytes() for name in ("data", "domain")}
    path = files[target]
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["domain"]), "--out", str(path),
                 "--rho", "1", "--force"])
    assert code == 2
    one_line_error(capsys, "--out", str(path), "input")
    assert {name: files[name].read_bytes() for name in ("data", "domain")} == before


def test_summary_path_never_overwrites_an_input(files, capsys):
    """``--out domain.csv`` would write its summary to ``domain.json``, the domain file."""
    before = files["domain"].read_bytes()
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["domain"]),
                 "--out", str(files["dir"] / "domain.csv"), "--rho", "1", "--force"])
    assert code == 2
    one_line_error(capsys, "--out", "domain.json", "--domain")
    assert files["domain"].read_bytes() == before and not (files["dir"] / "domain.csv").exists()
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["domain"]),
                 "--out", str(files["dir"] / "o.csv"), "--summary", str(files["data"]), "--rho", "1"])
    assert code == 2
    one_line_error(capsys, "--summary", "--data")


def test_existing_outputs_need_force(files, capsys):
    code, out = release(files, "--rho", "1")
    assert code == 0
    first = out.read_bytes()
    assert release(files, "--rho", "1")[0] == 2
    one_line_error(capsys, "--out", str(out), "--force")
    assert out.read_bytes() == first
    out.with_suffix(".json").unlink()
    out.unlink()
    out.with_suffix(".json").write_text("{}")  # only the summary exists: still refused
    assert release(files, "--rho", "1")[0] == 2
    one_line_error(capsys, "--out", "out.json", "--force")
    assert release(files, "--rho", "1", "--force")[0] == 0
    assert json.loads(out.with_suffix(".json").read_text())["mechanism"] == "projection"


@pytest.mark.parametrize("make, flag, text", [
    (lambda f: ["--out", str(f["dir"] / "missing" / "o.csv")], "--out", "missing"),
    (lambda f: ["--out", str(f["dir"])], "--out", "directory"),
    (lambda f: ["--data", str(f["dir"])], "--data", "directory"),
    (lambda f: ["--domain", str(f["dir"])], "--domain", "directory"),
])
def test_bad_paths(files, capsys, make, flag, text):
    arguments = {"--data": str(files["data"]), "--domain": str(files["domain"]), "--out": str(files["dir"] / "o.csv")}
    extra = make(files)
    arguments[extra[0]] = extra[1]
    code = main(["release", *[item for pair in arguments.items() for item in pair], "--rho", "1"])
    assert code == 2
    one_line_error(capsys, flag, text)


@pytest.mark.parametrize("which, content, text", [
    ("data", "", "empty"),
    ("data", "a,b,c\n", "no rows"),
    ("data", "\x00\x01garbage", ""),
    ("domain", "{", "JSON"),
    ("domain", "", "empty"),
    ("domain", '{"a": 2, "b": 3, "a": 2}', "'a'"),
    ("domain", "[2, 3, 2]", "object"),
    ("domain", '{"a": 2, "b": "three", "c": 2}', "'b'"),
])
def test_bad_file_contents(files, capsys, which, content, text):
    files[which].write_text(content)
    code, out = release(files, "--rho", "1")
    assert code == 2 and not out.exists()
    one_line_error(capsys, f"--{which}", str(files[which]), text)


@pytest.mark.parametrize("args, message", [
    (["--mechanism", "gaussian", "--solver", "NOPE", "--rho", "1"], "--solver: applies only"),
    (["--mechanism", "laplace", "--solver", "SCS", "--epsilon", "1"], "--solver: applies only"),
    # --solver: exactly the values --help lists for the body, case aside
    (["--solver", "admm", "--body", "hull", "--rho", "1"],
     "--solver: --body hull projects onto the hull K_Q, which takes auto, fast, CLARABEL, ECOS, OSQP, SCS; got 'admm'"),
    (["--solver", "fast", "--body", "relaxed", "--rho", "1"],
     "--solver: --body relaxed projects onto the relaxation L (sdp+local), which takes auto, admm, CLARABEL, SCS; "
     "got 'fast'"),
    (["--solver", "ECOS", "--body", "relaxed", "--rho", "1"], "which takes auto, admm, CLARABEL, SCS; got 'ECOS'"),
    (["--solver", "admm", "--relaxation", "local", "--rho", "1"],
     "--solver: --relaxation local projects onto the relaxation L (local), which takes auto, CLARABEL, ECOS, SCS; "
     "got 'admm'"),
    (["--solver", "admm", "--mechanism", "factorization+projection", "--body", "hull", "--rho", "1"],
     "--solver: --body hull projects onto the hull K_Q, which takes auto, fast"),
    (["--solver", "admm", "--workload", "identity", "--rho", "1"],
     "--solver admm: the relaxation L holds only all 2-way marginals of a domain (--workload marginals:2), not "
     "identity; use --solver auto or fast (the hull K_Q)"),
    (["--neighbouring", "add-remove", "--rho", "1"],
     "--size: --neighbouring add-remove keeps the row count private; give --size N"),
    (["--size", "100", "--rho", "1"], "--size: applies only"),
    (["--neighbouring", "add-remove", "--size", "lots", "--rho", "1"], "--size"),
    (["--neighbouring", "add-remove", "--size", "0", "--rho", "1"],
     "--size: expected a positive integer or 'estimate', got '0'"),
    (["--neighbouring", "add-remove", "--size", "-5", "--rho", "1"], "--size: expected a positive integer"),
    (["--neighbouring", "add-remove", "--size", "estimate", "--size-share", "1.5", "--rho", "1"],
     "--size-share: must lie strictly between 0 and 1, got 1.5"),
    (["--rho", "1", "--noise", "continuous", "--seed", "-1"], "--seed: expected a non-negative integer, got -1"),
    (["--mechanism", "factorization", "--workload", "prefix:b", "--noise", "discrete", "--rho", "1"],
     "--noise: discrete noise needs integer counts, and the factorization mechanism measures an optimized "
     "strategy's counts, which are not; use --noise auto or continuous"),
    (["--neighbouring", "add-remove", "--size", "100", "--size-share", "0.1", "--rho", "1"], "--size-share"),
    (["--size-share", "0.1", "--rho", "1"], "--size-share"),
    (["--mechanism", "gaussian", "--rho", "1", "--seed", "3"], "--seed: the counts are integers"),
    (["--mechanism", "gaussian", "--workload", "prefix", "--rho", "1", "--noise", "discrete", "--seed", "3"], "--seed"),
])
def test_release_flag_errors(files, capsys, args, message):
    code, out = release(files, *args)
    assert code == 2 and not out.exists()
    one_line_error(capsys, message)


@pytest.mark.solver
@pytest.mark.parametrize("args, body", [
    (["--solver", "scs", "--body", "relaxed"], "relaxation/sdp+local"),  # solver names in any case
    (["--solver", "Clarabel", "--body", "hull"], "hull"),
    (["--relaxation", "local"], "relaxation/local"),  # --relaxation alone projects onto L
    (["--relaxation", "local", "--solver", "ECOS"], "relaxation/local"),
    (["--solver", "admm"], "relaxation/sdp+local"),  # a solver only L runs picks L under --body auto
    (["--solver", "fast"], "hull"),
])
def test_release_solver_and_body_choices(files, args, body):
    code, out = release(files, *args, "--rho", "1")
    assert code == 0
    assert read_outputs(out)[1]["body"] == body


# rho = 0.01 at n = 60 swamps the counts: the BudgetWarning has tests of its own.
@pytest.mark.filterwarnings("ignore::projmech.mechanisms._budget.BudgetWarning")
def test_negative_cells_warning_in_cli_words(files, capsys):
    """--relaxation sdp can release negative cells: the command says so in one line of its own."""
    warned = []
    for seed in range(1, 6):
        code, out = release(files, "--relaxation", "sdp", "--rho", "0.01", "--noise", "continuous", "--seed",
                            str(seed), out=f"sdp{seed}.csv")
        assert code == 0
        err = capsys.readouterr().err
        answers = pd.read_csv(out)["answer"].to_numpy()
        if err:
            assert re.fullmatch(r"projmech release: warning: (\d+) of 16 released cells are negative \(minimum "
                                r"-[\d.e-]+\): "
                                r"--relaxation sdp lacks the local constraints; --relaxation sdp\+local \(the "
                                r"default\) "
                                r"keeps every cell nonnegative\n", err), err
            assert int(err.split("warning: ")[1].split()[0]) == int((answers < 0).sum()) >= 1
            warned.append(seed)
        else:
            assert answers.min() >= 0
    assert warned  # at rho = 0.01 the noise (std 0.29 per cell) leaves some projection a negative cell


def test_seed_with_an_optimized_strategy_is_allowed(files):
    """The optimal strategy's entries are not integers, so its noise is continuous and seeded."""
    args = ("--mechanism", "factorization", "--workload", "prefix:b", "--rho", "1", "--seed", "5")
    assert release(files, *args, out="one.csv")[0] == 0
    assert release(files, *args, out="two.csv")[0] == 0
    one, two = (pd.read_csv(files["dir"] / name)["answer"].to_numpy() for name in ("one.csv", "two.csv"))
    np.testing.assert_array_equal(one, two)


def test_empty_data_needs_add_remove(files, capsys):
    files["data"].write_text("a,b,c\n")
    code, out = release(files, "--mechanism", "gaussian", "--rho", "1")
    assert code == 2 and not out.exists()
    one_line_error(capsys, "--data", str(files["data"]), "no rows")
    code, out = release(files, "--mechanism", "gaussian", "--rho", "1", "--neighbouring", "add-remove",
                        "--size", "10", out="empty.csv")
    assert code == 0 and len(pd.read_csv(out)) == 16


def test_header_only_csv_with_labels_and_bins_says_no_rows(tmp_path, capsys):
    """A header-only CSV reads as text columns; with no rows there is no value to refuse by type."""
    (tmp_path / "data.csv").write_text("color,age,region\n")
    (tmp_path / "domain.json").write_text(json.dumps({"color": ["red", "green"], "age": {"bins": [18, 30, 90]},
                                                       "region": 5}))
    args = ["release", "--data", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
            "--rho", "1", "--mechanism", "gaussian"]
    assert main([*args, "--out", str(tmp_path / "a.csv")]) == 2
    assert "no rows" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "b.csv"), "--neighbouring", "add-remove", "--size", "100"]) == 0
    assert len(pd.read_csv(tmp_path / "b.csv")) == 2 * 2 + 2 * 5 + 2 * 5


def test_solver_failure_is_one_line_and_nonzero(files, capsys, monkeypatch):
    """A certified projection that no solver reaches ends the command with one line, not a
    traceback (the library raises ProjectionError with every attempt's outcome)."""
    from projmech.bodies import Hull, ProjectionError
    from projmech.solve import Attempt, Status

    def failing(*args, **kwargs):
        raise ProjectionError("projection onto K_Q failed: no solver produced a certified solution",
                              (Attempt("OSQP", Status.SOLVER_ERROR, "backend status solver_error"),))

    monkeypatch.setattr(Hull, "project", failing)
    code, out = release(files, "--mechanism", "factorization+projection", "--solver", "OSQP", "--rho", "1")
    assert code == 1 and not out.exists()
    err = one_line_error(capsys, "ProjectionError", "OSQP")
    assert "PROJMECH_TRACEBACK" in err


# --------------------------------------------------------------------------------------------
# Demo (about 3 s with 2 trials)
# --------------------------------------------------------------------------------------------


def test_demo(tmp_path, capsys):
    assert main(["demo", "--trials", "2", "--out-dir", str(tmp_path)]) == 0
    results = pd.read_csv(tmp_path / "error_vs_n.csv")
    png = (tmp_path / "error_vs_n.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    assert set(results["mechanism"]) == {"gaussian", "projection"}
    assert sorted(set(results["n"])) == [100, 300, 1000, 3000, 10000, 48842]
    assert len(results) == 12 and (results["trials"] == 2).all()
    assert (results["rmse_ci_low"] <= results["rmse_mean"]).all()
    assert (results["rmse_mean"] <= results["rmse_ci_high"]).all()
    gaussian = results[results["mechanism"] == "gaussian"].sort_values("n")["rmse_mean"].to_numpy()
    # sigma is proportional to 1/n: from n = 100 to n = 48842 the error falls by orders of magnitude.
    assert gaussian[0] > 50 * gaussian[-1]
    assert "error_vs_n.png" in capsys.readouterr().out
    # A second run refuses to replace the results, before any work, unless told to.
    before = (tmp_path / "error_vs_n.csv").read_bytes()
    assert main(["demo", "--trials", "2", "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("projmech demo: error: --out-dir:") and "--force" in err and err.count("\n") == 1, err
    assert (tmp_path / "error_vs_n.csv").read_bytes() == before


def test_out_ending_in_json_is_refused_in_cli_words(files, capsys):
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["domain"]),
                 "--out", str(files["dir"] / "answers.json"), "--rho", "1"])
    assert code == 2
    err = one_line_error(capsys, "--out", "answers.json", "--summary")
    assert "is also the --out file" not in err  # --summary was never given


def test_one_answer_is_singular(files, capsys):
    code, _ = release(files, "--rho", "1", "--workload", "marginals:0", "--mechanism", "gaussian")
    assert code == 0
    assert "released 1 answer with" in capsys.readouterr().out


def test_top_level_help_names_commands_in_plain_words(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out and "release" in out and "audit" in out and "COMMAND --help" in out


@pytest.mark.parametrize("workload, extra, queries", [
    ("marginals:2", (), 190 * 100),
    ("range-marginals:2", ("--ranges", "x0=prefix,x1=all_range"), 10 * 55 + 10 * 10 * 18 + 55 * 10 * 18 + 153 * 100),
])
def test_factorization_on_twenty_attributes_of_ten_values(tmp_path, workload, extra, queries):
    """10^20 cells: the strategy is measured from the records' tables and never densified."""
    sizes = {f"x{i}": 10 for i in range(20)}
    rng = np.random.default_rng(0)
    pd.DataFrame({name: rng.integers(0, 10, 300) for name in sizes}).to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps(sizes), encoding="utf-8")
    out = tmp_path / "out.csv"
    code = main(["release", "--data", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
                 "--out", str(out), "--mechanism", "factorization", "--workload", workload, *extra, "--rho", "1",
                 "--seed", "0"])
    assert code == 0
    table = pd.read_csv(out, keep_default_na=False)
    assert len(table) == queries
    assert table["query"].iloc[0] == ("x0=0 & x1=0" if workload == "marginals:2" else "x0<=0 & 0<=x1<=0")


# --------------------------------------------------------------------------------------------
# Engines, Parquet and labelled domains
# --------------------------------------------------------------------------------------------

LABELLED = {"vote": ["Clinton", "Dole", "Perot"], "age": {"bins": [18, 30, 50, 100]}, "c": 2}


@pytest.fixture
def labelled(tmp_path: Path):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"vote": rng.choice(LABELLED["vote"], 80), "age": rng.uniform(18, 100, 80).round(),
                          "c": rng.integers(0, 2, 80)})
    frame.to_parquet(tmp_path / "part-0.parquet")
    frame.iloc[:0].to_parquet(tmp_path / "part-1.parquet")  # an empty part: globs take every file
    frame.to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps(LABELLED), encoding="utf-8")
    return tmp_path, frame


def _run(directory: Path, data: str, *extra: str, out: str = "out.csv") -> tuple[int, pd.DataFrame]:
    code = main(["release", "--data", str(directory / data) if not data.startswith("/") else data,
                 "--domain", str(directory / "domain.json"), "--workload", "marginals:2", "--mechanism", "gaussian",
                 "--rho", "1", "--noise", "continuous", "--seed", "5", "--out", str(directory / out), *extra])
    return code, pd.read_csv(directory / out, keep_default_na=False)


@pytest.mark.parametrize("engine", ["pandas", "polars", "duckdb", "dask"])
def test_every_engine_releases_the_same_bits_from_parquet(labelled, engine, capsys):
    pytest.importorskip("polars")
    directory, _ = labelled
    code, memory = _run(directory, "rows.csv", out="memory.csv")
    assert code == 0
    code, table = _run(directory, "part-*.parquet", "--engine", engine)
    assert code == 0
    pd.testing.assert_frame_equal(table, memory)
    assert "vote=Dole & age=[30, 50)" in set(table["query"])
    if engine != "pandas":
        assert f"counted in {engine}" in capsys.readouterr().out


def test_spark_release_from_parquet(labelled, spark):
    directory, _ = labelled
    _, memory = _run(directory, "rows.csv", out="memory.csv")
    code, table = _run(directory, "part-0.parquet", "--engine", "spark")
    assert code == 0
    pd.testing.assert_frame_equal(table, memory)


@pytest.mark.parametrize("data, engine, message", [
    ("nothing-*.parquet", "auto", r"--data: no file matches"),
    ("missing.parquet", "polars", r"--data: .*missing.parquet does not exist"),
])
def test_data_flag_errors(labelled, data, engine, message, capsys):
    directory, _ = labelled
    code = main(["release", "--data", str(directory / data), "--domain", str(directory / "domain.json"),
                 "--rho", "1", "--engine", engine, "--out", str(directory / "out.csv")])
    assert code != 0
    assert re.search(message, capsys.readouterr().err)


def test_a_bad_value_in_parquet_names_flag_file_column_and_row(labelled, capsys):
    directory, frame = labelled
    frame.assign(vote=frame["vote"].where(frame.index != 9, "Nader")).to_parquet(directory / "bad.parquet")
    for engine in ("pandas", "polars"):
        code = main(["release", "--data", str(directory / "bad.parquet"), "--domain", str(directory / "domain.json"),
                     "--rho", "1", "--engine", engine, "--out", str(directory / "out.csv")])
        assert code != 0
        assert re.search(r"--data: .*bad.parquet: column 'vote': value 'Nader' at row 9", capsys.readouterr().err)


def test_output_never_overwrites_a_globbed_input(labelled, capsys):
    directory, _ = labelled
    code = main(["release", "--data", str(directory / "part-*.parquet"), "--domain", str(directory / "domain.json"),
                 "--rho", "1", "--out", str(directory / "part-0.parquet"), "--force"])
    assert code != 0
    assert "refusing to overwrite an input" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["pandas", "polars", "duckdb", "dask", "spark"])
def test_numeric_looking_labels_stay_text_in_every_engine(tmp_path, engine, request, capsys):
    """Labels "01", "02" in a CSV: read as text (an engine inferring numbers would lose the zero)."""
    if engine == "spark":
        request.getfixturevalue("spark")
    (tmp_path / "domain.json").write_text(json.dumps({"zip": ["01", "02", "10"], "c": 2}), encoding="utf-8")
    (tmp_path / "rows.csv").write_text("zip,c\n01,0\n02,1\n10,1\n01,1\n", encoding="utf-8")
    code = main(["release", "--data", str(tmp_path / "rows.csv"), "--domain", str(tmp_path / "domain.json"),
                 "--workload", "marginals:1", "--mechanism", "gaussian", "--rho", "1", "--noise", "continuous",
                 "--seed", "2", "--engine", engine, "--out", str(tmp_path / "out.csv")])
    assert code == 0, capsys.readouterr().err
    table = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert list(table["query"][:3]) == ["zip=01", "zip=02", "zip=10"]


def test_input_errors_name_flag_and_file_once_in_cli_words(tmp_path, capsys):
    (tmp_path / "rows.csv").write_text("a,b\n0,1\n1,0\n", encoding="utf-8")
    (tmp_path / "domain.json").write_text('{"a": 2, "c": 2}', encoding="utf-8")
    (tmp_path / "broken.json").write_text('{"a": 2, ', encoding="utf-8")
    for domain, expected in (("domain.json", r"^projmech release: error: --data: \S*rows.csv: columns \['c'\] of the "
                                             r"domain are missing; the data has columns \['a', 'b'\]$"),
                             ("broken.json", r"^projmech release: error: --domain: \S*broken.json: is not valid JSON")):
        code = main(["release", "--data", str(tmp_path / "rows.csv"), "--domain", str(tmp_path / domain),
                     "--rho", "1", "--out", str(tmp_path / "out.csv")])
        error = capsys.readouterr().err.strip()
        assert code != 0 and re.search(expected, error), error
        assert error.count(str(tmp_path)) == 1 and "frame:" not in error


# --------------------------------------------------------------------------------------------
# Large universes: refused up front, in the command's words, with a fix that exists
# --------------------------------------------------------------------------------------------


def binary_files(tmp_path: Path, d: int, n: int = 40) -> list[str]:
    """A CSV of ``d`` binary attributes and its domain; the release arguments reading them."""
    rng = np.random.default_rng(d)
    pd.DataFrame(rng.integers(0, 2, size=(n, d)), columns=[f"x{i}" for i in range(d)]).to_csv(
        tmp_path / "data.csv", index=False)
    (tmp_path / "domain.json").write_text(json.dumps({f"x{i}": 2 for i in range(d)}), encoding="utf-8")
    return ["release", "--data", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
            "--out", str(tmp_path / "out.csv")]


@pytest.mark.parametrize("d, args, message", [
    # 2^20 elements: the explicit matrices would hold over 1e8 entries
    (20, ["--solver", "CLARABEL", "--rho", "1"],
     "--solver CLARABEL: a CVXPY solver projects onto the hull K_Q through the explicit matrix of --workload "
     "marginals:2 (760 x 1,048,576), which is too large to build; use --solver fast or auto, which need only "
     "products with it, or --body relaxed --solver CLARABEL (the relaxation L)"),
    (20, ["--solver", "CLARABEL", "--mechanism", "factorization+projection", "--rho", "1"],
     "--solver CLARABEL: a CVXPY solver projects onto the hull K_Q through the explicit matrix"),
    # 2^23 elements: above what --body auto projects onto K_Q, not 2-way marginals, overlapping
    # tables, and prefix queries, which the local polytope does not take
    (23, ["--workload", "range-marginals:3", "--ranges", "x0=prefix", "--rho", "1"],
     "--body auto: no body to project range-marginals:3 onto: the hull K_Q is chosen only up to 4,194,304 universe "
     "elements (--domain has 8,388,608), the relaxation L holds only --workload marginals:2, the tables body "
     "takes only disjoint tables (--workload marginals:1, identity or prefix:ATTR), not range-marginals:3, and the "
     "local body takes only marginal tables (--workload marginals:WAY), not range-marginals:3; use --mechanism "
     "gaussian or factorization (answers without projection)"),
    # 2^40 elements: no vector over the universe fits in memory, no table of every cell either
    (40, ["--workload", "range-marginals:3", "--ranges", "x0=prefix", "--rho", "1"],
     "--body auto: no body to project range-marginals:3 onto"),
    (40, ["--body", "hull", "--workload", "marginals:3", "--rho", "1"],
     "--body hull: projecting onto the hull K_Q holds vectors over the universe of 1,099,511,627,776 elements"),
    (40, ["--workload", "marginals:2", "--body", "hull", "--rho", "1"],
     "use --mechanism gaussian or factorization (answers without projection), or --body relaxed (the relaxation L)"),
    (40, ["--mechanism", "factorization+projection", "--body", "hull", "--workload", "prefix:x0", "--rho", "1"],
     "--body hull: projecting onto the hull K_Q holds vectors over the universe"),
    (40, ["--solver", "fast", "--workload", "prefix:x0", "--rho", "1"], "--solver fast: projecting onto the hull K_Q"),
    (40, ["--mechanism", "gaussian", "--workload", "identity", "--rho", "1"],
     "--workload: identity has 1,099,511,627,776 queries, more than the 100,000,000 answers the command counts and "
     "writes; use marginals:WAY, or fewer or coarser attributes in --domain"),
])
def test_large_universe_errors(tmp_path, capsys, d, args, message):
    assert main([*binary_files(tmp_path, d), *args]) == 2
    err = one_line_error(capsys, message)
    # Every message ends with fixes; the hull is among them only where this machine can hold it
    # (2^23 elements: 400 MB; never 2^40).
    fixes = err.split("; use ", 1)[1]
    assert ("--body hull" in fixes) == (d == 23)
    assert not (tmp_path / "out.csv").exists()


def test_laplace_needs_no_explicit_matrix(tmp_path, capsys):
    """The Laplace mechanism's l1 sensitivity and counts come without the matrix: 3-way marginals
    of 20 binary attributes (9,120 x 2^20, whose matrix the command would refuse to build)."""
    domain = {f"x{i}": 2 for i in range(20)}
    (tmp_path / "domain.json").write_text(json.dumps(domain))
    rows = np.random.default_rng(0).integers(0, 2, size=(50, 20))
    pd.DataFrame(rows, columns=list(domain)).to_csv(tmp_path / "data.csv", index=False)
    code = main(["release", "--data", str(tmp_path / "data.csv"), "--domain", str(tmp_path / "domain.json"),
                 "--out", str(tmp_path / "out.csv"), "--mechanism", "laplace", "--workload", "marginals:3",
                 "--epsilon", "1"])
    assert code == 0, capsys.readouterr().err
    assert len(pd.read_csv(tmp_path / "out.csv")) == 9120


def test_body_hull_beyond_auto_limit_runs(files, capsys, monkeypatch):
    """What the --body auto refusal suggests works (with the limit lowered to below the fixture's
    12 elements, so that the projection takes no time; 2^23 elements take 10 s)."""
    import projmech.bodies._body

    monkeypatch.setattr(projmech.bodies._body, "HULL_MAX_UNIVERSE", 8)
    # 2-way tables with prefix queries: overlapping tables (no tables body), not marginal ones
    # (no local polytope) and not all 2-way marginals (no L).
    ranged = ("--workload", "range-marginals:2", "--ranges", "b=prefix")
    assert release(files, *ranged, "--rho", "1")[0] == 2
    assert "or --body hull to project onto the hull K_Q regardless" in one_line_error(capsys, "--body auto")
    code, out = release(files, *ranged, "--rho", "1", "--body", "hull")
    assert code == 0 and read_outputs(out)[1]["body"] == "hull"


# --------------------------------------------------------------------------------------------
# The factorization mechanism's printed noise
# --------------------------------------------------------------------------------------------

NUMBER = r"([-+\d.e]+)"


@pytest.mark.parametrize("mechanism", ["factorization", "factorization+projection"])
def test_factorization_prints_the_answers_rms_noise_beside_the_strategy_sigma(files, capsys, mechanism):
    code, out = release(files, "--mechanism", mechanism, "--workload", "marginals:2", "--rho", "1", "--noise",
                        "continuous", "--seed", "0")
    assert code == 0
    printed = capsys.readouterr().out
    before = " before projection" if mechanism.endswith("projection") else ""
    match = re.search(rf"the strategy's gaussian noise of std sigma = {NUMBER} on each of its (\d+) measured counts, "
                      rf"the answers' RMS noise{before} sigma \|\|R\|\|_F / sqrt\(k\) = {NUMBER} per count, {NUMBER} "
                      r"on the answers \(answers: counts / public n size 60\)", printed)
    assert match, printed
    sigma, measured, per_count, on_answers = (float(value) for value in match.groups())
    summary = read_outputs(out)[1]
    expected = FactorizationMechanism(workloads.marginals(Domain.from_dict(SIZES), 2), ZCDP(1.0), noise="continuous",
                                      project=bool(before))
    printed_to_3_digits = {"rel": 5e-3}
    assert sigma == pytest.approx(summary["noise"]["std"], **printed_to_3_digits)
    assert measured == summary["factorization"]["strategy_shape"][0]
    assert per_count == pytest.approx(expected.error_bound(1), **printed_to_3_digits)
    assert on_answers == pytest.approx(expected.error_bound(N), **printed_to_3_digits)
    # Here the answers' noise is a third above the strategy's sigma: not the same figure.
    assert on_answers > 1.2 * sigma / N


# --------------------------------------------------------------------------------------------
# --help: every worked example parses, and runs
# --------------------------------------------------------------------------------------------


def help_examples(capsys) -> tuple[list[list[str]], dict, str]:
    """The example commands of ``projmech release --help`` (argv after ``projmech``), its example
    domain, and the whole help text."""
    with pytest.raises(SystemExit) as exit_info:
        main(["release", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out.replace("\\\n", " ")
    commands = [shlex.split(line)[1:] for line in text.splitlines() if line.startswith("  projmech release ")]
    domain = json.loads(re.search(r"^e\.g\. (\{.*\})$", text, flags=re.M).group(1))
    return commands, domain, text


def test_help_examples_parse_and_cover_every_workload_and_mechanism(capsys):
    commands, domain, text = help_examples(capsys)
    assert len(commands) >= 10
    parser = build_parser()
    seen = {"--workload": set(), "--mechanism": set()}
    for argv in commands:
        args = parser.parse_args(argv)
        assert (args.data, args.domain, args.out) == ("rows.csv", "domain.json", "answers.csv")
        seen["--workload"].add(args.workload.partition(":")[0])
        seen["--mechanism"].add(args.mechanism)
        if args.neighbouring == "add-remove":
            assert args.size is not None
    assert seen["--workload"] == {"marginals", "range-marginals", "identity", "prefix", "all_range"}
    assert seen["--mechanism"] == set(MECHANISMS_BY_NAME)
    assert {"age", "hours"} <= set(domain)
    words = " ".join(text.split())
    assert "sdp (positive semidefinite moments only: it can release negative cells" in words
    # --solver lists exactly what each body accepts (the errors above refuse the rest).
    assert ("onto the hull K_Q (--body hull, factorization+projection) one of auto, fast, CLARABEL, ECOS, OSQP, SCS"
            in words)
    assert ("onto the relaxation L (--body relaxed) one of auto, admm, CLARABEL, SCS, or with --relaxation local one "
            "of auto, CLARABEL, ECOS, SCS" in words)


def test_help_examples_run_end_to_end(tmp_path, capsys, monkeypatch):
    commands, domain, _ = help_examples(capsys)
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"age": rng.integers(18, 100, 200), "hours": rng.integers(0, 100, 200),
                         "sex": rng.choice(["F", "M"], 200)})
    for number, argv in enumerate(commands):
        folder = tmp_path / f"example{number}"
        folder.mkdir()
        rows.to_csv(folder / "rows.csv", index=False)
        (folder / "domain.json").write_text(json.dumps(domain), encoding="utf-8")
        monkeypatch.chdir(folder)
        assert main(argv) == 0, (argv, capsys.readouterr().err)
        assert len(pd.read_csv(folder / "answers.csv")) >= 1 and (folder / "answers.json").exists()


# --------------------------------------------------------------------------------------------
# demo and audit: their flags in the same words
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["demo", "--trials", "1"],
     "projmech demo: error: --trials: must be at least 2 (for a confidence interval), got 1"),
    (["demo", "--epsilon", "-1"], "projmech demo: error: --epsilon: must be a positive finite number, got -1"),
    (["demo", "--delta", "2"], "projmech demo: error: --delta: must lie strictly between 0 and 1, got 2"),
    (["demo", "--seed", "-3"], "projmech demo: error: --seed: expected a non-negative integer, got -3"),
    (["audit", "--delta", "0"], "projmech audit: error: --delta: must lie strictly between 0 and 1, got 0"),
    (["audit", "--seed", "-1"], "projmech audit: error: --seed: expected a non-negative integer, got -1"),
])
def test_demo_and_audit_flag_errors(tmp_path, capsys, args, message):
    extra = ["--out-dir", str(tmp_path / "demo")] if args[0] == "demo" else []
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    assert_speaks_cli(err)
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("flags, delta", [
    ([], 1e-5),
    (["--planted-bug"], 1e-3),  # where a planted bug shows at 20,000 releases
    (["--planted-bug", "--delta", "1e-5"], 1e-5),
    (["--delta", "1e-4"], 1e-4),
])
def test_audit_delta_defaults_to_where_a_planted_bug_shows(tmp_path, capsys, flags, delta):
    out = tmp_path / "audit.csv"
    assert main(["audit", "--mechanism", "gaussian", "--neighbouring", "replace-one", "--releases", "200",
                 "--noise", "continuous", "--seed", "0", "--out", str(out), *flags]) == 0
    capsys.readouterr()
    assert pd.read_csv(out)["claimed_delta"].tolist() == [delta]


def test_demo_out_dir_must_be_a_folder(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main(["demo", "--out-dir", str(tmp_path / "file")]) == 2
    assert "--out-dir: " in capsys.readouterr().err
    # A file on the way to the folder is refused too, before any work, and nothing is created.
    assert main(["demo", "--out-dir", str(tmp_path / "file" / "run1")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("projmech demo: error: --out-dir: ") and "is a file" in err and err.count("\n") == 1, err
    assert (tmp_path / "file").read_text() == ""


def test_demo_from_nothing(tmp_path, monkeypatch, capsys):
    """As the README's `make demo` runs it on a fresh clone: the default --out-dir (demo_output)
    does not exist yet, and the demo creates it (with --force, as the Makefile passes)."""
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--trials", "2", "--force"]) == 0
    assert sorted(path.name for path in (tmp_path / "demo_output").iterdir()) == ["error_vs_n.csv", "error_vs_n.png"]
    # A folder several levels deep is created as well.
    assert main(["demo", "--trials", "2", "--out-dir", str(tmp_path / "a" / "b")]) == 0
    assert (tmp_path / "a" / "b" / "error_vs_n.csv").is_file()
    assert "wrote" in capsys.readouterr().out


def test_demo_without_matplotlib_refuses_before_the_work(tmp_path, monkeypatch, capsys):
    """matplotlib is the optional extra projmech[plot]: without it the demo refuses in one line
    naming the extra, before the experiment runs and before any output or folder is made."""
    import sys

    import projmech.cli._demo as demo

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    monkeypatch.setattr(demo, "error_vs_n", lambda *args, **kwargs: pytest.fail("the experiment ran"))
    assert main(["demo", "--trials", "2", "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "projmech[plot]" in err and "matplotlib" in err, err
    assert not (tmp_path / "out").exists()
    with pytest.raises(ModuleNotFoundError, match=r"projmech\[plot\]"):
        projmech.analysis._experiments.pyplot()


# --------------------------------------------------------------------------------------------
# --objective and --intervals
# --------------------------------------------------------------------------------------------


def test_objective_max_and_intervals(files, capsys):
    code, out = release(files, "--workload", "prefix:b", "--mechanism", "factorization", "--objective", "max",
                        "--rho", "0.5", "--noise", "continuous", "--seed", "3", "--intervals", "0.9")
    assert code == 0
    table, summary = read_outputs(out)
    assert list(table.columns) == ["query", "answer", "lower", "upper"]
    assert summary["factorization"]["objective"] == "max"
    assert "gamma_2" in summary["factorization"]
    # Unprojected answers: each interval is centred on its answer, at z(0.95) standard deviations.
    assert np.allclose((table["lower"] + table["upper"]) / 2, table["answer"], atol=1e-12)
    half = (table["upper"] - table["lower"]) / 2
    sigma = summary["noise"]["std"] / summary["size"]
    # ||r_i|| >= max_j |F_ij| = 1, since F = R M and M's columns have norm at most 1.
    assert np.all(half >= 1.6448536 * sigma * 0.999)
    printed = capsys.readouterr().out
    assert "0.9 intervals (exact: gaussian, each query's variance from R)" in printed


@pytest.mark.parametrize("extra, message", [
    (["--mechanism", "gaussian", "--rho", "0.5", "--objective", "max"],
     "--objective: only --mechanism factorization or factorization+projection optimizes a strategy; "
     "--mechanism gaussian has none"),
    (["--mechanism", "gaussian", "--rho", "0.5", "--intervals", "1.5"],
     "--intervals: must lie strictly between 0 and 1, got 1.5"),
    (["--mechanism", "projection", "--rho", "0.5", "--metric", "tables"],
     "--metric: applies only to --mechanism factorization+projection, not projection"),
    (["--mechanism", "factorization+projection", "--rho", "0.5", "--metric", "precision", "--body", "hull"],
     "--metric: 'precision' projects the strategy's measurements onto the local polytope, which body 'hull' is "
     "not; use --body local or --metric answers"),
    (["--mechanism", "factorization+projection", "--rho", "0.5", "--metric", "precision", "--synthetic", "rows.csv"],
     "--synthetic: rows are drawn from projected tables or answers; --metric precision projects"),
])
def test_option_refusals(files, capsys, extra, message):
    """--objective, --intervals and --metric given where they do not apply, or with what they refuse."""
    code, out = release(files, *extra)
    assert code == 2 and not out.exists()  # refused before anything is read or written
    assert message in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# --metric: the factorization mechanism's projection of its measurements
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["tables", "precision"])
def test_metric_releases_the_library_answers(files, metric):
    """--metric passes FactorizationMechanism's metric: the command's answers are the library's
    on the same records and seed, projected onto the local polytope, the summary's body says so."""
    code, out = release(files, "--mechanism", "factorization+projection", "--metric", metric, "--rho", "0.05",
                        "--noise", "continuous", "--seed", "4")
    assert code == 0
    table, summary = read_outputs(out)
    domain = Domain(list(SIZES), list(SIZES.values()))
    data = projmech.Dataset(files["frame"][list(SIZES)].to_numpy(), domain)
    expected = FactorizationMechanism(projmech.marginals(domain, 2, implicit=True), ZCDP(0.05), project=True,
                                      metric=metric, noise="continuous").release(data, rng=np.random.default_rng(4))
    assert list(table["query"]) == marginal_labels(2)
    np.testing.assert_allclose(table["answer"].to_numpy(), expected.answers, rtol=0, atol=1e-12)
    assert summary["body"] == "local" and table["answer"].min() >= -1e-12


# --------------------------------------------------------------------------------------------
# Outputs: never an input under another name, written whole or not at all; inputs that hang
# --------------------------------------------------------------------------------------------

#: The folder holding the projmech these tests import, for a subprocess to import the same one.
SOURCE = str(Path(projmech.__file__).resolve().parents[1])


def run_cli(argv: list[str], *, fault: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``projmech ARGV`` in a fresh interpreter, after the Python lines ``fault`` (run once the
    command line is imported); a command that hangs is killed after ``timeout`` seconds and
    fails the test (subprocess.TimeoutExpired)."""
    script = "\n".join(["import sys", "from projmech.cli.commands import main", fault, "sys.exit(main(sys.argv[1:]))"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SOURCE, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=timeout,
                          env=env)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` (hidden temporaries included) and its bytes."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


@pytest.mark.parametrize("link", ["hard", "symbolic"])
@pytest.mark.parametrize("target", ["data", "domain"])
@pytest.mark.parametrize("flag", ["--out", "--summary"])
def test_outputs_never_overwrite_an_input_through_a_link(files, capsys, link, target, flag):
    """``ln data.csv alias.json; --summary alias.json --force`` wrote the summary into the data: a
    hard link has its own name, so outputs are compared with inputs by device and inode."""
    alias = files["dir"] / ("alias.json" if flag == "--summary" else "alias.csv")
    (os.link if link == "hard" else os.symlink)(files[target], alias)
    before = folder_bytes(files["dir"])
    outputs = ["--summary", str(alias)] if flag == "--summary" else []
    code, out = release(files, "--rho", "1", "--force", *outputs, out="alias.csv" if flag == "--out" else "out.csv")
    assert code == 2
    one_line_error(capsys, flag, str(alias), f"the --{target} file", "refusing to overwrite an input")
    assert folder_bytes(files["dir"]) == before


@pytest.mark.parametrize("data", ["part-*.parquet", "parts"])
def test_outputs_never_overwrite_a_globbed_or_folder_input_through_a_hard_link(labelled, capsys, data):
    directory, _ = labelled
    (directory / "parts").mkdir()
    os.link(directory / "part-0.parquet", directory / "parts" / "part-0.parquet")
    os.link(directory / "part-0.parquet", directory / "answers.csv")
    before = (directory / "part-0.parquet").read_bytes()
    code = main(["release", "--data", str(directory / data), "--domain", str(directory / "domain.json"), "--rho", "1",
                 "--out", str(directory / "answers.csv"), "--force"])
    assert code == 2
    one_line_error(capsys, "--out", "answers.csv", "the --data file", "part-0.parquet",
                   "refusing to overwrite an input")
    assert (directory / "part-0.parquet").read_bytes() == before


def test_out_and_summary_that_are_one_file_are_refused(files, capsys):
    (files["dir"] / "a.csv").write_text("earlier answers\n")
    os.link(files["dir"] / "a.csv", files["dir"] / "b.json")
    code, _ = release(files, "--rho", "1", "--force", "--summary", str(files["dir"] / "b.json"), out="a.csv")
    assert code == 2
    one_line_error(capsys, "--summary", "b.json", "is also the --out file", "a.csv")
    assert (files["dir"] / "a.csv").read_text() == "earlier answers\n"


def test_demo_outputs_that_are_one_file_are_refused(tmp_path, capsys):
    (tmp_path / "error_vs_n.csv").write_text("earlier\n")
    os.link(tmp_path / "error_vs_n.csv", tmp_path / "error_vs_n.png")
    assert main(["demo", "--trials", "2", "--out-dir", str(tmp_path), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("projmech demo: error: --out-dir: ") and err.count("\n") == 1, err
    assert "error_vs_n.png is also the --out-dir file" in err
    assert (tmp_path / "error_vs_n.csv").read_text() == "earlier\n"


#: A release whose answers are seeded, and whose summary is about twice the size of its answers.
SEEDED = ("--mechanism", "projection", "--rho", "1", "--noise", "continuous")


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("failing", ["--out", "--summary"])
def test_a_full_disk_leaves_the_earlier_outputs_as_they_were(files, failing):
    """With the file size capped (as a full disk would), the answers' or the summary's write
    fails: the earlier pair stays byte for byte, no partial or temporary file remains, and the
    one-line error names the flag and the file. Before, the CSV was truncated in place."""
    code, out = release(files, *SEEDED, "--seed", "1", "--summary", str(files["dir"] / "out.json"))
    assert code == 0
    answers, summary = len(out.read_bytes()), len(out.with_suffix(".json").read_bytes())
    assert 2 * answers < summary + answers // 2  # the cap below lies between the two sizes
    before = folder_bytes(files["dir"])
    cap = 1 if failing == "--out" else (answers + summary) // 2 + answers // 4
    fault = ("import resource, signal\n"
             "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write raises OSError EFBIG instead\n"
             f"resource.setrlimit(resource.RLIMIT_FSIZE, ({cap}, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))")
    result = run_cli(["release", "--data", str(files["data"]), "--domain", str(files["domain"]), *SEEDED, "--seed",
                      "2", "--out", str(out), "--summary", str(files["dir"] / "out.json"), "--force"], fault=fault)
    assert result.returncode == 2, result.stderr
    written = out if failing == "--out" else out.with_suffix(".json")
    assert result.stderr == (f"projmech release: error: {failing}: {written}: could not write it "
                             f"({os.strerror(errno.EFBIG)})\n")
    assert folder_bytes(files["dir"]) == before


@pytest.mark.parametrize("fault", [OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), KeyboardInterrupt()],
                         ids=["disk-full", "interrupted"])
def test_a_failure_between_the_two_writes_leaves_the_earlier_pair(files, capsys, monkeypatch, fault):
    """The answers are written, then the summary's write fails halfway (a full disk, or Ctrl-C):
    before, the new answers sat beside the old summary; now neither is replaced."""
    code, out = release(files, *SEEDED, "--seed", "1")
    assert code == 0
    before = folder_bytes(files["dir"])

    def failing_write(path: Path, text: str, *args, **kwargs) -> int:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text[: len(text) // 2])
        raise fault

    monkeypatch.setattr(Path, "write_text", failing_write)
    try:
        code, _ = release(files, *SEEDED, "--seed", "2", "--force")
    except KeyboardInterrupt:  # would end the test session itself
        pytest.fail("the interrupt escaped the command, with its outputs half written")
    if isinstance(fault, OSError):
        assert code == 2
        one_line_error(capsys, "--out (its .json summary)", f"{out.with_suffix('.json')}: could not write it "
                       "(No space left on device)")
    else:
        assert code == 130 and capsys.readouterr().err == "projmech release: interrupted\n"
    assert folder_bytes(files["dir"]) == before


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or sys.platform == "win32", reason="POSIX signals")
def test_a_signal_between_the_two_writes_leaves_the_earlier_pair(files):
    """SIGTERM arriving after the answers are written and before the summary is: the process
    still ends by the signal, without its temporaries and with the earlier pair untouched."""
    code, out = release(files, *SEEDED, "--seed", "1")
    assert code == 0
    before = folder_bytes(files["dir"])
    fault = ("import os, pathlib, signal\n"
             "pathlib.Path.write_text = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGTERM)")
    result = run_cli(["release", "--data", str(files["data"]), "--domain", str(files["domain"]), *SEEDED, "--seed",
                      "2", "--out", str(out), "--force"], fault=fault)
    assert result.returncode == -signal.SIGTERM, (result.returncode, result.stderr)
    assert folder_bytes(files["dir"]) == before


def test_forced_outputs_keep_the_earlier_files_mode(files):
    code, out = release(files, *SEEDED, "--seed", "1")
    assert code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask  # as a plain open would have made it
    out.chmod(0o640)
    assert release(files, *SEEDED, "--seed", "2", "--force")[0] == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


@pytest.mark.parametrize("earlier", [True, False], ids=["over-earlier-results", "new-folder"])
def test_demo_write_failure_leaves_nothing_new(tmp_path, capsys, monkeypatch, earlier):
    """The figure's write fails after the CSV's: the earlier results stay as they were (or no
    folder is left where there was none), with one line naming --out-dir and the file."""
    import projmech.cli._demo as cli

    out_dir = tmp_path / "results" if earlier else tmp_path / "new" / "results"
    if earlier:
        out_dir.mkdir()
        (out_dir / "error_vs_n.csv").write_text("earlier table\n")
        (out_dir / "error_vs_n.png").write_bytes(b"earlier figure")
    monkeypatch.setattr(cli, "error_vs_n", lambda *args: pd.DataFrame({"n": [100], "rmse": [0.1]}))
    monkeypatch.setattr(cli, "format_table", lambda results: "")

    def failing_plot(results, path, *args, **kwargs):
        Path(path).write_bytes(b"\x89PNG half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cli, "plot_error_vs_n", failing_plot)
    assert main(["demo", "--trials", "2", "--out-dir", str(out_dir), "--force"]) == 2
    err = capsys.readouterr().err
    assert err == (f"projmech demo: error: --out-dir: {out_dir / 'error_vs_n.png'}: could not write it "
                   "(No space left on device)\n")
    if earlier:
        assert folder_bytes(out_dir) == {"error_vs_n.csv": b"earlier table\n", "error_vs_n.png": b"earlier figure"}
    else:
        assert list(tmp_path.iterdir()) == []


def test_audit_write_failure_names_out(tmp_path, capsys, monkeypatch):
    out = tmp_path / "audit.csv"
    out.write_text("earlier audit\n")

    def failing_to_csv(self, path, *args, **kwargs):
        Path(path).write_text("mechanism,")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing_to_csv)
    code = main(["audit", "--mechanism", "laplace", "--neighbouring", "replace-one", "--releases", "200", "--seed",
                 "0", "--out", str(out), "--force"])
    assert code == 2
    assert capsys.readouterr().err == (f"projmech audit: error: --out: {out}: could not write it (No space left on "
                                       "device)\n")
    assert folder_bytes(tmp_path) == {"audit.csv": b"earlier audit\n"}


def _fifo(directory: Path, name: str) -> Path:
    path = directory / name
    os.mkfifo(path)
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX pipes and devices")
@pytest.mark.parametrize("flag, make, kind", [
    ("--data", lambda d: _fifo(d, "rows.csv"), "a named pipe (FIFO)"),
    ("--data", lambda d: Path("/dev/zero"), "a character device"),
    ("--domain", lambda d: _fifo(d, "domain-pipe.json"), "a named pipe (FIFO)"),
    ("--domain", lambda d: Path("/dev/zero"), "a character device"),
    ("--data", lambda d: (_fifo(d, "more.csv"), d / "*.csv")[1], "a named pipe (FIFO)"),  # a glob
    ("--data", lambda d: (d / "parts").mkdir() or (_fifo(d / "parts", "part-0.parquet"), d / "parts")[1],
     "a named pipe (FIFO)"),  # a folder of Parquet files
], ids=["fifo-data", "dev-zero-data", "fifo-domain", "dev-zero-domain", "glob-with-a-fifo", "folder-with-a-fifo"])
def test_inputs_that_are_not_regular_files_are_refused_without_hanging(files, flag, make, kind):
    """Reading a pipe waits for a writer, and /dev/zero never ends: either is refused up front,
    in one line naming the flag and the path (each run is killed, failing, after 60 s)."""
    arguments = {"--data": str(files["data"]), "--domain": str(files["domain"])}
    arguments[flag] = str(make(files["dir"]))
    result = run_cli(["release", *itertools.chain(*arguments.items()), "--out", str(files["dir"] / "o.csv"),
                      "--rho", "1"])
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"projmech release: error: {flag}: ") and result.stderr.count("\n") == 1
    assert f"is {kind}, not a regular file" in result.stderr
    assert not (files["dir"] / "o.csv").exists()


@pytest.mark.parametrize("args, flag", [
    (["--out", ""], "--out"),
    (["--out", "-"], "--out"),
    (["--out", "o.csv", "--summary", ""], "--summary"),
    (["--out", "o.csv", "--summary", "-"], "--summary"),
])
def test_empty_or_dash_output_paths_are_refused(files, capsys, monkeypatch, args, flag):
    """``--out ''`` named the current folder and ``--out -`` a file called '-' (or, for
    ``--summary ''``, silently the default path); '-' does not mean standard output here."""
    monkeypatch.chdir(files["dir"])
    code = main(["release", "--data", str(files["data"]), "--domain", str(files["domain"]), "--rho", "1", *args])
    assert code == 2
    one_line_error(capsys, f"error: {flag}: ", "give a file path")
    assert sorted(path.name for path in files["dir"].iterdir()) == ["data.csv", "domain.json"]


@pytest.mark.parametrize("args, flag", [
    (["audit", "--mechanism", "laplace", "--releases", "2", "--out", ""], "--out"),
    (["audit", "--mechanism", "laplace", "--releases", "2", "--out", "-"], "--out"),
    (["demo", "--trials", "2", "--out-dir", ""], "--out-dir"),
    (["demo", "--trials", "2", "--out-dir", "-"], "--out-dir"),
])
def test_empty_or_dash_output_paths_are_refused_by_audit_and_demo(tmp_path, capsys, monkeypatch, args, flag):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"projmech {args[0]}: error: {flag}: ") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_warnings_are_one_line_and_the_command_runs_on(files, capsys, monkeypatch):
    """A UserWarning raised while the command runs (a large delta, say) is one line in the
    command's words, without Python's file and line; the release still completes."""
    import projmech.cli._inputs as cli

    read_inputs = cli.read_inputs

    def warning_read(*args, **kwargs):
        warnings.warn("the data\n  look odd", UserWarning, stacklevel=1)
        warnings.warn("a developer's warning", RuntimeWarning, stacklevel=1)
        return read_inputs(*args, **kwargs)

    monkeypatch.setattr(cli, "read_inputs", warning_read)
    code, out = release(files, "--mechanism", "gaussian", "--rho", "1")
    assert code == 0 and len(pd.read_csv(out)) == 16
    assert capsys.readouterr().err == ("projmech release: warning: the data look odd\n"
                                       "projmech release: warning: RuntimeWarning: a developer's warning\n")


def test_a_large_delta_warns_in_one_line_naming_the_flag(files, capsys):
    """The library's LargeDeltaWarning (delta above 1e-3 or at least 1/n) in the command's words."""
    if not hasattr(projmech, "LargeDeltaWarning"):
        pytest.skip("projmech.LargeDeltaWarning is not in this version of the library")
    code, _ = release(files, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "0.01")
    assert code == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines and all(line.startswith("projmech release: warning: --delta: ") for line in lines), err
    assert "Warning" not in err and "test_cli.py" not in err and "privacy.py" not in err


@pytest.mark.parametrize("flags, flag", [(["--workload", "prefix:species"], "--workload"),
                                         (["--workload", "all_range:species"], "--workload"),
                                         (["--workload", "range-marginals:1", "--ranges", "species=prefix"],
                                          "--ranges")])
def test_ranges_over_unordered_categories_are_refused_naming_the_flag(tmp_path, capsys, flags, flag):
    """Ranges compare values by order; a plain category list has none (declared ordered, it has)."""
    data = tmp_path / "penguins.csv"
    pd.DataFrame({"species": ["Adelie", "Gentoo", "Chinstrap"], "x": [0, 2, 1]}).to_csv(data, index=False)
    domain = tmp_path / "domain.json"
    domain.write_text(json.dumps({"species": ["Adelie", "Chinstrap", "Gentoo"], "x": 3}))
    out = tmp_path / "out.csv"
    command = ["release", "--data", str(data), "--domain", str(domain), "--out", str(out), "--rho", "1", *flags]
    assert main(command) == 2
    err = one_line_error(capsys, f"{flag}: ", "'species'", '"ordered": true')
    assert "no order" in err and not out.exists()
    domain.write_text(json.dumps({"species": {"categories": ["Adelie", "Chinstrap", "Gentoo"], "ordered": True},
                                  "x": 3}))
    assert main(command) == 0


# --------------------------------------------------------------------------------------------
# factorization+projection chooses its body as projection does; one memory model (issue 31)
# --------------------------------------------------------------------------------------------


@pytest.mark.solver
def test_factorization_projection_takes_the_body_auto_chooses(files, monkeypatch):
    """With the hull's limit lowered below the fixture's 12 elements, --body auto (the default)
    projects the marginals:2 answers onto the relaxation L, and the summary says so; --body and
    --relaxation choose as for --mechanism projection."""
    import projmech.bodies._body

    monkeypatch.setattr(projmech.bodies._body, "HULL_MAX_UNIVERSE", 8)
    for flags, body, name in [([], "relaxation/sdp+local", "auto.csv"),
                              (["--body", "hull"], "hull", "hull.csv"),
                              (["--relaxation", "local"], "relaxation/local", "local.csv")]:
        code, out = release(files, "--mechanism", "factorization+projection", "--rho", "1", *flags, out=name)
        assert code == 0
        summary = read_outputs(out)[1]
        assert summary["mechanism"] == "factorization+projection" and summary["body"] == body
        assert summary["solver"]["status"] == "optimal"
        if body != "relaxation/local":  # certified by a gap (a CVXPY solver on L reports its own status alone)
            assert summary["solver"]["tolerance_met"] and summary["solver"]["gap"] <= summary["solver"]["tolerance"]


def test_the_command_refuses_by_the_library_memory_model(files, capsys, monkeypatch):
    """With 1,000 bytes available, projecting the fixture's 16 answers (12 elements) fits neither
    body: the command says why in the library's own words (one model), with its flags."""
    import projmech.bodies._memory
    from projmech.bodies import Hull

    monkeypatch.setattr(projmech.bodies._memory, "available_memory", lambda: 1000)
    workload = workloads.marginals(Domain.from_dict(SIZES), 2)
    why = Hull().memory_blocker(workload)
    assert why is not None and why.startswith("projecting onto the hull K_Q holds vectors over the universe of 12 "
                                              "elements")
    with pytest.raises(ValueError) as error:
        projmech.ProjectionMechanism(workload, ZCDP(1.0), body="hull")
    assert str(error.value).startswith(f"workload: {why}; use ")
    for mechanism in ("projection", "factorization+projection"):
        code, out = release(files, "--mechanism", mechanism, "--body", "hull", "--rho", "1")
        assert code == 2 and not out.exists()
        one_line_error(capsys, f"--body hull: {why}; use --mechanism gaussian or factorization (answers without "
                               "projection)")


def test_abbreviated_flags_are_refused_with_the_full_name(files, capsys, tmp_path):
    """argparse took a prefix of a flag for the flag: `demo --out x` meant --out-dir in silence."""
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--out", str(tmp_path / "x")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == "projmech demo: error: --out: no such flag; did you mean --out-dir?\n", err
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit):
        release(files, "--eps", "1")
    assert not (files["dir"] / "out.csv").exists()
    err = capsys.readouterr().err
    assert err.startswith("projmech release: error: --eps: no such flag; did you mean --epsilon?"), err


def test_a_symbolic_link_output_is_written_through(files, capsys, tmp_path):
    """--force over a link to an earlier result replaces the file it points to and keeps the
    link (replacing the link itself left the linked file stale)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "results.csv").write_text("old\n")
    link = files["dir"] / "out.csv"
    link.symlink_to(elsewhere / "results.csv")
    code, _ = release(files, "--rho", "1", "--force")
    assert code == 0, capsys.readouterr().err
    assert link.is_symlink() and os.path.samefile(link, elsewhere / "results.csv")
    assert (elsewhere / "results.csv").read_text() != "old\n"
    assert pd.read_csv(link).shape[0] > 0
    assert not [path for path in elsewhere.iterdir() if path.name.startswith(".")]  # no temporary left


# --------------------------------------------------------------------------------------------
# Synthetic rows (--synthetic)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("workload, body, mechanism", [
    ("marginals:2", "hull", ["projection"]), ("marginals:2", "local", ["projection"]),
    ("marginals:1", "tables", ["projection"]),
    ("marginals:2", "local", ["factorization+projection", "--metric", "tables"])])
def test_synthetic_rows_are_written_labelled_and_their_error_reported(files, capsys, workload, body, mechanism):
    rows_path = files["dir"] / "rows.csv"
    code, out = release(files, "--mechanism", *mechanism, "--workload", workload, "--body", body, "--rho", "1",
                        "--noise", "continuous", "--seed", "3", "--synthetic", str(rows_path))
    assert code == 0, capsys.readouterr().err
    assert str(rows_path) in capsys.readouterr().out
    rows = pd.read_csv(rows_path, keep_default_na=False)
    table, summary = read_outputs(out)
    assert list(rows.columns) == list(SIZES) and len(rows) == N == summary["synthetic"]["rows"]
    for name, size in SIZES.items():
        assert set(rows[name]) <= set(range(size))
    # The reported error is the rows' own, recomputed here by counting their tables.
    counts = []
    for label in table["query"]:
        mask = np.ones(len(rows), dtype=bool)
        for part in label.split(" & "):
            name, value = part.split("=")
            mask &= rows[name].to_numpy() == int(value)
        counts.append(mask.mean())
    error = np.abs(np.array(counts) - table["answer"].to_numpy())
    assert summary["synthetic"]["marginal_max_error"] == pytest.approx(error.max(), abs=1e-12)
    assert summary["synthetic"]["method"] == {"hull": "witness", "local": "local", "tables": "tables"}[body]


def test_synthetic_rows_count_can_be_set_and_are_reproducible(files, capsys):
    paths = [files["dir"] / f"rows{i}.csv" for i in range(2)]
    for i, path in enumerate(paths):
        code, _ = release(files, "--mechanism", "projection", "--workload", "marginals:2", "--rho", "1",
                          "--noise", "continuous", "--seed", "3", "--synthetic", str(path), "--synthetic-rows", "77",
                          out=f"out{i}.csv")
        assert code == 0, capsys.readouterr().err
    assert len(pd.read_csv(paths[0])) == 77
    assert paths[0].read_bytes() == paths[1].read_bytes()


@pytest.mark.parametrize("extra, message", [
    (["--mechanism", "gaussian", "--synthetic", "rows.csv"], "--synthetic: rows are drawn from a projection"),
    (["--mechanism", "projection", "--synthetic-rows", "5"], "--synthetic-rows: applies only with --synthetic"),
    (["--mechanism", "projection", "--synthetic", "rows.csv", "--synthetic-rows", "0"],
     "--synthetic-rows: must be a positive integer"),
    (["--mechanism", "projection", "--synthetic", "out.csv"], "--synthetic:"),
])
def test_synthetic_refusals(files, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(files["dir"])
    code, out = release(files, "--workload", "marginals:2", "--rho", "1", *extra)
    assert code == 2
    one_line_error(capsys, message)
    assert not (files["dir"] / "rows.csv").exists()


def test_synthetic_never_overwrites_an_input(files, capsys):
    before = files["data"].read_bytes()
    code, _ = release(files, "--mechanism", "projection", "--workload", "marginals:2", "--rho", "1",
                      "--synthetic", str(files["data"]), "--force")
    assert code == 2
    one_line_error(capsys, "--synthetic", "refusing to overwrite an input")
    assert files["data"].read_bytes() == before


@pytest.mark.parametrize("extra, message", [
    (["--body", "local", "--solver", "fast"], "--solver: --body local projects onto the local polytope"),
    (["--body", "local", "--relaxation", "sdp"], "--relaxation: applies only with --body relaxed or auto, not local"),
    (["--body", "tables", "--relaxation", "sdp"], "--relaxation: applies only with --body relaxed or auto, not tables"),
    (["--body", "tables"], "--body tables: takes only disjoint tables"),
])
def test_the_tables_bodies_refuse_what_they_do_not_take(files, capsys, extra, message):
    assert release(files, "--mechanism", "projection", "--workload", "marginals:2", "--rho", "1", *extra)[0] == 2
    one_line_error(capsys, message)


def test_body_local_releases_consistent_tables(files, capsys):
    code, out = release(files, "--mechanism", "projection", "--workload", "marginals:0-2", "--body", "local",
                        "--rho", "1", "--noise", "continuous", "--seed", "2")
    assert code == 0, capsys.readouterr().err
    table, summary = read_outputs(out)
    assert summary["body"] == "local" and summary["solver"]["tolerance_met"] and summary["solver"]["exact"] is False
    answers = dict(zip(table["query"], table["answer"]))
    assert answers["total"] == 1.0 and min(table["answer"]) >= 0.0
    for name, size in SIZES.items():  # each 1-way table is the marginal of every 2-way table holding it
        for other in SIZES:
            if other == name:
                continue
            first, second = sorted([name, other])
            for value in range(size):
                pair = sum(answers[f"{first}={a} & {second}={b}"] for a in range(SIZES[first])
                           for b in range(SIZES[second]) if (a if name == first else b) == value)
                assert pair == pytest.approx(answers[f"{name}={value}"], abs=1e-12)


# --------------------------------------------------------------------------------------------
# projmech synthesize
# --------------------------------------------------------------------------------------------


def synthesize_cli(files, *extra: str, out: str = "rows.csv") -> tuple[int, Path]:
    path = files["dir"] / out
    code = main(["synthesize", "--data", str(files["data"]), "--domain", str(files["domain"]), "--out", str(path),
                 *extra])
    return code, path


def test_synthesize_writes_labelled_rows_and_a_summary_of_the_rounds(files, capsys):
    code, path = synthesize_cli(files, "--rho", "1", "--neighbouring", "replace-one", "--noise", "continuous",
                                "--seed", "4")
    assert code == 0, capsys.readouterr().err
    assert str(path) in capsys.readouterr().out
    rows = pd.read_csv(path, keep_default_na=False)
    summary = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert list(rows.columns) == list(SIZES) and len(rows) == N == summary["synthetic"]["rows"]
    assert summary["mechanism"] == "adaptive_projection" and summary["guarantee"] == "1-zCDP"
    # The rounds' costs in the summary add up to the budget.
    spent = sum(r["selection_rho"] + r["measurement_rho"] for r in summary["rounds"])
    assert spent == pytest.approx(1.0, rel=1e-8) and spent <= 1.0
    for name, size in SIZES.items():
        assert set(rows[name]) <= set(range(size))
    # (pm.synthesize's test recomputes the rows' distance to the release from the rows.)
    assert 0 <= summary["synthetic"]["rows_rmse"] <= summary["synthetic"]["rows_max_error"]
    again, path2 = synthesize_cli(files, "--rho", "1", "--neighbouring", "replace-one", "--noise", "continuous",
                                  "--seed", "4", out="rows2.csv")
    assert again == 0 and path.read_bytes() == path2.read_bytes()


def test_synthesize_reports_progress_on_long_runs(files, capsys, monkeypatch):
    arguments = ("--rho", "1", "--neighbouring", "replace-one", "--noise", "continuous", "--seed", "4")
    assert synthesize_cli(files, *arguments)[0] == 0
    assert capsys.readouterr().err == ""  # a run shorter than the interval prints no progress
    monkeypatch.setattr(synthesize, "PROGRESS_INTERVAL", 0.0)
    code, path = synthesize_cli(files, *arguments, out="rows2.csv")
    assert code == 0
    lines = capsys.readouterr().err.splitlines()
    summary = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert len(lines) == len(summary["rounds"])  # one line a round once the interval has passed
    names = list(SIZES)  # the rounds' tables by the attributes' names
    first, last = summary["rounds"][0], summary["rounds"][-1]
    assert lines[0].startswith(f"round 1: measured the table of {', '.join(names[a] for a in first['attributes'])} (")
    assert lines[-1].startswith(f"round {len(lines)}: measured the table of "
                                f"{', '.join(names[a] for a in last['attributes'])} (")
    assert "100% of the rounds' budget spent" in lines[-1]


def test_synthesize_estimator_is_chosen_and_reported(files, capsys, monkeypatch):
    arguments = ("--rho", "1", "--neighbouring", "replace-one", "--noise", "continuous", "--seed", "4")
    code, path = synthesize_cli(files, *arguments)
    assert code == 0, capsys.readouterr().err
    estimate = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["estimate"]
    assert estimate["requested"] == "auto" and estimate["estimator"] == "regularized"  # the universe fits
    assert estimate["fit"]["status"] == "optimal" and estimate["fit"]["solver"] == "mirror_descent"
    assert estimate["iterations_run"] >= estimate["fit"]["iterations"] and "projection" not in estimate
    code, path = synthesize_cli(files, *arguments, "--estimator", "joint", out="rows1.csv")
    assert code == 0, capsys.readouterr().err
    estimate = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["estimate"]
    assert estimate["requested"] == "joint" and estimate["estimator"] == "joint"
    assert estimate["projection"]["status"] == "optimal" and estimate["fit"]["solver"] == "ipf"
    code, path = synthesize_cli(files, *arguments, "--estimator", "tables", out="rows2.csv")
    assert code == 0, capsys.readouterr().err
    summary = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["estimate"] == {"requested": "tables", "estimator": "tables"} and summary["body"] == "local"
    # A universe above the dense limit: the joint is refused naming the flag, before anything is
    # counted; the regularized joint is held by a junction tree of the measured tables.
    monkeypatch.setattr(adaptive._final, "MAXIMUM_ENTROPY_MAX_CELLS", 4)
    monkeypatch.setattr(adaptive._estimation, "MAXIMUM_ENTROPY_MAX_CELLS", 4)
    code, path = synthesize_cli(files, *arguments, "--estimator", "joint", out="rows3.csv")
    assert code == 2
    one_line_error(capsys, "--estimator: 'joint' projects onto the marginal polytope over the", command="synthesize")
    assert not path.exists()
    code, path = synthesize_cli(files, *arguments, "--estimator", "regularized", out="rows4.csv")
    assert code == 0, capsys.readouterr().err
    estimate = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["estimate"]
    assert estimate["estimator"] == "regularized" and estimate["model"] == "junction_tree" and estimate["cells"] > 0


def test_synthesize_under_add_remove_estimates_the_size(files, capsys):
    code, path = synthesize_cli(files, "--epsilon", "1", "--delta", "1e-6", "--workload", "marginals:2")
    assert code == 0, capsys.readouterr().err
    summary = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["size_source"] == "estimated" and summary["neighbouring"] == "add-remove"
    assert summary["synthetic"]["rows"] == max(1, round(summary["size"]))
    assert summary["noise"]["distribution"] == "discrete_gaussian"


@pytest.mark.parametrize("extra, message", [
    (["--epsilon", "1"], "--delta: required with --epsilon"),
    (["--rho", "1", "--workload", "prefix:b"], "--workload: prefix:b"),
    (["--rho", "1", "--rows", "0"], "--rows: must be a positive integer"),
    (["--rho", "1", "--seed", "3"], "--seed: the counts are integers"),
    (["--rho", "1", "--neighbouring", "replace-one", "--size", "10"], "--size: applies only with --neighbouring "
                                                                      "add-remove"),
])
def test_synthesize_refusals(files, capsys, extra, message):
    code, path = synthesize_cli(files, *extra)
    assert code == 2
    one_line_error(capsys, message, command="synthesize")
    assert not path.exists()


def test_synthesize_never_overwrites_an_input(files, capsys):
    before = files["data"].read_bytes()
    code = main(["synthesize", "--data", str(files["data"]), "--domain", str(files["domain"]), "--rho", "1",
                 "--out", str(files["data"]), "--force"])
    assert code == 2
    one_line_error(capsys, "--out", "refusing to overwrite an input", command="synthesize")
    assert files["data"].read_bytes() == before


# --------------------------------------------------------------------------------------------
# Library refusals name the flag that gave the argument (from the error's attribute)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command, extra, flag, valid", [
    # The adaptive mechanism's refusals of the budget were all blamed on --workload.
    ("synthesize", ["--rho", "1e-30"], "--rho", "use --noise continuous or a budget of at least rho = "),
    ("synthesize", ["--epsilon", "1e308", "--delta", "1e-6"], "--epsilon", "epsilon must be at most 1.341e+154"),
    # Named the local projection's internal y.
    ("synthesize", ["--rho", "1e308"], "--rho", "rho must be at most 2.92e+275"),
    # Named the rounding's internal n.
    ("synthesize", ["--rho", "1", "--rows", "1000000000000"], "--rows", "draw fewer rows, between 1 and "),
    # Named privacy.
    ("release", ["--rho", "1e-30"], "--rho", "use --noise continuous or a budget of at least rho = 2.37e-28"),
    ("release", ["--mechanism", "laplace", "--epsilon", "1e-300"], "--epsilon",
     "use --noise continuous or a budget of at least epsilon = 1.07e-12"),
    # Ended in "-inf + inf in fsum".
    ("release", ["--epsilon", "1e308", "--delta", "1e-6"], "--epsilon", "epsilon must be at most 1.341e+154"),
])
def test_library_refusals_name_the_flag_given_with_the_valid_range(files, capsys, command, extra, flag, valid):
    run = synthesize_cli if command == "synthesize" else release
    code, path = run(files, *extra)
    assert code == 2 and not path.exists()
    err = one_line_error(capsys, valid, command=command)
    assert err.startswith(f"projmech {command}: error: {flag}: "), err


def test_a_workload_no_table_of_which_fits_the_rounds_names_the_workload(tmp_path, capsys):
    """The adaptive mechanism refuses it as its max_cells, which has no flag: the workload's is
    the flag to change (it was printed as max_cells:)."""
    data, domain = tmp_path / "data.csv", tmp_path / "domain.json"
    pd.DataFrame({"a": [0, 1499, 7], "b": [3, 0, 1499]}).to_csv(data, index=False)
    domain.write_text(json.dumps({"a": 1500, "b": 1500}), encoding="utf-8")
    code, _ = synthesize_cli({"data": data, "domain": domain, "dir": tmp_path}, "--rho", "1",
                             "--workload", "marginals:2")
    assert code == 2
    err = one_line_error(capsys, "2,250,000 cells", command="synthesize")
    assert err.startswith("projmech synthesize: error: --workload: "), err


@pytest.mark.parametrize("command, extra, flag", [
    ("release", ["--mechanism", "projection", "--rho", "1", "--synthetic", "rows.csv", "--synthetic-rows",
                 "100000000000000"], "--synthetic-rows"),
    ("release", ["--mechanism", "projection", "--rho", "1", "--neighbouring", "add-remove", "--size",
                 "100000000000000", "--synthetic", "rows.csv"], "--size"),
    ("synthesize", ["--rho", "1", "--neighbouring", "add-remove", "--size", "100000000000000"], "--size"),
])
def test_rows_beyond_memory_are_refused_before_the_release_naming_their_flag(files, capsys, monkeypatch, command,
                                                                              extra, flag):
    """The rows drawn by default number the public size; both it and --synthetic-rows were refused
    only after the budget was spent, naming the rounding's internal n."""
    import projmech.privacy._noise as noise_module

    def spent(*args, **kwargs):
        raise AssertionError("noise was drawn")

    monkeypatch.setattr(noise_module.Noise, "sample", spent)
    extra = [str(files["dir"] / item) if item == "rows.csv" else item for item in extra]
    run = synthesize_cli if command == "synthesize" else release
    code, _ = run(files, *extra)
    assert code == 2
    err = one_line_error(capsys, "100,000,000,000,000 rows", command=command)
    assert err.startswith(f"projmech {command}: error: {flag}: "), err


def test_the_flag_of_a_budget_is_the_one_given(files, capsys):
    """The adaptive mechanism calibrates (epsilon, delta) through rho: a refusal of the rho it
    converts to names --epsilon, the flag the user gave."""
    code, _ = synthesize_cli(files, "--epsilon", "1e-300", "--delta", "1e-300")
    assert code == 2
    err = one_line_error(capsys, command="synthesize")
    assert err.startswith("projmech synthesize: error: --epsilon: "), err


def test_every_mapped_argument_is_a_flag_of_some_command():
    flags = set().union(*(parser.flags() for parser in build_parser().commands.values()))
    assert set(messages.ARGUMENT_FLAGS.values()) <= flags
