"""The kernels' own compile (``modules.raw_module``): NVRTC without CuPy's -ftz=true (float32
subnormals kept), the binary and its lowered names kept on disk and loaded by later calls
without compiling, and a cache file without its names compiled again."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.devices import require_gpu

cp = require_gpu()
pytestmark = pytest.mark.gpu

from distscan.backends.cuda import modules  # noqa: E402

SRC = 'template <typename T> __global__ void add_first(const T *a, T *o) { o[0] = a[0] + a[1]; }'
NAMES = ("add_first<float>", "add_first<double>")


def _add(get, dtype, a, kernel="add_first"):
    o = cp.zeros(1, dtype)
    get(f"{kernel}<{'float' if dtype == np.float32 else 'double'}>")((1,), (1,), (cp.asarray(a, dtype), o))
    return float(o[0])


def test_subnormals_are_kept_and_the_module_is_loaded_from_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTSCAN_CACHE_DIR", str(tmp_path))
    assert modules.cache_dir() == tmp_path / "cuda"
    tmp_path = tmp_path / "cuda"
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    get = modules.raw_module(SRC, ("--std=c++17",), NAMES)
    assert _add(get, np.float32, [tiny, tiny]) == np.float32(2 * tiny)  # (under -ftz=true: 0)
    assert len(list(tmp_path.glob("*.module"))) == 1 and len(list(tmp_path.glob("*.names"))) == 1
    from cupy.cuda import compiler

    real = compiler.compile_using_nvrtc
    monkeypatch.setattr(compiler, "compile_using_nvrtc", lambda *a, **k: pytest.fail("compiled again"))
    again = modules.raw_module(SRC, ("--std=c++17",), NAMES)  # from the disk cache
    assert _add(again, np.float64, [1.5, 2.0]) == 3.5
    next(tmp_path.glob("*.names")).unlink()  # a binary without its names: compiled again
    compiled = []
    monkeypatch.setattr(compiler, "compile_using_nvrtc", lambda *a, **k: compiled.append(1) or real(*a, **k))
    third = modules.raw_module(SRC, ("--std=c++17",), NAMES)
    assert compiled and _add(third, np.float32, [1.0, 2.0]) == 3.0


@pytest.mark.parametrize("where", ["not a folder", "in memory"])
def test_a_cache_that_cannot_be_written_compiles_into_the_process_s_own_folder(tmp_path, monkeypatch, where):
    """A cache folder under a file (unwritable also for root, as the GPU machines run) or
    ``CUPY_CACHE_IN_MEMORY=1``: the module compiles, runs, keeps subnormals, and a second call of
    the process loads it without compiling; nothing is written to the folder."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DISTSCAN_CACHE_DIR", str(tmp_path / ("file" if where == "not a folder" else "cache")))
    if where == "in memory":
        monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", "1")
    monkeypatch.setattr(modules, "_private", [])
    src = SRC.replace("add_first", "add_first_private")
    names = tuple(n.replace("add_first", "add_first_private") for n in NAMES)
    get = modules.raw_module(src, ("--std=c++17",), names)
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    assert _add(get, np.float32, [tiny, tiny], "add_first_private") == np.float32(2 * tiny)
    assert modules._private and list(modules._private[0].glob("*.module"))
    from cupy.cuda import compiler

    monkeypatch.setattr(compiler, "compile_using_nvrtc", lambda *a, **k: pytest.fail("compiled again"))
    modules.raw_module(src, ("--std=c++17",), names)
    assert not (tmp_path / "cache").exists()


def test_a_names_file_that_lacks_a_name_compiles_again_and_device_module_is_made_once(tmp_path, monkeypatch):
    """A names file that does not name every expression (cut short, or another module's) is not
    trusted (``modules.find``): the module compiles again.  ``device_module`` makes one module per
    device and process: threads that meet it at once get the same one."""
    import json
    import threading

    monkeypatch.setenv("DISTSCAN_CACHE_DIR", str(tmp_path))
    src = SRC.replace("add_first", "add_first_names")
    names = tuple(n.replace("add_first", "add_first_names") for n in NAMES)
    modules.raw_module(src, ("--std=c++17",), names)
    names_file = next((tmp_path / "cuda").glob("*.names"))
    names_file.write_text(json.dumps({names[0]: json.loads(names_file.read_text())[names[0]]}))
    from cupy.cuda import compiler

    real, compiled = compiler.compile_using_nvrtc, []
    monkeypatch.setattr(compiler, "compile_using_nvrtc", lambda *a, **k: compiled.append(1) or real(*a, **k))
    get = modules.raw_module(src, ("--std=c++17",), names)
    assert compiled and _add(get, np.float64, [1.5, 2.0], "add_first_names") == 3.5
    compiled.clear()
    got = []
    threads = [threading.Thread(target=lambda: got.append(modules.device_module(src, ("--std=c++17",), names)))
               for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(got) == 4 and all(g is got[0] for g in got) and not compiled  # (from the disk cache)
    assert modules.device_module(src, ["--std=c++17"], names) is got[0]
    assert _add(got[0], np.float32, [1.0, 2.0], "add_first_names") == 3.0
