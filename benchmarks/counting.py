"""Counting: all 2-way marginals (3,240 tables) of 81 attributes, sizes cycling 2..10.

Counting is the only step of a release that reads the rows (projmech.data._frames). Three parts:

- ``inprocess``: 10^6 rows in a pandas frame, coded and validated by ``Dataset.from_frame`` and
  counted by ``marginals(domain, 2).answer_counts``, with 1 and 2 BLAS threads; beside it, in the
  same run, Private-PGM's counting (``mbi.Dataset.project(pair).datavector()`` for each of the
  3,240 pairs, JAX on the CPU). Target: <= 5 s (Private-PGM's own benchmark: 51.7 s).
- ``outofcore``: 10^8 rows in Parquet on disk (written once into ``--dir``), scanned lazily by
  Polars (``pl.scan_parquet``) and DuckDB (``duckdb.read_parquet``) and counted in their
  streamed batches; time and peak resident memory of the process. Target: <= 2 GB.
- ``distributed``: 10^7 rows in Parquet, counted by Spark ``local[2]`` and a Dask
  ``LocalCluster`` of 2 worker processes, beside the in-process count of the same file.
- ``cli``: ``projmech release`` end to end from that Parquet file (the projection mechanism on
  the 2-way marginals of its first 8 attributes, continuous noise seeded alike) with each
  ``--engine``: wall time of the command, and the released answers compared bit for bit.

Every measurement runs in a fresh process; every count vector's SHA-256 is compared with the
first one's, so "identical" means bit for bit. Writes results/counting.csv.

Usage: python benchmarks/counting.py [--parts inprocess,outofcore,distributed,cli] [--rows 1000000]
       [--outofcore-rows 100000000] [--distributed-rows 10000000] [--dir DIR] [--quick | --smoke]

``--smoke`` starts neither Spark nor Dask (tens of seconds each, whatever the rows; ``--quick`` does), and
runs the CLI with pandas and Polars only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import _common as bench
import numpy as np

ATTRIBUTES = 81
#: The engines of the distributed part and of the CLI part.
DISTRIBUTED = ("polars", "spark", "dask")
CLI_ENGINES = ("pandas", "polars", "duckdb", "spark", "dask")
#: The engines a smoke run starts in seconds.
SMOKE_ENGINES = ("pandas", "polars")
#: Rows per Parquet row group and per generated chunk.
CHUNK = 1_000_000


def sizes() -> list[int]:
    return [2 + i % 9 for i in range(ATTRIBUTES)]


def names() -> list[str]:
    return [f"a{i}" for i in range(ATTRIBUTES)]


def chunk_columns(index: int, rows: int) -> dict[str, np.ndarray]:
    """Chunk ``index`` of the synthetic data: independent uniform codes, seeded by the chunk."""
    rng = np.random.default_rng([2026, index])
    return {name: rng.integers(0, size, rows, dtype=np.uint8) for name, size in zip(names(), sizes())}


def frame(rows: int) -> Any:
    import pandas as pd

    parts = [pd.DataFrame(chunk_columns(i, min(CHUNK, rows - i * CHUNK))) for i in range(math.ceil(rows / CHUNK))]
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def write_parquet(path: Path, rows: int) -> Path:
    """``rows`` rows in one Parquet file of row groups of :data:`CHUNK` rows (kept if present)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    writer = None
    for i in range(math.ceil(rows / CHUNK)):
        table = pa.table(chunk_columns(i, min(CHUNK, rows - i * CHUNK)))
        writer = writer or pq.ParquetWriter(partial, table.schema)
        writer.write_table(table, row_group_size=CHUNK)
    assert writer is not None
    writer.close()
    partial.rename(path)
    return path


def digest(counts: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(counts, dtype=np.float64).tobytes()).hexdigest()[:16]


def peak_memory_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # kilobytes on Linux


# --- one measurement (in a fresh process) ----------------------------------------------------------

def worker(job: dict[str, Any]) -> dict[str, Any]:
    import projmech as pm

    domain = pm.Domain(names(), sizes())
    workload = pm.workloads.marginals(domain, 2, implicit=True)
    method, rows = job["method"], job["rows"]
    if method == "mbi":
        import warnings

        warnings.simplefilter("ignore")
        import itertools

        import mbi

        data = frame(rows)
        start = time.perf_counter()
        dataset = mbi.Dataset({name: data[name].to_numpy() for name in names()},
                              mbi.Domain(names(), sizes()))
        tables = [np.asarray(dataset.project(list(pair)).datavector(flatten=True))
                  for pair in itertools.combinations(names(), 2)]
        seconds = time.perf_counter() - start
        return {"load_s": 0.0, "count_s": seconds, "digest": digest(np.concatenate(tables)),
                "memory_gb": peak_memory_gb()}
    if method == "pandas":
        native = frame(rows)
    elif method == "polars":
        import polars as pl

        native = pl.scan_parquet(job["path"])
    elif method == "duckdb":
        import duckdb

        native = duckdb.read_parquet(job["path"])
    elif method == "dask":
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        native = dd.read_parquet(job["path"], split_row_groups=True)  # one partition per row group
    elif method == "spark":
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        session = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                   .config("spark.driver.memory", "2g").getOrCreate())
        session.sparkContext.setLogLevel("ERROR")
        native = session.read.parquet(job["path"])
    else:
        raise ValueError(method)
    start = time.perf_counter()
    dataset = pm.Dataset.from_frame(native, domain)
    loaded = time.perf_counter()
    counts = workload.answer_counts(dataset)
    done = time.perf_counter()
    assert counts.sum() == math.comb(ATTRIBUTES, 2) * rows
    result = {"load_s": loaded - start, "count_s": done - loaded, "digest": digest(counts),
              "memory_gb": peak_memory_gb(), "engine": dataset.engine}
    if method == "dask":
        client.close()
        cluster.close()
    return result


# --- the parts -------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = bench.argument_parser(__doc__)
    parser.add_argument("--parts", type=bench.name_list, default=["inprocess", "outofcore", "distributed", "cli"])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--outofcore-rows", type=int, default=100_000_000)
    parser.add_argument("--distributed-rows", type=int, default=10_000_000)
    parser.add_argument("--threads", type=bench.int_list, default=[1, 2])
    parser.add_argument("--dir", type=Path, default=bench.RESULTS / "counting_data",
                        help="where the Parquet files are written (kept for later runs)")
    parser.add_argument("--skip-mbi", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="a short run: 20,000 rows in process, 10^6 out of core, 2 x 10^5 distributed")
    parser.add_argument("--out", type=Path, default=bench.RESULTS / "counting.csv")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one measurement, as JSON
    bench.add_smoke_option(parser, f"2,000 rows in process (1 thread), 20,000 out of core and distributed, the engines "
                                   f"{', '.join(SMOKE_ENGINES)} only")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.outofcore_rows, args.distributed_rows = 20_000, 1_000_000, 200_000
    engines = CLI_ENGINES
    if args.smoke:
        args.rows, args.outofcore_rows, args.distributed_rows, args.threads = 2_000, 20_000, 20_000, [1]
        args.dir, args.out, engines = bench.smoke_folder() / "counting_data", bench.smoke_path(args.out), SMOKE_ENGINES
        print("smoke: Spark and Dask are not started, nor the CLI with DuckDB (--quick does)", flush=True)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    refused = bench.unknown_names("--parts", args.parts, ("inprocess", "outofcore", "distributed", "cli"))
    if refused is not None:
        return refused
    script = str(Path(__file__).resolve())
    jobs: list[tuple[str, dict[str, Any], int]] = []
    if "inprocess" in args.parts:
        for threads in args.threads:
            jobs.append(("inprocess", {"method": "pandas", "rows": args.rows}, threads))
        if not args.skip_mbi and (why := bench.not_installed("mbi", "jax")):
            print(f"Private-PGM: skipped: {why}", flush=True)
        elif not args.skip_mbi:
            jobs.append(("inprocess", {"method": "mbi", "rows": args.rows}, max(args.threads)))
    if "distributed" in args.parts:
        path = str(write_parquet(args.dir / f"rows_{args.distributed_rows}.parquet", args.distributed_rows))
        for method in (method for method in DISTRIBUTED if method in engines):
            jobs.append(("distributed", {"method": method, "rows": args.distributed_rows, "path": path}, 1))
    if "outofcore" in args.parts:
        start = time.perf_counter()
        path = str(write_parquet(args.dir / f"rows_{args.outofcore_rows}.parquet", args.outofcore_rows))
        print(f"parquet of {args.outofcore_rows:,} rows: {os.path.getsize(path) / 1e9:.2f} GB "
              f"(ready after {time.perf_counter() - start:.0f} s)")
        for method in ("polars", "duckdb"):
            jobs.append(("outofcore", {"method": method, "rows": args.outofcore_rows, "path": path}, 2))
    records = []
    reference: dict[int, str] = {}
    for part, job, threads in jobs:
        result = bench.run_in_process(script, job, threads)
        total = result.get("load_s", math.nan) + result.get("count_s", math.nan)
        reference.setdefault(job["rows"], result.get("digest", ""))
        record = {"part": part, "method": job["method"], "rows": job["rows"], "blas_threads": threads,
                  "status": result["status"], "load_s": result.get("load_s"), "count_s": result.get("count_s"),
                  "total_s": total, "peak_memory_gb": result.get("memory_gb"),
                  "identical": result.get("digest") == reference[job["rows"]]}
        records.append(record)
        shown = {key: math.nan if record[key] is None else record[key] for key in ("load_s", "count_s",
                                                                                   "peak_memory_gb")}
        print(f"{part:12s} {job['method']:7s} rows={job['rows']:>11,} threads={threads} {result['status']:>4s} "
              f"load {shown['load_s']:7.2f} s  count {shown['count_s']:7.2f} s  "
              f"peak {shown['peak_memory_gb']:5.2f} GB  identical={record['identical']}", flush=True)
    if "cli" in args.parts:
        path = write_parquet(args.dir / f"rows_{args.distributed_rows}.parquet", args.distributed_rows)
        records.extend(cli_releases(path, args.distributed_rows, args.dir, engines))
    import pandas as pd

    table = pd.DataFrame(records)
    bench.write_csv(table, args.out)
    print(bench.markdown(list(table.columns), [[f"{v:.3g}" if isinstance(v, float) else str(v) for v in row]
                                               for row in table.itertuples(index=False)]))
    return 0


def cli_releases(path: Path, rows: int, directory: Path, engines: tuple[str, ...] = CLI_ENGINES
                 ) -> list[dict[str, Any]]:
    """``projmech release`` on ``path`` with each of ``engines``, timed as a whole command."""
    import subprocess

    domain = directory / "domain_8.json"
    domain.write_text(json.dumps(dict(zip(names()[:8], sizes()[:8]))), encoding="utf-8")
    projmech = str(Path(sys.executable).with_name("projmech"))
    records, reference = [], None
    for engine in engines:
        out = directory / f"released_{engine}.csv"
        for stale in (out, out.with_suffix(".json")):
            stale.unlink(missing_ok=True)
        command = [projmech, "release", "--data", str(path), "--domain", str(domain), "--workload", "marginals:2",
                   "--mechanism", "projection", "--rho", "1", "--noise", "continuous", "--seed", "1",
                   "--engine", engine, "--out", str(out)]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"})
        seconds = time.perf_counter() - start
        status = "ok" if done.returncode == 0 else f"failed: {done.stderr.strip().splitlines()[-1:]}"
        answers = out.read_bytes() if done.returncode == 0 else b""
        reference = reference or answers
        records.append({"part": "cli", "method": engine, "rows": rows, "blas_threads": 2, "status": status,
                        "load_s": None, "count_s": None, "total_s": seconds, "peak_memory_gb": None,
                        "identical": bool(answers) and answers == reference})
        print(f"cli          {engine:7s} rows={rows:>11,} {status:>4s} whole command {seconds:7.2f} s  "
              f"identical answers={records[-1]['identical']}  {done.stdout.strip()[:160]}", flush=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
