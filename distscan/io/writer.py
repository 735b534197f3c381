"""One ``.npy`` written by every rank (:class:`NpyWriter`): rank 0 the header, every rank its rows
with positional writes, under a temporary name renamed when every rank succeeded."""

from __future__ import annotations

import errno
import os
import sys
from typing import Callable, Optional

import numpy as np

from ..dist.agree import abort_job, agree, decide_on_root
from .names import (Interrupted, check_replaceable, create_temp, drop_aside, fsync_folder, interrupted_by, is_live,
                    keep_aside, put_back, register_temp)
from .npy import header_bytes
from .read import CHUNK_BYTES, same_file


def _cannot_write(what: str, exc: OSError) -> OSError:
    """``exc`` as one line that names the file (``what``): a full disk said "[Errno 28] No space
    left on device" alone (review of 2026-11-25)."""
    message = f"cannot write {what}: {exc.strerror or exc}"
    return OSError(exc.errno, message) if exc.errno is not None else OSError(message)


def _mpi_os_error(exc) -> OSError:
    """An MPI-IO exception (``mpi4py.MPI.Exception``) as an OSError of one line: MPICH's message
    is an error stack of several lines that names a file handle's address, not the file, with the
    system's words last (``ADIOI_GEN_WRITECONTIG(80).....: Other I/O error File too large``); Open
    MPI's is one line (``MPI_ERR_IO: input/output error``)."""
    from mpi4py import MPI
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = lines[-1].split(": ", 1)[-1] if len(lines) > 1 else (lines[0] if lines else "")
    try:
        klass = exc.Get_error_class()
    except Exception:  # noqa: BLE001 - the words alone then
        klass = None
    code = {MPI.ERR_NO_SPACE: errno.ENOSPC, MPI.ERR_QUOTA: errno.EDQUOT, MPI.ERR_ACCESS: errno.EACCES,
            MPI.ERR_READ_ONLY: errno.EROFS}.get(klass)  # no errno claimed for the other classes
    reason = " ".join(reason.split()) or (os.strerror(code) if code else "MPI-IO error")
    return OSError(code, reason) if code else OSError(reason)


def _in_words(exc: BaseException) -> str:
    """``exc``'s message, an MPI exception's as one line (:func:`_mpi_os_error`)."""
    mpi = sys.modules.get("mpi4py.MPI")  # loaded where the exception is MPI's
    if mpi is not None and isinstance(exc, mpi.Exception):
        return str(_mpi_os_error(exc))
    return str(exc)


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
                raise ValueError(f"output {path} is the input file {p} (an input of this job); choose another output name")
        check_replaceable(path, self.force)  # also the folder, as typed: missing or not a directory
        folder = os.path.dirname(os.path.abspath(path))
        try:
            temp, fd = create_temp(path, "output", notice=self.notice)
        except PermissionError:
            raise PermissionError(f"cannot write to output folder (permission denied): {folder}") from None
        self._lock_fd = fd
        try:  # the final size at once: writes from many threads then never extend the file
            os.ftruncate(fd, self.offset + self.shape[0] * self.row_bytes)
        except OSError:
            pass
        return temp, os.fstat(fd).st_ino

    def __enter__(self):
        self.temp_path, self._ino = decide_on_root(self.comm, self._prepare)
        if not is_live(self.temp_path):
            register_temp(self.temp_path, self._ino, self.path, "output")
        err = None
        try:
            if self.method == "mpiio":
                from mpi4py import MPI
                self._fh = MPI.File.Open(self.comm, self.temp_path, MPI.MODE_WRONLY)
            else:
                self._fh = os.open(self.temp_path, os.O_WRONLY)
        except Exception as exc:  # noqa: BLE001
            err = OSError(f"cannot open {self.temp_path} for writing: {_in_words(exc)}")
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
            temp, fd = create_temp(path, "companion", notice=self.notice)
            self._companions.append((temp, path, fd))
            try:
                with os.fdopen(os.dup(fd), "w") as f:
                    write(f)
                    f.flush()
                    if self.fsync:
                        os.fsync(f.fileno())
            except OSError as exc:
                raise _cannot_write(f"the report {path}", exc) from exc

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
            try:
                self._fh.Write_at(pos, [piece, MPI.BYTE], status)
            except MPI.Exception as exc:
                raise _cannot_write(self.path, _mpi_os_error(exc)) from exc
            written = status.Get_count(MPI.BYTE)
            if written != len(piece):
                raise OSError(f"short write to {self.temp_path}: {written} of {len(piece)} bytes at {pos}")
        else:
            done = 0
            while done < len(piece):
                try:
                    got = os.pwritev(self._fh, [piece[done:]], pos + done)
                except OSError as exc:
                    raise _cannot_write(self.path, exc) from exc
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
        if err is None and interrupted_by() is not None:
            err = Interrupted(f"interrupted by {interrupted_by()}")
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
            err = err or OSError(f"cannot finish writing {self.temp_path}: {_in_words(exc)}")
        self._fh = None
        return err

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and not isinstance(exc, Exception):
            # KeyboardInterrupt, SystemExit and the like: no agreement (the caller ends the job),
            # but the temporary files go on this rank (unlinking twice is harmless).
            self._remove_temp()
            return False
        # The exception that left the block first: where it came from an agreement it is the same on
        # every rank, and this rank's own write error (agreed there already) would differ from it
        # on the ranks that had one ("rank 0 (and 1 other rank): rank 1: ...", 2026-11-27).
        err = exc if exc is not None else self._error
        if not self._closed:
            err = self._close_local(err)
        # One agreement for everything that happened on this rank inside the block.
        self._agree_or_remove(err)
        decide_on_root(self.comm, self._commit)
        return False

    def _commit(self):
        placed = []  # (a companion's final name, the file kept aside from there or None)
        try:
            for temp, final, _ in self._companions:
                check_replaceable(final, True, "report")
                backup = keep_aside(final)
                try:
                    os.replace(temp, final)
                except BaseException:
                    drop_aside(backup)
                    raise
                placed.append((final, backup))
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
                fsync_folder(self.path)
        except BaseException:
            for final, backup in placed:
                put_back(backup, final)  # the old report again (or none, where there was none)
            raise
        else:
            for _, backup in placed:
                drop_aside(backup)
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
