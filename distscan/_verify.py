"""Check a scanned ``.npy`` file by a route independent of the scan itself.

The scan forms carries with ``Exscan`` (or a reduction) and NumPy's
``accumulate``; the check uses neither.  Each rank

1. walks its own input slice with ``ufunc.reduce`` (pairwise, in a wider
   dtype for float sums and products), piece by piece between sampled rows, and
   so gets its exact slice total and the partial prefix at each sampled row;
2. gathers every rank's slice total and folds them in plain Python, in rank
   order, to get the carry into its slice;
3. reads the sampled rows back from the written file (its header too) and
   compares them with ``carry op partial``.

The sampled rows always include the first and last row of every slice, so the
per-rank totals (the rank boundaries, where a wrong carry shows first) are
always checked.  Integers and booleans must match exactly (wrapping like
NumPy), and so must float max/min; for these exact cases every row of the
output is also checked against its predecessor (``out[i] == out[i-1] op x[i]``,
one vectorized ufunc call per chunk), so a single wrong element is found.  Float sums and products are checked
against a reference computed in float64 (long double for float64 and
complex128) with the tolerance stated in :data:`TOLERANCE_DOC`.
"""

from __future__ import annotations

import numpy as np

from ._collective import DistScanError
from . import io as _io

TOLERANCE_DOC = ("float sums: |got - ref| <= 16*eps*sqrt(k)*sum(|x|) + eps_out*|ref|; "
                 "float products: |got - ref| <= (4*k*eps + eps_out)*|ref|; "
                 "rows whose exact value overflows (or, for products, underflows) the accumulator or "
                 "result dtype are skipped and counted; "
                 "k = elements in the prefix, eps of the accumulator dtype, eps_out of the result dtype; "
                 "integers, booleans, max and min: exact, every row")

SAMPLES_PER_RANK = 256
_PIECE_ROWS = 1 << 20


class VerificationError(DistScanError):
    """The written result does not match the independent check."""


def _ref_dtype(op, acc: np.dtype) -> np.dtype:
    if op.name in ("sum", "prod") and acc.kind in "fc":
        if acc.kind == "f":
            return np.dtype(np.longdouble) if acc.itemsize >= 8 else np.dtype(np.float64)
        return np.dtype(np.clongdouble) if acc.itemsize >= 16 else np.dtype(np.complex128)
    return acc


def _sample_rows(start: int, stop: int, rank: int, count: int) -> np.ndarray:
    if stop <= start:
        return np.empty(0, np.int64)
    rng = np.random.default_rng(12345 + rank)
    picks = rng.integers(start, stop, size=min(count, stop - start))
    return np.unique(np.concatenate([picks, [start, stop - 1]]).astype(np.int64))


def verify(header_out_path: str, x: np.ndarray, start: int, op, types, *, exclusive: bool,
           total_rows: int, out_shape, comm=None, samples: int = SAMPLES_PER_RANK) -> dict:
    """Check the scan written at ``header_out_path`` against this rank's input slice ``x``.

    ``x`` holds rows ``[start, start + len(x))`` of the input (native byte order).
    Collective over ``comm``: every rank returns the same summary or raises the
    same :class:`VerificationError`.
    """
    rank = 0 if comm is None else comm.Get_rank()
    n = x.shape[0]
    w = int(np.prod(x.shape[1:], dtype=np.int64)) if x.ndim > 1 else 1
    x2 = x.reshape(n, w)
    ref = _ref_dtype(op, types.acc)
    ident = np.full(w, op.identity(ref), ref)
    exact = ref == types.acc
    rows = _sample_rows(start, start + n, rank, samples)

    def reduce_piece(a, b):
        acc = ident.copy()
        for lo in range(a, b, _PIECE_ROWS):
            piece = x2[lo: min(b, lo + _PIECE_ROWS)].astype(ref)
            acc = op.ufunc(acc, op.ufunc.reduce(piece, axis=0)).astype(ref)
        return acc

    def abs_piece(a, b):
        s = np.zeros(w, np.float64)
        for lo in range(a, b, _PIECE_ROWS):
            s += np.abs(x2[lo: min(b, lo + _PIECE_ROWS)]).astype(np.float64).sum(axis=0)
        return s

    # 1. Partial prefixes inside the slice at each sampled row (exclusive: before it).
    partial, partial_abs, local_error = [], [], None
    total, total_abs = ident.copy(), np.zeros(w)
    try:
        run, run_abs, prev = ident.copy(), np.zeros(w), 0
        for g in rows:
            stop = int(g - start) + (0 if exclusive else 1)
            run = op.ufunc(run, reduce_piece(prev, stop)).astype(ref)
            if not exact:
                run_abs = run_abs + abs_piece(prev, stop)
            prev = stop
            partial.append(run.copy())
            partial_abs.append(run_abs.copy())
        total = op.ufunc(run, reduce_piece(prev, n)).astype(ref)
        total_abs = run_abs + (abs_piece(prev, n) if not exact else 0)

    except Exception as exc:  # noqa: BLE001 - shared through the gather below, never a hang
        local_error = f"{type(exc).__name__}: {exc}"

    # 2. Carries from the gathered slice totals, folded in rank order in plain Python.
    everyone = [(total, total_abs, local_error)] if comm is None else comm.allgather((total, total_abs, local_error))
    failed = [(r, e) for r, (_, _, e) in enumerate(everyone) if e is not None]
    if failed:
        raise VerificationError(f"verification could not run on rank {failed[0][0]}: {failed[0][1]}")
    carry, carry_abs = ident.copy(), np.zeros(w)
    for t, ta, _ in everyone[:rank]:
        carry = op.ufunc(carry, t).astype(ref)
        carry_abs = carry_abs + ta

    # 3. Compare with the file.
    problem = None
    max_err = 0.0
    skipped = 0
    try:
        hdr = _io.read_header(header_out_path)
        if hdr.shape != tuple(out_shape) or hdr.dtype != types.result:
            raise VerificationError(f"written header says {hdr.shape} {hdr.dtype}, expected "
                                    f"{tuple(out_shape)} {types.result}")
        eps = np.finfo(types.acc).eps if types.acc.kind in "fc" else 0.0
        eps_out = np.finfo(types.result).eps if types.result.kind in "fc" else 0.0
        for g, p, pa in zip(rows, partial, partial_abs):
            want = op.ufunc(carry, p).astype(ref)
            got = _io.read_rows(hdr, int(g), int(g) + 1).reshape(w)
            k = (int(g) + (0 if exclusive else 1)) * w
            if exact or types.result.kind not in "fc":
                bad = ~((got == want.astype(types.result)) | (_isnan(got) & _isnan(want)))
                tol = np.zeros(w)
            else:
                diff = np.abs(got.astype(ref) - want).astype(np.float64)
                mag = np.abs(want).astype(np.float64)
                if op.name == "sum":
                    tol = 16 * eps * np.sqrt(max(k, 1)) * (carry_abs + pa) + eps_out * mag
                else:
                    tol = (4 * max(k, 1) * eps + eps_out) * mag
                same = (got.astype(ref) == want) | (_isnan(got) & _isnan(want))
                # Where the exact value leaves the normal range of the accumulator or the result
                # (overflow to inf/nan, underflow to subnormals or 0), the narrow dtypes legitimately
                # saturate and no useful bound exists: such rows are skipped, and counted.
                lo_ok = max(np.finfo(types.acc).tiny, np.finfo(types.result).tiny) if op.name == "prod" else 0.0
                hi_ok = min(np.finfo(types.acc).max, np.finfo(types.result).max)
                unbounded = ~np.isfinite(mag) | (mag > hi_ok) | ((mag < lo_ok) & (mag != 0)) | \
                    (~np.isfinite(got.astype(ref)) & ~np.isfinite(want))
                skipped += int(unbounded.any())
                bad = ~same & ~(diff <= tol) & ~unbounded
                finite = np.isfinite(diff) & ~same & ~unbounded
                if finite.any():
                    max_err = max(max_err, float(diff[finite].max()))
            if bad.any():
                j = int(np.argmax(bad))
                where = f"row {int(g)}" + (f", column {j}" if w > 1 else "")
                problem = (f"{where}: expected {want[j]!r} (tolerance {tol[j]:.3g}), "
                           f"file has {got[j]!r}")
                break
        if problem is None and exact:
            problem = _check_every_row(hdr, x2, start, op, types, carry, exclusive)
    except VerificationError as exc:
        problem = str(exc)
    except Exception as exc:  # noqa: BLE001 - a file we cannot read back is a failed check
        problem = f"cannot read the result back: {exc}"
    mine = (problem, len(rows) - skipped, max_err, skipped)
    reports = [mine] if comm is None else comm.allgather(mine)
    bad = [(r, p) for r, (p, _, _, _) in enumerate(reports) if p is not None]
    if bad:
        r, p = bad[0]
        more = f" (and {len(bad) - 1} other rank{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
        raise VerificationError(f"verification failed on rank {r}{more}: {p}")
    return {
        "passed": True,
        "checked_rows": int(sum(c for _, c, _, _ in reports)),
        "skipped_rows": int(sum(k for _, _, _, k in reports)),
        "every_row_checked": bool(exact or types.result.kind not in "fc"),
        "rank_boundaries_checked": True,
        "max_abs_error": max(e for _, _, e, _ in reports),
        "tolerance": "exact" if (exact or types.result.kind not in "fc") else TOLERANCE_DOC,
    }


def _check_every_row(hdr, x2, start, op, types, carry, exclusive):
    """For exact operators: every row of this rank's output against its predecessor.

    Inclusive: ``out[i] == out[i-1] op x[i]``, with ``out[start-1]`` the carry;
    exclusive: ``out[start] == carry`` and ``out[i] == out[i-1] op x[i-1]``.
    One vectorized ufunc call per chunk, no ``accumulate``: a single wrong
    element anywhere is found.  Returns a message for the first mismatch, or None.
    """
    n, w = x2.shape
    prev = carry.astype(types.result)  # the output row before the chunk (or the carry)
    prev_x = None                      # exclusive: the input row before the chunk
    for lo in range(0, n, _PIECE_ROWS):
        hi = min(n, lo + _PIECE_ROWS)
        got = _io.read_rows(hdr, start + lo, start + hi).reshape(hi - lo, w)
        xs = x2[lo:hi].astype(types.acc)
        before = np.concatenate([prev.reshape(1, w), got[:-1]])
        if exclusive:
            xin = np.concatenate([xs[:0] if prev_x is None else prev_x.reshape(1, w), xs[:-1]])
            want = np.empty_like(got)
            if prev_x is None:
                want[0] = carry.astype(types.result)
                want[1:] = op.ufunc(before[1:], xin).astype(types.result)
            else:
                want[:] = op.ufunc(before, xin).astype(types.result)
            prev_x = xs[-1].copy()
        else:
            want = op.ufunc(before, xs).astype(types.result)
        bad = ~((got == want) | (_isnan(got) & _isnan(want)))
        if bad.any():
            i, j = np.unravel_index(int(np.argmax(bad)), bad.shape)
            where = f"row {start + lo + int(i)}" + (f", column {int(j)}" if w > 1 else "")
            return f"{where}: expected {want[i, j]!r} from the row before it, file has {got[i, j]!r}"
        prev = got[-1].copy()
    return None


def _isnan(a) -> np.ndarray:
    a = np.asarray(a)
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)
