"""Files the warehouse reads and writes: only regular files are read (a FIFO or /dev/zero would hang ingest),
outputs are written whole or not at all, and paths print safely whatever bytes their names hold."""
from __future__ import annotations

import contextlib
import errno
import fnmatch
import glob
import io
import os
import stat
import tempfile
from pathlib import Path
from typing import IO
from collections.abc import Iterable, Iterator

from warehouse.errors import WarehouseError, InputError, UsageError

DEFAULT_GLOB = "ops_perf_results*.csv"  # what a folder ingest picks up (--glob widens it)


def shown(path: str | os.PathLike) -> str:
    """A path as text that can be printed and stored: bytes that are not UTF-8 (kept by Python as surrogate
    escapes) become U+FFFD."""
    s = os.fspath(path)
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: Path, what: str = "") -> io.BufferedReader:
    """Open a regular file for reading, refusing anything else without blocking on it (a FIFO is opened
    non-blocking and refused; a device such as /dev/zero is refused before a byte is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(shown(path), "no such file") from None
    except IsADirectoryError:
        raise InputError(shown(path), "is a folder") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(shown(path), "is a symbolic link loop") from None
        raise InputError(shown(path), f"cannot be read: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(shown(path), f"is {_kind(st.st_mode)}; {what or 'only regular files are read'}")
    os.set_blocking(fd, True)
    return io.BufferedReader(io.FileIO(fd, "rb"))


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (following links), without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0o022)  # (reading the umask means setting it: set it straight back)
    os.umask(mask)
    return mask


def write_output(path: str | os.PathLike, data: str | bytes) -> None:
    """Write a whole output file: through a temporary file and a rename for regular files (a failed write
    leaves the old file), directly for devices and pipes (never replace /dev/stdout or /dev/full with a file).
    Errors become one :class:`UsageError` naming the path."""
    with output_stream(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextlib.contextmanager
def output_stream(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary stream onto an output file, written whole or not at all (see :func:`write_output`)."""
    p = Path(path)
    try:
        try:
            special = not stat.S_ISREG(os.stat(p).st_mode)
        except FileNotFoundError:
            special = False
        if special:
            with open(p, "wb") as f:
                yield f
            return
        if not p.parent.is_dir():
            raise UsageError(f"cannot write {shown(p)}: folder {shown(p.parent)} does not exist")
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".part", dir=p.parent)
        try:
            # mkstemp makes the file 0600; an output is made as open() would make it (0666 less the umask), or
            # keeps the mode of the file it replaces
            try:
                mode = stat.S_IMODE(os.stat(p).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as f:
                yield f
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:  # (a full disk, a quota, a read-only file system: not a usage error, exit 1)
        raise WarehouseError(f"cannot write {shown(p)}: {e.strerror or e}; nothing of it was written") from None


def find_csvs(paths: Iterable[str], pattern: str = DEFAULT_GLOB) -> Iterator[Path | InputError]:
    """The files to ingest, or an :class:`InputError` for each path that gives none (the caller reports it and
    goes on). A path that exists is taken literally (``ops_perf_results_[1].csv`` is that file); a folder is
    searched recursively for file names matching ``pattern`` (symbolic links to folders are not followed, so a
    link loop cannot trap the search; unreadable sub-folders are reported); only a path that does not exist
    is expanded as a glob."""
    seen: set[str] = set()

    def once(f: Path) -> Iterator[Path]:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            yield f

    for p in paths:
        if os.path.lexists(p):
            matches = [Path(p)]
        elif glob.has_magic(p):
            matches = [Path(m) for m in sorted(glob.glob(p, recursive=True))]
            if not matches:
                yield InputError(shown(p), "matches no file")
                continue
        else:
            matches = [Path(p)]
        for m in matches:
            if not m.is_dir():
                yield from once(m)
                continue
            found = 0
            problems: list[OSError] = []
            for folder, dirs, names in os.walk(m, onerror=problems.append, followlinks=False):
                dirs.sort()
                for n in sorted(fnmatch.filter(names, pattern)):
                    found += 1
                    yield from once(Path(folder) / n)
            for e in problems:
                yield InputError(shown(e.filename or m), f"folder cannot be read ({e.strerror}); its files were "
                                                         "not ingested")
            if not found:
                yield InputError(shown(m), f"folder holds no file named {pattern} (searched recursively); "
                                           "--glob PATTERN widens the search")
