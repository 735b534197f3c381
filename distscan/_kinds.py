"""This rank's shortcuts: plans by call kind (:class:`Plans`) and the kinds of the common calls
(:class:`Kinds`), so that a small scan costs little more than its kernel.

Both only shorten this rank's own preparation: which plans or kinds a rank holds never changes
the collectives it makes (distscan.dist.plan).  The oldest entries go first past
:data:`MAX_PLANS`.
"""

from __future__ import annotations

import numpy as np

from ._arrays import may_overlap
from ._caches import publish
from ._dtypes import check_int_coefficient, is_host_number, recurrence_dtype
from .dist.plan import ScanPlan

# Plans and call kinds kept at most; the oldest go first (they are only this rank's shortcuts).
MAX_PLANS = 256


class Plans:
    """This rank's plans by call kind (operator, dtypes, exclusive, trailing shape, backend,
    strategy, hierarchy, node size, axis, algorithm, communicator); the oldest go first past
    :data:`MAX_PLANS`.  Which plans a rank holds never changes which collectives it makes.

    Assumptions.  The node size in the key is the call's ``node_size``, or on several ranks the
    ``DISTSCAN_NODE_SIZE`` it read (``nodes.FromEnv``, made by the API: never None there), so a
    call after the variable changed takes another plan; a plan reads the variable once, when it is
    built (ScanPlan.node_override).  The communicator is keyed by ``id``: the plan holds it, so no
    other communicator takes its ``id`` while the plan is kept (:meth:`Kind.plan` checks ``is``)."""

    def __init__(self):
        self._plans: dict = {}

    def get(self, key, build) -> ScanPlan:
        try:
            plan = self._plans.get(key)
        except TypeError:  # an unhashable argument (a dtype= list, say): build without the cache
            return build()
        if plan is None:  # (two threads may build one each: equal, and no collective in a build)
            plan = publish(self._plans, key, build(), MAX_PLANS)
        return plan

    def clear(self) -> None:
        self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)


PLANS = Plans()


def plan_of(fields: tuple, comm, node_size) -> ScanPlan:
    """The plan of :meth:`Part.plan_fields` on ``comm`` (built once, then taken from :data:`PLANS`)."""
    (op, input_dtype, dtype, out_dtype, exclusive, trailing, backend, strategy, hierarchy, axis, algorithm,
     reverse, include_initial, _reads) = fields  # _reads: in the key only (Part.plan_fields)
    return PLANS.get(fields + (node_size, id(comm)), lambda: ScanPlan(
        op, input_dtype, dtype=dtype, out_dtype=out_dtype, exclusive=exclusive, trailing=trailing, comm=comm,
        backend=backend, strategy=strategy, hierarchy=hierarchy, node_size=node_size,
        agree_on={"axis": axis, "include_initial": include_initial}, algorithm=algorithm, reverse=reverse))


class Kind:
    """What the common calls of one kind share: the resolved dtypes, backend and plans, for parts
    that need no preparation (an array the backend's ``lean_arrays`` takes as it is: a contiguous
    1-D array of the backend's own type on the current device, of the plan's input dtype; ``out``
    none, or of the same kind, shape and result dtype, apart from the input; segment flags and
    coefficients as :meth:`aux` takes them).  Anything else is resolved as a :class:`Part`.

    Assumption: a kind holds no array and nothing read from one, only what the types of a call's
    arguments fix (dtypes, operator, plans), so that a call in a row with other, mutated or
    differently laid out arrays is checked anew by :meth:`aux` and gives what a :class:`Part`
    gives.  Its node size is the one of its key (as :class:`Plans` keys it: the variable's value
    at the call on several ranks), and so are its plans.  Which kinds a rank holds never changes
    its collectives (distscan.dist.plan)."""

    __slots__ = ("types", "be", "lean", "fields", "node_size", "plans", "aux_names", "array_type", "gpu", "xp",
                 "plain", "single", "segments_only")

    def __init__(self, part, node_size, x):
        self.types, self.be, self.node_size = part.types, part.be, node_size
        self.lean = part.be.lean_arrays
        self.fields = part.plan_fields()
        self.plans: dict = {}  # id(comm) -> plan
        self.aux_names = part.op.state.aux if part.op.state is not None else ()
        # segment flags alone (the segmented scans: the commonest state kind) take a short path in aux
        self.segments_only = self.aux_names == ("segments",)
        # flags and coefficient arrays must be of x's own array type (NumPy, or CuPy on the GPU)
        self.array_type = type(x)
        self.gpu = part.backend_name == "cuda"
        self.xp = part.be.array_module() if self.aux_names else None
        # a plain forward scan (no state, no auxiliary inputs): one rank runs the plan's lean case
        self.plain = part.op.state is None and not part.reverse
        # the call on one rank, untimed, made at the first: ScanPlan.one_rank for a plain scan, of
        # (x, out); ScanPlan.one_rank_state for the others, of (x, out, aux)
        self.single = None

    def run(self, x, out, options, group, timings):
        """The call the cheap way: on one rank, untimed, a plain scan is the plan's lean case
        (:meth:`ScanPlan.one_rank`: what its ``run(fast=True)`` does there, straight from here);
        a reverse or state scan the plan's :meth:`ScanPlan.one_rank_state` (the GPU's without the
        general route's frames); on many ranks, untimed, the plan's lean call
        (:meth:`ScanPlan.lean_call`: the same collectives as ``run(fast=True)``, fused for the
        common kinds); a timed call is the plan's :meth:`ScanPlan.run` with ``fast=True``.
        :data:`NOT_THIS_KIND` where the arrays are not this kind's cheap case (the caller then
        resolves a :class:`Part`)."""
        if not self.aux_names:
            if not self.lean(x, out, self.types):
                return NOT_THIS_KIND
            if group is None and timings is None and self.plain:
                single = self.single
                if single is None:
                    single = self.single = self.plan(None).one_rank()
                return single(x, out)
            aux = ()
        else:
            try:
                aux = self.aux(x, out, options)
            except Exception:  # noqa: BLE001 - the Part route raises it on every rank (fail_exchange)
                return NOT_THIS_KIND  # (a coefficient 2**70 that int64 cannot hold: before any collective)
            if aux is None:
                return NOT_THIS_KIND
        if group is None and timings is None:  # one rank, a reverse or state scan
            single = self.single
            if single is None:
                single = self.single = self.plan(None).one_rank_state()
            return single(x, out, aux)
        if timings is not None:
            return self.plan(group).run(x, out=out, timings=timings, fast=True, aux=aux)
        plan = self.plans.get(id(group))  # self.plan(group) inlined: this is every warm call's path
        if plan is not None and plan.comm is group and plan.lean_run is not None:
            return plan.lean_run(x, out, aux)
        plan = self.plan(group)
        result = plan.run(x, out=out, fast=True, aux=aux)
        plan.lean_call()  # made once the exchange has resolved its method (the first call's)
        return result

    def aux(self, x, out, options):
        """The auxiliary inputs of this call as the plan scans them (``()`` for a plain scan), or
        None where the call is not this kind's cheap case (it then takes the :class:`Part` route).

        Segment flags: a bool array of ``x``'s type and shape, as it is: the CPU's loops take any
        layout, and the GPU's scan and reduction make them contiguous
        (``backends/cuda/ext_states.aux_arrays``), as ``Part`` does.

        Coefficients: an array of ``x``'s type and shape or a 0-d one (cast to the accumulator
        dtype by the backend's ``astype``, as ``Part`` casts it, here before the exchange; on the
        GPU also made contiguous, as the kernels read it), or a Python or NumPy number (the values
        ``np.asarray(a).astype(acc)``, which ``Part`` makes: their read-only broadcast, on the GPU
        of one device word; a complex number for a real accumulator goes the ``Part`` way).

        On the GPU, flags and coefficients on another device than ``x`` (which ``lean_arrays``
        found current) go the ``Part`` way, which copies them to ``x``'s device, and so does an
        ``out`` that may overlap the flags or the coefficients (``Part`` then scans into a buffer
        of its own: the fused segmented call reads its part's inputs again after the exchange, a
        GPU tile those of others after writing its own).  What the loops and kernels do not check
        (a flag or coefficient per element, its device) is checked here, on every call."""
        if not self.lean(x, out, self.types):
            return None
        if self.segments_only:  # (no list and no loop: 1.58 against 2.26 us, the 2-core VM)
            flags = self._flags(x, options)
            return None if flags is None or out is not None and may_overlap(out, flags) else (flags,)
        if not self.aux_names:
            return ()
        aux = []
        for name in self.aux_names:
            if name == "segments":
                flags = self._flags(x, options)
                if flags is None:
                    return None
                aux.append(flags)
                continue
            a, acc = options["coefficients"], self.types.acc
            if type(a) is self.array_type:
                if a.shape != x.shape:
                    if a.ndim or self.gpu and a.data.device_id != x.data.device_id:
                        return None
                    # a 0-d array: one coefficient for every item, as Part broadcasts it (on the
                    # GPU the kernels read its one word, coefficient_row; its value stays there)
                    aux.append(self.xp.broadcast_to(a if a.dtype == acc else self.be.astype(a, acc), x.shape))
                    continue
                if self.gpu:
                    if a.data.device_id != x.data.device_id:
                        return None
                    # (ascontiguousarray of an array that is contiguous already costs
                    # a call of CuPy's in every recurrence call; a broadcast along the
                    # scanned axis stays one: the kernels read its one row, coefficient_row)
                    aux.append(self.be.astype(a, acc) if a.dtype != acc  # (keeps subnormals: casts.py)
                               else a if a._c_contiguous or (a.ndim and a.strides[0] == 0)
                               else self.xp.ascontiguousarray(a))
                else:
                    aux.append(a if a.dtype == acc else self.be.astype(a, acc))
            elif is_host_number(a):
                # (a NumPy scalar's dtype is in the kind's key, options_key: this kind's dtypes
                # were resolved for that strong dtype, as Part resolves them; but NumPy 1 reads
                # the value of a Python number, np.float64 and np.complex128 among them: 1e300
                # with float32 b computes in float64 there, 0.5 in float32, so such a number
                # whose dtype is not this kind's goes the Part way)
                if _VALUE_TYPED and isinstance(a, (int, float, complex)) and \
                        recurrence_dtype(a, x.dtype) != self.fields[2]:
                    return None
                if type(a) is int and not _NUMPY_INTS[0] <= a <= _NUMPY_INTS[1]:
                    # NumPy keeps such an int as an object: NumPy 1's a*b is an object array, which
                    # the Part route refuses, NumPy 2 takes it weakly; this kind's dtype was resolved
                    # for a small int, which computed it on NumPy 1 where a cold call refused (s43)
                    return None
                check_int_coefficient(a, acc)  # out of an integer acc's range: the Part route raises it
                if not self.gpu:
                    aux.append(np.broadcast_to(np.asarray(a).astype(acc), x.shape))
                elif isinstance(a, (complex, np.complexfloating)) and acc.kind != "c":
                    return None
                else:  # one coefficient read for every item (backends/cuda/ext_states.one_coefficient)
                    aux.append(self.be.one_coefficient(a, acc, x.shape))
            else:
                return None
        if out is not None and any(may_overlap(out, a) for a in aux):
            return None  # the Part route scans into its own buffer: a scan may read them after writing out
        return tuple(aux)

    def _flags(self, x, options):
        """The call's segment flags as :meth:`aux` takes them, or None (another type, dtype, shape
        or device than ``x``'s: the :class:`Part` route)."""
        flags = options["segments"]
        if type(flags) is not self.array_type or flags.dtype != _BOOL or flags.shape != x.shape:
            return None
        if self.gpu and flags.data.device_id != x.data.device_id:
            return None
        return flags

    def plan(self, comm) -> ScanPlan:
        plan = self.plans.get(id(comm))
        if plan is None or plan.comm is not comm:
            plan = publish(self.plans, id(comm), plan_of(self.fields, comm, self.node_size), KIND_COMMS)
        return plan


# Communicators whose plans a kind keeps (the oldest go first).
KIND_COMMS = 8

# What Kind.run returns for arrays that are not its kind's cheap case.
NOT_THIS_KIND = object()


class Kinds:
    """This rank's call kinds, by the raw arguments of a call (see :class:`Kind`).  ``get`` is
    the dictionary's own (the API calls it with the key :func:`distscan.api._scan` makes; an
    unhashable argument raises TypeError there)."""

    def __init__(self):
        self._kinds: dict = {}
        self.get = self._kinds.get

    def remember(self, key, x, part, node_size) -> None:
        """Remember the kind of a call resolved the long way, where later calls of it can take the
        cheap way (``x`` as given: of the plan's input dtype, in native byte order; the options of
        a state scan without ``include_initial``, their arrays of ``x``'s type)."""
        if (key is None or part.algorithm != "auto" or not part.distributed or part.scalar or part.wrap is not None
                or getattr(x, "dtype", None) != part.types.input or len(part.work_shape) != 1
                or part.types.rounds_inputs or part.nan_first or part.backend_name != part.native_backend
                or key[-1] is not None and (part.backend_name not in ("cpu", "cuda") or part.include_initial
                                            or not all(_kindable(k, v, type(x)) for k, v in key[-1]))):
            return
        try:
            kind = Kind(part, node_size, x)
            hash(key)
        except TypeError:  # an unhashable argument
            return
        publish(self._kinds, key, kind, MAX_PLANS)

    def clear(self) -> None:
        self._kinds.clear()


KINDS = Kinds()


def state_options(reverse, segments, include_initial, compensated):
    """:func:`distscan.scan`'s state options as :func:`distscan.api._scan` takes them: None for a
    plain scan.  A flag with no truth value (an array of several items) goes on in the options: its
    ``bool`` raised here, on its rank alone and before any collective, while the others waited in
    the exchange forever (2026-11-27); :class:`distscan._call.Part` raises it inside the call's
    agreement."""
    try:
        state = bool(reverse or segments is not None or include_initial or compensated)
    except Exception:  # noqa: BLE001 - raised by Part on every rank (api._scan's raise_everywhere)
        state = True
    if state:
        return {"reverse": reverse, "segments": segments, "include_initial": include_initial,
                "compensated": compensated}
    return None


def options_key(options):
    """The options of :func:`distscan.scan` and ``linear_recurrence`` in a call kind's key (the
    last field of the key :func:`distscan.api._scan` makes): by their values, and their arrays
    (flags, coefficients) by type and dtype (a Python number by its type)."""
    # (a list made into a tuple: a generator's frames cost a fifth more in every state call's key)
    return tuple([(k, (type(v), getattr(v, "dtype", None)) if k in _ARRAYS else v) for k, v in options.items()])


_ARRAYS = ("segments", "coefficients")  # the options that hold arrays
_BOOL = np.dtype(np.bool_)  # (a dtype against a dtype: half the time of one against np.bool_)
_NUMPY_INTS = (-2**63, 2**64 - 1)  # the Python ints NumPy holds as int64 or uint64
# NumPy 1 resolves a Python number's dtype in a*b by its value (NumPy 2 by its kind alone: NEP 50)
_VALUE_TYPED = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def _kindable(name, value, array_type) -> bool:
    """Whether an option (as :func:`options_key` keys it) can take the cheap way (:meth:`Kind.aux`):
    arrays of the input's own type (NumPy, CuPy), coefficients also as Python or NumPy numbers
    (not bools: ``Part`` makes rows of those)."""
    if name not in _ARRAYS or value[0] is type(None):
        return True
    return value[0] is array_type or name == "coefficients" and (value[0] in (int, float, complex)
                                                                 or issubclass(value[0], np.number))
