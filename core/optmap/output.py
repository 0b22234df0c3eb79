"""Writing results so that nothing computed is lost: atomic files, valid JSON, fall-backs, one writer.

- :func:`atomic_write` writes a temporary file with a unique name in the target's folder, then
  renames it over the target: a crash or a second writer never leaves a half-written file.
- :func:`json_text` is strict JSON: non-finite numbers become ``null`` (JSON has no Infinity),
  numpy scalars and arrays become numbers and lists.
- :func:`save` tries the chosen path, then fall-back folders, and says where the file went; it
  raises only when no folder at all could be written, after printing the content to standard
  output so that even then the result is not lost. A file saved elsewhere is recorded in
  :data:`displaced`: the command line then exits with status 3 (:data:`DISPLACED_EXIT`) rather
  than 0, so a script does not go on to read a file that is not there.
- :func:`exclusive` holds an advisory lock beside an output, so two runs on one output do not
  overwrite each other's work: the second is refused with one line.
- :func:`file_stem` turns a problem name into a file name that every file system accepts.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from optmap.errors import OptmapError

STEM_LIMIT = 80  # characters of a problem name kept in a default file name


def plain(value: Any) -> Any:
    """``value`` with numpy types as Python ones and non-finite floats as None, recursively."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    return str(value)


def json_text(payload: Any, indent: int | None = 1) -> str:
    """Strict JSON of ``payload`` (see :func:`plain`)."""
    return json.dumps(plain(payload), indent=indent, allow_nan=False)


def file_stem(name: str) -> str:
    """A file-name-safe form of ``name``: letters, digits, ``.``, ``-`` and ``_``; long names are
    cut and keep a short hash, so distinct names stay distinct."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "problem"
    if len(stem) > STEM_LIMIT or stem != name.replace(" ", "_"):  # changed: keep names apart by a hash
        import hashlib  # here: most names need no hash, and every run imports this module

        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = f"{stem[:STEM_LIMIT]}-{digest}"
    return stem


def atomic_write(path: str | Path, text: str | bytes) -> Path:
    """Write ``text`` (or bytes) to ``path`` through a uniquely named temporary file in the same folder.

    A path that exists and is not a regular file (``/dev/null``, a named pipe) is written into
    directly: renaming over it would replace the device with a file.
    """
    path = Path(path)
    data = text.encode("utf-8") if isinstance(text, str) else text
    if path.exists() and not path.is_file():
        with open(path, "wb") as stream:
            stream.write(data)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:50]}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a result is an ordinary file
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_failure(exc: OSError, path: str | Path) -> str:
    """Why ``path`` could not be written, in words: a parent that is a file is named as such
    (the system says "File exists" or "Not a directory")."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        for parent in reversed(Path(path).parents):
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file, not a folder"
    return exc.strerror or type(exc).__name__


# (asked, written) for every output that had to go elsewhere in this process; the CLI exits
# with DISPLACED_EXIT when a command otherwise succeeded but one of its outputs is not where asked
displaced: list[tuple[Path, Path]] = []
DISPLACED_EXIT = 3


def save(path: str | Path, text: str | bytes, fallbacks: Iterable[str | Path] = (), what: str = "result") -> Path:
    """Write ``text`` to ``path``, else to the first fall-back folder that takes it; the path used.

    A fall-back keeps the file's name (shortened if the name itself was the problem) and is
    recorded in :data:`displaced`. Every failure is reported on standard error; when no folder
    takes the file, its content goes to standard output and an OptmapError says so.
    """
    path = Path(path)
    try:
        return atomic_write(path, text)
    except OSError as exc:
        first = f"could not write the {what} to {path} ({write_failure(exc, path)})"
    name = path.name if len(path.name) <= 120 else f"{file_stem(path.stem)}{path.suffix}"
    places = [Path(folder) / name for folder in fallbacks] + [Path.cwd() / name, Path(tempfile.gettempdir()) / name]
    for place in places:
        if place == path:
            continue
        try:
            written = atomic_write(place, text)
        except OSError:
            continue
        print(f"note: {first}; saved it to {written} instead", file=sys.stderr)
        displaced.append((path, written))
        return written
    if isinstance(text, bytes):
        raise OptmapError(f"{first}, nor to the working or temporary folder")
    sys.stdout.write(text + "\n")
    raise OptmapError(f"{first}, nor to the working or temporary folder; it is printed above instead")


@contextlib.contextmanager
def exclusive(path: str | Path, option: str = "--json") -> Iterator[None]:
    """Hold an advisory lock on ``path`` (a ``.lock`` file beside it) while a run writes it.

    A second optmap process that wants the same output is refused with one line. Where the lock
    file cannot be created (a read-only folder, a platform without ``fcntl``) there is nothing to
    protect and the run goes on; :func:`save` then finds another place for the result.
    ``option`` is the command's option that chooses the output (named in the refusal).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path = Path(path)
    lock = path.with_name(f".{path.name[:200]}.lock")
    while True:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            handle = open(lock, "a+")
        except OSError:
            yield
            return
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise OptmapError(f"another optmap process is writing {path} (lock {lock}); wait for it to finish or "
                              f"write elsewhere with {option}") from None
        try:  # the holder before us may have removed the file we opened: lock the one that exists
            if os.stat(lock).st_ino == os.fstat(handle.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()
        handle.close()
