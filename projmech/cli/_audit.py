"""``projmech audit``: statistical lower bounds on the epsilon of the library's own mechanisms."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from ..audit import format_audit_table
from ..audit.self_audit import AUDIT_DELTA, MECHANISMS, PLANTED_BUG_DELTA, audit_cases, run_audits
from ..privacy import NOISE_KINDS
from . import _budget as budget
from ._files import staged_outputs
from ._outputs import check_new_file, output_path

__all__ = ["add_parser", "run"]


def run(args: argparse.Namespace) -> int:
    """Audit the library's own mechanisms; exit 1 when a correct mechanism's bound exceeds its claim."""
    if args.releases < 2:
        raise ValueError(f"--releases: must be at least 2, got {args.releases}")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence: must lie in (0, 1), got {args.confidence}")
    if args.delta is None:
        # A planted bug shows only through events well above delta (see PLANTED_BUG_DELTA).
        args.delta = PLANTED_BUG_DELTA if args.planted_bug else AUDIT_DELTA
    budget.fraction("--delta", args.delta)
    budget.check_seed(args.seed)
    out = output_path("--out", args.out) if args.out is not None else None
    if out is not None:
        check_new_file("--out", out, args.force)
    mechanisms = MECHANISMS if args.mechanism == "all" else (args.mechanism,)
    relations = ("replace-one", "add-remove") if args.neighbouring == "both" else (args.neighbouring,)
    cases = audit_cases(mechanisms, relations, planted_bug=args.planted_bug, noise=args.noise, delta=args.delta)
    start = time.perf_counter()
    results = run_audits(cases, args.releases, confidence=args.confidence, rng=np.random.default_rng(args.seed))
    print(format_audit_table(results))
    if out is not None:
        import pandas as pd

        table = pd.DataFrame([result.as_row() for result in results])
        with staged_outputs() as staged:
            staged.write("--out", out, lambda path: table.to_csv(path, index=False))
        print(f"wrote {out}")
    exceeded = [result.name for result in results if result.passed is False]
    verdict = ("planted bugs detected" if args.planted_bug else "bounds above the claim (privacy violations)")
    print(f"{len(results)} audits in {time.perf_counter() - start:.0f} s; {verdict}: "
          f"{', '.join(exceeded) if exceeded else 'none'}")
    return 1 if exceeded and not args.planted_bug else 0


#: ``projmech release --help``'s worked examples: what each does, and its flags besides the files
#: (one per workload form and per mechanism; the tests run every one).


def add_parser(commands: Any) -> None:
    """``projmech audit`` and its flags, among ``projmech``'s subcommands."""
    audit = commands.add_parser(
        "audit", help="statistical lower bounds on the epsilon of projmech's own mechanisms "
                      "(projmech.audit.self_audit)")
    audit.add_argument("--mechanism", choices=("all", *MECHANISMS), default="all",
                       help="the mechanism to audit, each on its own pair of neighbouring data sets (default: all)")
    audit.add_argument("--neighbouring", choices=("both", "replace-one", "add-remove"), default="both")
    audit.add_argument("--releases", type=int, default=100_000, help="releases per data set (default 100,000)")
    audit.add_argument("--confidence", type=float, default=0.99, help="of every bound (default 0.99)")
    audit.add_argument("--planted-bug", action="store_true",
                       help="divide every noise scale by 2 (4 where the pair attains half the claim) while keeping "
                            "the claim: shows the audit's power")
    audit.add_argument("--noise", choices=NOISE_KINDS, default="auto",
                       help="the audited mechanisms' noise, as for release --noise (default auto: exact discrete "
                            "noise on counts, drawn from OS entropy)")
    audit.add_argument("--delta", type=float, default=None,
                       help="delta of the (epsilon, delta) mechanisms audited (default 1e-5; 1e-3 with "
                            "--planted-bug, where a planted bug shows at 20,000 releases)")
    audit.add_argument("--seed", type=int, default=None,
                       help="seed of the auditor's own randomness and of continuous noise; discrete noise draws "
                            "from OS entropy, so a run repeats exactly only with --noise continuous")
    audit.add_argument("--out", default=None, help="CSV of the results (a new file)")
    audit.add_argument("--force", action="store_true", help="overwrite --out")
    audit.set_defaults(handler=run)
