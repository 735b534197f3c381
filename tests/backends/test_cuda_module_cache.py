"""The CUDA modules' disk cache (``backends/cuda/modules.py``: ``keep``, ``find``) on any machine:
files whole or absent, the names before the binary, a folder that cannot be written or
``CUPY_CACHE_IN_MEMORY=1`` sending them to the process's own folder.  The compile and load are
tested on a GPU (tests/gpu/test_compile_cache.py)."""

from __future__ import annotations

import os

import pytest

from distscan.backends.cuda import modules


@pytest.fixture(autouse=True)
def _own_private(monkeypatch):
    monkeypatch.setattr(modules, "_private", [])
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY", raising=False)


def test_kept_files_are_found_and_a_binary_without_its_names_is_not(tmp_path):
    folder = tmp_path / "a" / "b"
    path = modules.keep(folder, "k", b'{"f<float>": "_Z1fIfEvv"}', b"\x7fELF")
    assert path == folder / "k.module" and path.read_bytes() == b"\x7fELF"
    assert modules.find(folder, "k", ("f<float>",)) == (path, {"f<float>": "_Z1fIfEvv"})
    assert sorted(p.name for p in folder.iterdir()) == ["k.module", "k.names"]  # no temporary left
    (folder / "k.names").unlink()
    assert modules.find(folder, "k", ("f<float>",)) is None
    assert modules.find(folder, "other", ()) is None
    assert not modules._private  # nothing made where the folder could be written


def test_a_folder_that_cannot_be_written_sends_the_files_to_the_process_s_own(tmp_path):
    (tmp_path / "file").write_text("")
    folder = tmp_path / "file" / "cuda"  # under a file: no one can make it, root neither
    path = modules.keep(folder, "k", b"{}", b"bin")
    assert path.parent == modules._private[0] and path.read_bytes() == b"bin"
    assert modules.find(folder, "k", ()) == (path, {})  # found again in this process


@pytest.mark.parametrize("names", [b'{"f<float>": "_Z1fIfEvv"}', b'["f<float>", "f<double>"]', b'{"f<float>"',
                                   b'{"f<float>": "_Z1fIfEvv", "f<double>": 7}', b""])
def test_a_names_file_that_does_not_name_every_expression_is_not_trusted(tmp_path, names):
    """A names file cut short, of another shape or missing a name: the module is compiled again
    (a lookup of a name it lacks would fail the scan that asked), never found."""
    folder = tmp_path / "cache"
    modules.keep(folder, "k", names, b"bin")
    assert modules.find(folder, "k", ("f<float>", "f<double>")) is None
    modules.keep(folder, "k", b'{"f<float>": "a", "f<double>": "b", "g": "c"}', b"bin")
    assert modules.find(folder, "k", ("f<float>", "f<double>"))[1]["f<double>"] == "b"


def test_cupy_s_in_memory_setting_writes_nothing_to_the_folder_and_reads_nothing_from_it(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    modules.keep(folder, "old", b"{}", b"old")  # kept before the setting
    monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", "1")
    assert modules.find(folder, "old", ()) is None
    path = modules.keep(folder, "k", b"{}", b"bin")
    assert path.parent == modules._private[0] and not (folder / "k.module").exists()
    monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", "yes")  # (CuPy reads only an int: not 1 is off)
    assert modules.find(folder, "old", ()) is not None


def test_a_write_that_fails_leaves_no_file_behind(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    real = os.replace

    def fail_for_the_binary(src, dst):
        if str(dst).endswith(".module") and str(dst).startswith(str(folder)):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", fail_for_the_binary)
    path = modules.keep(folder, "k", b"{}", b"bin")
    assert path.parent == modules._private[0]
    assert sorted(p.name for p in folder.iterdir()) == ["k.names"]  # no .tmp, no binary: not found there
    monkeypatch.setattr(os, "replace", real)
    assert modules.find(folder, "k", ()) == (path, {})


def test_the_cache_folder_follows_distscan_s_then_cupy_s_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTSCAN_CACHE_DIR", str(tmp_path))
    assert modules.cache_dir() == tmp_path / "cuda"
    monkeypatch.delenv("DISTSCAN_CACHE_DIR")
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy"))
    assert modules.cache_dir() == tmp_path / "cupy" / "distscan"
