"""Tests of distscan.ops: every associative scan of issue 30 against a sequential reference on the
concatenation of the ranks' parts: the plain operators beyond the classic ten and reverse scans
(test_ufuncs), segmented scans (test_segmented), linear recurrences (test_recurrences),
compensated sums (test_compensated), declared operators (test_declared), and what every rank
refuses together (test_refusals).  include_initial is in tests/test_api_include_initial.py, the
recursive-doubling exchange in tests/dist/test_exchange.py, the GPU's scans in
tests/gpu/test_operators.py.

Written for any rank count (serially and under mpiexec, tests/run.sh; the carry combinations run at 8
ranks too: marked manyranks).  Parts are drawn per rank (empty ones included), so segments and
recurrences cross rank boundaries anywhere.

Bounds: integers bit for bit.  Floats: plain and segmented scans within ``8 n eps sum|x|`` of the
float64 reference (the worst case of a sum of n terms in any association:
``tests.support.reference.assert_within_sum_bound``); linear recurrences within ``8 n eps max|y|``
of a float64 (complex128) sequential loop for ``|a| <= 1``; compensated float32 sums correctly
rounded where every sum of consecutive items is below 2^40 units, else within 2 ulp plus
``(3 m + R^2) u^2 sum|x|`` (``tests.support.reference.assert_compensated``, docs/operators.md)."""
