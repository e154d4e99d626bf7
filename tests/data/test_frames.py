"""Counting in real dataframe engines: pandas, PyArrow, Polars (eager, and lazy scans of Parquet),
DuckDB, Dask (a LocalCluster) and Spark (local mode), each compared cell by cell with counts
computed here by plain Python (no projmech code), on random data and on the embedded Adult data.

Spark needs Java; its tests skip, saying so, where there is none. The Spark and Dask fixtures
start once per session.
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import projmech as pm
from projmech import Dataset, Domain, datasets, workloads
from projmech.data import _frames as frames_module
from projmech.data._counting import marginal_counts

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")

LABELS = ["Clinton", "Dole", "Perot"]
EDGES = [18, 25, 35, 50, 65, 100]
DOMAIN = Domain.from_dict({"vote": LABELS, "age": {"bins": EDGES}, "x": 4, "y": 3, "flag": 2, "z": 5})


def _random_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ages = rng.uniform(18, 100, n).round(1)
    ages[:3] = [18, 25, 100]  # the edges themselves: left-closed bins, the last closed on the right
    return pd.DataFrame({
        "vote": rng.choice(LABELS, n), "age": ages, "x": rng.integers(0, 4, n),
        "y": rng.integers(0, 3, n).astype(float), "flag": rng.integers(0, 2, n),
        "z": rng.integers(0, 5, n), "ignored": "text",
    })


def _oracle_codes(frame: pd.DataFrame) -> list[tuple[int, ...]]:
    """Each row's codes by plain Python: the category's position, the number of inner edges at or
    below the age, and the integer codes."""
    position = {label: i for i, label in enumerate(LABELS)}
    rows = []
    for vote, age, x, y, flag, z in zip(*(frame[c].tolist() for c in ["vote", "age", "x", "y", "flag", "z"])):
        rows.append((position[vote], sum(age >= edge for edge in EDGES[1:-1]), int(x), int(y), int(flag), int(z)))
    return rows


def _oracle_marginals(rows: list[tuple[int, ...]], sizes: tuple[int, ...], way: int) -> np.ndarray:
    """Every ``way``-way table's cells in the marginals layout (subsets in order, cells
    row-major), counted with a Counter."""
    out = []
    for subset in itertools.combinations(range(len(sizes)), way):
        counter = collections.Counter(tuple(row[i] for i in subset) for row in rows)
        out.extend(counter.get(cell, 0) for cell in itertools.product(*(range(sizes[i]) for i in subset)))
    return np.array(out, dtype=float)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _random_frame(3000, seed=7)


@pytest.fixture(scope="module")
def parquet(tmp_path_factory, frame) -> str:
    path = str(tmp_path_factory.mktemp("frames") / "rows.parquet")
    frame.to_parquet(path)
    return path


ENGINES = ["pandas", "pyarrow", "polars", "polars-lazy", "duckdb", "dask", "spark"]


def frame_in_engine(request, kind: str, frame: pd.DataFrame, parquet: str, partitions: int):
    """``frame`` in the engine ``kind``: the lazy ones scan ``parquet`` (the frame written there),
    the distributed ones split it into ``partitions``."""
    if kind == "pandas":
        return frame
    if kind == "pyarrow":
        return pa.Table.from_pandas(frame)
    if kind == "polars":
        return pl.from_pandas(frame)
    if kind == "polars-lazy":
        return pl.scan_parquet(parquet)
    if kind == "duckdb":
        return duckdb.read_parquet(parquet)
    if kind == "dask":
        request.getfixturevalue("dask_client")
        import dask.dataframe as dd

        return dd.from_pandas(frame, npartitions=partitions)
    if kind == "spark":
        return request.getfixturevalue("spark").createDataFrame(frame).repartition(partitions)
    raise AssertionError(kind)


@pytest.fixture
def make_frame(request, frame, parquet):
    """The test's random frame in the engine ``kind``, in 3 partitions where it has them."""
    return lambda kind: frame_in_engine(request, kind, frame, parquet, 3)


@pytest.mark.parametrize("kind", ENGINES)
def test_counts_match_plain_python_in_every_engine(kind, make_frame, frame):
    """1- and 2-way marginals (15 tables: one pass over the partitions), 3-way marginals of
    three attributes (one group-by), a Kronecker product (one group-by), the histogram: every
    cell equal to the Counter's, so every engine gives the same bits."""
    dataset = Dataset.from_frame(make_frame(kind), DOMAIN)
    rows = _oracle_codes(frame)
    assert dataset.n == len(rows)
    assert dataset.engine == {"pandas": "numpy", "pyarrow": "numpy", "polars": "numpy", "polars-lazy": "polars",
                              "duckdb": "duckdb", "dask": "dask", "spark": "pyspark"}[kind]
    for way in (1, 2):
        np.testing.assert_array_equal(workloads.marginals(DOMAIN, way).answer_counts(dataset),
                                      _oracle_marginals(rows, DOMAIN.sizes, way))
    small = DOMAIN.project(["vote", "age", "z"])
    projected_rows = [(r[0], r[1], r[5]) for r in rows]
    np.testing.assert_array_equal(workloads.marginals(small, 3).answer_counts(dataset.project(["vote", "age", "z"])),
                                  _oracle_marginals(projected_rows, small.sizes, 3))
    # No domain: the counts of ranges over the codes (the vote categories are unordered, so a
    # workload over DOMAIN would have no prefix on them).
    kron = workloads.kron([workloads.prefix(3), workloads.all_range(5)]
                          + [workloads.total(s) for s in DOMAIN.sizes[2:]])
    table = np.zeros((3, 5))
    for row in rows:
        table[row[0], row[1]] += 1
    expected = np.cumsum(table, axis=0) @ np.array([[1.0 if a <= u <= b else 0.0 for a, b in
                                                     zip(*np.triu_indices(5))] for u in range(5)])
    np.testing.assert_array_equal(kron.answer_counts(dataset), expected.ravel())
    counter = collections.Counter(rows)
    cells, counts = dataset.cell_counts()
    assert dict(zip(DOMAIN.index(np.array(list(counter))).tolist(), counter.values())) == \
        dict(zip(cells.tolist(), counts.tolist()))


@pytest.mark.parametrize("kind", ["polars-lazy", "duckdb", pytest.param("dask", marks=pytest.mark.slow),
                                  pytest.param("spark", marks=pytest.mark.slow)])
def test_the_partition_pass_and_the_group_by_agree(kind, make_frame):
    """Both routes of a lazy frame: many tables by one pass over the partitions, a few by
    group-by queries, on the same tables."""
    dataset = Dataset.from_frame(make_frame(kind), DOMAIN)
    sizes = DOMAIN.sizes
    one_pass = dataset._rows.reduce(functools.partial(marginal_counts, sizes=sizes, way=2))
    by_group = np.concatenate([dataset.table(subset).ravel() for subset in itertools.combinations(range(6), 2)])
    np.testing.assert_array_equal(one_pass, by_group)


@pytest.mark.parametrize("kind", ["polars-lazy", "duckdb", "dask", "spark"])
def test_adult_counts_in_engines_equal_numpy(kind, request, tmp_path):
    """The embedded Adult data (14 attributes: 91 two-way tables, one pass over the partitions)."""
    adult = datasets.adult()
    frame = adult.to_dataframe()
    path = str(tmp_path / "adult.parquet")
    frame.to_parquet(path)
    native = {"polars-lazy": lambda: pl.scan_parquet(path), "duckdb": lambda: duckdb.read_parquet(path)}.get(kind)
    if kind == "dask":
        request.getfixturevalue("dask_client")
        import dask.dataframe as dd

        native = lambda: dd.read_parquet(path).repartition(npartitions=4)  # noqa: E731
    if kind == "spark":
        session = request.getfixturevalue("spark")
        native = lambda: session.read.parquet(path)  # noqa: E731
    dataset = Dataset.from_frame(native(), adult.domain)
    workload = workloads.marginals(adult.domain, 2, implicit=True)
    # Oracle: one bincount per pair of columns, from the pandas frame.
    expected = []
    for a, b in itertools.combinations(adult.domain.attributes, 2):
        expected.append(np.bincount(frame[a] * adult.domain[b] + frame[b],
                                    minlength=adult.domain[a] * adult.domain[b]))
    np.testing.assert_array_equal(workload.answer_counts(dataset), np.concatenate(expected))


def test_lazy_rows_stay_in_the_engine(parquet, frame):
    dataset = Dataset.from_frame(pl.scan_parquet(parquet), DOMAIN)
    assert dataset.engine == "polars" and "engine='polars'" in repr(dataset)
    with pytest.raises(TypeError, match=r"^records: the rows of this data set stay in its polars engine.*collect"):
        _ = dataset.records
    with pytest.raises(TypeError, match="^subsample: "):
        dataset.subsample(10, 0)
    collected = dataset.collect()
    assert collected.engine == "numpy"
    np.testing.assert_array_equal(collected.records, np.array(_oracle_codes(frame)))


def test_a_release_from_a_lazy_frame_is_the_release_from_memory(parquet, frame):
    """Same counts, same seeded continuous noise, same solver: the same released bits."""
    workload = workloads.marginals(DOMAIN, 2)
    mechanism = pm.ProjectionMechanism(workload, pm.ZCDP(1.0), noise="continuous", body="hull")
    lazy = mechanism.release(Dataset.from_frame(pl.scan_parquet(parquet), DOMAIN), rng=np.random.default_rng(3))
    memory = mechanism.release(Dataset.from_frame(frame, DOMAIN), rng=np.random.default_rng(3))
    np.testing.assert_array_equal(lazy.answers, memory.answers)
    assert lazy.labels[0] == "vote=Clinton & age=[18, 25)"


# --- bad values: named with the column, the value and, where there is a row order, the row --------

def _bad(frame: pd.DataFrame, column: str, row: int, value) -> pd.DataFrame:
    bad = frame.copy()
    bad[column] = bad[column].astype(object) if not isinstance(value, (int, float)) else bad[column]
    bad.loc[row, column] = value
    return bad


@pytest.mark.parametrize("column, value, message", [
    ("vote", "Nader", r"column 'vote': value 'Nader' at row 11 is not one of the domain's categories"),
    ("age", 17.5, r"column 'age': value 17.5 at row 11 is outside the domain's bins \[18, 100\]"),
    ("x", 4, r"column 'x': value 4 at row 11 is outside the domain 0..3"),
    ("y", 1.5, r"column 'y': non-integer code 1.5 at row 11"),
])
def test_in_memory_errors_name_column_value_and_row(frame, column, value, message):
    for native in (_bad(frame, column, 11, value), pl.from_pandas(_bad(frame, column, 11, value))):
        with pytest.raises(ValueError, match=message):
            Dataset.from_frame(native, DOMAIN)


@pytest.mark.parametrize("column, value, shown", [
    ("vote", "Nader", "value 'Nader'"), ("age", 130.0, "value 130.0"), ("x", -1, "value -1"),
    ("y", 2.5, "value 2.5"),
])
def test_lazy_errors_name_column_value_and_row(frame, tmp_path, column, value, shown):
    path = str(tmp_path / "bad.parquet")
    _bad(frame, column, 11, value).to_parquet(path)
    with pytest.raises(ValueError, match=rf"^column '{column}': {shown} at row 11 has no code: expected "):
        Dataset.from_frame(pl.scan_parquet(path), DOMAIN)
    with pytest.raises(ValueError, match=rf"^column '{column}': {shown} \(duckdb keeps no row order"):
        Dataset.from_frame(duckdb.read_parquet(path), DOMAIN)


MISSING = r"missing value at row 11; a domain has no code for missing values: give them a category of their own"


@pytest.mark.parametrize("column", ["vote", "age", "x"])
def test_missing_values_say_what_to_do_in_memory_and_in_engines(frame, tmp_path, column):
    """One message for a missing value, whatever the encoding and the engine: what to decide."""
    bad = _bad(frame, column, 11, None)
    for native in (bad, pl.from_pandas(bad)):
        with pytest.raises(ValueError, match=rf"^column '{column}': {MISSING}"):
            Dataset.from_frame(native, DOMAIN)
    path = str(tmp_path / "bad.parquet")
    bad.to_parquet(path)
    with pytest.raises(ValueError, match=rf"^column '{column}': {MISSING}"):
        Dataset.from_frame(pl.scan_parquet(path), DOMAIN)
    with pytest.raises(ValueError, match=rf"^column '{column}': missing value \(duckdb keeps no row order"):
        Dataset.from_frame(duckdb.read_parquet(path), DOMAIN)


def test_engine_type_errors_say_what_to_declare(frame, parquet):
    as_text = frame.assign(x=frame["x"].astype(str))
    with pytest.raises(TypeError, match=r"column 'x': expected integer codes 0..3, got dtype String; declare"):
        Dataset.from_frame(pl.from_pandas(as_text).lazy(), DOMAIN)
    with pytest.raises(ValueError, match=r"column 'x': expected integer codes, found 'a' at row 0; to code text, "
                                         r"declare the attribute's categories"):
        Dataset.from_frame(as_text.assign(x="a"), DOMAIN)
    with pytest.raises(TypeError, match=r"column 'vote': expected one of the categories"):
        Dataset.from_frame(pl.from_pandas(frame.assign(vote=1)).lazy(), DOMAIN)
    with pytest.raises(ValueError, match=r"^frame: columns \['z'\] of the domain are missing"):
        Dataset.from_frame(pl.scan_parquet(parquet).drop("z"), DOMAIN)
    with pytest.raises(TypeError, match="^frame: expected a data frame"):
        Dataset.from_frame({"vote": ["Dole"]}, DOMAIN)


def test_categorical_columns_are_coded_by_label_not_by_their_own_codes(frame):
    """A pandas Categorical whose own category order differs from the domain's: its labels count."""
    reordered = frame.assign(vote=pd.Categorical(frame["vote"], categories=["Perot", "Dole", "Clinton"]))
    expected = np.array(_oracle_codes(frame))
    np.testing.assert_array_equal(Dataset.from_frame(reordered, DOMAIN).records, expected)
    enum = pl.from_pandas(frame).with_columns(pl.col("vote").cast(pl.Enum(["Perot", "Dole", "Clinton"])))
    dataset = Dataset.from_frame(enum.lazy(), DOMAIN)
    np.testing.assert_array_equal(dataset.collect().records, expected)


@pytest.mark.slow
def test_dask_on_a_process_cluster(parquet, frame):
    """Worker processes: the counting function and its arguments travel by pickle; one
    partition of many rows is counted a batch at a time."""
    distributed = pytest.importorskip("distributed")
    import dask.dataframe as dd

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        expected = _oracle_marginals(_oracle_codes(frame), DOMAIN.sizes, 2)
        for partitions in (4, 1):
            dataset = Dataset.from_frame(dd.read_parquet(parquet).repartition(npartitions=partitions), DOMAIN)
            np.testing.assert_array_equal(workloads.marginals(DOMAIN, 2).answer_counts(dataset), expected)


@pytest.mark.parametrize("kind", ["polars-lazy", "duckdb", "dask"])
def test_counting_in_batches_smaller_than_a_partition(kind, make_frame, frame, monkeypatch):
    """Batches of 700 rows (3000 rows in all, one partition for Polars and DuckDB): the partial
    counts of every batch add up to the counts."""
    import projmech.data._dataset
    import projmech.data._frames

    monkeypatch.setattr(projmech.data._frames, "BATCH_ROWS", 700)
    batches = []

    def counted(records, sizes, way):
        batches.append(records.shape[0])
        return marginal_counts(records, sizes, way)

    monkeypatch.setattr(projmech.data._dataset, "marginal_counts", counted)
    native = make_frame(kind)
    if kind == "dask":
        native = native.repartition(npartitions=1)
    dataset = Dataset.from_frame(native, DOMAIN)
    np.testing.assert_array_equal(workloads.marginals(DOMAIN, 2).answer_counts(dataset),
                                  _oracle_marginals(_oracle_codes(frame), DOMAIN.sizes, 2))
    if kind != "dask":  # Dask's tasks run on copies of the kernel: their calls are not seen here
        assert max(batches) <= 700 and sum(batches) == 3000


FLOAT_EDGES = {"v": {"bins": [0, 0.7, 1]}}


@pytest.mark.parametrize("kind", ["pandas", "polars", "polars-lazy", "duckdb"])
def test_float32_values_fall_in_the_same_bin_everywhere(kind, tmp_path):
    """float32(0.7) is just below the float64 edge 0.7: bin 0 in every engine (compared in float64)."""
    values = np.array([0.7, 0.69, 0.71, 1.0], dtype=np.float32)
    expected = [int(float(v) >= 0.7) for v in values]  # float64 comparisons, by hand
    assert expected == [0, 0, 1, 1]
    frame = pd.DataFrame({"v": values})
    path = str(tmp_path / "f32.parquet")
    frame.to_parquet(path)
    native = {"pandas": lambda: frame, "polars": lambda: pl.from_pandas(frame),
              "polars-lazy": lambda: pl.scan_parquet(path), "duckdb": lambda: duckdb.read_parquet(path)}[kind]()
    domain = Domain.from_dict(FLOAT_EDGES)
    np.testing.assert_array_equal(Dataset.from_frame(native, domain).collect().records[:, 0], expected)


def test_enum_and_categorical_columns_lacking_a_category(request):
    """The column's own categories are a subset of the domain's: still coded by label."""
    frame = pd.DataFrame({"vote": pd.Categorical(["Dole", "Dole", "Clinton"], categories=["Dole", "Clinton"])})
    domain = Domain.from_dict({"vote": LABELS})
    enum = pl.DataFrame({"vote": ["Dole", "Dole", "Clinton"]}, schema={"vote": pl.Enum(["Dole", "Clinton"])}).lazy()
    request.getfixturevalue("dask_client")
    import dask.dataframe as dd

    for native in (frame, enum, dd.from_pandas(frame, npartitions=2)):
        dataset = Dataset.from_frame(native, domain)
        np.testing.assert_array_equal(dataset.table([0]), [1, 2, 0])


def test_boolean_columns_are_codes_and_empty_lazy_frames_count_nothing(tmp_path):
    frame = pd.DataFrame({"flag": [True, False, True]})
    domain = Domain(["flag"], [2])
    for native in (frame, pl.from_pandas(frame).lazy()):
        np.testing.assert_array_equal(Dataset.from_frame(native, domain).table([0]), [1, 2])
    empty = Dataset.from_frame(pl.from_pandas(frame.iloc[:0]).lazy(), domain)
    assert empty.n == 0
    np.testing.assert_array_equal(empty.table([0]), [0, 0])
    np.testing.assert_array_equal(workloads.marginals(DOMAIN, 2).answer_counts(
        Dataset.from_frame(pl.from_pandas(_random_frame(3, seed=1).iloc[:0]).lazy(), DOMAIN)), 0)


def test_rows_that_change_after_the_check_are_refused():
    """A frame that reads differently the second time must fail, not be miscounted."""
    import projmech.data._frames as frames

    kernel = functools.partial(marginal_counts, sizes=(2, 2), way=2)
    with pytest.raises(ValueError, match="the rows counted are not the rows checked"):
        frames._checked(np.array([[0, 2]]), kernel, (2, 2))
    with pytest.raises(ValueError, match="the rows counted are not the rows checked"):
        frames._checked(np.array([[-1, 0]]), kernel, (2, 2))
    np.testing.assert_array_equal(frames._checked(np.array([[1, 1]]), kernel, (2, 2)), [0, 0, 0, 1])


def test_table_arguments_are_checked(frame):
    dataset = Dataset.from_frame(frame, DOMAIN)
    lazy = Dataset.from_frame(pl.from_pandas(frame).lazy(), DOMAIN)
    for data in (dataset, lazy):
        with pytest.raises(ValueError, match=r"^axes: expected distinct positions in 0..5"):
            data.table([0, 0])
        with pytest.raises(ValueError, match=r"^axes: "):
            data.table([6])
        with pytest.raises(TypeError, match=r"^axes: "):
            data.table(["vote"])
        with pytest.raises(ValueError, match=r"^way: "):
            data.marginal_counts(7)
        with pytest.raises(ValueError, match=r"^way: "):
            data.marginal_counts(-1)


SPARK_CONNECT_SCRIPT = """
import functools, os, sys, warnings
warnings.simplefilter("ignore")
os.environ["PYSPARK_PYTHON"] = sys.executable
import numpy as np, pandas as pd
from pyspark.sql import SparkSession
import projmech as pm
from projmech.data import _frames as frames_module
from projmech.data._counting import marginal_counts
spark = SparkSession.builder.remote("local[2]").getOrCreate()
rng = np.random.default_rng(0)
frame = pd.DataFrame({"vote": rng.choice(["Clinton", "Dole", "Perot"], 400), "x": rng.integers(0, 3, 400),
                      "age": rng.uniform(18, 100, 400)})
domain = pm.Domain.from_dict({"vote": ["Clinton", "Dole", "Perot"], "x": 3, "age": {"bins": [18, 40, 100]}})
remote = pm.Dataset.from_frame(spark.createDataFrame(frame), domain)
memory = pm.Dataset.from_frame(frame, domain)
assert remote.engine == "pyspark_connect", remote.engine
workload = pm.workloads.marginals(domain, 2)
assert np.array_equal(workload.answer_counts(remote), workload.answer_counts(memory))
one_pass = remote._rows.reduce(functools.partial(marginal_counts, sizes=domain.sizes, way=2))
assert np.array_equal(one_pass, workload.answer_counts(memory))
print("spark connect ok")
"""


@pytest.mark.slow
def test_spark_connect(tmp_path):
    """Spark Connect (a local server): the DataFrame API alone, so the same counts as in memory,
    by group-by and by mapInArrow. In a process of its own: one JVM holds one Spark context."""
    import subprocess
    import sys

    pytest.importorskip("pyspark.sql.connect.session", reason="Spark Connect needs pyspark[connect]")
    script = tmp_path / "connect.py"
    script.write_text(SPARK_CONNECT_SCRIPT, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "spark connect ok" in done.stdout, done.stderr[-2000:]


SPARK_WORKERS_SCRIPT = """
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np, pandas as pd
from pyspark.sql import SparkSession
import projmech as pm
# The user's own session, its Python workers running an interpreter without pyarrow or projmech
# (as the system python3 runs them when PYSPARK_PYTHON is not set).
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.pyspark.python", sys.argv[1]).getOrCreate())
spark.sparkContext.setLogLevel("OFF")
domain = pm.Domain.from_dict({f"a{i}": 2 for i in range(8)})  # 28 tables: counted by the workers
rows = np.random.default_rng(0).integers(0, 2, (20, 8))
frame = spark.createDataFrame(pd.DataFrame(rows, columns=domain.attributes))
try:
    pm.Dataset.from_frame(frame, domain).marginal_counts(2)
except RuntimeError as error:
    print("ERROR " + str(error))
"""


@pytest.mark.slow
def test_spark_workers_without_projmech_get_one_clear_error(tmp_path):
    """A SparkSession whose Python workers run another interpreter: one error naming
    PYSPARK_PYTHON and this interpreter, not Spark's Java stack trace. In a process of its own:
    one JVM holds one Spark context."""
    import subprocess
    import sys
    import venv

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (17), and this machine has none")
    pytest.importorskip("pyspark")
    venv.create(tmp_path / "bare", with_pip=False)  # a Python with neither pyarrow nor projmech
    script = tmp_path / "workers.py"
    script.write_text(SPARK_WORKERS_SCRIPT, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "PYSPARK_PYTHON"}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "bare" / "bin" / "python")],
                          capture_output=True, text=True, timeout=300, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("ERROR ")]
    assert len(lines) == 1, (done.stdout[-2000:], done.stderr[-2000:])
    error = lines[0]
    assert "PYSPARK_PYTHON" in error and sys.executable in error and "cannot import" in error, error
    assert len(error) < 600 and "Py4J" not in error and "at org.apache" not in error, error


def test_spark_worker_hint_reads_the_missing_module():
    from projmech.data._frames import _spark_worker_hint

    trace = ("py4j.protocol.Py4JJavaError: An error occurred while calling o52.collectToPython.\n"
             "  File \"/usr/lib/python3/pyspark/worker.py\", line 1, in main\n"
             "ModuleNotFoundError: No module named 'pyarrow'\n\tat org.apache.spark.api.python")
    hint = _spark_worker_hint(trace)
    assert hint is not None and "cannot import 'pyarrow'" in hint and "PYSPARK_PYTHON" in hint
    assert _spark_worker_hint("py4j.protocol.Py4JJavaError: java.lang.OutOfMemoryError") is None


# --- one rule for every engine: issue 31, items 14 and 15 ----------------------------------------

@pytest.fixture
def in_engine(request, tmp_path):
    """A pandas frame in the engine ``kind`` (the lazy ones read it back from Parquet)."""
    def make(kind: str, frame: pd.DataFrame):
        path = str(tmp_path / f"{kind}.parquet")
        if kind in ("polars-lazy", "duckdb"):
            frame.to_parquet(path)
        return frame_in_engine(request, kind, frame, path, 2)
    return make


INTEGER_LABELS = Domain.from_dict({"x": [1, 2, 10]})


@pytest.mark.parametrize("kind", ENGINES)
def test_integer_categories_code_text_by_its_exact_decimal_text_in_every_engine(kind, in_engine):
    """Text "1", "2", "10" is the labels 1, 2, 10, and integers are coded by value, in every
    engine; text "01" is no label anywhere (it was 1 in some engines and refused in others)."""
    text = pd.DataFrame({"x": pd.Series(["10", "1", "10", "2", "10"], dtype=object)})
    integers = pd.DataFrame({"x": [10, 1, 10, 2, 10]})
    for frame in (text, integers):
        np.testing.assert_array_equal(Dataset.from_frame(in_engine(kind, frame), INTEGER_LABELS).table([0]),
                                      [1, 1, 3])  # counted by hand: one 1, one 2, three 10s
    bad = pd.DataFrame({"x": pd.Series(["10", "1", "01", "2"], dtype=object)})
    with pytest.raises(ValueError, match=r"^column 'x': value '01' (at row 2|\(\w+ keeps no row order.*\)) "
                                         r"(is not one of the domain's categories|has no code: expected one of "
                                         r"the categories) \[1, 2, 10\].*exact decimal text"):
        Dataset.from_frame(in_engine(kind, bad), INTEGER_LABELS)


def start_engine(engine: str, request) -> None:
    """The session (Spark) or cluster (Dask) that ``read_frame`` reads into, started once."""
    if engine in ("spark", "dask"):
        request.getfixturevalue({"spark": "spark", "dask": "dask_client"}[engine])


def read_in_engine(engine: str, request, path, domain: Domain) -> Dataset:
    """The file at ``path`` read by ``engine`` (``frames.read_frame``) and coded over ``domain``."""
    start_engine(engine, request)
    return Dataset.from_frame(frames_module.read_frame([str(path)], engine, domain), domain)


def check_good_and_bad_csv(engine: str, request, tmp_path, domain: Domain, good: str, counts: list[int], bad: str,
                           message: str) -> Path:
    """The CSV text ``good`` read by ``engine`` over ``domain`` has the first attribute's table
    ``counts``; the CSV text ``bad`` is refused with an error matching ``message``. The good file's path."""
    good_path, bad_path = tmp_path / "good.csv", tmp_path / "bad.csv"
    good_path.write_text(good, encoding="utf-8")
    bad_path.write_text(bad, encoding="utf-8")
    np.testing.assert_array_equal(read_in_engine(engine, request, good_path, domain).table([0]), counts)
    with pytest.raises(ValueError, match=message):
        read_in_engine(engine, request, bad_path, domain)
    return good_path


@pytest.mark.parametrize("engine", frames_module.ENGINES)
def test_integer_categories_read_from_a_csv_follow_one_rule_in_every_engine(engine, request, tmp_path):
    """The issue's file: "01" and "02" in a CSV column of integer categories [1, 2, 10] are
    refused by every engine, naming the column and the value; "1", "2", "10" are counted."""
    check_good_and_bad_csv(engine, request, tmp_path, INTEGER_LABELS, "x\n1\n10\n2\n10\n", [1, 1, 2],
                           "x\n01\n02\n10\n1\n", r"^column 'x': value '0[12]' .*\[1, 2, 10\]")


@pytest.mark.parametrize("engine", frames_module.ENGINES)
def test_labels_that_pandas_reads_as_missing_are_labels_in_every_engine(engine, request, tmp_path):
    """"NA", "None", "null" and "nan" are category labels in every engine (pandas and Dask read
    them as missing by default, Polars, DuckDB and Spark as text); only an empty field is missing."""
    domain = Domain.from_dict({"region": ["EU", "NA", "None", "null", "nan"], "x": 2})
    good = check_good_and_bad_csv(engine, request, tmp_path, domain,
                                  "region,x\nNA,0\nEU,1\nNA,1\nNone,0\nnull,0\nnan,1\n", [1, 2, 1, 1, 1],
                                  "region,x\nNA,0\n,1\n", r"^column 'region': missing value")
    if engine == "pandas":  # Dataset.from_csv reads with the same rule
        np.testing.assert_array_equal(Dataset.from_csv(good, domain).table([0]), [1, 2, 1, 1, 1])


@pytest.mark.parametrize("engine", frames_module.ENGINES)
def test_codes_with_a_leading_zero_are_numbers_in_every_engine(engine, request, tmp_path):
    """A size-declared column holds numbers: "01" is the code 1 in every engine (DuckDB's sniffer
    read the column as text and refused it), and a fractional code is refused everywhere."""
    domain = Domain.from_dict({"x": 3})
    check_good_and_bad_csv(engine, request, tmp_path, domain, "x\n01\n2\n1\n", [0, 2, 1], "x\n1.5\n2\n",
                           r"^column 'x': .*1\.5")


@pytest.mark.parametrize("kind", ENGINES)
def test_booleans_are_codes_0_and_1_in_every_engine(kind, in_engine):
    """True/False for a size-2 attribute: the codes 1 and 0 everywhere (Spark refused to compare
    a boolean with 0); integer categories refuse them by type everywhere."""
    frame = pd.DataFrame({"flag": [True, False, True, True]})
    np.testing.assert_array_equal(Dataset.from_frame(in_engine(kind, frame), Domain(["flag"], [2])).table([0]),
                                  [1, 3])
    with pytest.raises(TypeError, match=r"^column 'flag': expected one of the categories \[0, 1\], got dtype Boolean"):
        Dataset.from_frame(in_engine(kind, frame), Domain.from_dict({"flag": [0, 1]}))


@pytest.mark.parametrize("kind", ["pandas", "polars", "polars-lazy", "duckdb"])
def test_float_column_for_integer_categories_says_what_to_do(kind, in_engine):
    """A float column (integral floats such as 1.0, as a CSV column with missing values reads)
    declared as integer categories: refused with a hint; as a size, 1.0 is the code 1 and 1.5
    is refused, named."""
    frame = pd.DataFrame({"x": [1.0, 2.0, 1.0]})
    with pytest.raises(TypeError, match=r"^column 'x': expected one of the categories \[1, 2\], got dtype "
                                        r"Float64; .*missing values.*size.*bins"):
        Dataset.from_frame(in_engine(kind, frame), Domain.from_dict({"x": [1, 2]}))
    np.testing.assert_array_equal(Dataset.from_frame(in_engine(kind, frame), Domain(["x"], [3])).table([0]), [0, 2, 1])
    with pytest.raises(ValueError, match=r"^column 'x': (non-integer code 1.5 at row 1|value 1.5 .*has no code)"):
        Dataset.from_frame(in_engine(kind, pd.DataFrame({"x": [1.0, 1.5]})), Domain(["x"], [3]))


@pytest.mark.parametrize("engine", frames_module.ENGINES)
def test_a_repeated_domain_column_in_a_csv_header_is_refused_by_every_engine(engine, request, tmp_path):
    """pandas and Dask rename the second x to x.1, Polars to x_duplicated_0, DuckDB to x_1 and
    all four counted the first x; Spark named them x0, x1. Now one error naming the file."""
    start_engine(engine, request)
    path = tmp_path / "dup.csv"
    path.write_text("x,y,x\n1,0,2\n2,1,1\n", encoding="utf-8")
    domain = Domain.from_dict({"x": [1, 2], "y": 2})
    with pytest.raises(ValueError, match=rf"^{path}: column 'x' appears more than once in its header"):
        frames_module.read_frame([str(path)], engine, domain)
    path.write_text("x,y,y\n1,0,2\n", encoding="utf-8")  # a repeated column the domain does not name
    assert frames_module.read_frame([str(path)], engine, Domain.from_dict({"x": [1, 2]})) is not None


@pytest.mark.parametrize("engine", frames_module.ENGINES)
@pytest.mark.parametrize("content", [b"", b"not a parquet file at all", b"PAR1" + bytes(20) + b"PAR1"])
def test_unreadable_parquet_files_are_value_errors_naming_the_file(engine, content, request, tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"^{path}: "):
        read_in_engine(engine, request, path, Domain(["x"], [2]))


def test_a_polars_scan_that_cannot_be_read_is_a_value_error_naming_the_frame(tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"not a parquet file at all")
    with pytest.raises(ValueError, match=r"^frame: polars could not read it \(ComputeError: .*PAR1"):
        Dataset.from_frame(pl.scan_parquet(path), Domain(["x"], [2]))


def test_integer_categories_code_text_alike_with_and_without_the_lookup():
    """Spark Connect's path (no replace_strict: a sum of comparisons) codes text like the lookup."""
    import narwhals as nw

    from projmech.data import Categories

    encoding = Categories([1, 2, 10])
    frame = nw.from_native(pl.DataFrame({"x": ["10", "1", "2", "01"]}))
    coded = frame.select(encoding.code(nw.col("x"), nw.Int64, lookup=True, text=True).alias("lookup"),
                         encoding.code(nw.col("x"), nw.Int64, lookup=False, text=True).alias("sum"),
                         encoding.invalid(nw.col("x"), False, text=True).alias("invalid"))
    assert coded["lookup"].to_list()[:3] == coded["sum"].to_list()[:3] == [2, 0, 1]
    assert coded["invalid"].to_list() == [False, False, False, True]


def test_bytes_columns_are_refused_with_a_hint_to_decode():
    """b"a" is not the label "a": refused by type in every frame that types it as binary."""
    domain = Domain.from_dict({"v": ["a", "b"]})
    binary = pl.DataFrame({"v": [b"a", b"b"]})
    for native in (binary, binary.lazy(), pa.table({"v": pa.array([b"a", b"b"], type=pa.binary())})):
        with pytest.raises(TypeError, match=r"^column 'v': expected one of the categories \['a', 'b'\], got dtype "
                                            r"Binary; decode the column to text first"):
            Dataset.from_frame(native, domain)
    with pytest.raises(TypeError, match=r"^column 'v': value b'a' at row 0 is bytes, not text; decode"):
        Dataset.from_frame(pd.DataFrame({"v": [b"a", "b"]}), domain)
