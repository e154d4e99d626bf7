"""Output flags shared by the commands (``--out``, ``--summary``, ``--synthetic``, ``--out-dir``,
``--force``): checked before anything is computed, never an input or each other, compared by
identity (device and inode, so not through a link either), and an existing file overwritten only
with ``--force``; written whole or not at all (:mod:`projmech.cli._files`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..data import Domain
from ._files import file_identity, non_regular_kind

__all__ = ["Outputs", "output_paths", "output_path", "refuse_overlaps", "check_output_folder", "check_new_file",
           "labelled_rows", "json_writer"]


class Outputs(NamedTuple):
    """A command's outputs, each with the flag its errors name."""

    out: Path
    summary: Path
    summary_flag: str  # --summary, or --out where the summary's path derives from it
    synthetic: Path | None  # --synthetic, the rows drawn from the projection


def output_paths(args: argparse.Namespace, inputs: Sequence[tuple[str, Path]]) -> Outputs:
    """The answers' and the summary's paths, checked before anything is computed: never an
    input file or each other (by identity, so no link to one either), an existing folder, and
    no existing file without --force."""
    out = output_path("--out", args.out)
    summary = output_path("--summary", args.summary) if args.summary is not None else out.with_suffix(".json")
    summary_flag = "--summary" if args.summary is not None else "--out (its .json summary)"
    outputs = [("--out", out), (summary_flag, summary)]
    if args.summary is None and summary == out:  # the summary would be the answers' file itself
        refuse_overlaps(outputs[:1], inputs)  # an input is the graver fault: named first
        raise ValueError(f"--out: {out} ends in .json, the suffix its summary takes; give --out a .csv path, "
                         "or --summary another path")
    synthetic = output_path("--synthetic", args.synthetic) if args.synthetic is not None else None
    if synthetic is not None:
        outputs.append(("--synthetic", synthetic))
    refuse_overlaps(outputs, inputs)
    for flag, path in outputs:
        check_new_file(flag, path, args.force)
    return Outputs(out, summary, summary_flag, synthetic)


def output_path(flag: str, text: str, what: str = "a file path") -> Path:
    """An output flag's path: refused when empty (which would name the current folder) or
    ``-`` (which commands often take for standard output, and which this one does not offer)."""
    if text == "-":
        raise ValueError(f"{flag}: '-' (standard output) is not supported; give {what}")
    if not text.strip():
        raise ValueError(f"{flag}: empty; give {what}")
    return Path(text)


def _alias(path: Path, other: Path) -> str:
    """`` <other> under another name (a link)``, where two paths of one file are spelt differently
    (and lead to one file by different names: not the same name seen through ``..`` or ``./``)."""
    return "" if path.resolve() == other.resolve() else f" {other} under another name (a link)"


def refuse_overlaps(outputs: Sequence[tuple[str, Path]], inputs: Sequence[tuple[str, Path]]) -> None:
    """Refuse an output that is an input, or an earlier output, under any name (a hard or
    symbolic link to it, or a path through a linked folder): files are compared by device and
    inode, not by name. Each pair is (flag, path)."""
    seen = {file_identity(path): (flag, path, True) for flag, path in inputs}
    for flag, path in outputs:
        identity = file_identity(path)
        if identity in seen:
            other_flag, other, is_input = seen[identity]
            if is_input:
                raise ValueError(f"{flag}: {path} is the {other_flag} file{_alias(path, other)}; refusing to "
                                 "overwrite an input")
            raise ValueError(f"{flag}: {path} is also the {other_flag} file{_alias(path, other)}; give "
                             f"{flag.split()[0]} another path")
        seen[identity] = (flag, path, False)


def check_output_folder(flag: str, folder: Path) -> None:
    """A folder that outputs go into, created when they are written if missing: refused only
    where a file stands in its place or on its way (``--out-dir results.csv/run1``)."""
    for part in (folder, *folder.parents):
        if part.exists():
            if not part.is_dir():
                raise ValueError(f"{flag}: {part} is a file; give a folder (created if missing)")
            return


def check_new_file(flag: str, path: Path, force: bool) -> None:
    """An output path: a file (not a folder) in an existing folder, not there yet unless --force,
    and never a pipe or a device (replacing one would remove it; writing to one is no output)."""
    if path.is_dir():
        raise ValueError(f"{flag}: {path} is a directory; give a file path")
    kind = non_regular_kind(path)
    if kind is not None:
        raise ValueError(f"{flag}: {path} is {kind}, not a regular file; give a file path")
    if not path.parent.is_dir():
        raise ValueError(f"{flag}: the folder {path.parent} does not exist")
    if path.exists() and not force:
        raise ValueError(f"{flag}: {path} exists; pass --force to overwrite it")


def labelled_rows(domain: Domain, rows: np.ndarray) -> Any:
    """The rows as a table with the attributes' names and each code's label (a category, a bin)."""
    import pandas as pd

    return pd.DataFrame({name: np.asarray(domain.labels(name), dtype=object)[rows[:, position]]
                         for position, name in enumerate(domain.attributes)})


def json_writer(summary: dict[str, Any]) -> Callable[[Path], object]:
    """A writer of ``summary`` as indented JSON, for :meth:`~projmech.cli._files.StagedOutputs.write`."""
    return lambda path: path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
