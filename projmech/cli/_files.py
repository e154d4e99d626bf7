"""Files the command line reads and writes: what kind of file a path is, whether two paths are one
file, and outputs written atomically.

Two paths are the same file when they reach the same device and inode, whatever their names: a
hard link or a symbolic link to an input is that input, which comparing names (even resolved
ones) misses for hard links.

Outputs are staged: each is written to a temporary file beside its target (in the same folder, so
that moving it into place is a rename, which needs no space and cannot be half done), flushed to
the disk, and only once every output of the command is complete are all of them moved into place
(:func:`os.replace`, with the usual signals held off between the first move and the last). On any
failure while they are written, a full disk, an exception or a signal, the temporaries are removed
and the files that were there before are left exactly as they were. Two cases fall outside: a
move that fails after another succeeded (only if a target changed since it was checked; the error
names what was replaced), and a kill that cannot be caught (SIGKILL, a power cut), which leaves the
earlier files intact but a hidden ``.NAME.XXXXXXXX.partial.EXT`` temporary beside them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

__all__ = ["file_identity", "non_regular_kind", "StagedOutputs", "staged_outputs"]

#: What a path that is not a regular file is, in words (by ``stat``'s file type).
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

#: The signals that end a command line program, which must not fall between two outputs' moves,
#: and which while outputs are staged end the command only after their temporaries are removed.
_ENDING_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


def file_identity(path: Path) -> tuple[int, int] | str:
    """What makes two paths one file: the device and inode of an existing file (so hard and
    symbolic links to it are it), else the absolute path with every link resolved (two names of
    a file still to be written)."""
    try:
        info = os.stat(path)
    except OSError:  # not there yet (or a dangling link): only its name can tell
        return str(path.resolve())
    return (info.st_dev, info.st_ino)


def non_regular_kind(path: Path) -> str | None:
    """What ``path`` is in words when it exists and is not a regular file (links followed), such
    as ``"a named pipe (FIFO)"``; ``None`` for a regular file or a path that is not there. Reading
    a pipe or a device would wait for a writer or never end, so callers refuse these up front."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


class StagedOutputs:
    """The outputs of one command, each written to a temporary file beside its target; made by
    :func:`staged_outputs`, which moves them into place together or removes them."""

    def __init__(self) -> None:
        self._staged: list[tuple[str, Path, Path]] = []  # (name in messages, temporary, target)
        self._created_folders: list[Path] = []  # made for the outputs, deepest first

    def write(self, name: str, target: Path, writer: Callable[[Path], object]) -> None:
        """Stage ``target``: ``writer`` writes the temporary path it is given (which keeps the
        target's suffix, for writers that pick a format by it), then the file is flushed to the
        disk. Missing folders above ``target`` are created (and removed again on failure). An
        OSError, a full disk say, becomes one that names ``name`` (a flag) and ``target``."""
        # A symbolic link is written through, as a plain write would: the file it points to is
        # replaced and the link stays (replacing the link itself left its target stale).
        real = Path(os.path.realpath(target))
        try:
            self._make_folders(real.parent)
            temporary = self._create_temporary(name, real)
            writer(temporary)
            _flush_to_disk(temporary)
            with contextlib.suppress(OSError):  # an output forced over a file keeps that file's mode
                os.chmod(temporary, stat.S_IMODE(os.stat(real).st_mode))
        except OSError as error:
            raise OSError(f"{name}: {target}: could not write it ({error.strerror or error})") from error

    def _make_folders(self, folder: Path) -> None:
        missing = [part for part in (folder, *folder.parents) if not part.exists()]
        for part in reversed(missing):
            try:
                part.mkdir()
            except FileExistsError:  # made meanwhile by someone else: not ours to remove
                continue
            self._created_folders.insert(0, part)

    def _create_temporary(self, name: str, target: Path) -> Path:
        # A hidden name beside the target, created exclusively (never a file already there) with
        # mode 0o666 less the umask, as the target would have had.
        while True:
            temporary = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.partial{target.suffix}")
            try:
                os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except FileExistsError:
                continue
            self._staged.append((name, temporary, target))
            return temporary

    def _commit(self) -> None:
        """Move every staged file into place, with the ending signals held off so that none
        falls between two moves; then make the moves themselves durable. A rename within a folder
        needs no space, so a move fails only where the target changed since it was checked (a
        folder put in its place, say); the moves before it then stand, and the error says so."""
        with _signals_held():
            for moved, (name, temporary, target) in enumerate(self._staged):
                try:
                    os.replace(temporary, target)
                except OSError as error:
                    replaced = f"; {', '.join(str(path) for _, _, path in self._staged[:moved])} replaced already" \
                        if moved else ""
                    raise OSError(f"{name}: {target}: could not move it into place ({error.strerror or error})"
                                  f"{replaced}") from error
        folders = dict.fromkeys(target.parent for _, _, target in self._staged)
        self._staged.clear()
        self._created_folders.clear()
        for folder in folders:
            _flush_folder(folder)

    def _discard(self) -> None:
        """Remove every temporary, and the folders made for them, leaving what was there before."""
        for _, temporary, _ in self._staged:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
        for folder in self._created_folders:
            with contextlib.suppress(OSError):  # not empty: something else wrote there meanwhile
                folder.rmdir()
        self._staged.clear()
        self._created_folders.clear()


class _Ended(BaseException):
    """An ending signal that arrived while outputs were staged, raised so that they are removed
    before the program ends by that signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def staged_outputs() -> Iterator[StagedOutputs]:
    """Outputs written together: stage each with :meth:`StagedOutputs.write` inside the block;
    when the block ends normally all of them are moved into place, and when it raises (or an
    ending signal arrives) none is, the temporaries are removed and the exception goes on (the
    signal then ends the program as it would have)."""
    outputs = StagedOutputs()
    try:
        with _signals_raise():
            yield outputs
            outputs._commit()
    except _Ended as ended:
        outputs._discard()
        signal.signal(ended.signum, signal.SIG_DFL)
        os.kill(os.getpid(), ended.signum)
        raise  # only where the signal does not end the process after all
    except BaseException:
        outputs._discard()
        raise


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM, SIGHUP and SIGQUIT, left at their default (ending the process at once, with the
    temporaries left behind), raise :class:`_Ended` instead while the block runs; SIGINT raises
    KeyboardInterrupt already. Signal handlers can be set only from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, signal.Handlers | int | Callable[[int, FrameType | None], object] | None] = {}

    def raise_ended(signum: int, frame: FrameType | None) -> None:
        raise _Ended(signum)

    try:
        for signum in _ENDING_SIGNALS:
            if signum != signal.SIGINT and signal.getsignal(signum) == signal.SIG_DFL:
                previous[signum] = signal.signal(signum, raise_ended)
        yield
    finally:
        for ending, handler in previous.items():
            signal.signal(ending, handler)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """The ending signals blocked while the block runs (delivered after it), where the platform
    can block them."""
    if sys.platform == "win32" or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _flush_to_disk(path: Path) -> None:
    """The file's data on the disk, not only in the operating system's cache, before it replaces
    an earlier output: a crash then leaves the earlier output or the whole new one."""
    descriptor = os.open(path, os.O_RDWR)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _flush_folder(folder: Path) -> None:
    """The folder's entries (the moves) on the disk, where the platform can open a folder."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
