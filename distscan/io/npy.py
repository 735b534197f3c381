"""The ``.npy`` format: read and check a header, build one (no MPI, no threads).

:func:`read_header` parses the header with :mod:`numpy.lib.format` (versions 1.0,
2.0 and 3.0) and says clearly what is wrong with a file that is not a plain
C-ordered numeric array: missing, a directory, a FIFO or device, not ``.npy``, an
``.npz`` archive, truncated, pickled objects, Fortran order, 0-d.
:func:`header_bytes` is the header :func:`numpy.save` would write, so every rank
knows where the data starts without communication.  The parallel reading and
writing of the data lies in :mod:`distscan.io`.
"""

from __future__ import annotations

import io as _pyio
import math
import os
import stat as _stat
import tokenize
from dataclasses import dataclass, field

import numpy as np
from numpy.lib import format as _format

__all__ = ["MAGIC", "NpyHeader", "read_header", "header_bytes", "open_regular", "file_kind", "check_same_file",
           "check_unchanged"]

MAGIC = b"\x93NUMPY"
# A header longer than this is not something distscan would scan (structured dtypes are refused).
_MAX_HEADER = 1 << 20


@dataclass(frozen=True)
class NpyHeader:
    """What an ``.npy`` header says about the array that follows it.

    Attributes
    ----------
    path : str
        The file.
    shape : tuple of int
        Array shape; axis 0 is the distributed (scanned) axis.
    dtype : numpy.dtype
        Element dtype as stored (byte order included).
    offset : int
        Byte offset of the first element.
    version : tuple of int
        Format version, e.g. ``(1, 0)``.
    file_id : tuple or None
        ``(host, st_dev, st_ino)`` of the file the header was read from (:func:`check_same_file`).
    file_state : tuple or None
        ``(st_size, st_mtime_ns)`` of that file as its header was read (:func:`check_unchanged`).
    """

    path: str
    shape: tuple
    dtype: np.dtype
    offset: int
    version: tuple
    file_id: tuple = field(default=None, compare=False)
    file_state: tuple = field(default=None, compare=False)

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def row_items(self) -> int:
        """Elements per row (product of the trailing dimensions)."""
        return math.prod(int(d) for d in self.shape[1:])  # Python ints: a huge shape cannot wrap to 0

    @property
    def row_bytes(self) -> int:
        return self.row_items * self.dtype.itemsize

    @property
    def size(self) -> int:
        return self.rows * self.row_items

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes


def _not_npy(path, why):
    return ValueError(f"{path} is not a valid .npy file: {why}")


def _short(exc, limit: int = 80) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _npz_error(path) -> ValueError:
    """The message for an ``.npz`` archive given as input: which arrays it holds and how to extract one."""
    names = []
    try:
        import zipfile
        with zipfile.ZipFile(path) as z:
            names = [n[:-4] if n.endswith(".npy") else n for n in z.namelist()]
    except Exception:  # noqa: BLE001 - the advice below holds without the names
        pass
    name = names[0] if names else "NAME"
    listing = f" (arrays: {', '.join(names[:10])}{', ...' if len(names) > 10 else ''})" if names else ""
    return ValueError(f"{path} is an .npz archive{listing}, not an .npy file; extract one array first: "
                      f"python -c \"import numpy as np; np.save('{name}.npy', np.load('{path}')['{name}'])\"")


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a character device"``, ... for a ``st_mode`` (with its article)."""
    for test, name in ((_stat.S_ISREG, "a regular file"), (_stat.S_ISDIR, "a directory"),
                       (_stat.S_ISFIFO, "a FIFO (named pipe)"), (_stat.S_ISCHR, "a character device"),
                       (_stat.S_ISBLK, "a block device"), (_stat.S_ISSOCK, "a socket"),
                       (_stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path):
    """Open ``path`` for reading without blocking on a FIFO or device; it must be a regular file.

    Returns an unbuffered binary file object.  Raises ``ValueError`` naming what
    the path is when it is not a regular file (checked on the open descriptor).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not _stat.S_ISREG(mode):
            if _stat.S_ISDIR(mode):
                raise IsADirectoryError(f"input is a directory, not an .npy file: {path}")
            raise ValueError(f"{path} is {file_kind(mode)}, not a regular file; distscan reads .npy files only")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _parse(f, path, file_size):
    """``(shape, fortran_order, dtype, data offset, version)`` from :mod:`numpy.lib.format`, its
    errors said in distscan's words (numpy's own messages may quote a megabyte of header)."""
    try:
        version = _format.read_magic(f)
    except ValueError as exc:
        raise _not_npy(path, "it is too short to hold an .npy header" if "EOF" in str(exc)
                       else "it does not start with the .npy magic string") from None
    readers = {(1, 0): _format.read_array_header_1_0, (2, 0): _format.read_array_header_2_0,
               # 3.0 is 2.0 with a UTF-8 header, which only structured dtypes (refused) need.
               (3, 0): _format.read_array_header_2_0}
    if version not in readers:
        raise _not_npy(path, f"unsupported format version {version[0]}.{version[1]}")
    # The header's length first: numpy would read all of an absurd one before refusing it.
    size = 2 if version == (1, 0) else 4
    raw = f.peek(size)[:size]
    if len(raw) == size and int.from_bytes(raw, "little") > _MAX_HEADER:
        raise _not_npy(path, f"header of {int.from_bytes(raw, 'little')} bytes is implausibly large")
    try:
        shape, fortran, dtype = readers[version](f, max_header_size=_MAX_HEADER)
    except (RecursionError, MemoryError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else "too large to parse"
        raise _not_npy(path, f"malformed .npy header ({why})") from None
    except (ValueError, TypeError, UnicodeDecodeError, tokenize.TokenError) as exc:
        text = str(exc)
        if isinstance(exc, tokenize.TokenError):  # numpy's header tokenizer: a bracket left open
            why = "the header's dict or shape is not closed"
        elif text.startswith("EOF"):
            why = "the header is truncated"
        elif text.startswith("Header info length"):
            why = f"header of more than {_MAX_HEADER} bytes is implausibly large"
        elif text.startswith(("Header does not contain", "Header is not a dictionary")):
            why = "the header is not a dict with keys 'descr', 'fortran_order', 'shape'"
        elif text.startswith("shape is not valid"):
            why = "bad shape in the header"
        elif text.startswith("fortran_order is not"):
            why = "bad fortran_order in the header"
        elif text.startswith("descr is not"):
            cause = exc.__cause__
            why = f"bad dtype description ({_short(cause) if cause else 'not a dtype'})"
        else:
            cause = exc.__cause__ or exc
            why = f"malformed .npy header ({type(cause).__name__}: {_short(cause)})"
        raise _not_npy(path, why) from None
    # numpy's parser takes any int, bool included: (True,) was read as (1,) where np.load refuses it
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise _not_npy(path, f"bad shape {shape!r} in the header")
    return shape, fortran, dtype, f.tell(), version


def read_header(path) -> NpyHeader:
    """Parse and validate the header of the ``.npy`` file at ``path`` (with :mod:`numpy.lib.format`).

    Only the header is read (plus one ``stat`` to check the data is all there).

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    IsADirectoryError
        If ``path`` is a directory.
    PermissionError
        If the file cannot be read.
    ValueError
        If the file is not a regular file, not an ``.npy`` file (an ``.npz`` archive
        is named as such, with its arrays), is truncated, holds Python objects
        (pickled data is never loaded), is in Fortran order with more than one
        dimension, or is 0-d (nothing to scan along).
    """
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"input file not found: {path}") from None
    except PermissionError:
        raise PermissionError(f"cannot read input file (permission denied): {path}") from None
    except OSError as exc:
        raise OSError(exc.errno, f"cannot use input file {path}: {exc.strerror}") from None
    if _stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"input is a directory, not an .npy file: {path}")
    if not _stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is {file_kind(st.st_mode)}, not a regular file; distscan reads .npy files "
                         "only (save the data to a file first)")
    try:
        f = open_regular(path)
    except PermissionError:
        raise PermissionError(f"cannot read input file (permission denied): {path}") from None
    with f:
        if f.read(4) == b"PK\x03\x04":
            raise _npz_error(path)
        f.seek(0)
        fst = os.fstat(f.fileno())
        file_size, file_id = fst.st_size, (os.uname().nodename, fst.st_dev, fst.st_ino)
        file_state = (fst.st_size, fst.st_mtime_ns)
        shape, fortran, dtype, offset, version = _parse(_pyio.BufferedReader(f), path, file_size)
    if dtype.hasobject:
        raise ValueError(f"{path} holds Python objects (a pickled array); distscan never loads pickled "
                         "data and scans numeric arrays only")
    if dtype.names is not None or dtype.subdtype is not None:
        raise ValueError(f"{path} has structured dtype {dtype}; distscan scans plain numeric arrays only")
    if len(shape) == 0:
        raise ValueError(f"{path} holds a 0-d array (a single scalar); there is no axis to scan")
    if fortran and sum(s != 1 for s in shape) > 1:
        raise ValueError(f"{path} is stored in Fortran (column-major) order; distscan needs C order along "
                         "axis 0 (re-save it with numpy.save(path, numpy.ascontiguousarray(a)))")
    header = NpyHeader(path=path, shape=tuple(shape), dtype=dtype, offset=offset, version=version, file_id=file_id,
                       file_state=file_state)
    if header.nbytes >= 1 << 63:  # beyond any file's size and any index of int64
        raise ValueError(f"{path} promises {'x'.join(map(str, shape))} {dtype}: {header.nbytes} bytes, more "
                         "than any file can hold")
    if file_size < offset + header.nbytes:
        raise ValueError(f"{path} is truncated: the header promises {header.nbytes} bytes of data "
                         f"({'x'.join(map(str, shape)) or '()'} {dtype}) but the file holds only "
                         f"{max(file_size - offset, 0)}")
    return header


def check_same_file(header: NpyHeader, fd: int) -> None:
    """Raise ``ValueError`` if ``fd`` (opened by ``header.path``) is not the file the header was read
    from: a file renamed over the input after rank 0 read its header was scanned as the old header
    said, and the garbage published with exit 0 (found 2026-11-27); or if that file's size or
    modification time changed since (rewritten in place).  Told on the host that read the header
    only: another host may mount the folder as another device, or hold its own copy."""
    if header.file_id is None or header.file_id[0] != os.uname().nodename:
        return
    _refuse_if_moved(header, os.fstat(fd), "replaced by another file", "after its header was read", "scanned")


def check_unchanged(header: NpyHeader) -> None:
    """Raise ``ValueError`` if the file now at ``header.path`` is not the one whose header was read,
    or if its size or modification time differ from theirs then: an input rewritten in place during
    a run (same inode; ``open(path, 'r+b')`` writes, a truncation) was scanned half old, half new,
    and published with exit 0.  Called just before the output is published.  A rewrite that keeps
    both the size and the modification time is not seen (only a second read would see it).  On the
    host that read the header only, as :func:`check_same_file`."""
    if header.file_id is None or header.file_id[0] != os.uname().nodename:
        return
    try:
        st = os.stat(header.path)
    except OSError:
        st = None
    _refuse_if_moved(header, st, "replaced or removed", "while it was scanned", "published")


def _refuse_if_moved(header: NpyHeader, st, replaced: str, when: str, outcome: str) -> None:
    """Raise ``ValueError`` if ``st`` (None: no file) is not the file of ``header.file_id``, or its size or
    modification time changed (:func:`_change`); ``replaced``, ``when`` and ``outcome`` word the message."""
    if st is None or (st.st_dev, st.st_ino) != tuple(header.file_id[1:]):
        raise ValueError(f"{header.path} was {replaced} {when}; nothing was {outcome} (run again once the file "
                         "stays put)")
    change = _change(header, st)
    if change:
        raise ValueError(f"{header.path} was changed in place {when} ({change}); nothing was {outcome} (run again "
                         "once the file stays put)")


def _change(header: NpyHeader, st) -> str:
    """How ``st`` differs from the file's size and modification time when its header was read, or ''."""
    if header.file_state is None:
        return ""
    size, mtime_ns = header.file_state
    if st.st_size != size:
        return f"{'truncated' if st.st_size < size else 'extended'} from {size} to {st.st_size} bytes"
    if st.st_mtime_ns != mtime_ns:
        return "its modification time changed"
    return ""


def header_bytes(shape, dtype) -> bytes:
    """The ``.npy`` header (magic to padding) for a C-ordered array of ``shape`` and ``dtype``.

    Version 1.0 where the header fits, else 2.0; padded so the data starts on a
    64-byte boundary.  Deterministic: every rank can compute it (and so the data
    offset) without communication.
    """
    d = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
         "shape": tuple(int(s) for s in shape)}
    buf = _pyio.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buf, d)
    except ValueError:
        buf = _pyio.BytesIO()
        np.lib.format.write_array_header_2_0(buf, d)
    return buf.getvalue()

