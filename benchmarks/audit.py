"""Statistical privacy audits of every mechanism under both neighbouring relations (issue 12).

Three parts, one table each, and ``results/audit.csv`` with every row:

1. **validity**: every mechanism as shipped, replace-one and add/remove (with a private size
   estimate), its claimed epsilon beside the auditor's lower bound (``projmech.audit.self_audit``;
   the (epsilon, delta) mechanisms at ``delta = 1e-5``). A bound above the claim is a proven
   privacy violation at the stated confidence.
2. **power**: the same with every noise scale divided by the case's bug factor while the claim
   stays (a planted 2x sensitivity bug; 4x where the pair attains only half the claim,
   ``projmech.audit.self_audit.bug_factor``); the (epsilon, delta) mechanisms at ``delta = 1e-3``, where
   100,000 releases resolve the tails.
3. **the old defects**: the add/remove mechanisms of the audited release divided the answers by
   the true row count. Reproduced here in numpy on the pairs of the audit that found it (Laplace
   n = 100 vs 101; Gaussian n = 1 vs 2), beside projmech's mechanisms on the same pairs. And the
   sensitivity of a workload of tiny entries (issue 31, item 1): computed as the square root of a
   sum of squares it was 0 for ``F = [[1e-200, 0]]``, and the Gaussian mechanism released the
   answer without noise; the ``tiny_gaussian`` case is run with that computation put back
   (``Workload.count_sensitivity`` patched for the run), under both relations.

Usage::

    .venv/bin/python benchmarks/audit.py                 # 100,000 releases per data set
    .venv/bin/python benchmarks/audit.py --releases 20000 --parts validity
    .venv/bin/python benchmarks/audit.py --smoke             # does it run (seconds)

Two worker processes run the cases (one per core); each case gets its own seed.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from unittest import mock

import _common as bench
import numpy as np
import pandas as pd

import projmech as pm
from projmech.audit import audit
from projmech.audit.self_audit import AUDIT_DELTA, MECHANISMS, PLANTED_BUG_DELTA, audit_cases

#: A smoke run's cases: one of pure and one of approximate DP.
SMOKE_MECHANISMS = ("laplace", "gaussian")


def _run_case(job: tuple[str, str, bool, float, int, float, int]) -> dict:
    mechanism, relation, planted, delta, releases, confidence, seed = job
    (case,) = audit_cases([mechanism], [relation], planted_bug=planted, delta=delta)
    timer = bench.Timer()
    result = case.run(releases, confidence, rng=seed)
    row = result.as_row()
    row.update(part="power" if planted else "validity", relation=relation, kind=mechanism, seconds=timer.seconds)
    return row


def _naive_count_sensitivity(self: pm.workloads.Workload, neighbouring: str, ord: float = 2) -> float:
    """The sensitivity as computed before issue 31 (item 1): the square root of a sum of squares of
    the entries, unscaled (0 for entries of 1e-200, whose squares underflow), and no refusal of a
    sensitivity of 0 for a workload that is not zero."""
    matrix = self.toarray()
    norm = float(np.sqrt((matrix * matrix).sum(axis=0)).max()) if ord == 2 else float(np.abs(matrix).sum(axis=0).max())
    return pm.Neighbouring.parse(neighbouring).count_sensitivity(norm, ord, nonnegative=bool((matrix >= 0).all()))


def _naive_tiny_rows(releases: int, confidence: float) -> list[dict]:
    """The tiny_gaussian case with the naive sensitivity put back: no noise, caught."""
    rows = []
    for relation in ("replace-one", "add-remove"):
        # The mechanism calibrates when the case is built: the patch need not outlive that.
        with mock.patch.object(pm.workloads.Workload, "count_sensitivity", _naive_count_sensitivity):
            (case,) = audit_cases(["tiny_gaussian"], [relation])
        result = case.run(releases, confidence, rng=9)
        rows.append({**result.as_row(), "mechanism": f"tiny_gaussian, {relation}, sensitivity by a sum of squares "
                                                     "(old)",
                     "part": "old defect", "seconds": math.nan})
    return rows


def _old_defect_rows(releases: int, confidence: float) -> list[dict]:
    """The pre-fix add/remove behaviour (answers divided by the true n, noise scaled by 1/n),
    beside projmech's mechanisms with a declared size on the same pairs."""
    rows = []

    def laplace_old(counts, rng, size):  # counts (100, 0) vs (100, 1), 1-DP claimed
        counts = np.asarray(counts, dtype=float)
        return counts / counts.sum() + rng.laplace(0.0, 1.0 / counts.sum(), size=(size, 2))

    sigma = pm.privacy.gaussian_sigma(1.0, pm.ApproxDP(1.0, 1e-5))  # per unit of sensitivity 1/n

    def gaussian_old(counts, rng, size):  # counts (1, 0) vs (1, 1), (1, 1e-5)-DP claimed
        counts = np.asarray(counts, dtype=float)
        return counts / counts.sum() + rng.normal(0.0, sigma / counts.sum(), size=(size, 2))

    for name, function, pair, delta in (("laplace, add-remove, answers / true n (old)", laplace_old,
                                          ((100, 0), (100, 1)), 0.0),
                                         ("gaussian, add-remove, answers / true n (old)", gaussian_old,
                                          ((1, 0), (1, 1)), 1e-5)):
        result = audit(function, pair, releases=releases, batch=releases, confidence=confidence, delta=delta,
                       claimed_epsilon=1.0, rng=7, name=name)
        rows.append({**result.as_row(), "part": "old defect", "seconds": math.nan})
    domain = pm.Domain(["x"], [2])
    for name, mechanism, cells in (
            ("laplace, add-remove, size=100 (projmech)",
             pm.LaplaceMechanism(pm.identity(2), pm.PureDP(1.0), neighbouring="add-remove", size=100), ([0] * 100,
                                                                                                        [1])),
            ("gaussian, add-remove, size=1 (projmech)",
             pm.GaussianMechanism(pm.identity(2), pm.ApproxDP(1.0, 1e-5), neighbouring="add-remove", size=1), ([0],
                                                                                                               [1]))):
        first = pm.Dataset(np.array(cells[0]).reshape(-1, 1), domain)
        second = pm.Dataset(np.array(cells[0] + cells[1]).reshape(-1, 1), domain)
        result = audit(lambda data, rng, m=mechanism: m.release(data, rng=rng).answers * m.size_policy.declared,
                       (first, second), releases=releases, confidence=confidence, delta=getattr(mechanism.privacy,
                                                                                                "delta", 0.0),
                       claimed_epsilon=1.0, rng=8, name=name)
        rows.append({**result.as_row(), "part": "old defect", "seconds": math.nan})
    return rows + _naive_tiny_rows(releases, confidence)


def main() -> None:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--releases", type=int, default=100_000)
    parser.add_argument("--confidence", type=float, default=0.99)
    parser.add_argument("--parts", nargs="+", default=["validity", "power", "old"],
                        choices=["validity", "power", "old"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=list(MECHANISMS),
                        help="the cases of validity and power (default all)")
    parser.add_argument("--out", default="audit.csv", help="the CSV's name in results/")
    parser.add_argument("--quick", action="store_true", help="a short run: 3,000 releases per data set")
    bench.add_smoke_option(parser, f"200 releases per data set, the cases {', '.join(SMOKE_MECHANISMS)}")
    args = parser.parse_args()
    if args.quick:
        args.releases = 3000
    out = bench.RESULTS / args.out
    if args.smoke:
        args.releases, args.mechanisms, out = 200, list(SMOKE_MECHANISMS), bench.smoke_path(args.out)
    timer = bench.Timer()
    jobs = []
    seed = 0
    for part, planted, delta in (("validity", False, AUDIT_DELTA), ("power", True, PLANTED_BUG_DELTA)):
        if part not in args.parts:
            continue
        for mechanism in args.mechanisms:
            for relation in ("replace-one", "add-remove"):
                seed += 1
                jobs.append((mechanism, relation, planted, delta, args.releases, args.confidence, seed))
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(_run_case, jobs))
    if "old" in args.parts:
        rows += _old_defect_rows(args.releases, args.confidence)
    frame = pd.DataFrame(rows)
    bench.write_csv(frame, out)
    for part, title in (("validity", "claimed epsilon and the audit's lower bound"),
                        ("power", "planted bug (noise divided by 2, or by 4 where the pair attains half the claim; "
                                  "claim kept)"),
                        ("old defect", "the defects audits found, and the fix on the same pairs")):
        table = frame[frame["part"] == part]
        if table.empty:
            continue
        print(f"\n{part}: {title} ({args.releases:,} releases per data set, confidence {args.confidence})")
        print(f"{'mechanism':<52} {'claimed eps':>11} {'delta':>7} {'eps lower bound':>15} {'verdict':>9} {'time':>7}")
        for row in table.itertuples():
            verdict = {True: "passed", False: "EXCEEDED"}.get(row.passed, "-")
            if part == "power":
                verdict = "detected" if row.passed is False else "missed"
            seconds = "" if math.isnan(row.seconds) else f"{row.seconds:.0f} s"
            print(f"{row.mechanism:<52} {row.claimed_epsilon:>11.4g} {row.claimed_delta:>7.0e} "
                  f"{row.epsilon_lower_bound:>15.4f} {verdict:>9} {seconds:>7}")
    print(f"\nwrote {out} in {timer.seconds:.0f} s")


if __name__ == "__main__":
    main()
