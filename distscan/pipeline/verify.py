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

from ..dist.agree import DistScanError
from ..ops import get_op
from .. import io as _io
from .every_row import PIECE_ROWS, check_every_row, isnan
from .saturation import Seq, find_events, rep_reduce

TOLERANCE_DOC = ("float sums: |got - ref| <= 16*eps*sqrt(k)*sum(|x|) + eps_out*|ref| + the smallest subnormal; "
                 "float products: |got - ref| <= (4*k*eps + eps_out)*|ref| + the smallest subnormal; "
                 "ref: the exact prefix (float64 or long double), which must lie in the result's range; "
                 "where NumPy's sequential scan in the accumulator dtype overflows, its value (inf, then "
                 "following the later inputs: inf + -inf = nan, inf * 0 = nan) is required for products and "
                 "accepted for sums (another association of the sum may stay finite, then within the bound); "
                 "an exact value beyond the result's range must be inf of its sign; a tolerance that is not "
                 "finite accepts nothing; rows of a product that passed through the subnormal range are "
                 "skipped and counted; k = elements in the prefix, eps of the accumulator dtype, eps_out of "
                 "the result dtype; integers, booleans, max and min: exact, every row")

SAMPLES_PER_RANK = 256


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
    if stop - start <= count + 2:  # a small slice: every row
        return np.arange(start, stop, dtype=np.int64)
    rng = np.random.default_rng(12345 + rank)
    picks = rng.integers(start, stop, size=count)
    return np.unique(np.concatenate([picks, [start, stop - 1]]).astype(np.int64))


def _real(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.empty(0, dtype).real.dtype)


def verify(header_out_path: str, x: np.ndarray, start: int, op, types, *, exclusive: bool,
           total_rows: int, out_shape, comm=None, samples: int = SAMPLES_PER_RANK) -> dict:
    """Check the scan written at ``header_out_path`` against this rank's input slice ``x``.

    ``x`` holds rows ``[start, start + len(x))`` of the input (native byte order).
    Collective over ``comm``: every rank returns the same summary or raises the
    same :class:`VerificationError`.  The summary's ``summary`` says in one
    sentence what was checked: rows, rank boundaries, exact or within
    tolerance, and rows skipped with the reason.
    """
    rank = 0 if comm is None else comm.Get_rank()
    size = 1 if comm is None else comm.Get_size()
    # NaN-aware sums and products are the plain ones of the inputs with NaN read as the identity
    lift = op.lift if op.nan_lift else None
    op = get_op({"nansum": "sum", "nanprod": "prod"}.get(op.name, op.name))
    # NumPy's accumulate copies its first item as it is, and the neutral element combined with it
    # is not always it (gcd(0, -4) is 4, fmax(-inf, nan) -inf): the prefix of the array's first row
    # alone is that row (this slice holds it where it starts the array).
    raw_first = start == 0 and x.shape[0] > 0
    n = x.shape[0]
    w = int(np.prod(x.shape[1:], dtype=np.int64)) if x.ndim > 1 else 1
    x2 = x.reshape(n, w)
    if types.rounds_inputs:  # --dtype float16 of wider input: the scan read it rounded (CpuEngine.put)
        x2 = x2.astype(types.compute)
    ref = _ref_dtype(op, types.acc)
    rref = _real(ref)
    ident = np.full(w, op.identity(ref), ref)  # an exclusive scan's empty prefix, as presented
    neutral = np.full(w, op.neutral(ref), ref)  # what reductions start from (NaN for fmax: fmax(nan, x) is x)
    # exact where the reference is the accumulator's own arithmetic and association cannot change it
    # (max, min, ...); logaddexp rounds, and a split associates it otherwise (not exact)
    exact = (ref == types.acc and op.name not in ("logaddexp", "logaddexp2")) or types.result.kind not in "fc"
    floaty = not exact
    is_prod = op.name == "prod"
    cplx = ref.kind == "c"
    rows = _sample_rows(start, start + n, rank, samples)

    def pieces(a, b):
        for lo in range(a, b, PIECE_ROWS):
            piece = x2[lo: min(b, lo + PIECE_ROWS)]
            yield piece if lift is None else lift(piece, piece.dtype)

    def reduce_piece(a, b):
        """Rows [a, b) reduced (None for none): from the array's first row as it is, where they
        start the array."""
        if a >= b:
            return None
        acc = neutral.copy()
        if raw_first and a == 0:
            first = x2[:1] if lift is None else lift(x2[:1], x2.dtype)
            acc, a = first.astype(ref).reshape(w), 1
        for piece in pieces(a, b):
            acc = op.ufunc(acc, op.ufunc.reduce(piece.astype(ref), axis=0)).astype(ref)
        return acc

    def fold(acc, r):
        """``acc op r``, where None is nothing (no rows)."""
        return r if acc is None else acc if r is None else op.ufunc(acc, r).astype(ref)

    def abs_piece(a, b):
        s = np.zeros(w, rref)
        for piece in pieces(a, b):
            s += np.abs(piece.astype(ref)).sum(axis=0, dtype=rref)
        return s

    def log_piece(a, b):
        hi, lo_ = np.zeros(w), np.zeros(w)
        for piece in pieces(a, b):
            m = np.abs(piece).astype(np.float64)
            with np.errstate(divide="ignore"):
                lg = np.log2(np.where(m == 0, 1.0, m))
            hi += np.maximum(lg, 0).sum(axis=0)
            lo_ += np.minimum(lg, 0).sum(axis=0)
        return hi, lo_

    # 1. Per segment between sampled rows: its reduction, sum |x|, and (products) log2 bounds.
    stops = [int(g - start) + (0 if exclusive else 1) for g in rows] + [n]
    seg = []  # (a, b, reduction, abs sum, log hi, log lo)
    total, total_abs, local_error = None, np.zeros(w, rref), None
    try:
        prev = 0
        for stop in stops:
            r = reduce_piece(prev, stop)
            ab = abs_piece(prev, stop) if floaty else np.zeros(w, rref)
            lh, ll = log_piece(prev, stop) if floaty and is_prod else (np.zeros(w), np.zeros(w))
            seg.append((prev, stop, r, ab, lh, ll))
            prev = stop
        for _, _, r, ab, _, _ in seg:
            total = fold(total, r)
            total_abs = total_abs + ab
    except Exception as exc:  # noqa: BLE001 - shared through the gather below, never a hang
        local_error = f"{type(exc).__name__}: {exc}"

    # 2. Carries from the gathered slice totals, folded in rank order in plain Python.
    everyone = [(total, total_abs, local_error)] if comm is None else comm.allgather((total, total_abs, local_error))
    failed = [(r, e) for r, (_, _, e) in enumerate(everyone) if e is not None]
    if failed:
        raise VerificationError(f"verification could not run on rank {failed[0][0]}: {failed[0][1]}")
    carry, carry_abs = None, np.zeros(w, rref)  # None: no row before this slice
    for t, ta, _ in everyone[:rank]:
        carry = fold(carry, t)
        carry_abs = carry_abs + ta

    # 3. Floats: where NumPy's sequential scan in the accumulator dtype leaves the finite range
    #    (overflow to inf, a product through the subnormals), found from the exact prefixes;
    #    the state at each sampled row (from this slice alone) and at its end, then across ranks.
    states, prefixes, abs_prefixes = [], [], []
    local_end, rep_total, problem = Seq(w, ref), np.full(w, op.identity(ref), ref), None
    try:
        st = Seq(w, ref)
        big = float(np.finfo(types.acc).max) if floaty else 0.0
        tiny = float(np.finfo(types.acc).tiny) if floaty else 0.0
        run, run_abs = carry, carry_abs.copy()  # run: None while no row is in the prefix
        for k, (a, b_, r, ab, lh, ll) in enumerate(seg):
            if floaty:
                before = ident if run is None else run  # the prefix before this segment
                mag0 = np.abs(before).astype(rref)
                if is_prod:
                    with np.errstate(divide="ignore"):
                        l0 = np.log2(np.where(mag0 == 0, 1, mag0).astype(np.float64))
                    flag = (mag0 != 0) & ((l0 + lh > np.log2(big) - 1) | (l0 + ll < np.log2(tiny) + 1))
                else:
                    flag = mag0 + ab > big / 2
                flag &= ~st.sat & ~st.lost
                if st.sat.any():
                    st.val = np.where(st.sat, op.ufunc(st.val, rep_reduce(op, pieces(a, b_), ref, w)), st.val)
                if flag.any():
                    if cplx:
                        st.lost |= flag
                    else:
                        find_events(op, pieces(a, b_), before, flag, st, big, tiny, ref, w)
            run = fold(run, r)
            run_abs = run_abs + ab
            if k < len(rows):
                states.append(st.copy())
                prefixes.append(ident.copy() if run is None else run.copy())
                abs_prefixes.append(run_abs.copy())
        local_end = st
    except Exception as exc:  # noqa: BLE001
        problem = f"cannot compute the reference: {type(exc).__name__}: {exc}"

    incoming = Seq(w, ref)
    if floaty:
        mine = (local_end.sat, local_end.val, local_end.lost)
        gathered = [mine] if comm is None else comm.allgather(mine)
        any_sat = any(bool(g_[0].any()) for g_ in gathered)
        reps = None
        if any_sat:  # the same decision on every rank: a saturated value meets later slices' inputs
            try:
                rep_total = rep_reduce(op, pieces(0, n), ref, w)
            except Exception as exc:  # noqa: BLE001
                problem = problem or f"cannot compute the reference: {exc}"
            reps = [rep_total] if comm is None else comm.allgather(rep_total)
        for r_ in range(rank):
            sat_r, val_r, lost_r = gathered[r_]
            incoming.lost |= lost_r
            if any_sat:
                incoming.val = np.where(incoming.sat, op.ufunc(incoming.val, reps[r_]), val_r)
                incoming.sat |= sat_r
        if incoming.sat.any() and problem is None:
            run_rep = incoming.val.copy()
            for k_, (a_, b_, *_rest) in enumerate(seg[:len(rows)]):
                run_rep = op.ufunc(run_rep, rep_reduce(op, pieces(a_, b_), ref, w))
                states[k_].val = np.where(incoming.sat, run_rep, states[k_].val)
                states[k_].sat |= incoming.sat
        for s_k in states:
            s_k.lost |= incoming.lost

    # 4. Compare with the file.
    max_err = 0.0
    skipped = 0
    boundary = None  # this slice's last row (a rank boundary): checked, skipped, or no rows
    skip_why = set()
    try:
        if problem is not None:
            raise VerificationError(problem)
        hdr = _io.read_header(header_out_path)
        if hdr.shape != tuple(out_shape) or hdr.dtype != types.result:
            raise VerificationError(f"written header says {hdr.shape} {hdr.dtype}, expected "
                                    f"{tuple(out_shape)} {types.result}")
        eps = float(np.finfo(types.acc).eps) if floaty else 0.0
        eps_out = float(np.finfo(types.result).eps) if floaty else 0.0
        max_out = float(np.finfo(types.result).max) if floaty else 0.0
        sub_out = float(np.finfo(types.result).smallest_subnormal) if floaty else 0.0
        for i, g in enumerate(rows):
            want = prefixes[i]
            got = _io.read_rows(hdr, int(g), int(g) + 1).reshape(w)
            k = (int(g) + (0 if exclusive else 1)) * w
            row_skipped = False
            if not floaty:
                bad = ~((got == want.astype(types.result)) | (isnan(got) & isnan(want)))
                tol = np.zeros(w)
            else:
                s_i = states[i]
                g_ref = got.astype(ref)
                mag = np.abs(want).astype(rref)
                if op.name == "sum":
                    tol = 16 * eps * np.sqrt(max(k, 1)) * abs_prefixes[i] + eps_out * mag + sub_out
                else:
                    tol = (4 * max(k, 1) * eps + eps_out) * mag + sub_out
                diff = np.abs(g_ref - want).astype(rref)
                both_nan = isnan(got) & isnan(want)
                in_range = np.isfinite(want) & (mag <= max_out)
                near = in_range & np.isfinite(tol) & np.isfinite(g_ref) & (diff <= tol)
                if is_prod:  # products follow the sequential order's saturation at any split
                    near &= ~s_i.sat
                same = (g_ref == want) | both_nan
                # NumPy's sequential scan saturated before this row: its value is as good as the exact one.
                seq = s_i.sat & ((g_ref == s_i.val) | (isnan(got) & isnan(s_i.val)))
                # The exact value is beyond the result dtype: the rounded result is inf of its sign.
                over = ~in_range & ~isnan(want) & np.isinf(g_ref) & (np.sign(g_ref.real) == np.sign(want.real))
                ok = same | near | seq | over
                lost = s_i.lost & ~ok
                if lost.any():
                    row_skipped = True
                    skip_why.add("a product passed through the subnormal range" if not cplx
                                 else "a complex prefix may have overflowed")
                bad = ~ok & ~lost
                fin = near & ~same
                if fin.any():
                    max_err = max(max_err, float(diff[fin].max()))
            skipped += int(row_skipped)
            if int(g) == start + n - 1:
                boundary = "skipped" if row_skipped else "checked"
            if bad.any():
                j = int(np.argmax(bad))
                where = f"row {int(g)}" + (f", column {j}" if w > 1 else "")
                t = tol[j]
                tol_text = "exact" if not floaty else (f"tolerance {float(t):.3g}" if np.isfinite(t) else
                                                      "no finite tolerance")
                seq_text = (f" or {states[i].val[j]!r} as NumPy's sequential scan gives"
                            if floaty and states[i].sat[j] else "")
                problem = (f"{where}: expected {want[j]!r} ({tol_text}){seq_text}, file has {got[j]!r}")
                break
        if problem is None and not floaty:
            problem = check_every_row(hdr, x2, start, op, types, ident if carry is None else carry, exclusive,
                                      raw_first, lift)
    except VerificationError as exc:
        problem = str(exc)
    except Exception as exc:  # noqa: BLE001 - a file we cannot read back is a failed check
        problem = f"cannot read the result back: {exc}"
    mine = (problem, len(rows) - skipped, max_err, skipped, boundary, sorted(skip_why))
    reports = [mine] if comm is None else comm.allgather(mine)
    bad = [(r, p) for r, (p, *_x) in enumerate(reports) if p is not None]
    if bad:
        r, p = bad[0]
        more = f" (and {len(bad) - 1} other rank{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
        raise VerificationError(f"verification failed on rank {r}{more}: {p}")
    checked = int(sum(rep[1] for rep in reports))
    skipped_all = int(sum(rep[3] for rep in reports))
    # Rank boundaries: the last row of every rank but the last that has rows.
    with_rows = [rep for rep in reports if rep[4] is not None]
    bounds = with_rows[:-1]
    b_checked = sum(rep[4] == "checked" for rep in bounds)
    whys = sorted({w_ for rep in reports for w_ in rep[5]})
    if not floaty:
        text = (f"every row checked exactly ({int(total_rows):,} rows, each against the row before it; "
                f"{checked:,} sampled rows also against an independent reduction)")
    else:
        text = f"{checked:,} sampled rows checked within the float tolerance (see --help), not every row"
    if size > 1:
        text += (f"; rank boundaries (each rank's last row): {b_checked} of {len(bounds)} checked" if bounds
                 else "; no rank boundary (the rows lie on one rank)")
    if skipped_all:
        text += f"; {skipped_all:,} sampled rows skipped ({'; '.join(whys)}: no error bound exists there)"
    every_row = not floaty
    return {
        "passed": True,
        "checked_rows": checked,
        "skipped_rows": skipped_all,
        "skipped_because": whys,
        "every_row_checked": every_row,
        "rank_boundaries": len(bounds),
        "rank_boundaries_checked": int(b_checked),
        "max_abs_error": max(rep[2] for rep in reports),
        "tolerance": "exact" if not floaty else TOLERANCE_DOC,
        "summary": text,
    }
