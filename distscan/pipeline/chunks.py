"""The file pipeline in chunks, shared by every backend: read -> compute -> write, overlapped.

Each rank's rows ``[start, stop)`` flow in chunks:

    positional read (a thread pool, ``os.preadv``)  ->  compute (the engine)  ->  positional write
    (a thread pool, ``os.pwritev`` through :meth:`distscan.io.NpyWriter.write_at`)

with several reads ahead of the compute and several writes in flight, so the writes, the
bottleneck, are never idle.  Only the compute step differs between backends: an *engine*
(:class:`CpuEngine` here, :class:`distscan.pipeline.cuda.GpuEngine` for CUDA) takes a
chunk's input, forms its carry, scans it from a seed, adds an offset, and hands back host
rows to write.  Every scan of the command takes this route: plain ones, and those that carry a
state or run backwards (``--reverse``, ``--segments``, ``--compensated``, recurrences).

Chunks go in scan order: first to last, or last to first under ``--reverse`` (each chunk is
scanned last row first, and a chunk's carry is in that order); the rank whose offset is the
identity is the first in scan order (the last rank in reverse: :attr:`ScanPlan.first`).  The
auxiliary inputs of a state operator (segment flags, a recurrence's coefficients: ``Layout.aux``)
are read on the same read pool for the same rows, and go with the chunk to the engine.  A state
operator's carry is a state (segmented: (value, flag), a float product's with its zero-absorption
fields; affine: (a, b); compensated: (sum, error)), so its plan is ``reduce_then_scan``, and each
chunk's scan is seeded with the state before it.
The chunking, the carries, the one exchange and the offsets are here:

*pass A*
    every chunk is read; the first rank, whose offset is the identity, scans each chunk from the
    running total (a state, for a state operator) and writes it at once.  The other ranks, when
    their part fits the memory budget (*resident*), keep it: ``scan_then_add`` scans each chunk from the running total
    (the part's carry is its last value), ``reduce_then_scan`` keeps the input and forms each
    chunk's carry (:meth:`ScanPlan.local_carry`, combined with :meth:`ScanPlan.combine`;
    float products need these flagged carries, never the bare last value).  A part that does
    not fit (*streamed*) only forms its carry (the last rank, whose carry nobody reads, skips
    the pass).
*exchange*
    one :meth:`ScanPlan.exchange` of the part's carry gives the offset, and agrees on any
    failure of pass A on every rank.
*pass B* (the other ranks)
    the offset is applied on the way out: ``add_offset`` on each kept chunk
    (``scan_then_add``), or a scan of each kept (or, streamed, re-read) chunk seeded with the
    offset and then the running total (``reduce_then_scan``), and the chunk is written.

Memory: a resident part is held once (in place where the scan keeps the dtype); otherwise
a bounded ring of chunks.  Times (``ctx.times``): ``read`` and ``write`` are the wall spans
of the reads and of the writes (they overlap everything else), ``scan`` the compute on the
main thread (``compute``), ``exscan`` the exchange (waiting for the other ranks included), ``load`` and
``store`` the walls of pass A and pass B; ``spans`` their start and end from the run's start.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass

import numpy as np

from .. import _call
from .._dtypes import scan_types
from ..dist.plan import ScanPlan
from ..ops import get_op
from .context import phase
from .files import IO_THREADS_ENV, READ_THREADS, WRITE_THREADS, Files, io_threads  # noqa: F401 - their names here too

#: Bytes of input (or output, the larger) per chunk.
CHUNK_BYTES = 16 << 20

#: Chunks read ahead of the compute.
READ_AHEAD = 6

#: Writes in flight when the output is not held (a ring of buffers).
WRITE_RING = 16

#: The least a chunk shrinks to under a small ``--memory-limit`` (:func:`layout_for`): below it
#: each chunk's fixed costs (a read, a write, a scan call) would outweigh its bytes.
MIN_CHUNK_BYTES = 64 << 10


@dataclass(frozen=True)
class AuxInput:
    """An auxiliary input of the operator, read chunk by chunk beside the rows: ``name`` is the
    operator's (``"segments"``: one flag per row; ``"a"``: a recurrence's coefficients, the input's
    shape), ``header`` its file's, ``dt`` the dtype the scan reads it in (bool flags; coefficients
    in the accumulator dtype), as :class:`distscan._call.Part` makes the library's."""

    name: str
    header: object
    dt: np.dtype

    def shape(self, m: int) -> tuple:
        """The shape of ``m`` rows of it: ``(m,)`` for a 1-D file, else ``(m, items per row)``."""
        return (m,) if len(self.header.shape) == 1 else (m, self.header.row_items)

    @property
    def row_bytes(self) -> int:
        """Bytes of one row as the scan reads it."""
        return self.header.row_items * self.dt.itemsize


@dataclass
class Layout:
    """This rank's part and how it is cut: rows ``[start, stop)``, ``w`` elements per row, and the
    auxiliary inputs read with them."""

    start: int
    n: int
    w: int
    in_dt: np.dtype     # native byte order
    out_dt: np.dtype
    chunk_rows: int
    aux: tuple = ()     # AuxInput, in the order of the operator's auxiliary inputs

    @property
    def chunks(self) -> list:
        return [(lo, min(self.n, lo + self.chunk_rows)) for lo in range(0, self.n, self.chunk_rows)]


def aux_inputs(ctx) -> tuple:
    """The :class:`AuxInput` of the job's operator (segment flags, coefficients), in the order its
    state names them; ``()`` for the operators that take none."""
    state = ctx.op.state
    if state is None or not state.aux:
        return ()
    flags, coef = ctx.aux_headers
    files = {"segments": flags, "a": coef}
    found = []
    for name in state.aux:
        if files.get(name) is None:
            raise ValueError(f"the operator {ctx.op.name!r} needs its {name!r} input, which the job does not give")
        found.append(AuxInput(name, files[name], np.dtype(bool) if name == "segments" else ctx.types.acc))
    return tuple(found)


def layout_for(ctx, chunk_bytes: int = 0, budget: int = 0) -> Layout:
    """This rank's :class:`Layout` in host chunks of about ``chunk_bytes`` (default :data:`CHUNK_BYTES`).

    ``budget``: the host bytes this rank may hold (``--memory-limit``).  A streamed part keeps
    :data:`READ_AHEAD` chunks of input (with their auxiliary rows) and :data:`WRITE_RING` chunks
    of output in flight, so the chunks shrink until that ring fits the budget, down to
    :data:`MIN_CHUNK_BYTES` (a budget smaller than 22 such chunks is exceeded by the ring)."""
    hdr = ctx.header
    w = hdr.row_items
    out_dt = ctx.types.result
    aux = aux_inputs(ctx)
    in_row, out_row = hdr.row_bytes, w * out_dt.itemsize
    rows = chunk_rows_for(in_row, out_row, chunk_bytes)
    if budget:
        ring_row = READ_AHEAD * (in_row + sum(a.header.row_bytes + a.row_bytes for a in aux)) + WRITE_RING * out_row
        rows = min(rows, max(budget // max(ring_row, 1), chunk_rows_for(in_row, out_row, MIN_CHUNK_BYTES)))
    return Layout(start=ctx.start, n=ctx.stop - ctx.start, w=w, in_dt=hdr.dtype.newbyteorder("="), out_dt=out_dt,
                  chunk_rows=rows, aux=aux)


def input_view(hdr, start: int, stop: int):
    """Rows ``[start, stop)`` of the input, mapped (not read): for ``--verify``."""
    shape = (stop - start,) + tuple(hdr.shape[1:])
    if stop == start:
        return np.empty(shape, hdr.dtype.newbyteorder("="))
    return np.memmap(hdr.path, dtype=hdr.dtype, mode="r", offset=hdr.offset + start * hdr.row_bytes, shape=shape)


def chunk_rows_for(in_row_bytes: int, out_row_bytes: int, chunk_bytes: int = 0) -> int:
    return max(1, (chunk_bytes or CHUNK_BYTES) // max(in_row_bytes, out_row_bytes, 1))


class Done:
    """A result that is already there (the CPU's outputs), shaped like a future."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def make_plan(job, ctx, backend, default_strategy: str) -> ScanPlan:
    """The distributed scan of this job's rows (:mod:`distscan.dist.plan`), on ``backend``.  A state
    operator's plan takes ``reduce_then_scan`` whatever is asked (its carry is a state), and so
    does a float result narrower than its accumulator (float16)."""
    hdr = ctx.header
    strategy = job.strategy if job.strategy not in (None, "auto") else default_strategy
    types = scan_types(get_op(ctx.op), hdr.dtype.newbyteorder("="), ctx.dtype)
    if types.result.kind in "fc" and types.result != types.acc:
        # A float16 result accumulated in float32: scan_then_add's offset would be added to chunks
        # already rounded to float16 (rounded twice: the API's plan offsets in float32, then rounds
        # once); the seeded scan of reduce_then_scan rounds once.
        strategy = "reduce_then_scan"
    return ScanPlan(ctx.op, hdr.dtype.newbyteorder("="), dtype=ctx.dtype, exclusive=job.exclusive,
                    trailing=tuple(hdr.shape[1:]), comm=ctx.comm, backend=backend, strategy=strategy,
                    hierarchy=job.hierarchy, algorithm=getattr(job, "algorithm", "auto"),
                    reverse=bool(getattr(job, "reverse", False)))


def initial_row(job, plan: ScanPlan):
    """A recurrence's ``y[-1]`` (``job.initial``) as a row ``(w,)`` of the accumulator dtype, or None
    for none and for zeros (:func:`distscan._call.recurrence_initial_row`, as
    :func:`distscan.linear_recurrence`).  Projected by the operator on every chunk of every rank."""
    return _call.recurrence_initial_row(getattr(job, "initial", None), plan.types, plan.trailing)


def run_chunks(job, ctx, engine, plan: ScanPlan, layout: Layout, config: dict, initial=None) -> None:
    """Pass A, the exchange, pass B and the last writes of this rank (see the module docstring).
    ``initial``: :func:`initial_row` (the engine projects it; a value that seeds instead is the
    first rank's first seed).

    Collective: raises the same exception on every rank when any rank fails (pass A's
    failures in the exchange, pass B's in the agreement that ends it).
    """
    times = ctx.times
    for k in ("read", "write", "compute", "exscan", "load", "store"):
        times.setdefault(k, 0.0)
    t_origin = ctx.t_start if getattr(ctx, "t_start", None) is not None else time.perf_counter()
    rank, size = ctx.rank, ctx.size
    # The first rank in scan order (the last one in reverse) has the identity as its offset: its
    # chunks are final at once.  The last one's carry is read by nobody.
    final_now = rank == (size - 1 if plan.reverse else 0)
    last = rank == (0 if plan.reverse else size - 1)
    resident = config["mode"] == "resident"
    prescan = resident and config.get("prescan", False)
    settled_at = []  # a prescanned part: the running state after each chunk, in scan order
    rescanned = 0
    strategy = plan.strategy
    flagged = plan.carries.flagged
    chunks = layout.chunks
    K = len(chunks)
    order = list(range(K - 1, -1, -1)) if plan.reverse else list(range(K))  # scan order
    in_row = ctx.header.row_bytes + sum(a.header.row_bytes for a in layout.aux)
    out_row = layout.w * layout.out_dt.itemsize
    two_pass = not final_now and not resident
    total_bytes = layout.n * (in_row * (2 if two_pass and not last else 1) + out_row)
    bar = ctx.progress("scan", total_bytes)
    if hasattr(engine, "note"):
        engine.note = bar.note  # the engine's phases (a GPU starting) beside the bar
    ahead = getattr(engine, "read_ahead", READ_AHEAD)
    files = None  # opened inside pass A: a file that fails to open on one rank is agreed in the exchange
    ready = collections.deque()     # chunks whose output is final, waiting for a write slot
    writing = collections.deque()   # (chunk, future) in write order
    compute = [0.0]

    def harvest(block: bool) -> None:
        while writing and (writing[0][1].done() or block):
            k, fut = writing.popleft()
            fut.result()  # raises the write's error
            engine.done(k)
            bar.update(chunks[k][1] * out_row - chunks[k][0] * out_row)
            block = False

    def pump(block: bool) -> None:
        harvest(False)
        while ready:
            if len(writing) >= engine.out_slots:
                if not block:
                    return
                harvest(True)
                continue
            k = ready.popleft()
            rows = engine.output(k).result()
            writing.append((k, files.write(chunks[k][0], rows)))

    def submit(k):
        """Chunk ``k``'s reads: its rows and the same rows of every auxiliary input."""
        lo, hi = chunks[k]
        buf = engine.in_buffer(k)
        bufs = [engine.aux_buffer(k, i) for i in range(len(layout.aux))]
        return k, buf, files.read(lo, hi, buf), [(b, files.read_aux(i, lo, hi, b)) for i, b in enumerate(bufs)]

    def reads(ids):
        ids = list(ids)
        queue = collections.deque(submit(k) for k in ids[:ahead])
        nxt = len(queue)
        while queue:
            k, buf, fut, aux = queue.popleft()
            rows = fut.result()
            aux = [(f.result(), b) for b, f in aux]
            bar.update((chunks[k][1] - chunks[k][0]) * in_row)
            yield k, rows, buf, aux
            if nxt < len(ids):
                queue.append(submit(ids[nxt]))
                nxt += 1

    def timed(fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            compute[0] += time.perf_counter() - t0

    spans = {}
    error, offset = None, None
    first_seed = plan.initial_seed(initial) if final_now else None
    # An empty part with nothing to pass on sends no carry: the ranks after it start from no seed
    # (an exclusive scan's first value is then the identity, not the neutral element).
    carry = plan.identity() if layout.n or first_seed is not None else None
    if flagged and first_seed is not None:
        carry = plan.carries.of_values(initial)
    t_a = time.perf_counter()
    try:
        try:
            running = first_seed
            files = Files(ctx.header, ctx.writer, layout)
            if not (two_pass and last):
                for k, rows, buf, aux in reads(order):
                    engine.put(k, rows, buf, aux)
                    if final_now:
                        if flagged and not last:
                            carry = plan.combine(carry, timed(engine.carry, k))  # before an in-place scan
                        running = timed(engine.scan, k, running, True)
                        ready.append(k)
                        pump(block=not resident)
                    elif resident:
                        if strategy == "scan_then_add":
                            running = timed(engine.scan, k, running, True)
                        elif prescan:
                            running = timed(engine.prescan, k, running)
                            settled_at.append(np.array(running))
                        elif not last:
                            carry = plan.combine(carry, timed(engine.carry, k))
                    else:
                        if not last:
                            carry = plan.combine(carry, timed(engine.carry, k))
                        engine.drop(k)
            if not flagged and running is not None and (final_now or strategy == "scan_then_add" or prescan):
                carry = np.asarray(running, plan.carries.dtype).reshape(-1)  # a value, or a state's row
        except Exception as exc:  # noqa: BLE001 - agreed in the exchange, raised on every rank
            error = exc
        spans["load"] = (t_a, time.perf_counter())
        times["load"] += time.perf_counter() - t_a

        t0 = time.perf_counter()
        if size > 1:
            offset = plan.exchange(carry, error, rows=layout.n)
        elif error is not None:
            raise error
        spans["exscan"] = (t0, time.perf_counter())
        times["exscan"] += time.perf_counter() - t0

        t_b = time.perf_counter()
        with phase(ctx, "store"):
            if not final_now:
                running = offset
                # A prescanned chunk after which the running state has the bytes the prescan's had
                # (no offset at all, a segment that started, a product of coefficients that
                # vanished) leaves every later chunk as the prescan wrote it.
                settled = offset is None
                if resident:
                    for i, k in enumerate(order):
                        if strategy == "scan_then_add":
                            timed(engine.add, k, offset, i == 0)
                        elif prescan:
                            if not settled:
                                running = timed(engine.rescan, k, running, i < K - 1)
                                rescanned += 1
                                settled = i < K - 1 and _same_bytes(running, settled_at[i])
                            engine.settle(k)
                        else:
                            running = timed(engine.scan, k, running, i < K - 1)
                        ready.append(k)
                        pump(block=True)
                else:
                    for k, rows, buf, aux in reads(order):
                        engine.put(k, rows, buf, aux)
                        running = timed(engine.scan, k, running, True)
                        ready.append(k)
                        pump(block=True)
            engine.computed()  # no chunk will ask for the engine again: the writes alone remain
            pump(block=True)
            while writing:
                harvest(True)
        spans["store"] = (t_b, time.perf_counter())
    finally:
        if files is not None:
            files.close()
        bar.done()
    times["compute"] += compute[0]
    times["read"] += files.reads.wall
    times["write"] += files.writes.wall
    for name, sp in (("read", files.reads), ("write", files.writes)):
        if sp.first is not None:
            spans[name] = (sp.first, sp.last)
    ctx.spans.update({k: (a - t_origin, b - t_origin) for k, (a, b) in spans.items()})
    if prescan and isinstance(getattr(ctx, "host", None), dict):
        ctx.host["rescanned"] = rescanned  # of the part's chunks, after the exchange
    times["read_busy"] = files.reads.busy
    times["write_busy"] = files.writes.busy


def _same_bytes(a, b) -> bool:
    """Whether two running states (value or state rows) hold the same bytes, field by field (a
    state's padding bytes are whatever its buffer held)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.names is None:
        return a.tobytes() == b.tobytes()
    return all(_same_bytes(a[name], b[name]) for name in a.dtype.names)
