"""The CUDA modules' disk cache (``backends/cuda/modules.py``: ``keep``, ``find``) on any machine:
files whole or absent, the names before the binary, a folder that cannot be written or
``CUPY_CACHE_IN_MEMORY=1`` sending them to the process's own folder; a stateful test draws them
together.  The compile and load are
tested on a GPU (tests/gpu/test_compile_cache.py)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

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


EXPRESSIONS = ("f<float>", "f<double>", "g<int>")


class ModuleCacheMachine(RuleBasedStateMachine):
    """``keep`` and ``find`` drawn against a model of the folders: modules kept, names files cut
    short, lost or of another module, the cache folder unwritable (under a file), CuPy's
    ``CUPY_CACHE_IN_MEMORY=1`` switched on and off.  ``find`` gives a module only where one is kept
    whole with every name asked for, and then the binary last kept there; it finds one wherever
    the model holds such a module in a folder it searches (the cache folder first, then the
    process's own)."""

    def __init__(self):
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="modcache-"))
        (self.root / "file").write_text("")
        self.folders = {True: self.root / "cache", False: self.root / "file" / "cache"}  # writable?
        self.writable = True
        self.in_memory = False
        self.saved = (modules._private[:], os.environ.get("CUPY_CACHE_IN_MEMORY"))
        modules._private.clear()
        os.environ.pop("CUPY_CACHE_IN_MEMORY", None)
        self.model = {}  # (folder path, stem) -> (names: dict | None for unreadable, binary)

    def teardown(self):
        import shutil

        for where in modules._private:
            shutil.rmtree(where, ignore_errors=True)
        modules._private[:] = self.saved[0]
        if self.saved[1] is None:
            os.environ.pop("CUPY_CACHE_IN_MEMORY", None)
        else:
            os.environ["CUPY_CACHE_IN_MEMORY"] = self.saved[1]
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def folder(self):
        return self.folders[self.writable]

    @rule(stem=st.sampled_from(["k1", "k2"]), names=st.sets(st.sampled_from(EXPRESSIONS)),
          binary=st.binary(min_size=1, max_size=8))
    def keep(self, stem, names, binary):
        mapping = {e: f"_Z{len(e)}{e}" for e in sorted(names)}
        path = modules.keep(self.folder, stem, json.dumps(mapping).encode(), binary)
        # written to the cache folder where it can be, else to the process's own
        want = self.folder if self.writable and not self.in_memory else modules._private[0]
        assert path == want / f"{stem}.module"
        self.model[(want, stem)] = (mapping, binary)

    @rule(stem=st.sampled_from(["k1", "k2"]), how=st.sampled_from(["cut", "lost", "list", "other"]))
    def spoil_names(self, stem, how):
        for (where, s), (mapping, binary) in list(self.model.items()):
            if s != stem:
                continue
            names = where / f"{stem}.names"
            mapping = mapping or {"f<float>": "_Zf"}  # (a file spoilt before: spoilt again from some mapping)
            if how == "lost":
                names.unlink(missing_ok=True)
                self.model[(where, s)] = (None, binary)
            elif how == "cut":
                text = json.dumps(mapping)
                names.write_text(text[:len(text) // 2])
                self.model[(where, s)] = (None, binary)
            elif how == "list":
                names.write_text(json.dumps(sorted(mapping)))
                self.model[(where, s)] = (None, binary)
            else:  # another module's names: a mapping, of one name
                other = {"g<int>": "_Zother"}
                names.write_text(json.dumps(other))
                self.model[(where, s)] = (other, binary)

    @rule(writable=st.booleans())
    def move_the_cache_folder(self, writable):
        self.writable = writable

    @rule(on=st.booleans())
    def cupy_in_memory(self, on):
        self.in_memory = on
        if on:
            os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
        else:
            os.environ.pop("CUPY_CACHE_IN_MEMORY", None)

    @invariant()
    def find_gives_only_whole_modules_with_every_name(self):
        searched = ([] if self.in_memory else [self.folder]) + modules._private[:1]
        for stem in ("k1", "k2"):
            for asked in [(), EXPRESSIONS[:1], EXPRESSIONS[:2], EXPRESSIONS]:
                got = modules.find(self.folder, stem, asked)
                want = None
                for where in searched:
                    kept = self.model.get((where, stem))
                    if kept is not None and kept[0] is not None and set(asked) <= set(kept[0]):
                        want = (where / f"{stem}.module", kept[0], kept[1])
                        break
                if want is None:
                    assert got is None, (stem, asked, got)
                else:
                    assert got is not None, (stem, asked)
                    path, names = got
                    assert path == want[0] and names == want[1] and path.read_bytes() == want[2]


TestModuleCacheMachine = ModuleCacheMachine.TestCase
TestModuleCacheMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
