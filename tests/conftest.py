"""Fixtures shared by the test folders: the real dataframe engines, started once per session.

The independent oracles the tests compare with live in ``oracles.py`` (an importable module, not
this pytest plugin).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings

import pytest

# --- the solver marker on doctests ------------------------------------------------------------

#: The doctests of the package that call a third-party solver: a doctest takes no marker of its
#: own, so the tests marked ``solver`` (``make test-cpus``) take these by name.
SOLVER_DOCTESTS = frozenset({
    "projmech.bodies._relaxation.RelaxationSupport",
    "projmech.bodies._relaxation.relaxation_support",
    "projmech.factorization._mean.approximate_factorization_norm",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name in SOLVER_DOCTESTS:
            item.add_marker(pytest.mark.solver)


# --- real dataframe engines, started once per session ---------------------------------------

@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (17), and this machine has none: no java on PATH, no JAVA_HOME")
    pyspark = pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PySpark's note on pandas 3
        session = (SparkSession.builder.master("local[2]").appName("projmech-tests")
                   .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
                   .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    assert pyspark is not None
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dask_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


