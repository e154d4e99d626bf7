"""No tracked file names a folder of a development machine.

A path into a home, work or temporary folder, or onto a Windows drive, works on one machine only:
tests and benchmarks take their data from the package (``projmech/datasets``), from files they make,
or from an option; external code is named by its public URL and commit. Every file ``git ls-files``
lists outside ``docs/`` is read as text (binary files skipped) and searched for an absolute path
under a home, work, scratch or temporary folder (``/tmp/`` too: a file there is gone after a
reboot), or a Windows drive, and for the ``shared`` folder beside a development checkout, reached by
a path out of the checkout. System paths (``/usr/lib/...``, ``/proc/self/status``), URLs and
relative paths inside the repository (``docs/theory/x.md``) are not machine folders and do not
match. This file's examples of what must match are put together when the tests run, so that the file
passes its own check.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
#: An absolute path into a folder of one machine, not inside a URL or a longer path (the
#: character before it is none of a word, ``.``, ``:``, ``/``, ``~`` or ``-``), or a path out of
#: the checkout into the folder beside it.
MACHINE_PATH = re.compile(
    r"(?<![\w.:/~-])(?:/(?:work|root|home|Users|tmp|mnt|scratch|media|private/var)/(?=[\w.+-])"
    r"|(?<![\w\\])[A-Za-z]:\\{1,2}(?=\w))"
    r"|\.\./shared/"
)

#: Files that may name such paths, and why (none).
ALLOWED: dict[str, str] = {}


def _rooted(folder: str, rest: str) -> str:
    """``/folder/rest``, written so that this file names no such path itself."""
    return "/" + folder + "/" + rest


def tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (REPOSITORY / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPOSITORY, capture_output=True, check=True).stdout
    return [REPOSITORY / name for name in listed.decode("utf-8").split("\0")
            if name and not name.startswith("docs/") and name not in ALLOWED]


@pytest.mark.parametrize("text", [
    f'open("{_rooted("work", "shared/data/adult/adult-domain.json")}")',
    f"    --aim-path {_rooted('tmp', 'private-pgm-src')} --aim-python {_rooted('tmp', 'lockvenv/bin/python')}",
    f"data in {_rooted('home', 'alice/adult.csv')}",
    f"`{_rooted('root', '.cache/x')}`",
    f'Path("{_rooted("Users", "bob/data")}")',
    '"' + "C:" + r"\\Users\\bob\\adult.csv" + '"',
    "D:" + r"\data\adult.csv",
    "--data " + ".." + "/shared/data/adult/adult.csv",
])
def test_a_machine_path_matches(text):
    assert MACHINE_PATH.search(text), text


@pytest.mark.parametrize("text", [
    '  File "/usr/lib/python3/pyspark/worker.py", line 1, in main',
    'with open("/proc/self/status") as status:',
    f"https://github.com/ryan112358/private-pgm/tree/master{_rooted('home', 'x')}",
    "see docs/theory/factorization.md and benchmarks/README.md",
    "#!/usr/bin/env bash",
    "a ratio 1/tmp/2",
    r"pattern r'\w:\\'",
])
def test_legitimate_text_does_not_match(text):
    assert not MACHINE_PATH.search(text), text


def test_no_tracked_file_names_a_machine_path():
    found = []
    for path in tracked_files():
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:  # binary (the gzipped data set)
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            match = MACHINE_PATH.search(line)
            if match:
                found.append(f"{path.relative_to(REPOSITORY)}:{number}: {match.group(0)!r} in {line.strip()[:100]}")
    assert not found, "paths of a development machine:\n" + "\n".join(found)
