"""BLAS threads where small dense kernels dominate: one pinned thread against the default.

The relaxation's ADMM (eigendecompositions of moment blocks of a few hundred rows) and the dense
factorization optimizer (``prefix(m)``, iterative method) run on one pinned BLAS thread
(``projmech._threads``). Here each kernel also runs unpinned (its ``__wrapped__`` function) under
``threadpoolctl`` limits of 1 and 2 threads, several times, beside the pinned call: on a busy
2-core machine two threads oversubscribe the cores and their time spreads, while one thread's
does not. The load average is recorded with each row.

Usage::

    .venv/bin/python benchmarks/threads.py              # 7 repeats of each
    .venv/bin/python benchmarks/threads.py --repeats 3  # quick
    .venv/bin/python benchmarks/threads.py --smoke      # does it run (seconds)

Writes ``results/threads.csv``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import _common as bench
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import projmech as pm
from projmech._threads import on_one_blas_thread
from projmech.bodies import admm_projection
from projmech.factorization import factorization_norm

#: The code of the layer :func:`on_one_blas_thread` wraps a function in.
_PINNING = on_one_blas_thread(lambda: None).__code__


def unpinned(function: Any) -> Any:
    """``function`` without its one-thread pin: the function inside its ``on_one_blas_thread`` layer.

    Not ``function.__wrapped__``: where the pin lies under another wrapper (``factorization_norm``'s
    timer), that is the pinned layer itself.
    """
    layer = function
    while layer is not None:
        if getattr(layer, "__code__", None) is _PINNING:
            return layer.__wrapped__
        layer = getattr(layer, "__wrapped__", None)
    raise ValueError(f"{function.__name__} is not pinned to one BLAS thread")


def _relaxation_case(sizes: list[int], rows: int, sigma: float, seed: int) -> tuple[pm.Domain, np.ndarray]:
    """2-way marginals of a domain like 10 pixels of sklearn's digits (17 values each), noisy."""
    domain = pm.Domain([f"p{i}" for i in range(len(sizes))], sizes)
    rng = np.random.default_rng(seed)
    records = np.minimum(rng.poisson(3.0, (rows, len(sizes))), np.asarray(sizes) - 1)  # skewed, like pixels
    workload = pm.marginals(domain, 2, implicit=True)
    return domain, workload.answer_data(pm.Dataset(records, domain)) + rng.normal(0.0, sigma, workload.num_queries)


def main() -> None:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    bench.add_smoke_option(parser, "1 repeat, the ADMM on 4 x 3 values, prefix(16) and prefix(32)")
    args = parser.parse_args()
    (attributes, values), sizes, out = (10, 17), (512, 1024), bench.RESULTS / "threads.csv"
    if args.smoke:
        args.repeats, (attributes, values), sizes, out = 1, (4, 3), (16, 32), bench.smoke_path(out)
    domain, noisy = _relaxation_case([values] * attributes, 1797, 0.02, 0)
    kernels = {
        f"ADMM sdp+local, {attributes} x {values} values, 2-way": lambda function: function(domain, noisy, local=True),
        **{f"factorization prefix({m}), iterative": lambda function, m=m: function(pm.prefix(m), method="iterative")
           for m in sizes},
    }
    functions = {"ADMM": admm_projection, "factorization": factorization_norm}
    rows = []
    warnings.simplefilter("ignore")
    for name, run in kernels.items():
        pinned = functions[name.split()[0]]
        for setting, function, threads in (("pinned (library)", pinned, None),
                                           ("unpinned, 1 thread", unpinned(pinned), 1),
                                           ("unpinned, 2 threads", unpinned(pinned), 2)):
            seconds = []
            for _ in range(args.repeats):
                with threadpool_limits(threads, user_api="blas") if threads else threadpool_limits(None):
                    with bench.Timer() as timer:
                        run(function)
                seconds.append(timer.seconds)
            rows.append({"kernel": name, "setting": setting, "median_s": float(np.median(seconds)),
                         "max_s": float(np.max(seconds)), "load_1min": os.getloadavg()[0]})
            print(f"{name:42s} {setting:22s} median {rows[-1]['median_s']:.3f} s  max {rows[-1]['max_s']:.3f} s  "
                  f"load {rows[-1]['load_1min']:.2f}", flush=True)
    frame = pd.DataFrame(rows)
    print(bench.markdown(["kernel", "setting", "median s", "max s", "load"],
                         [[r.kernel, r.setting, f"{r.median_s:.3f}", f"{r.max_s:.3f}", f"{r.load_1min:.2f}"]
                          for r in frame.itertuples()]))
    print(f"wrote {bench.write_csv(frame, out)}")


if __name__ == "__main__":
    main()
