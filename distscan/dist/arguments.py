"""The public functions' arguments that Python would refuse on one rank alone, refused on every rank.

An unknown keyword (a typo, or one another version takes), a positional argument too many, or a
missing part (``cumsum(comm=comm)``) raises Python's TypeError before the function's body runs, on
the rank whose call has it, while the other ranks wait in the call's exchange forever.  So the
public signatures take ``*extra`` and ``**unknown``, their parts default to :data:`MISSING`, and
the function refuses these here: the rank joins the exchange as failed and every rank raises
Python's own message (with the failing rank's number).

Which ranks: the call's ``comm=``, else a communicator among the refused arguments themselves (a
communicator under a misspelt keyword, ``cumsum(x, communicator=sub)``, is the one the call was
meant for: all the ranks of ``sub`` make that mistake together, and refusing it over
``COMM_WORLD`` would wait for ranks that never call), else ``COMM_WORLD`` as the call would.  A
communicator passed in a part's place or by position past the parts (``cumsum(sub, x)``,
``cumsum(x, sub)``) is refused over it first, with a message of its own
(:func:`refuse_communicator_as_part`); one as the operator likewise (:func:`refuse_communicator_as_op`).
"""

from __future__ import annotations

import sys

from .agree import default_comm
from .exchange import raise_everywhere


class _Missing:
    """The default of a public function's parts, which every call must pass (see the module's
    docstring): a rank that passes none raises with the others, not alone."""

    __slots__ = ()

    def __repr__(self):
        return "<required>"


MISSING = _Missing()


class Default(str):
    """A part's default that is also its value (:data:`SUM`, ``"sum"``): told apart from the same value
    passed by position, so that a part passed by keyword too (``scan(x, "max", op="min")``) is refused
    (:func:`by_keyword`) instead of Python's TypeError on that rank alone."""

    __slots__ = ()


SUM = Default("sum")  # the default operator of scan, exclusive_scan and reduce


def by_keyword(name, keywords: dict, comm, extra=(), **parts) -> tuple:
    """``parts`` (each positional-only parameter of ``name`` as passed: its value, or :data:`MISSING` or a
    :class:`Default` where no position gave it) with those passed by keyword taken out of ``keywords``.
    A part passed both ways raised Python's "got multiple values for argument" on its rank alone while
    the others waited in the exchange (2026-11-27): refused on every rank (:func:`refuse_arguments`)."""
    for key, value in parts.items():
        if key in keywords:
            if value is not MISSING and type(value) is not Default:
                refuse_arguments(name, keywords, comm, extra, twice=key)
            parts[key] = keywords.pop(key)
    return tuple(parts.values())


def parts_of(name, x, op, comm, extra, keywords: dict, known=frozenset()) -> tuple:
    """``(x, op)`` of a call ``name(x, op, /, *extra, **keywords)`` (scan, exclusive_scan, reduce) that
    has keywords, positional arguments past its parts, or ``x`` not a NumPy array: a communicator
    among them refused over it first (:func:`refuse_communicator_as_part`: it says which ranks call),
    then ``x`` and ``op`` taken out of ``keywords`` (:func:`by_keyword`), then what Python would refuse
    (:func:`check_arguments`: keywords outside ``known``, ``extra``, ``x`` missing), on every rank.
    The same three steps, in this order, for each of the three functions."""
    refuse_communicator_as_part(name, comm, {"x": x}, extra, keywords)
    if "x" in keywords or "op" in keywords:  # (x and op by keyword, as they may be)
        x, op = by_keyword(name, keywords, comm, extra, x=x, op=op)
    if keywords or extra or x is MISSING:  # (reduce(x, op="max") stops here: check_arguments cost it 1.8 us)
        check_arguments(name, keywords, comm, known, extra, (1, 2), missing_parts(x=x))
    return x, op


def group_of(comm):
    """``comm`` where the call spans several ranks (its collectives run there), else None: a call
    of one rank makes none.  A ``comm`` no collective of the call can run over is refused on this
    rank alone (as MPI would refuse it there): ``COMM_NULL`` or a freed communicator (its size
    raised MPI's raw "Invalid communicator"), an intercommunicator (its collectives join two
    groups: the exchange's Allgather raised mpi4py's "Invalid buffer pointer", or with one rank
    a side the call scanned that rank alone), something that is not a communicator."""
    if comm is None:
        return None
    size = _collective_size(comm)
    if size is None:
        raise unusable_comm(comm)
    return comm if size > 1 else None


def _collective_size(comm):
    """The size of ``comm`` where the call's collectives can run over it, else None: ``COMM_NULL``,
    a freed communicator (through this handle or another: MPI's raw "Invalid communicator"), an
    intercommunicator, something that is not a communicator.  Local: MPI asks no other rank."""
    try:
        return None if comm.Is_inter() else comm.Get_size() or None
    except Exception:  # noqa: BLE001 - COMM_NULL, freed, not a communicator
        return None


def unusable_comm(comm) -> Exception:
    """The error for a ``comm=`` that :func:`group_of` refuses."""
    if not _is_communicator(comm):
        return TypeError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")
    try:  # (a communicator freed through another handle of it, MPI.Intracomm(c) say, raised MPI's
        #  "Invalid communicator" here, and was called an intercommunicator)
        inter = comm != sys.modules["mpi4py.MPI"].COMM_NULL and comm.Is_inter()
    except Exception:  # noqa: BLE001 - freed
        inter = False
    if not inter:
        return ValueError("comm is MPI.COMM_NULL (or a freed communicator): this rank is in no communicator "
                          "the call's collectives could run over")
    return TypeError("comm is an intercommunicator: distscan's collectives run over the ranks of one "
                     "intracommunicator (merge the two groups first: Intercomm.Merge)")


def check_arguments(name, keywords: dict, comm, known, extra=(), takes=(1, 1), missing=()):
    """Refuse on every rank (:func:`refuse_arguments`) a call with keywords outside ``known``,
    positional arguments ``extra`` or parts named in ``missing``; return where it has none."""
    if extra or missing or not known.issuperset(keywords):
        refuse_arguments(name, keywords, comm, extra, takes, missing, known)


def refuse_arguments(name, keywords: dict, comm, extra=(), takes=(1, 1), missing=(), known=None, twice=None):
    """Raise, on every rank, Python's TypeError for what Python would refuse first: a part ``twice``
    passed by position and by keyword (:func:`by_keyword`), the keywords of ``keywords`` (name: value)
    not in ``known`` (None: all of them), positional arguments ``extra`` past the ``takes`` (fewest,
    most) that ``name`` has, the parts named in ``missing`` (passed as :data:`MISSING`)."""
    unknown = keywords if known is None else {k: v for k, v in keywords.items() if k not in known}
    given = None  # a communicator among the refused arguments, where the call has no comm=
    if comm is None:
        given = next((a for a in (*extra, *unknown.values()) if _is_communicator(a)), None)
    if twice is not None:
        error = TypeError(f"{name}() got multiple values for argument {twice!r}")
    elif unknown:
        names = ", ".join(repr(k) for k in sorted(unknown))
        error = TypeError(f"{name}() got unexpected keyword argument{'s' if len(unknown) > 1 else ''} {names}")
    elif extra:
        fewest, most = takes
        count = f"{most}" if fewest == most else f"from {fewest} to {most}"
        error = TypeError(f"{name}() takes {count} positional argument{'s' if most > 1 else ''} "
                          f"but {most + len(extra)} were given")
    else:
        names = " and ".join(repr(k) for k in missing)
        error = TypeError(f"{name}() missing {len(missing)} required positional argument"
                          f"{'s' if len(missing) > 1 else ''}: {names}")
    if given is not None:
        _refuse_over(given, error)
    raise_everywhere(group_of(default_comm(comm)), error)


def refuse_communicator_as_op(name, op, comm) -> None:
    """Refuse, over that communicator, a call without ``comm=`` whose operator is a communicator
    (``scan(x, sub)``: the mistake of ``cumsum(x, sub)``, one place on).  Refused over
    ``COMM_WORLD`` as an unknown operator, it hung the ranks of ``sub`` where the others never call
    (2026-11-27).  Cheap where ``op`` is a name (the common call)."""
    if comm is None and not isinstance(op, str) and _is_communicator(op):
        _refuse_over(op, TypeError(f"{name}() got a communicator as its operator: pass it as comm="))


def refuse_communicator_as_part(name, comm, parts: dict, extra=(), keywords=()) -> None:
    """Refuse, over that communicator, a call without ``comm=`` that passes a communicator as one of
    its ``parts`` (name: value as passed by position; the same names in ``keywords`` as passed by
    keyword) or as a positional argument ``extra`` past them: ``cumsum(sub, x)``, ``cumsum(sub)``,
    ``linear_recurrence(a, sub)``, ``cumsum(x, sub)``.  Refused over ``COMM_WORLD`` (the call's
    default), it hung the ranks of ``sub`` where the others never call (review, s41).

    Assumed: a communicator given there, without ``comm=``, is the one the call was meant for, and
    every rank of it makes the call with it (the mistake is the program's, made by all its ranks
    together, as with ``comm=sub``); so each raises over it, and no rank outside it is waited for.
    With ``comm=`` given the call is ``comm``'s, and the communicator is refused over ``comm`` as
    any input it cannot scan.  A part passed both by position and by keyword, a communicator one of
    the two (``cumsum(x, x=sub)``, ``cumsum(sub, x=x)``), is refused over it with Python's own
    "got multiple values for argument 'x'".  A caller tests ``type(part) is not np.ndarray`` first
    (the common call pays that alone)."""
    if comm is not None:
        return
    # (_is_communicator per value, not its lookup inlined: measured the same for one part, 0.03 us
    # more for two, of this function's 0.4 us; nothing on a whole call)
    for key, value in parts.items():  # (no generator: making one cost a microsecond here)
        if key in keywords:
            if value is MISSING or type(value) is Default:  # by keyword alone
                value = keywords[key]
            else:
                # passed both ways: Python's first error, as by_keyword's, over the communicator
                # where one of the two is one (else by_keyword refuses it over the call's ranks)
                given = value if _is_communicator(value) else keywords[key]
                if _is_communicator(given):
                    _refuse_over(given, TypeError(f"{name}() got multiple values for argument {key!r}"))
        if _is_communicator(value):
            _refuse_over(value, TypeError(f"{name}() got a communicator as its part {key!r}: pass it as comm="))
    for value in extra:
        if _is_communicator(value):
            _refuse_over(value, TypeError(
                f"{name}() got a communicator as an extra positional argument: pass it as comm="))


def _refuse_over(given, error: TypeError) -> None:
    """Raise ``error`` over the communicator ``given`` in a part's place: on its ranks together, or
    here alone where no collective can run over it (``COMM_NULL``, a freed communicator: their size
    raised MPI's own error; an intercommunicator: the agreement's ``Allreduce`` over it raised
    mpi4py's on the ranks of its larger group, TypeError on the others)."""
    if _collective_size(given) is None:
        raise error
    raise_everywhere(group_of(given), error)


def missing_parts(**parts) -> tuple:
    """The names of ``parts`` (name: value) passed as :data:`MISSING`, in order."""
    return tuple(k for k, v in parts.items() if v is MISSING)


def _is_communicator(value) -> bool:
    """Whether ``value`` is an mpi4py communicator (mpi4py already imported: a call that holds one)."""
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and isinstance(value, mpi.Comm)
