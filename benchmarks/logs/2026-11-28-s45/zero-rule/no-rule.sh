#!/bin/bash
# Makes TREE's float and complex affine compositions plain IEEE arithmetic (the zero rule's tests
# compiled out): a timing-only variant, wrong where a non-finite coefficient meets a zero.
set -e
f=$1/kernels/util/states.cuh
sed -i 's/static __device__ __forceinline__ bool zero_rule(R a, R y) { return (y == R(0)) \& !isfinite(a); }/static __device__ __forceinline__ bool zero_rule(R, R) { return false; }/' $f
sed -i 's/static __device__ __forceinline__ R coef(R a, R y) { return (y == R(0) \&\& !isfinite(a)) ? R(0) : a; }/static __device__ __forceinline__ R coef(R a, R) { return a; }/' $f
sed -i 's/return (y.re == R(0)) \& (y.im == R(0)) \& !(isfinite(a.re) \& isfinite(a.im));/return false;/' $f
test "$(grep -c 'return false;' $f)" -ge 2
grep -q 'coef(R a, R) { return a; }' $f
