"""This rank's shortcuts: plans by call kind (:class:`Plans`) and the kinds of the common calls
(:class:`Kinds`), so that a small scan costs little more than its kernel.

Both only shorten this rank's own preparation: which plans or kinds a rank holds never changes
the collectives it makes (distscan.dist.plan).  The oldest entries go first past
:data:`MAX_PLANS`.
"""

from __future__ import annotations

from .dist.plan import ScanPlan

# Plans and call kinds kept at most; the oldest go first (they are only this rank's shortcuts).
MAX_PLANS = 256


class Plans:
    """This rank's plans by call kind (operator, dtypes, exclusive, trailing shape, backend,
    strategy, hierarchy, node size, axis, algorithm, communicator); the oldest go first past
    :data:`MAX_PLANS`.  Which plans a rank holds never changes which collectives it makes."""

    def __init__(self):
        self._plans: dict = {}

    def get(self, key, build) -> ScanPlan:
        try:
            plan = self._plans.get(key)
        except TypeError:  # an unhashable argument (a dtype= list, say): build without the cache
            return build()
        if plan is None:
            plan = self._plans[key] = build()
            if len(self._plans) > MAX_PLANS:
                self._plans.pop(next(iter(self._plans)))
        return plan

    def clear(self) -> None:
        self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)


PLANS = Plans()


def plan_of(fields: tuple, comm, node_size) -> ScanPlan:
    """The plan of :meth:`Part.plan_fields` on ``comm`` (built once, then taken from :data:`PLANS`)."""
    (op, input_dtype, dtype, out_dtype, exclusive, trailing, backend, strategy, hierarchy, axis, algorithm,
     reverse, include_initial) = fields
    return PLANS.get(fields + (node_size, id(comm)), lambda: ScanPlan(
        op, input_dtype, dtype=dtype, out_dtype=out_dtype, exclusive=exclusive, trailing=trailing, comm=comm,
        backend=backend, strategy=strategy, hierarchy=hierarchy, node_size=node_size,
        agree_on={"axis": axis, "include_initial": include_initial}, algorithm=algorithm, reverse=reverse))


class Kind:
    """What the common calls of one kind share: the resolved dtypes, backend and plans, for parts
    that need no preparation (a contiguous 1-D array of the backend's own type and of the plan's
    input dtype; ``out`` none, or of the same kind, shape and result dtype, apart from the
    input).  :meth:`takes` checks a part; anything else is resolved as a :class:`Part`."""

    __slots__ = ("types", "be", "fields", "node_size", "plans")

    def __init__(self, part, node_size):
        self.types, self.be, self.node_size = part.types, part.be, node_size
        self.fields = part.plan_fields()
        self.plans: dict = {}  # id(comm) -> plan

    def takes(self, x, out) -> bool:
        return self.be.lean_arrays(x, out, self.types)

    def plan(self, comm) -> ScanPlan:
        plan = self.plans.get(id(comm))
        if plan is None or plan.comm is not comm:
            plan = self.plans[id(comm)] = plan_of(self.fields, comm, self.node_size)
            if len(self.plans) > 8:
                self.plans.pop(next(iter(self.plans)))
        return plan


class Kinds:
    """This rank's call kinds, by the raw arguments of a call (see :class:`Kind`)."""

    def __init__(self):
        self._kinds: dict = {}

    def lookup(self, key):
        try:
            return self._kinds.get(key)
        except TypeError:  # an unhashable argument
            return None

    def remember(self, key, x, part, node_size) -> None:
        """Remember the kind of a call resolved the long way, where later calls of it can take the
        cheap way (``x`` as given: of the plan's input dtype, in native byte order)."""
        if (key is None or part.algorithm != "auto" or not part.distributed or part.scalar or part.wrap is not None
                or getattr(x, "dtype", None) != part.types.input or len(part.work_shape) != 1
                or part.types.rounds_inputs or part.backend_name != part.native_backend):
            return
        try:
            self._kinds[key] = Kind(part, node_size)
        except TypeError:  # an unhashable argument
            return
        if len(self._kinds) > MAX_PLANS:
            self._kinds.pop(next(iter(self._kinds)))

    def clear(self) -> None:
        self._kinds.clear()


KINDS = Kinds()


def kind_key(x, op, exclusive, dtype, out, axis, strategy, hierarchy, backend, algorithm, node_size):
    """The raw arguments that fix a call's kind (AttributeError for a part without a dtype)."""
    return (type(x), x.dtype, type(out), None if out is None else out.dtype, op, exclusive, dtype, axis, strategy,
            hierarchy, backend, algorithm, node_size)
