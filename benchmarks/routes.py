"""Three routes from private data to synthetic rows, on the embedded Adult data (issue 47).

Data: ``projmech.datasets.adult`` restricted to ``--attributes`` (default six: workclass,
education-num, marital-status, relationship, race, sex; a universe of 60,480 cells), all its
48,842 rows. Workload: every 3-way marginal table. Guarantee: ``(epsilon, 1e-9)``-DP,
replace-one neighbours (``n`` public, as ``projmech release`` by default), continuous noise
(a seed fixes a run). Routes (``--routes``, default all):

``synthesize``
    ``pm.synthesize(data, privacy, workload, neighbouring="replace-one", rng=seed)``: the
    adaptive mechanism, then rows from its estimate (``projmech synthesize``).
``release``
    What ``projmech release --workload marginals:3 --synthetic FILE`` runs:
    ``ProjectionMechanism(workload, privacy)`` (``body="auto"``: the column ``body`` says which
    it took) releasing every table at once, then ``pm.synthetic_data(domain, release, n, rng)``.
``local``
    A projection followed by ``synthetic_data``: the same Gaussian answers projected onto the
    local polytope of the tables (``ProjectionMechanism(..., body="local")``), then
    ``pm.synthetic_data(domain, release, n, rng)``.

Per run: the error of the rows' tables against the true ones in AIM's metric (the mean over
the tables of half the L1 distance of the normalized tables), on the 3-way tables (``rows3``)
and on the 2-way ones (``rows2``); the same for the released answers the rows were drawn from
(``answers3``: the 3-way tables released, before any row is drawn); and the seconds.

Usage::

    .venv/bin/python benchmarks/routes.py [--epsilons 0.3,1,3] [--seeds 3] [--out results/routes.csv]
    .venv/bin/python benchmarks/routes.py --smoke

Writes the runs to ``--out`` (default ``results/routes.csv``; with ``--smoke`` a new temporary
folder) and prints each route's mean errors and their ratio to ``synthesize``'s.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import _common as bench
import numpy as np
import pandas as pd

ROUTES = ("synthesize", "release", "local")
ATTRIBUTES = ["workclass", "education-num", "marital-status", "relationship", "race", "sex"]
#: ``--smoke``: four small attributes, 2,000 rows, one epsilon and one seed.
SMOKE_ATTRIBUTES = ["relationship", "race", "sex", "income>50K"]
SMOKE_ROWS = 2_000
DELTA = 1e-9


def _tables(data: Any, way: int) -> dict[tuple[int, ...], np.ndarray]:
    """Every ``way``-way table of ``data``, normalized."""
    tables = {}
    for subset in itertools.combinations(range(len(data.domain.sizes)), way):
        counts = np.asarray(data.table(list(subset)), dtype=float)
        tables[subset] = counts / counts.sum()
    return tables


def _answer_tables(answers: np.ndarray, sizes: tuple[int, ...]) -> dict[tuple[int, ...], np.ndarray]:
    """The 3-way tables of ``pm.marginals(domain, 3)``'s answers (subsets in lexicographic
    order, cells row-major), each clipped at 0 and normalized as AIM's metric reads a table."""
    tables, start = {}, 0
    for subset in itertools.combinations(range(len(sizes)), 3):
        shape = [sizes[a] for a in subset]
        table = np.maximum(answers[start:start + int(np.prod(shape))], 0.0).reshape(shape)
        tables[subset] = table / max(table.sum(), np.finfo(float).tiny)
        start += table.size
    return tables


def run(route: str, data: Any, epsilon: float, seed: int) -> dict[str, Any]:
    """One route at one epsilon and seed: the rows' and the released answers' errors."""
    import projmech as pm

    domain = data.domain
    privacy = pm.ApproxDP(epsilon, DELTA)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a joint estimate's or a solver's warning; the errors say how it did
        if route == "synthesize":
            workload = pm.marginals(domain, 3, implicit=True)
            synthesis = pm.synthesize(data, privacy, workload, neighbouring="replace-one", noise="continuous",
                                      rng=seed)
            rows, answers, body = synthesis.data, synthesis.run.release.answers, "adaptive"
        else:
            options: dict[str, Any] = {"body": "local"} if route == "local" else {}
            workload = pm.marginals(domain, 3, implicit=True)
            if pm.ProjectionMechanism.needs_matrix(**options):
                workload = pm.marginals(domain, 3)  # as the CLI builds it
            mechanism = pm.ProjectionMechanism(workload, privacy, noise="continuous", **options)
            release = mechanism.release(data, rng=np.random.default_rng(seed))
            # The CLI draws the rows with the seed [seed, 1] and as many rows as the public size.
            drawn = pm.synthetic_data(domain, release, data.n, np.random.default_rng([seed, 1]))
            assert release.projection is not None
            rows, answers, body = drawn.data, release.answers, release.projection.summary()["body"]
    seconds = time.perf_counter() - start
    truth3, truth2 = _tables(data, 3), _tables(data, 2)
    return {"route": route, "body": body, "epsilon": epsilon, "seed": seed,
            "rows3": bench.aim_error(_tables(rows, 3), truth3), "rows2": bench.aim_error(_tables(rows, 2), truth2),
            "answers3": bench.aim_error(_answer_tables(answers, tuple(domain.sizes)), truth3), "seconds": seconds}


def main() -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--epsilons", type=bench.float_list, default=[0.3, 1.0, 3.0], help="default 0.3,1,3")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. seeds-1 (default 3)")
    parser.add_argument("--routes", type=bench.name_list, default=list(ROUTES), help=f"some of {','.join(ROUTES)}")
    parser.add_argument("--attributes", type=bench.name_list, default=ATTRIBUTES,
                        help=f"Adult's attributes (default {','.join(ATTRIBUTES)})")
    parser.add_argument("--out", default=None, help="the CSV of the runs (default results/routes.csv)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"check that the script runs, in seconds: {len(SMOKE_ATTRIBUTES)} attributes, "
                             f"{SMOKE_ROWS:,} rows, epsilon 1, one seed; the CSV goes to a new temporary folder "
                             "(unless --out); the numbers mean nothing")
    args = parser.parse_args()
    unknown = sorted(set(args.routes) - set(ROUTES))
    if unknown:
        parser.error(f"--routes: unknown {unknown}; expected some of {list(ROUTES)}")
    import projmech as pm

    if args.smoke:
        full = pm.datasets.adult(attributes=SMOKE_ATTRIBUTES)
        data = pm.Dataset(full.records[:SMOKE_ROWS], full.domain)
        epsilons, seeds = [1.0], [0]
        out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="projmech-smoke-")) / "routes.csv"
    else:
        data = pm.datasets.adult(attributes=args.attributes)
        epsilons, seeds = args.epsilons, list(range(args.seeds))
        out = Path(args.out) if args.out else bench.RESULTS / "routes.csv"
    records = []
    for epsilon in epsilons:
        for seed in seeds:
            for route in args.routes:
                records.append(run(route, data, epsilon, seed))
                print(" ".join(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
                               for key, value in records[-1].items()), flush=True)
    frame = pd.DataFrame(records)
    path = bench.write_csv(frame, out)
    means = frame.groupby(["epsilon", "route"], sort=False)[["rows3", "rows2", "answers3", "seconds"]].mean()
    print(f"\n{'epsilon':>7} {'route':<11} {'rows3':>7} {'ratio':>6} {'rows2':>7} {'ratio':>6} {'answers3':>8} "
          f"{'seconds':>7}")
    for (epsilon, route), row in means.iterrows():
        base = means.loc[(epsilon, "synthesize")] if (epsilon, "synthesize") in means.index else None
        ratio3 = row["rows3"] / base["rows3"] if base is not None else float("nan")
        ratio2 = row["rows2"] / base["rows2"] if base is not None else float("nan")
        print(f"{epsilon:>7g} {route:<11} {row['rows3']:>7.4f} {ratio3:>6.2f} {row['rows2']:>7.4f} {ratio2:>6.2f} "
              f"{row['answers3']:>8.4f} {row['seconds']:>7.1f}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
