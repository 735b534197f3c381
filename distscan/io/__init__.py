"""Parallel ``.npy`` files: each rank reads its slice, all ranks write one file.

The ``.npy`` format itself (parsing and checking a header, building one) lies in
:mod:`distscan.io.npy`; its names are re-exported here.  This module holds what
the ranks do together:

- :func:`open_input` reads the header once on rank 0 and broadcasts it, so every
  rank gets the same header or the same exception.
- :func:`block_split` is the balanced block distribution of rows over ranks
  (parts differ by at most one row, the first ``n % size`` ranks get the extra
  row); :func:`read_rows` reads rows ``[start, stop)`` only, in chunks of at most
  ``CHUNK_BYTES`` so slices past 2 GiB work.
- :class:`NpyWriter` writes one ``.npy`` in parallel: rank 0 writes the header,
  every rank its rows with positional writes (``os.pwritev`` on its own file
  descriptor, safe from several threads at once; MPI-IO's independent
  ``File.Write_at`` with ``method="mpiio"``), so a rank that fails cannot leave
  the others blocked inside a collective write.  The file is written under a
  short temporary name in the destination folder (see :func:`temp_name_for`;
  locked by its creator, so a later run can tell a stale one from a live one and
  removes stale ones) and renamed only after every rank succeeded; on failure
  the temporary file is removed.  Nothing is flushed to the disk unless asked
  (``fsync=True``: the data, then the folder after the rename), as
  :func:`numpy.save` and ``cp`` do.  Inputs must be regular files (a FIFO or
  device is refused, never opened blocking); ``--force`` replaces regular files
  only.

Every step that can fail on some ranks only is agreed collectively before the
next collective (see :mod:`distscan.dist.agree`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import socket
import stat as _stat
from typing import Callable, Optional

import numpy as np

from ..dist.agree import DistScanError, abort_job, agree, decide_on_root
from .npy import (MAGIC, NpyHeader, _npz_error, file_kind, header_bytes, open_regular,  # noqa: F401 - re-exported
                   read_header)

__all__ = ["NpyHeader", "read_header", "open_input", "block_split", "read_rows",
           "header_bytes", "NpyWriter", "same_file", "CHUNK_BYTES"]

#: Largest single read or write call, in bytes (MPI counts are C ints; POSIX reads may be short).
CHUNK_BYTES = 1 << 30



def open_input(path, comm=None) -> NpyHeader:
    """:func:`read_header` on rank 0, result (or exception) broadcast to every rank of ``comm``."""
    return decide_on_root(comm, lambda: read_header(path))


def block_split(n: int, size: int, rank: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of ``n`` rows that rank ``rank`` of ``size`` owns.

    Balanced block distribution: the first ``n % size`` ranks get ``n // size + 1``
    rows, the others ``n // size``; parts are contiguous, in rank order, and
    cover ``[0, n)`` exactly.

    Raises
    ------
    ValueError
        If ``n < 0``, ``size < 1`` or ``rank`` is not in ``[0, size)``.
    """
    if n < 0 or size < 1 or not 0 <= rank < size:
        raise ValueError(f"block_split: bad arguments n={n}, size={size}, rank={rank}")
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def read_rows(header: NpyHeader, start: int, stop: int, *, out=None,
              progress: Optional[Callable[[int], None]] = None, chunk_bytes: int = 0, fd: Optional[int] = None) -> np.ndarray:
    """Read rows ``[start, stop)`` of the array described by ``header``; nothing else is read.

    Returns an array of shape ``(stop - start, *header.shape[1:])`` in native
    byte order (converted in place if the file is byte-swapped).  ``out`` (a
    C-contiguous array of the file's dtype and that shape) receives the rows.
    ``fd``: an open descriptor of the file (positional reads, safe from several
    threads at once); otherwise the file is opened for this call.  ``progress``,
    if given, is called with the number of bytes read after each chunk.

    Raises
    ------
    ValueError
        If the rows are out of range or the file ends early.
    OSError
        If reading fails.
    """
    if not 0 <= start <= stop <= header.rows:
        raise ValueError(f"rows [{start}, {stop}) out of range for {header.rows} rows")
    shape = (stop - start,) + tuple(header.shape[1:])
    if out is None:
        out = np.empty(shape, header.dtype)
    elif out.shape != shape or out.dtype != header.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {header.dtype} array of shape {shape}")
    buf = memoryview(out.reshape(-1).view(np.uint8))
    total = len(buf)
    chunk = chunk_bytes or CHUNK_BYTES
    pos = header.offset + start * header.row_bytes
    done = 0
    f = open_regular(header.path) if fd is None else None
    try:
        rfd = f.fileno() if f is not None else fd
        while done < total:
            got = os.preadv(rfd, [buf[done: done + min(chunk, total - done)]], pos + done)
            if not got:
                raise ValueError(f"{header.path} is truncated: file ended {total - done} bytes early "
                                 f"while reading rows [{start}, {stop})")
            done += got
            if progress is not None:
                progress(got)
    finally:
        if f is not None:
            f.close()
    if not out.dtype.isnative:
        out = out.byteswap(inplace=True).view(out.dtype.newbyteorder("="))
    return out


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name the same file (resolving links; ``b`` may not exist)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


# -- temporary files: short visible names, a lock held for the whole run, stale ones removed ----------
#
# A temporary output is ``<first 32 characters of the name>.distscan-<tag>-<host>-<pid>.part`` in the
# output's folder: ``tag`` hashes the full output name (so a later run to the same output finds it),
# ``host`` hashes the host name, ``pid`` is the process that created it.  That process holds an
# exclusive ``flock`` on it until it is renamed or removed.  A later run treats one as stale (and
# removes it) when its lock can be taken and, if it comes from this host, its process is gone: a
# live run is never broken.  The name stays under 100 bytes whatever the output name's length.

_TEMP_RE = re.compile(r"\.distscan-([0-9a-f]{8})-([0-9a-f]{8})-([0-9]+)\.part$")


def _hash8(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8", "surrogateescape"), digest_size=4).hexdigest()


def _host_tag() -> str:
    return _hash8(socket.gethostname())


def temp_name_for(path: str, pid: int = None) -> str:
    """The temporary file for ``path``: short, visible, in the same folder."""
    folder, base = os.path.split(os.path.abspath(path))
    pid = os.getpid() if pid is None else pid
    return os.path.join(folder, f"{base[:32]}.distscan-{_hash8(base)}-{_host_tag()}-{pid}.part")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    try:  # a zombie (killed, not yet reaped) holds no files and runs no more
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _try_lock(fd: int):
    """True: locked; False: held by someone else; None: locks do not work here."""
    import fcntl
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        return None


def remove_stale_temps(path: str) -> list:
    """Remove temporary files that earlier, dead runs to ``path`` left; returns ``[(file, why), ...]``.

    A candidate is stale when nobody holds its lock and, if it was made on this
    host, its process no longer exists (a temporary file from another host whose
    lock cannot be tested is left alone).
    """
    folder, base = os.path.split(os.path.abspath(path))
    prefix, tag, host = f"{base[:32]}.distscan-", _hash8(base), _host_tag()
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        m = _TEMP_RE.search(name[len(base[:32]):])
        if m is None or m.group(1) != tag:
            continue
        cand, pid, same_host = os.path.join(folder, name), int(m.group(3)), m.group(2) == host
        if same_host and (pid == os.getpid() or _pid_alive(pid)):
            continue
        try:
            fd = os.open(cand, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if not _stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            locked = _try_lock(fd)
            if locked is False or (locked is None and not same_host):
                continue
            os.unlink(cand)
            why = (f"left by process {pid}, which is no longer running" if same_host
                   else f"left by process {pid} on another host, whose lock was released")
            removed.append((cand, why))
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def check_replaceable(path: str, force: bool, what: str = "output") -> None:
    """Raise unless ``path`` is absent, or (with ``force``) a regular file or a link to one / to nothing."""
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return
    try:
        st = os.stat(path)
    except OSError:
        st = lst  # a dangling link: replacing it touches nothing else
    if _stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{what} path is a directory: {path}")
    if not _stat.S_ISREG(st.st_mode) and not _stat.S_ISLNK(st.st_mode):
        link = " (through a symbolic link)" if _stat.S_ISLNK(lst.st_mode) else ""
        raise FileExistsError(f"{what} {path} exists and is {file_kind(st.st_mode)}{link}, not a regular file; "
                              "distscan replaces regular files only, even with --force")
    if not force:
        raise FileExistsError(f"{what} file exists: {path} (use --force to overwrite it)")


def create_temp(path: str, *, notice=None):
    """Create and lock the temporary file for ``path`` (removing stale ones first).

    Returns ``(temp_path, fd)``: ``fd`` holds the lock and stays open until the
    temporary file is renamed or removed.  ``notice(message)`` is told about each
    stale file removed.
    """
    folder = os.path.dirname(os.path.abspath(path))
    for cand, why in remove_stale_temps(path):
        if notice is not None:
            notice(f"removed stale temporary file {cand} ({why})")
    temp = temp_name_for(path)
    try:
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except PermissionError:
        raise PermissionError(f"cannot write to folder (permission denied): {folder}") from None
    except FileExistsError:
        raise FileExistsError(f"temporary file {temp} exists and belongs to this process: another run to "
                              f"{path} is in progress in this process") from None
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create a file in folder {folder}: {exc.strerror}") from None
    _try_lock(fd)  # best effort: where locks do not work, stale files are told by host and pid
    return temp, fd


# Files this process is writing, for a signal handler: temp -> [inode, final path, role, state].
_LIVE: dict = {}


def _register(temp: str, ino: int, final: str, role: str) -> None:
    _LIVE[temp] = [ino, final, role, "writing"]


def forget_temps() -> None:
    """Drop the registry of temporary files (the command line does it at the start of a run)."""
    _LIVE.clear()
    _INTERRUPTED.clear()


# Signals a watcher thread recorded (distscan.cli) for a rank that held no temporary file yet:
# the run then fails at its next agreement, on every rank, and removes the file as on any failure.
_INTERRUPTED: list = []


class Interrupted(DistScanError):
    """A signal ended the run before its output was published."""


def mark_interrupted(signal_name: str) -> None:
    _INTERRUPTED.append(signal_name)


def emergency_cleanup() -> tuple:
    """For a signal handler: remove this process's temporary files; returns ``(removed, published)``.

    ``published`` is True when the output already lies under its final name (its
    inode is the temporary file's): the run is past the point of no return.  When
    it is not, companions (the report) that were already renamed are removed too.
    Safe against a concurrent rename: ``unlink`` and ``rename`` of one name are atomic.
    """
    removed, published = [], False
    for temp, (ino, final, role, state) in list(_LIVE.items()):
        try:
            os.unlink(temp)
            removed.append(temp)
        except OSError:
            pass
        if role == "output":
            try:
                if os.stat(final).st_ino == ino:
                    published = True
            except OSError:
                pass
    if not published:
        for temp, (ino, final, role, state) in list(_LIVE.items()):
            if role != "output":
                try:
                    if os.stat(final).st_ino == ino:
                        os.unlink(final)
                except OSError:
                    pass
    return removed, published


def _fsync_folder(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class NpyWriter:
    """Write one ``.npy`` file from all ranks of ``comm``; it appears only when complete.

    Usage (every rank)::

        with NpyWriter(path, shape, dtype, comm=comm) as w:   # collective: creates the temporary file
            w.write_rows(start, rows)                           # rank-local, any number of times
            w.close()                                           # optional: collective, data on disk
            ...                                                 # e.g. verify w.temp_path
        # on leaving the block without error on any rank: renamed to ``path``
        # on an error on any rank: the temporary file is removed and every rank raises

    The body of the ``with`` block must not enter collectives that a failing rank
    would skip (agree inside it instead): the exit itself is where failures are agreed.

    Parameters
    ----------
    path : str
        Final output path.
    shape, dtype
        Global array shape (axis 0 distributed) and dtype (written in native byte order).
    comm : mpi4py communicator or None
        None writes from this process alone with plain file I/O.
    force : bool
        Replace an existing file at ``path``.
    protect : sequence of str
        Paths that must not be overwritten (the input); refused with ``ValueError``.
    method : ``"posix"`` or ``"mpiio"``
        One ``os.pwritev`` file descriptor per rank (default: measured faster, and
        :meth:`write_at` may be called from several threads), or MPI-IO.
    fsync : bool
        Make the data durable before the rename (``fsync`` of the file on every
        rank), and the rename after it (``fsync`` of the folder).  Off by default.
    """

    def __init__(self, path, shape, dtype, *, comm=None, force=False, protect=(), method=None,
                 chunk_bytes: int = 0, notice=None, fsync: bool = False):
        self.path = os.fspath(path)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype).newbyteorder("=")
        self.comm = comm
        self.force = force
        self.protect = tuple(os.fspath(p) for p in protect)
        self.method = method or "posix"
        self.fsync = bool(fsync)
        if self.method not in ("mpiio", "posix"):
            raise ValueError(f"unknown write method {self.method!r}")
        if self.method == "mpiio" and comm is None:
            raise ValueError("method='mpiio' needs a communicator")
        self.chunk_bytes = chunk_bytes or CHUNK_BYTES
        self.header = header_bytes(self.shape, self.dtype)
        self.offset = len(self.header)
        self.row_bytes = self.dtype.itemsize * (int(np.prod(self.shape[1:], dtype=np.int64))
                                                if len(self.shape) > 1 else 1)
        self.temp_path = None
        self.notice = notice  # notice(message): told about stale temporary files removed (rank 0)
        self._ino = None
        self._lock_fd = None  # rank 0: holds the temporary file's lock
        self._companions = []  # rank 0: (temp, final, lock fd) published with the output
        self._fh = None      # MPI.File or int (POSIX fd)
        self._closed = False
        self._error = None   # first local failure inside the block

    # -- collective steps -------------------------------------------------------------------

    def _prepare(self):
        """Rank 0: check the destination and create the empty temporary file (locked).

        Returns ``(temp_path, inode)``; the lock's descriptor stays in ``self._lock_fd``.
        """
        path = self.path
        for p in self.protect:
            if same_file(p, path):
                raise ValueError(f"output {path} is the input file; choose another output name")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.exists(folder):
            raise FileNotFoundError(f"output folder does not exist: {folder}")
        if not os.path.isdir(folder):
            raise NotADirectoryError(f"output folder is not a directory: {folder}")
        check_replaceable(path, self.force)
        try:
            temp, fd = create_temp(path, notice=self.notice)
        except PermissionError:
            raise PermissionError(f"cannot write to output folder (permission denied): {folder}") from None
        self._lock_fd = fd
        try:  # the final size at once: writes from many threads then never extend the file
            os.ftruncate(fd, self.offset + self.shape[0] * self.row_bytes)
        except OSError:
            pass
        ino = os.fstat(fd).st_ino
        _register(temp, ino, path, "output")
        return temp, ino

    def __enter__(self):
        self.temp_path, self._ino = decide_on_root(self.comm, self._prepare)
        if self.temp_path not in _LIVE:
            _register(self.temp_path, self._ino, self.path, "output")
        err = None
        try:
            if self.method == "mpiio":
                from mpi4py import MPI
                self._fh = MPI.File.Open(self.comm, self.temp_path, MPI.MODE_WRONLY)
            else:
                self._fh = os.open(self.temp_path, os.O_WRONLY)
        except Exception as exc:  # noqa: BLE001
            err = OSError(f"cannot open {self.temp_path} for writing: {exc}")
        self._agree_open(err)
        try:
            if self.rank == 0:
                self._write_at(0, memoryview(self.header))
        except Exception as exc:  # noqa: BLE001 - agreed at exit
            self._error = exc
        return self

    def attach(self, path, write) -> None:
        """Collective: publish ``path`` together with the output; ``write(f)`` fills it (rank 0, text).

        The file is written now under a temporary name in its folder (so a full
        disk or a bad path fails before anything is published) and renamed just
        before the output; if publishing the output fails, it is removed again.
        Must be called inside the ``with`` block by every rank; raises on every
        rank if it fails.
        """
        path = os.fspath(path)

        def make():
            check_replaceable(path, True, "report")
            temp, fd = create_temp(path, notice=self.notice)
            _register(temp, os.fstat(fd).st_ino, path, "companion")
            self._companions.append((temp, path, fd))
            with os.fdopen(os.dup(fd), "w") as f:
                write(f)
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())

        err = None
        try:
            if self.rank == 0:
                make()
        except Exception as exc:  # noqa: BLE001 - agreed below
            err = exc
        self._agree_or_remove(err)

    @property
    def rank(self) -> int:
        return 0 if self.comm is None else self.comm.Get_rank()

    def _agree_open(self, err):
        if self.comm is None or self.comm.Get_size() == 1:
            if err is not None:
                self._remove_temp()
                raise err
            return
        from mpi4py import MPI
        failed = self.comm.allreduce(1 if err is not None else 0, op=MPI.SUM)
        if failed == 0:
            return
        if failed < self.comm.Get_size() and self.method == "mpiio":
            # Some ranks hold an open MPI file, some do not: closing it is a collective the
            # others cannot join.  No way to agree without a hang: abort the job.
            import sys
            sys.stderr.write(f"distscan: error: rank {self.rank}: MPI-IO open succeeded on some ranks "
                             f"only ({err}); aborting\n")
            abort_job(1)
        if self.method == "posix" and self._fh is not None:
            os.close(self._fh)
            self._fh = None
        if self.rank == 0:
            self._remove_temp()
        agree(self.comm, err)

    def write_rows(self, start: int, rows, progress: Optional[Callable[[int], None]] = None) -> None:
        """Write ``rows`` (an array of ``dtype`` with the trailing shape) at global row ``start``.

        Rank-local (no communication).  A failure is remembered and raised on
        every rank when the ``with`` block ends; it is also raised here.
        """
        try:
            rows = np.ascontiguousarray(rows)
            if rows.dtype != self.dtype or tuple(rows.shape[1:]) != self.shape[1:] or rows.ndim != len(self.shape):
                raise ValueError(f"write_rows: got {rows.dtype} {rows.shape}, expected {self.dtype} "
                                 f"(n, {', '.join(map(str, self.shape[1:]))})")
            if not 0 <= start <= start + rows.shape[0] <= self.shape[0]:
                raise ValueError(f"write_rows: rows [{start}, {start + rows.shape[0]}) outside [0, {self.shape[0]})")
            buf = memoryview(rows.reshape(-1).view(np.uint8))
            pos = self.offset + start * self.row_bytes
            for lo in range(0, len(buf), self.chunk_bytes):
                piece = buf[lo: lo + self.chunk_bytes]
                self._write_at(pos + lo, piece)
                if progress is not None:
                    progress(len(piece))
        except Exception as exc:  # noqa: BLE001
            if self._error is None:
                self._error = exc
            raise

    def write_at(self, pos: int, data) -> None:
        """Write the bytes of ``data`` (a buffer) at byte ``pos`` of the file (header included).

        Rank-local and safe from several threads at once (``method="posix"``); the
        caller keeps inside its own rows.  A failure is remembered (raised on every
        rank when the ``with`` block ends) and raised here.
        """
        try:
            piece = memoryview(data).cast("B")
            for lo in range(0, len(piece), self.chunk_bytes):
                self._write_at(pos + lo, piece[lo: lo + self.chunk_bytes])
        except Exception as exc:  # noqa: BLE001
            if self._error is None:
                self._error = exc
            raise

    def _write_at(self, pos: int, piece: memoryview) -> None:
        if self.method == "mpiio":
            from mpi4py import MPI
            status = MPI.Status()
            self._fh.Write_at(pos, [piece, MPI.BYTE], status)
            written = status.Get_count(MPI.BYTE)
            if written != len(piece):
                raise OSError(f"short write to {self.temp_path}: {written} of {len(piece)} bytes at {pos}")
        else:
            done = 0
            while done < len(piece):
                got = os.pwritev(self._fh, [piece[done:]], pos + done)
                if got <= 0:
                    raise OSError(f"short write to {self.temp_path}: {done} of {len(piece)} bytes at {pos}")
                done += got

    def close(self) -> None:
        """Collective: flush and close the temporary file; raises on every rank if any rank failed.

        After it, ``temp_path`` holds the complete file (e.g. to verify it before it is published).
        """
        if self._closed:
            return
        self._agree_or_remove(self._close_local(self._error))

    def _agree_or_remove(self, err) -> None:
        """Agree on ``err`` across ranks; if any rank failed, rank 0 removes the temporary file."""
        if err is None and _INTERRUPTED:
            err = Interrupted(f"interrupted by {_INTERRUPTED[0]}")
        try:
            agree(self.comm, err)
        except BaseException:
            if self.rank == 0:
                self._remove_temp()
            raise

    def _close_local(self, err):
        self._closed = True
        try:
            if self.method == "mpiio":
                if self.fsync:
                    self._fh.Sync()
                self._fh.Close()
            else:
                if self.fsync:
                    os.fsync(self._fh)
                os.close(self._fh)
        except Exception as exc:  # noqa: BLE001
            err = err or OSError(f"cannot finish writing {self.temp_path}: {exc}")
        self._fh = None
        return err

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and not isinstance(exc, Exception):
            # KeyboardInterrupt, SystemExit and the like: no agreement (the caller ends the job),
            # but the temporary files go on this rank (unlinking twice is harmless).
            self._remove_temp()
            return False
        err = self._error or exc
        if not self._closed:
            err = self._close_local(err)
        # One agreement for everything that happened on this rank inside the block.
        self._agree_or_remove(err)
        decide_on_root(self.comm, self._commit)
        return False

    def _commit(self):
        placed = []
        try:
            for temp, final, _ in self._companions:
                check_replaceable(final, True, "report")
                os.replace(temp, final)
                placed.append(final)
            check_replaceable(self.path, self.force)
            if self.force:
                os.replace(self.temp_path, self.path)
            else:
                # link() refuses to replace, so a file that appeared meanwhile is not clobbered.
                try:
                    os.link(self.temp_path, self.path)
                except FileExistsError:
                    raise FileExistsError(f"output file exists: {self.path} (use --force to overwrite it)") \
                        from None
                except OSError:
                    if os.path.lexists(self.path):
                        raise FileExistsError(f"output file exists: {self.path} (use --force to overwrite it)") \
                            from None
                    os.rename(self.temp_path, self.path)
            if self.fsync:  # the rename itself, durable
                _fsync_folder(self.path)
        except BaseException:
            for final in placed:
                try:
                    os.unlink(final)
                except OSError:
                    pass
            raise
        finally:
            self._remove_temp()

    def _remove_temp(self):
        """Remove the temporary files (rank 0, or any rank after a failure) and release the locks."""
        for temp in [self.temp_path] + [c[0] for c in self._companions]:
            if temp is not None:
                try:
                    os.unlink(temp)
                except FileNotFoundError:
                    pass
                except OSError:
                    pass
        for fd in [self._lock_fd] + [c[2] for c in self._companions]:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._lock_fd = None
        self._companions = []
