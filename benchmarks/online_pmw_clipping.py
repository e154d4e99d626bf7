"""OnlinePMW: how often a released number leaves [0, 1], and what clipping it does to the error.

Binarized Adult (the 10 demo attributes), ``n`` rows drawn without replacement, 20 sessions of
60 random 2-way conjunction queries each, alpha 0.1, 0.5-DP in all (k = 50 updates). Compares
the number the transcript records with the clipped answer ``OnlinePMW.answer`` returns. About
10 s on 2 cores:

    python benchmarks/online_pmw_clipping.py                 # continuous noise, seeded: reproducible
    python benchmarks/online_pmw_clipping.py --noise auto    # the mechanism's default noise
    python benchmarks/online_pmw_clipping.py --smoke         # does it run (seconds)

``--noise continuous`` (the default here) draws numpy's Laplace from a seed per session, so the
table reproduces run after run. The mechanism's own default, ``auto``, draws OpenDP's exact
discrete Laplace, which no seed drives: its counts and errors vary from run to run.
"""

from __future__ import annotations

import argparse

import _common as bench
import numpy as np

import projmech as pm

SESSIONS, QUERIES, UPDATES, ALPHA, EPSILON = 20, 60, 50, 0.1, 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--noise", choices=("auto", "discrete", "continuous"), default="continuous",
                        help="OnlinePMW's noise (default continuous: reproducible from the seeds)")
    bench.add_smoke_option(parser, "n = 500 only, 2 sessions of 10 queries (it writes no file)")
    args = parser.parse_args()
    noise = args.noise
    sessions, queries, sizes = (2, 10, (500,)) if args.smoke else (SESSIONS, QUERIES, (500, 5000))
    data = pm.datasets.adult(binary=True, attributes=pm.datasets.ADULT_DEMO_ATTRIBUTES)
    attributes, rows = data.domain.attributes, data.records
    print("n      released  outside [0,1]  RMSE recorded  RMSE clipped")
    for n in sizes:
        outside = released = 0
        recorded_errors, clipped_errors = [], []
        for session in range(sessions):
            rng = np.random.default_rng(session)
            sample = pm.Dataset(rows[rng.choice(len(rows), n, replace=False)], data.domain)
            online = pm.OnlinePMW(sample, alpha=ALPHA, epsilon=EPSILON / (4 * UPDATES), k=UPDATES,
                                  rng=np.random.default_rng(100 + session), noise=noise)
            for _ in range(queries):
                a, b = rng.choice(len(attributes), 2, replace=False)
                value_a, value_b = rng.integers(0, 2, 2)
                def query(x, a=a, b=b, va=value_a, vb=value_b):
                    return (x[attributes[a]] == va) & (x[attributes[b]] == vb)

                truth = float(np.mean((sample.records[:, a] == value_a) & (sample.records[:, b] == value_b)))
                try:
                    clipped = online.answer(query)
                except pm.MechanismHalted:
                    break
                recorded = online.transcript[-1]
                if recorded is pm.BOTTOM:
                    continue
                released += 1
                outside += not 0 <= recorded <= 1
                recorded_errors.append((recorded - truth) ** 2)
                clipped_errors.append((clipped - truth) ** 2)
        print(f"{n:<6} {released:>8}  {outside:>5} ({outside / released:4.0%})  "
              f"{np.sqrt(np.mean(recorded_errors)):13.3f}  {np.sqrt(np.mean(clipped_errors)):12.3f}")


if __name__ == "__main__":
    main()
