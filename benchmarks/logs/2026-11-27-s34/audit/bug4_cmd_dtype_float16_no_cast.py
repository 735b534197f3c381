# The command's --dtype float16 does not cast the input to float16 first (docs/command.md:
# "--dtype DT: result dtype (the input is cast to it first, as numpy.cumsum(dtype=...))");
# the library's cumsum(x, dtype=float16) does, and so does NumPy.
import os, subprocess, sys, tempfile
import numpy as np, distscan
d = tempfile.mkdtemp()
g = np.array([0.12573022, -0.13210486, 0.64042265, 0.10490012])   # float64 input
np.save(f"{d}/in.npy", g)
p = sys.argv[1] if len(sys.argv) > 1 else "1"
subprocess.run(["timeout", "120", "mpiexec", "-n", p, sys.executable, "-m", "distscan", f"{d}/in.npy",
                "--dtype", "float16", "-o", f"{d}/out.npy", "--force", "--quiet"], check=True)
print("command --dtype float16      :", np.load(f"{d}/out.npy"))
print("distscan.cumsum(dtype=f16)   :", distscan.cumsum(g, dtype=np.float16))
print("numpy.cumsum(dtype=float16)  :", np.cumsum(g, dtype=np.float16))
print("input cast to f16, f32 accum :", np.cumsum(g.astype(np.float16).astype(np.float32)).astype(np.float16))
print("input NOT cast (f32 accum)   :", np.cumsum(g.astype(np.float32)).astype(np.float16))
