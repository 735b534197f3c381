"""Collective safety: every rank raises together, or none does.

An MPI program hangs when one rank raises while the others wait in a collective.
Each check that can fail on some ranks only is therefore followed by
:func:`agree`, one ``Allreduce`` of a flag, before the next collective; if any
rank failed, all ranks learn the first failing rank's message and raise the
same :class:`DistScanError` (or the original exception type where it is a
standard one, so ``TypeError``/``ValueError`` stay catchable as such).
"""

from __future__ import annotations

import contextlib
import zlib

import numpy as np


class DistScanError(RuntimeError):
    """A failure on one or more ranks, raised identically on every rank."""


# Exception types re-raised as themselves when agreed (others become DistScanError).
_KEEP_TYPES = (TypeError, ValueError, FileNotFoundError, FileExistsError, IsADirectoryError,
               PermissionError, NotADirectoryError, MemoryError, OverflowError, OSError)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _rebuild(type_name: str, message: str, local: BaseException | None = None) -> BaseException:
    """The agreed exception on this rank: the failing rank's type where this rank can build it
    (its own error of that type, a standard type, or a DistScanError subclass), else DistScanError."""
    candidates = [type(local)] if local is not None else []
    candidates += list(_KEEP_TYPES) + list(_subclasses(DistScanError))
    for cls in candidates:
        if cls.__name__ == type_name:
            try:
                return cls(message)
            except Exception:  # noqa: BLE001 - a constructor with other arguments: fall through
                continue
    return DistScanError(message)


def agree(comm, error: BaseException | None, same: tuple | None = None) -> None:
    """Raise the same exception on every rank if ``error`` is set on any rank.

    ``same``, if given, is ``(what, value)``: ``value`` must also be equal on all
    ranks, else every rank raises ``ValueError("<what> differs across ranks ...")``.
    Both checks cost one ``Allreduce`` of three integers on the happy path.
    ``comm`` may be None (no MPI): then ``error`` is simply re-raised.
    Every rank of ``comm`` must call this, with its own error or None.
    """
    if comm is None or comm.Get_size() == 1:
        if error is not None:
            raise error
        return
    from mpi4py import MPI

    crc = zlib.crc32(repr(same[1]).encode()) if same is not None else 0
    # MAX of [failed, crc, -crc]: any failure, and crc equal everywhere iff max == -max(-crc).
    flags = np.array([1 if error is not None else 0, crc, -crc], dtype=np.int64)
    comm.Allreduce(MPI.IN_PLACE, flags, op=MPI.MAX)
    if flags[0]:
        _raise_agreed(comm, error)
    if same is not None and flags[1] != -flags[2]:
        _raise_mismatch(comm, *same)


def _raise_agreed(comm, error):
    mine = None if error is None else (type(error).__name__, str(error) or type(error).__name__)
    reports = comm.allgather(mine)
    failing = [r for r, rep in enumerate(reports) if rep is not None]
    type_name, message = reports[failing[0]]
    if len(failing) == len(reports) and all(rep == reports[0] for rep in reports):
        # Every rank failed the same way: the message needs no rank.
        raise _rebuild(type_name, message, error) from error
    others = len(failing) - 1
    suffix = f" (and {others} other rank{'s' if others > 1 else ''})" if others else ""
    raise _rebuild(type_name, f"rank {failing[0]}{suffix}: {message}", error) from error


def _raise_mismatch(comm, what, value):
    values = comm.allgather(value)
    distinct = {}
    for rank, v in enumerate(values):
        distinct.setdefault(repr(v), []).append(rank)
    detail = "; ".join(f"{v} on rank{'s' if len(r) > 1 else ''} {_ranges(r)}" for v, r in distinct.items())
    raise ValueError(f"{what} differs across ranks: {detail}")


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
    except Exception as exc:  # noqa: BLE001 - every failure must be agreed, whatever it is
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
