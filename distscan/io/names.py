"""The temporary names of outputs being written, their locks, and their removal: a stale one
(its writer gone) is removed by a later run, a live one never; on an interruption every live
temporary file of this process is removed (:func:`emergency_cleanup`)."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat as _stat
import threading


from ..dist.agree import DistScanError
from .npy import file_kind

_TEMP_RE = re.compile(r"\.distscan-([0-9a-f]{8})-([0-9a-f]{8})-([0-9]+)(?:\.old)?\.part$")


def _hash8(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8", "surrogateescape"), digest_size=4).hexdigest()


def _host_tag() -> str:
    # socket.gethostname()'s name (both are the kernel's node name), without loading socket at start-up
    return _hash8(os.uname().nodename)


def temp_name_for(path: str, pid: int = None, old: bool = False) -> str:
    """The temporary file for ``path``: short, visible, in the same folder (``old``: the name
    :func:`keep_aside` keeps the file that was at ``path`` under)."""
    folder, base = os.path.split(os.path.abspath(path))
    pid = os.getpid() if pid is None else pid
    return os.path.join(folder, f"{base[:32]}.distscan-{_hash8(base)}-{_host_tag()}-{pid}{'.old' if old else ''}.part")


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
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        # 'sub/' names a folder even when none exists: the rename onto it would fail after the scan
        raise IsADirectoryError(f"{what} path names a directory (it ends in {path[-1]!r}): {path}; give a file name")
    if os.path.basename(path) in (os.curdir, os.pardir):
        raise IsADirectoryError(f"{what} path names a directory (it ends in {os.path.basename(path)!r}): {path}; "
                                "give a file name")
    # The folder as typed, as the final rename will resolve it ('missing/../o.npy' needs 'missing',
    # which os.path.abspath would fold away)
    folder = os.path.dirname(path) or os.curdir
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise NotADirectoryError(f"{what} folder is not a directory: {folder}")
        raise FileNotFoundError(f"{what} folder does not exist: {folder}")
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        return
    fd_link = _descriptor_link(path) if _stat.S_ISLNK(lst.st_mode) else None
    if fd_link is not None:
        # /dev/stdout, /dev/fd/N: the rename would replace the link itself, not write to the stream
        # (as root, with --force and stdout a file, it replaced the system's /dev/stdout with a .npy,
        # 2026-11-28); refused whatever the descriptor is now (a file, a pipe, a terminal)
        raise FileExistsError(f"{what} {path} is a link to a process's file descriptor ({fd_link}), not a file; "
                              "distscan writes its output to a named file only")
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


def _descriptor_link(path: str):
    """The hop of ``path``'s chain of links that names a process's descriptor (``/proc/PID/fd/N``,
    ``/dev/fd/N``, which ``/dev/stdout`` is), or None."""
    for _ in range(40):  # the kernel's own limit of hops
        try:
            target = os.readlink(path)
        except OSError:
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
        parts = path.split(os.sep)
        if (parts[1:2] == ["proc"] and parts[3:4] == ["fd"]) or parts[1:3] == ["dev", "fd"]:
            return path
    return None


def create_temp(path: str, role: str = None, *, notice=None):
    """Create and lock the temporary file for ``path`` (removing stale ones first).

    Returns ``(temp_path, fd)``: ``fd`` holds the lock and stays open until the
    temporary file is renamed or removed.  ``notice(message)`` is told about each
    stale file removed.  With a ``role`` (:func:`register_temp`'s), the file is registered
    for :func:`emergency_cleanup` as it is created: a signal's watcher thread never finds it
    created and not yet registered (it left such files behind, 1 rank, 2026-11-25).
    """
    folder = os.path.dirname(os.path.abspath(path))
    for cand, why in remove_stale_temps(path):
        if notice is not None:
            notice(f"removed stale temporary file {cand} ({why})")
    temp = temp_name_for(path)
    try:
        with _LIVE_LOCK:
            _refuse_if_interrupted()
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            if role is not None:
                register_temp(temp, os.fstat(fd).st_ino, path, role)
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
# Held while a temporary file is created and registered, and while a signal's watcher thread
# (distscan.cli.signals) removes them: the watcher runs beside the main thread.
_LIVE_LOCK = threading.Lock()


def register_temp(temp: str, ino: int, final: str, role: str) -> None:
    _LIVE[temp] = [ino, final, role, "writing"]


def keep_aside(path: str):
    """Keep the regular file at ``path`` under a second name (a hard link, registered for
    :func:`emergency_cleanup` with the role "old") while a run replaces it: :func:`put_back` if the
    run then fails, :func:`drop_aside` once it has published.  Without it a run that failed after
    its report was moved into place removed the new report and left none (found 2026-11-25).
    Returns the second name, or None where there is no such file or the folder takes no hard link
    (the old report is then lost on such a failure, as before)."""
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    backup = temp_name_for(path, old=True)
    try:
        with _LIVE_LOCK:
            _refuse_if_interrupted()
            os.link(path, backup)
            register_temp(backup, os.stat(backup).st_ino, path, "old")
    except OSError:
        return None
    return backup


def put_back(backup, path: str) -> None:
    """After a failure: the file :func:`keep_aside` kept at ``path`` again, or ``path`` removed
    where there was none (``backup`` None)."""
    try:
        if backup is None:
            os.unlink(path)
        else:
            os.replace(backup, path)
    except OSError:
        pass


def drop_aside(backup) -> None:
    """After success: the kept file's second name removed."""
    if backup is not None:
        try:
            os.unlink(backup)
        except OSError:
            pass


def forget_temps() -> None:
    """Drop the registry of temporary files and the interruption's record (the command line does
    it at the start of a run)."""
    _LIVE.clear()
    clear_interrupted()


# The one record of a signal that a watcher thread (distscan.cli.signals) reported in this run: the
# signal's name, or nothing.  The run then fails at its next agreement, on every rank, and removes
# the file as on any failure; the command's exit status (128 + the signal's number) is derived from
# it (distscan.cli.signals.signalled_status).
_INTERRUPTED: list = []


class Interrupted(DistScanError):
    """A signal ended the run before its output was published."""


def mark_interrupted(signal_name: str) -> None:
    """Record the signal that interrupted this run (the first one reported stays)."""
    if not _INTERRUPTED:
        _INTERRUPTED.append(signal_name)


def _refuse_if_interrupted() -> None:
    """Under ``_LIVE_LOCK``, before a file is created: none once the run is marked.  The watcher
    marks before its cleanup takes the lock, so every file is either created before the cleanup
    (and removed by it) or not at all; rank 0, which creates every file of a run, may then abort
    as soon as its cleanup is done."""
    if _INTERRUPTED:
        raise Interrupted(f"interrupted by {_INTERRUPTED[0]}")


def clear_interrupted() -> None:
    """Forget the interruption's record (a signal ignored because the output was published)."""
    _INTERRUPTED.clear()


def emergency_cleanup() -> tuple:
    """For a signal handler: remove this process's temporary files; returns ``(removed, published)``.

    ``published`` is True when the output already lies under its final name (its
    inode is the temporary file's): the run is past the point of no return.  When
    it is not, companions (the report) that were already renamed are removed too.
    Safe against a concurrent rename: ``unlink`` and ``rename`` of one name are atomic.
    """
    removed, published = [], False
    # A bounded wait: creating a file holds the lock for an open and an fstat only; a folder
    # that hangs (a dead network mount) must not keep the signal from ending the run.
    locked = _LIVE_LOCK.acquire(timeout=5)
    try:
        live = list(_LIVE.items())
    finally:
        if locked:
            _LIVE_LOCK.release()
    for temp, (ino, final, role, state) in live:
        if role == "old":  # a file kept aside (keep_aside): put back or dropped below
            continue
        try:
            os.unlink(temp)
            removed.append(temp)
        except OSError:
            pass
    published = is_published()
    if not published:
        for temp, (ino, final, role, state) in list(_LIVE.items()):
            if role not in ("output", "old"):
                try:
                    if os.stat(final).st_ino == ino:
                        os.unlink(final)
                except OSError:
                    pass
    for temp, (ino, final, role, state) in list(_LIVE.items()):
        if role == "old" and os.path.lexists(temp):
            if published:
                drop_aside(temp)
            else:
                put_back(temp, final)
    return removed, published


def is_published() -> bool:
    """Whether this process's output lies under its final name (its inode is the temporary
    file's): the run is past the point of no return."""
    for temp, (ino, final, role, state) in list(_LIVE.items()):
        if role == "output":
            try:
                if os.stat(final).st_ino == ino:
                    return True
            except OSError:
                pass
    return False


def fsync_folder(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def is_live(temp: str) -> bool:
    """Whether ``temp`` is a temporary file of this process still being written."""
    return temp in _LIVE


def interrupted_by():
    """The name of the signal that interrupted this process, or None."""
    return _INTERRUPTED[0] if _INTERRUPTED else None
