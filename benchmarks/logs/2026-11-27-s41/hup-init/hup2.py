import os, signal, subprocess, sys, time, glob
sys.path.insert(0, '/work/main')
from tests.cli.test_signals import _tree, _alive
delay = float(sys.argv[1]); target = sys.argv[2]; n = int(sys.argv[3]); sig = getattr(signal, sys.argv[4] if len(sys.argv) > 4 else "SIGHUP")
inp = sys.argv[5] if len(sys.argv) > 5 else "/tmp/rt41/bigf.npy"
extra = sys.argv[6:] 
out = "/tmp/hupab/out-" + os.environ.get("TAG","x") + ".npy"
if os.path.exists(out): os.remove(out)
cmd = ["mpiexec", "-n", str(n), sys.executable, "-m", "distscan", inp, "-o", out, "--force"] + extra
t0 = time.monotonic()
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=os.environ.get("HUPCWD", "/work/main"))
def ranks():
    res = {}
    for p in _tree(proc.pid):
        try:
            env = open(f"/proc/{p}/environ", "rb").read().split(b"\0")
            cl = open(f"/proc/{p}/cmdline").read()
        except OSError: continue
        if "distscan" not in cl: continue
        for e in env:
            if e.startswith(b"PMI_RANK="): res[int(e[9:])] = p
    return res
while time.monotonic() - t0 < delay:
    time.sleep(0.005)
rk = ranks()
if target == "mpiexec": os.kill(proc.pid, sig)
elif target == "pg": os.killpg(proc.pid, sig)
else:
    k = int(target)
    if k in rk: os.kill(rk[k], sig)
    else: print("rank", k, "not found yet; ranks:", rk)
sent = time.monotonic() - t0
try:
    o, e = proc.communicate(timeout=40)
except subprocess.TimeoutExpired:
    print("HANG: mpiexec still running 40 s after the signal"); os.killpg(proc.pid, signal.SIGKILL); o, e = proc.communicate()
time.sleep(0.3)
alive = _alive(list(rk.values()))
temps = glob.glob("/tmp/hupab/out-" + os.environ.get("TAG","x") + ".npy.distscan-*")
print(f"sent {sys.argv[4] if len(sys.argv)>4 else 'SIGHUP'} to {target} at {sent:.2f}s; rc={proc.returncode}; took {time.monotonic()-t0:.2f}s; published={os.path.exists(out)}; temps={temps}; alive_ranks={alive}")
lines = [l for l in e.splitlines() if l.strip()]
ours = [l for l in lines if l.startswith("distscan")]
print(f"stdout: {o.strip()[:200]!r}")
print(f"stderr distscan lines ({len(ours)}):"); [print("   ", l[:220]) for l in ours]
others = [l for l in lines if not l.startswith("distscan")]
if others: print(f"other stderr lines: {len(others)}; first: {others[0][:150]!r}")
