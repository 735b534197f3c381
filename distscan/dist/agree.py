"""Collective safety: every rank raises together, or none does.

The verbs: :func:`agree` (one ``Allreduce`` of a failure flag and a fingerprint),
:func:`collectively` (agree on whatever a block raised), :func:`decide_on_root` (rank 0
decides for all), :func:`raise_agreed` / :func:`raise_mismatch` / :func:`fingerprint` (used
by the distributed core, whose one exchange carries the same flag and fingerprint).
Exceptions travel as ``module:QualName`` and message, never pickled.

An MPI program hangs when one rank raises while the others wait in a collective.
Each check that can fail on some ranks only is therefore followed by
:func:`agree`, one ``Allreduce`` of a flag, before the next collective; if any
rank failed, all ranks learn the first failing rank's message and raise the
same :class:`DistScanError` (or the original exception type where every rank can
build it: a standard one, or a user's class in a module every rank has imported,
so ``TypeError``/``ValueError`` and ``except MyError`` stay catchable as such).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
import warnings
import zlib

import numpy as np


class DistScanError(RuntimeError):
    """A failure on one or more ranks, raised identically on every rank."""


_world = []

# Seconds between a rank's last line on stderr and MPI_Abort: the launcher's I/O forwarding
# (MPICH's hydra) can drop what the rank wrote if the abort tears the job down at once
# (tests/cli/test_failures.py::test_lone_failure_aborts_instead_of_hanging lost it 1 time in 3).
ABORT_FLUSH_S = 0.3


def abort_job(code: int) -> None:
    """End every rank of the job (``MPI_Abort`` on COMM_WORLD) after this rank's stderr has had
    time to reach the launcher."""
    from mpi4py import MPI

    sys.stderr.flush()
    time.sleep(ABORT_FLUSH_S)
    # MPICH's MPI_Abort prints its own banner to stderr ("Abort(143) on node 1 (rank 1 in comm 0):
    # application called MPI_Abort(...)"), a second line after this rank's one (found 2026-11-28):
    # stderr goes to /dev/null first, now that the line is out.
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        pass
    MPI.COMM_WORLD.Abort(code)


def default_comm(comm=None):
    """``comm``, else ``MPI.COMM_WORLD``; None when mpi4py is not installed (one process)."""
    if comm is not None:
        return comm
    if not _world:
        try:
            from mpi4py import MPI
            _world.append(MPI.COMM_WORLD)
        except ImportError:
            _world.append(None)
    return _world[0]


# Exception types re-raised as themselves when agreed, found by name (others are found by
# module and qualified name, see _exception_class; what cannot be rebuilt becomes DistScanError).
_KEEP_TYPES = (TypeError, ValueError, FileNotFoundError, FileExistsError, IsADirectoryError,
               PermissionError, NotADirectoryError, MemoryError, OverflowError, OSError)
# Modules whose exception classes every rank may rebuild from their names (no pickle).
_TRUSTED_MODULES = ("builtins", "numpy", "distscan", "cupy", "cupy_backends", "mpi4py", "torch")


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def describe(exc: BaseException) -> str:
    """``module:QualName`` of an exception's type, as :func:`_rebuild` reads it."""
    return f"{type(exc).__module__}:{type(exc).__qualname__}"


def message_of(exc: BaseException) -> str:
    """``str(exc)``, or its type's name where that is empty, or where it raises (a user's exception
    whose ``__str__`` fails raised on its rank alone, before the collective that shares it)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - the others wait in the collective: never raise here
        return f"{type(exc).__name__} (its message raised)"
    if not isinstance(exc, Exception) and text:  # SystemExit(3): "SystemExit: 3", not "3", on the others
        return f"{type(exc).__name__}: {text}"
    return text or type(exc).__name__


def _exception_class(type_name: str, loaded: bool = False):
    """The exception class named ``module:QualName`` if it lies in a trusted module (imported if
    need be), or, with ``loaded``, in any module this process has imported already (``__main__``,
    the user's own modules; never imported here: a name from another rank runs no import), else None."""
    module_name, _, qualname = type_name.rpartition(":")
    if not module_name:
        return None
    trusted = module_name.split(".")[0] in _TRUSTED_MODULES
    try:
        obj = sys.modules.get(module_name)
        if obj is None:  # (a None entry in sys.modules blocks the import: no import then either)
            if not trusted or module_name in sys.modules:
                return None
            obj = importlib.import_module(module_name)
        elif not (trusted or loaded):
            return None
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - not importable here: fall back to DistScanError
        return None
    return obj if isinstance(obj, type) and issubclass(obj, Exception) else None


def _build(type_name: str, message: str, local: BaseException | None = None,
           loaded: bool = False) -> BaseException | None:
    """The failing rank's type built with ``message`` where this rank can (its own error of that
    type, a class found by ``module:QualName`` (:func:`_exception_class`), a standard type, or a
    DistScanError subclass), else None."""
    short = type_name.rpartition(":")[2].rpartition(".")[2]
    candidates = [type(local)] if local is not None and describe(local) == type_name else []
    found = _exception_class(type_name, loaded)
    if found is not None:
        candidates.append(found)
    candidates += [c for c in list(_KEEP_TYPES) + list(_subclasses(DistScanError)) if c.__name__ == short]
    for cls in candidates:
        try:
            built = cls(message)
        except BaseException:  # noqa: BLE001 - a constructor with other arguments (or a user's that raises
            continue           # anything): try the next; never leave the agreement alone
        if isinstance(built, BaseException):
            return built
    return None


def _rebuild(type_name: str, message: str, local: BaseException | None = None) -> BaseException:
    """The agreed exception where one rank decides (:func:`decide_on_root`): :func:`_build` from the
    trusted modules, else DistScanError."""
    built = _build(type_name, message, local)
    return DistScanError(message) if built is None else built


def agree(comm, error: BaseException | None, same: tuple | None = None) -> None:
    """Raise the same exception on every rank if ``error`` is set on any rank.

    ``same``, if given, is ``(what, fields)``: ``fields`` (a dict of name -> value, or any
    value) must also be equal on all ranks, else every rank raises a ``ValueError`` that names
    the first field that differs and what each rank has, e.g. ``dtype differs across ranks:
    rank 0 has float64, rank 1 has int64``.  Keys starting with ``_`` are not compared: they
    add context to that message (e.g. ``_rows``).
    Both checks cost one ``Allreduce`` of three integers on the happy path.
    ``comm`` may be None (no MPI): then ``error`` is simply re-raised.
    Every rank of ``comm`` must call this, with its own error or None.
    """
    if comm is None or comm.Get_size() == 1:
        if error is not None:
            raise error
        return
    from mpi4py import MPI

    crc = fingerprint(same[1]) if same is not None else 0
    # MAX of [failed, crc, -crc]: any failure, and crc equal everywhere iff max == -max(-crc).
    flags = np.array([1 if error is not None else 0, crc, -crc], dtype=np.int64)
    comm.Allreduce(MPI.IN_PLACE, flags, op=MPI.MAX)
    if flags[0]:
        raise_agreed(comm, error)
    if same is not None and flags[1] != -flags[2]:
        raise_mismatch(comm, *same)


# np.errstate modes that turn no floating-point flag into an exception ("warn" does through a
# warnings filter: numpy_may_raise looks at those; "call" and "log" run a handler that may raise).
_QUIET_MODES = frozenset({"ignore", "warn", "print"})


def numpy_may_raise() -> bool:
    """Whether a NumPy floating-point flag (overflow, invalid, ...) may raise an exception in this
    thread: ``np.errstate`` says ``raise``, ``call`` or ``log``, or a warnings filter makes a
    ``RuntimeWarning`` an error (``-W error``; any filter whose category covers it, whatever its
    message or module).  Not seen: a ``warnings.showwarning`` replaced by one that raises."""
    if not _QUIET_MODES.issuperset(np.geterr().values()):
        return True
    for f in warnings.filters:  # (action, message, category, module, lineno)
        if f[0] == "error" and issubclass(RuntimeWarning, f[2]):
            return True
    return False


def fingerprint(fields) -> int:
    """A 32-bit checksum of the fields every rank must share (keys starting with ``_`` excluded)."""
    return zlib.crc32(repr(_compared(fields)).encode())


def _compared(fields):
    if isinstance(fields, dict):
        return {k: v for k, v in fields.items() if not str(k).startswith("_")}
    return fields


def raise_agreed(comm, error):
    """Every rank, once all know that some rank failed: raise the first failing rank's error, as
    one class on every rank: that rank's own where every rank builds it (:func:`_agreed_class`),
    else DistScanError."""
    mine = None if error is None else (describe(error), message_of(error))
    reports = comm.allgather(mine)
    failing = [r for r, rep in enumerate(reports) if rep is not None]
    type_name, message = reports[failing[0]]
    if len(failing) == len(reports) and all(rep == reports[0] for rep in reports):
        text = message  # every rank failed the same way: the message needs no rank
    else:
        others = len(failing) - 1
        suffix = f" (and {others} other rank{'s' if others > 1 else ''})" if others else ""
        text = f"rank {failing[0]}{suffix}: {message}"
    agreed = _agreed_class(comm, type_name, text, error)
    if error is not None and not isinstance(error, Exception):
        # This process's own interrupt or exit (a user's combine raised KeyboardInterrupt or
        # SystemExit(3) on this rank: uncaught, it left this rank alone while the others waited in
        # the exchange, 2026-11-27): raised as it is, type and exit code kept, now that every rank
        # knows (and has made the same collectives); the others raise the agreed error (a
        # DistScanError naming it).
        raise error
    raise (DistScanError(text) if agreed is None else agreed) from error


def _agreed_class(comm, type_name, text, error):
    """The first failing rank's class built with ``text`` where every rank built it alike, else
    None; one ``allgather`` on every rank (the error path only).

    The failing rank's class is kept on every rank where each can build it: a user's class too,
    found in a module every rank has imported (``__main__``, the user's own); a scan's last rank
    never runs the combine before the exchange, so "every rank raised that class itself" never held
    there, and ``except Boom`` caught the call at one rank but not at two (2026-11-28).  Where some
    rank cannot build it (a class defined on some ranks only, an ``__init__`` of other arguments),
    every rank raises DistScanError: one ``except`` clause catches the call everywhere."""
    try:
        built = _build(type_name, text, error, loaded=True)
        seen = None if built is None else (describe(built), message_of(built))
    except BaseException:  # noqa: BLE001 - a user's module or __str__ raising anything (SystemExit
        built, seen = None, None  # too): not built, and this rank never leaves the others alone
    views = comm.allgather(seen)
    return built if seen is not None and all(v == seen for v in views) else None


def raise_mismatch(comm, what, fields):
    """Every rank, once all know that the fields differ: raise a ValueError naming the difference."""
    values = comm.allgather(fields)
    if not all(isinstance(v, dict) for v in values):
        raise ValueError(f"{what} differ across ranks: {_who_has(values)}")
    compared = [_compared(v) for v in values]
    # every rank's fields in order of first sight: a field some ranks leave out (an initial that is
    # the default) differs too, shown as "the default" where it is missing
    keys = list(dict.fromkeys(k for c in compared for k in c))
    names = [k for k in keys if any((k in c) != (k in compared[0]) or c.get(k) != compared[0].get(k)
                                    for c in compared)]
    name = names[0] if names else "arguments"
    detail = _who_has([c[name] if name in c else _DEFAULT for c in compared])
    hint = ""
    if name == "dtype":
        # the hint names the empty parts whose dtype is not the one every non-empty part has
        # (with no such one dtype, a hint about empty parts would be a guess)
        full = {c.get("dtype") for c, v in zip(compared, values) if v.get("_rows") != 0}
        empty = [r for r, (c, v) in enumerate(zip(compared, values))
                 if v.get("_rows") == 0 and len(full) == 1 and c.get("dtype") not in full]
        if empty:
            # (the reason only where it is one: an empty list or np.array([]) is float64)
            float64_empty = any(_show(compared[r]["dtype"]) == "float64" for r in empty)
            why = ", since np.array([]) is float64" if float64_empty else ""
            hint = (f" (rank{'s' if len(empty) > 1 else ''} {_ranges(empty)} "
                    f"{'have' if len(empty) > 1 else 'has'} an empty part: build it with the dtype of "
                    f"the others, e.g. np.empty(0, dtype){why})")
    more = f"; also differ: {', '.join(names[1:])}" if len(names) > 1 else ""
    raise ValueError(f"{name} differs across ranks: {detail}{hint}{more}")


def _who_has(values) -> str:
    """``rank 0 has float64, ranks 1-3 have int64``."""
    groups: dict = {}
    for rank, v in enumerate(values):
        groups.setdefault(_show(v), []).append(rank)
    return ", ".join(f"rank{'s' if len(r) > 1 else ''} {_ranges(r)} {'have' if len(r) > 1 else 'has'} {v}"
                     for v, r in groups.items())


class _Default:
    def __str__(self):
        return "the default"


_DEFAULT = _Default()  # a field a rank left out


def _show(value) -> str:
    return "none" if value is None else str(value)


def decide_on_root(comm, fn):
    """Run ``fn()`` on rank 0 only and give every rank its value, or raise its exception everywhere.

    For checks that one rank does on behalf of all (parsing a header, looking at the output
    folder): one broadcast.  The value travels pickled (it is data); an exception travels as
    its ``module:QualName`` and message and is rebuilt like an agreed one (:func:`_rebuild`),
    without a rank prefix; rank 0 raises its own exception object.
    """
    if comm is None or comm.Get_size() == 1:
        return fn()
    outcome, error = None, None
    if comm.Get_rank() == 0:
        try:
            outcome = ("ok", fn())
        except Exception as exc:  # noqa: BLE001 - every failure is shared, whatever it is
            error = exc
            outcome = ("err", describe(exc), message_of(exc))
    outcome = comm.bcast(outcome, root=0)
    if outcome[0] == "ok":
        return outcome[1]
    if error is not None:
        raise error
    raise _rebuild(outcome[1], outcome[2])


@contextlib.contextmanager
def collectively(comm):
    """Run a block whose failure on any rank is agreed before continuing.

    Usage::

        with collectively(comm):
            local_work()      # may raise on some ranks only
        # all ranks arrive here, or all ranks have raised the same error
    """
    error = None
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - every failure must be agreed, whatever it is (raise_agreed)
        error = exc
    agree(comm, error)


def _ranges(ranks) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    parts, start, prev = [], None, None
    for r in ranks:
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            parts.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = r
    parts.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ",".join(parts)
