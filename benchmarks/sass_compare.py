"""Whether two trees compile to the same machine code: for a refactor of kernels/ that must not
change what any kernel computes or how fast it runs.

    python benchmarks/sass_compare.py dump TREE OUT [--only LABEL,...] [--jobs N]
    python benchmarks/sass_compare.py compare OUT_A OUT_B

``dump`` compiles, for sm_90, a representative set of modules of the distscan in TREE (each
algorithm= on 12 operator x dtype cases, float16 and complex among them, and 6 odd tile shapes
and look-ahead rings): with NVRTC as the host does (TREE's _source(), options() and names()),
and with nvcc on the same source and name expressions.  For every kernel role of every module it
keeps the SASS (cuobjdump -sass), the resource usage (cuobjdump -res-usage: registers, shared
memory, stack) and the kernel's ELF attributes (launch bounds, register cap, parameter layout),
with the kernels' names replaced by their roles, so that trees whose templates are spelt
differently compare.  ``compare`` reports, per compiler, module and role, what differs.

Needs nvcc, cuobjdump and nvdisasm on PATH, and libnvrtc (DISTSCAN_NVRTC_LIB, else found by
ctypes; the pip packages nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm and nvidia-cuda-nvrtc have
them); no GPU.  The old tree is e.g. ``git archive COMMIT | tar -x -C /tmp/old``.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ARCH = "sm_90"
CASES = [("sum", "int32"), ("sum", "int8"), ("prod", "float64"), ("max", "float32"), ("logical_or", "int64"),
         ("bitwise_xor", "uint16"), ("sum", "float16"), ("prod", "complex64"), ("min", "uint64"),
         ("sum", "complex128"), ("logical_and", "bool"), ("bitwise_or", "int16")]
ALGORITHMS = ["auto", "kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch", "domino", "hierarchical",
              "lookahead"]


def _tree_modules(tree: Path):
    sys.path.insert(0, str(tree))
    import numpy as np

    from distscan._dtypes import scan_types
    try:  # the package in folders (from issue 29's layout)
        from distscan.backends.cuda import compile as cc
    except ImportError:  # trees before it
        from distscan.backends import _cuda_compile as cc
    from distscan.backends import cuda as gpu
    from distscan.ops import OPS

    return np, scan_types, cc, gpu, OPS


def module_keys(tree: Path) -> dict:
    """{label: ModuleKey} of the modules compared."""
    np, scan_types, cc, gpu, OPS = _tree_modules(tree)
    keys = {}
    for opname, dt in CASES:
        op = OPS[opname]
        for algorithm in ALGORITHMS:
            keys[f"{opname}-{dt}-{algorithm}"] = gpu.module_key(np.dtype(dt), scan_types(op, np.dtype(dt)), op,
                                                                algorithm)
    base = keys["max-float32-lookahead"]  # float32 in, accumulator and out
    odd = [(cc.Tuning(128, 16, 1024, 2, 5, 3, 1), "coarsened", "lookahead"),
           (cc.Tuning(256, 32, 512, 1, 4, 2, 2), "coarsened", "lookahead"),
           (cc.Tuning(64, 32, 1024, 3, 9, 7, 7), "coarsened", "lookahead"),
           (cc.Tuning(128, 8, 96, 1), "coarsened", "lookback"),
           (cc.Tuning(64, 16, 64, 2), "blelloch", "domino"),
           (cc.Tuning(512, 4, 32, 1), "brent_kung", "hierarchical")]
    for i, (tuning, block, device) in enumerate(odd):
        keys[f"shape-{i}-{block}-{device}"] = cc.ModuleKey(base.in_dtype, base.acc_dtype, base.out_dtype, "Sum",
                                                           tuning, block, device)
    return keys


def _nvrtc():
    path = os.environ.get("DISTSCAN_NVRTC_LIB") or ctypes.util.find_library("nvrtc")
    if not path:
        raise SystemExit("libnvrtc not found: set DISTSCAN_NVRTC_LIB")
    return ctypes.CDLL(path)


def _check(lib, rc, prog=None):
    if rc != 0:
        log = ""
        if prog is not None:
            n = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode()
        raise RuntimeError(f"NVRTC error {rc}\n{log}")


def compile_nvrtc(cc, key, d: Path) -> dict:
    """The module as the host builds it, into d/module.cubin; returns {role: lowered name}."""
    lib = _nvrtc()
    src, _ = cc._source()
    cuda_include = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"  # cuda_fp16.h, as CuPy adds
    opts = [*cc.options(key), f"-arch={ARCH}", f"-I{cuda_include}"]
    by_role = cc.names(key)
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"scan_kernels.cu", 0, None, None))
    for expr in dict.fromkeys(by_role.values()):
        _check(lib, lib.nvrtcAddNameExpression(prog, expr.encode()))
    _check(lib, lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])),
           prog)
    lowered = {}
    for role, expr in by_role.items():
        p = ctypes.c_char_p()
        _check(lib, lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(p)))
        lowered[role] = p.value.decode()
    n = ctypes.c_size_t()
    _check(lib, lib.nvrtcGetCUBINSize(prog, ctypes.byref(n)))
    buf = ctypes.create_string_buffer(n.value)
    _check(lib, lib.nvrtcGetCUBIN(prog, buf))
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    d.mkdir(parents=True, exist_ok=True)
    (d / "module.cubin").write_bytes(buf.raw)
    return lowered


def compile_nvcc(cc, key, d: Path) -> None:
    """The same source and name expressions through nvcc (the kernels' addresses taken)."""
    _, kdir = cc._source()
    d.mkdir(parents=True, exist_ok=True)
    table = ",\n".join(f"    (void *)&{e}" for e in dict.fromkeys(cc.names(key).values()))
    (d / "names.cu").write_text(f'#include "scan_kernels.cu"\nvoid *kernels[] = {{\n{table}\n}};\n')
    subprocess.run(["nvcc", f"-arch={ARCH}", "-cubin", *cc.options(key), str(d / "names.cu"), "-o",
                    str(d / "module.cubin")], check=True, capture_output=True, text=True)


def _sections(text: str, header: str) -> dict:
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(header, line)
        if m:
            cur = m.group(1)
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def dump_cubin(cubin: Path, lowered: dict) -> dict:
    """{role: {"sass", "res", "info", "symbol"}} of a cubin, kernel names replaced by roles."""
    def tool(flag):
        return subprocess.run(["cuobjdump", flag, str(cubin)], check=True, capture_output=True, text=True).stdout

    sass = _sections(tool("-sass"), r"\s*Function : (\S+)")
    res = dict(re.findall(r"Function (\S+):\n\s*(.*)", tool("-res-usage")))
    elf = {}
    cur = None
    for line in tool("-elf").splitlines():
        if line.startswith("."):
            cur = line.split()[1] if line.startswith(".section ") else line.split()[0]
            elf[cur] = []
        elif cur is not None:
            elf[cur].append(line)
    role_of = {name: role for role, name in lowered.items()}

    def neutral(s):
        for name, role in role_of.items():
            s = s.replace(name, f"<{role}>")
        # EIATTR_PARAM_CBANK's first word is the index of a symbol in the symbol table, which
        # is ordered by name: not a property of the kernel
        return re.sub(r"(EIATTR_PARAM_CBANK\n\tFormat:\tEIFMT_SVAL\n\tValue:\t)0x[0-9a-f]+", r"\1<symbol>", s)

    out = {}
    for role, name in lowered.items():
        info = [p + "\n" + "\n".join(elf[p + name])
                for p in (".nv.info.", ".nv.shared.", ".nv.constant0.", ".rela.text.") if p + name in elf]
        info.append(".text. " + (elf.get(".text." + name) or ["MISSING"])[0])  # lmem, smem
        out[role] = {"sass": neutral(sass[name]), "res": neutral(res.get(name, "MISSING")),
                     "info": neutral("\n".join(info)), "symbol": name}
    return out


def _dump_one(args):
    tree, out, label = args
    _, _, cc, _, _ = _tree_modules(tree)
    key = module_keys(tree)[label]
    lowered = compile_nvrtc(cc, key, out / "nvrtc" / label)
    result = {"names": cc.names(key), "nvrtc": dump_cubin(out / "nvrtc" / label / "module.cubin", lowered)}
    compile_nvcc(cc, key, out / "nvcc" / label)
    result["nvcc"] = dump_cubin(out / "nvcc" / label / "module.cubin", lowered)  # same mangling as NVRTC's
    return label, result


def dump(tree: Path, out: Path, only, jobs: int) -> None:
    labels = only or list(module_keys(tree))
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    with ProcessPoolExecutor(jobs) as ex:
        for label, r in ex.map(_dump_one, [(tree, out, label) for label in labels]):
            results[label] = r
            print(label, flush=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"{len(results)} modules dumped to {out}")


def compare(a: Path, b: Path) -> int:
    ra, rb = (json.loads((p / "results.json").read_text()) for p in (a, b))
    labels = sorted(set(ra) & set(rb))
    same = {"sass": 0, "res": 0, "info": 0}
    diffs, kernels, builds = [], 0, set()
    for label in labels:
        for comp in ("nvrtc", "nvcc"):
            ka, kb = ra[label][comp], rb[label][comp]
            if set(ka) != set(kb):
                diffs.append((label, comp, "roles", "differ"))
                continue
            for role in ka:
                kernels += 1
                builds.add((comp, kb[role]["symbol"]))
                for what in same:
                    if ka[role][what] == kb[role][what]:
                        same[what] += 1
                    else:
                        diffs.append((label, comp, role, what))
    print(f"{len(labels)} modules x 2 compilers: {kernels} kernels compared ({len(builds)} distinct builds)")
    for what, n in same.items():
        print(f"  {what}: {n}/{kernels} identical")
    for d in diffs:
        print("DIFFERS", *d)
    print("ALL IDENTICAL" if not diffs else f"{len(diffs)} DIFFERENCES")
    return 1 if diffs else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("tree", type=Path)
    d.add_argument("out", type=Path)
    d.add_argument("--only", type=lambda s: s.split(","), default=None, help="labels of the modules to dump")
    d.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.tree.resolve(), args.out.resolve(), args.only, args.jobs)
    else:
        sys.exit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
