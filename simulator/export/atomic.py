"""Output files: checked before any work starts, written atomically.

Every command that writes a file (``--png``, ``--trace``, ``--timeline-png``, ``--csv``,
``-o``, ``--write``) checks its path with :func:`check_output_path` before it simulates
anything, and writes through :func:`write_atomic`: a temporary file in the same folder,
then :func:`os.replace`, so a reader (or a crash, or Ctrl-C) never leaves a half-written
file at the path. A failure is a :class:`~simulator.errors.UsageError`: one line, exit 2.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from pathlib import Path

from simulator.errors import UsageError


def _folder(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def check_output_path(path: Path | str, option: str = "-o") -> Path:
    """Refuse an output path that cannot be written, before any work is done.

    Parameters
    ----------
    path : path-like
        Where the command will write.
    option : str
        The option that named it, for the message (``--png``).

    Returns
    -------
    pathlib.Path
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    UsageError
        The folder is missing, is not a folder, or is not writable; the path is a folder,
        or an existing file that is not a regular file.
    """
    path = Path(path)
    if not str(path).strip() or path.name in ("", ".", ".."):
        raise UsageError(f"{option}: '{path}' is not a file name")
    folder = _folder(path)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option}: folder '{folder}' is a file; cannot write '{path}'")
    if not folder.is_dir():
        raise UsageError(f"{option}: folder '{folder}' does not exist; create it first")
    if path.is_dir():
        raise UsageError(f"{option}: '{path}' is a folder; give a file name")
    if path.exists() and not path.is_file():
        raise UsageError(f"{option}: '{path}' exists and is not a regular file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: folder '{folder}' is not writable")
    return path


def write_atomic(path: Path | str, data: str | bytes, option: str | None = None) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically.

    The data goes to a temporary file in the same folder, which then replaces ``path``
    (:func:`os.replace`); on any failure, Ctrl-C included, the temporary file is removed
    and ``path`` is left as it was.

    Raises
    ------
    UsageError
        The file cannot be written (the message names ``option`` when given).
    """
    path = Path(path)
    label = f"{option}: " if option else ""
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                             dir=_folder(path))
    except OSError as exc:
        raise UsageError(f"{label}cannot write in '{_folder(path)}': "
                         f"{exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise UsageError(f"{label}cannot write '{path}': {exc.strerror or exc}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    """The permissions the file gets: the replaced file's, else what ``open`` would give
    (0o666 less the umask; :func:`tempfile.mkstemp` alone would leave 0o600)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def figure_png_bytes(figure, dpi: int = 110) -> bytes:
    """A matplotlib figure rendered as PNG bytes (whatever the target file is called)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def write_figure(figure, path: Path | str, option: str | None = None, dpi: int = 110) -> None:
    """Render ``figure`` as PNG and write it atomically to ``path``."""
    write_atomic(path, figure_png_bytes(figure, dpi), option)
