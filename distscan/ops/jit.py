"""Small loops compiled by numba: sequential scans and folds of states, where NumPy has no
vectorised form.  Only state operators and declared operators import numba; plain operators
never do.

A loop is written once as a template whose upper-case words are substituted (``EXCLUSIVE``,
``ENDS``, ``LIFT``, ...: Python constants or a line of code), and calls ``base(a, b)``: the
combine of the plain operator underneath (:func:`base_combine`).  Each instance becomes a
small module in a cache folder, compiled with ``numba.njit(cache=True)``, so that numba's
on-disk cache serves every later process (MPI ranks, test runs): a compile costs about half a
second, and the ranks of a job would each pay it for every kind of loop they run.  Assumption:
a file's name is the hash of its source, so a cached file is the source it names; files are
written whole (a temporary file renamed), so concurrent ranks never read a partial one.

A loop may be given its argument types (``signature``): it is then compiled once, when it is made,
for exactly those types (inputs as read-only arrays of any layout, which takes contiguous,
reversed, strided and read-only arrays alike), and never again at a call.  Callers that must
know a loop cannot fail once it runs (distscan.backends.cpu_states.Loops: no compile, no
"no matching definition" after the exchange between ranks) make it with one.

A loop over a user's function (a declared operator's combine: ``base`` a Python function) is
compiled in memory, and kept by :func:`distscan.ops.snapshot.snapshot` of that function as well:
numba compiles the globals and closure values it reads as constants, which the Python code that
combines the carries between ranks reads anew at each call; a loop compiled before a global
changed would run with the old value beside carries with the new, one call mixing two operators.
Keyed by their current values, a changed value compiles a new loop at the next call.  A function
whose snapshot is opaque (what it reads cannot be digested cheaply, or at all) is not compiled:
:func:`compile_loop` raises :class:`Unfrozen`, and its caller runs the NumPy path, which reads
every value anew in each call.

``DISTSCAN_CACHE_DIR`` chooses the folder (default ``$XDG_CACHE_HOME/distscan`` or
``~/.cache/distscan``); where it cannot be written, loops are compiled in memory.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path

import numpy as np

from .._caches import publish, write_whole
from .snapshot import snapshot

# Threads making first calls at once may compile a loop each (the last one kept; both work): its
# module is made under _MODULES_LOCK, and the files are written whole (see above).
_COMPILED: dict = {}
# The loops over users' functions, by the snapshot of what each reads (a value changed in every
# call makes a loop per call): the oldest go first past MAX_USER_LOOPS.
_USER_LOOPS: dict = {}
MAX_USER_LOOPS = 64


class Unfrozen(TypeError):
    """A user's function reads what :func:`distscan.ops.snapshot.snapshot` cannot digest: numba
    would freeze a value that distscan could not see change, so it is not compiled."""

# The plain operators' combine of two scalars, as numba compiles it with NumPy's scalar
# semantics (NaN propagation of maximum, wrapping integers).
SCALAR_COMBINE = {
    "sum": "a + b", "nansum": "a + b", "prod": "a * b", "nanprod": "a * b",
    "max": "np.maximum(a, b)", "min": "np.minimum(a, b)", "nanmax": "np.fmax(a, b)", "nanmin": "np.fmin(a, b)",
    "logical_and": "a and b", "logical_or": "a or b", "logical_xor": "a != b",
    "bitwise_and": "a & b", "bitwise_or": "a | b", "bitwise_xor": "a ^ b",
    "logaddexp": "np.logaddexp(a, b)", "logaddexp2": "np.logaddexp2(a, b)", "gcd": "np.gcd(a, b)",
    "lcm": "np.lcm(a, b)",
}


def numba():
    """The numba module, or a clear error naming the package to install."""
    try:
        import numba as nb
    except ImportError:  # pragma: no cover - numba is a dependency
        raise RuntimeError("this operator's CPU loops need numba: pip install numba") from None
    return nb


def base_combine(op):
    """What a loop's ``base(a, b)`` is for the plain operator ``op``: its row's scalar formula (a
    string), or a declared operator's own Python combine of two scalars."""
    if op.name in SCALAR_COMBINE and not op.source and op.scalar is None:
        return SCALAR_COMBINE[op.name]
    if op.scalar is None:
        raise TypeError(f"operator {op.name!r} has no scalar combine for the CPU's loops")
    return op.scalar


def cache_dir() -> Path:
    root = os.environ.get("DISTSCAN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "distscan")
    return Path(root) / "loops"


def array_type(dtype, ndim: int, writes: bool = False) -> str:
    """An argument's type in a loop's ``signature``: an array of ``dtype`` (a structured state's
    too) and ``ndim`` dimensions, of any layout and alignment, read-only unless the loop
    ``writes`` it: numba takes contiguous, reversed, strided, unaligned and read-only arrays of
    that dtype as they are, without compiling again."""
    dt = np.dtype(dtype)
    if dt.fields:
        code = repr({"names": list(dt.names), "formats": [dt.fields[n][0].str for n in dt.names],
                     "offsets": [dt.fields[n][1] for n in dt.names], "itemsize": dt.itemsize})
    else:
        code = repr(dt.str)
    return f"_array({code}, {ndim}, {not writes})"


def scalar_type(dtype) -> str:
    """An argument's or a result's type in a loop's ``signature``: a scalar of ``dtype`` (exactly:
    the caller passes that dtype's scalars, which numba takes without compiling again)."""
    return f"_scalar({np.dtype(dtype).str!r})"


# What a signature's code may call (see array_type); the cached modules define the same.
_SIGNATURE_HELPERS = '''
def _array(dtype, ndim, readonly):
    return numba.types.Array(numba.from_dtype(np.dtype(dtype)), ndim, "A", readonly=readonly, aligned=False)


def _scalar(dtype):
    return numba.from_dtype(np.dtype(dtype))


BOOL = numba.types.boolean
'''


def compile_loop(template: str, name: str, base=None, signature: str = "", **constants):
    """The function ``name`` of ``template`` with its constants substituted, compiled by numba;
    ``base`` (a formula of ``a`` and ``b``, or a Python function) is what ``base(a, b)`` calls.
    ``signature``: the code of a tuple of argument types (:func:`array_type`, ``BOOL``): the loop
    is compiled for them now, and only for them."""
    key = (template, name, base, signature, tuple(sorted(constants.items())))
    cache = _COMPILED
    if callable(base):
        # numba freezes what base reads (globals, closure cells) when it compiles: keyed by their
        # values now, a loop is never run with values other than those the carries read (the
        # module docstring).  Assumption: they do not change while a call runs.
        frozen = snapshot(base)
        if frozen.opaque:
            raise Unfrozen(f"{getattr(base, '__qualname__', type(base).__name__)} reads values distscan cannot "
                           "digest (see distscan.ops.snapshot): not compiled")
        key, cache = key + (frozen.text,), _USER_LOOPS
    fn = cache.get(key)
    if fn is None:
        src = template
        for k, v in sorted(constants.items(), key=lambda kv: -len(kv[0])):  # longest first: no partial names
            src = _substitute(src, k, str(v))  # code (a string) or a Python constant
        if not callable(base):
            fn = _COMPILED[key] = _dispatched_safely(_cached(src, name, base, signature))
        else:
            fn = publish(_USER_LOOPS, key, _dispatched_safely(_in_memory(src, name, base, signature)), MAX_USER_LOOPS)
    return fn


# numba's dispatch of a call to its compiled function is not thread-safe the first time a
# combination of argument types meets it: threads whose first calls of one loop come at once were
# refused now and then with "No matching definition for argument type(s) ..." although the types
# were exactly the loop's signature (tests/dist/test_first_calls_threads.py, 2 to 5 runs in 25 on
# the 2-core VM, numba 0.68; a call made again at once was matched).
_DISPATCH = threading.Lock()

# numba's dispatch can also refuse such a call for the rest of the process (CI of 2026-11-26, one
# of three full serial runs on the VM; trigger not identified).  One known trigger: numba types a
# read-only or unaligned array by a fingerprint without its byte order and keeps the first answer,
# so once any numba function of the process (the user's, another library's) was called with a
# byte-swapped array, which numba types as a Python object, every native array of that fingerprint
# is typed so too (numba 0.68.1, _typeof.cpp; tests/ops/test_numba_typecodes.py poisons a process
# so).  The conversions numba's typing allows (exact, promotion, safe: same dtype, any layout,
# read-only accepted) are then checked here instead.


def _dispatched_safely(dispatcher):
    """``dispatcher`` as a function whose call, refused by numba's dispatch (TypeError), is made
    once more while no other such retry runs, and, refused again, goes to the loop's compiled
    function where numba's typing says every argument converts safely to its one signature
    (:func:`_entry_if_arguments_convert`): a real mismatch of types raises.  The dispatcher is its
    ``dispatcher``, and its ``overloads`` the dispatcher's own (live) dictionary
    (:func:`entry_point` reads it).  Assumption: the loops raise no TypeError of their own (numba
    compiles them in nopython mode: a type error there is a compile error, raised when the loop is
    made)."""
    def call(*args):
        try:
            return dispatcher(*args)
        except TypeError:
            with _DISPATCH:
                try:
                    return dispatcher(*args)
                except TypeError:
                    entry = _entry_if_arguments_convert(dispatcher, args)
                    if entry is None:
                        raise
            return entry(*args)
    call.dispatcher, call.overloads = dispatcher, getattr(dispatcher, "overloads", None)
    return call


def _entry_if_arguments_convert(dispatcher, args):
    """The compiled function of ``dispatcher``'s one signature if numba's typing of each of
    ``args`` (``typeof``, not the dispatcher's cached type codes) converts to it exactly, by
    promotion or safely, else None.  A byte-swapped array is refused: numba's typing refuses it,
    though its dispatch, once it has typed a native array of the same fingerprint, takes it and
    reads its bytes as native (numba 0.61 and 0.68: tests/ops/test_numba_typecodes.py)."""
    only = _only_overload(dispatcher)
    if only is None:
        return None
    from numba.core.typeconv import Conversion  # (numba is loaded: it compiled the dispatcher)
    formal, compiled = only
    if len(formal) != len(args):
        return None
    for value, want in zip(args, formal):
        if isinstance(value, np.ndarray) and not value.dtype.isnative:
            return None  # the compiled loop would read its bytes as native
        try:
            have = dispatcher.typeof_pyval(value)
        except Exception:  # noqa: BLE001 - older numba raises for what it cannot type (0.61: NumbaValueError)
            return None
        conversion = dispatcher.typingctx.can_convert(have, want)
        if conversion is None or conversion > Conversion.safe:
            return None
    return compiled.entry_point


def entry_point(dispatcher):
    """The compiled function of a loop compiled for one signature (its overload's entry point), or
    the dispatcher itself (none, or another numba).  Calling it skips numba's dispatch on the
    arguments' types (about a microsecond a call of nine or ten arguments) and also its checks:
    arguments of other types than the signature's are read as if they were of those types.  Only
    for callers whose arguments have exactly those types (backends/cpu_fused.py says why theirs do)."""
    only = _only_overload(dispatcher)
    entry = None if only is None else getattr(only[1], "entry_point", None)
    return entry if callable(entry) else dispatcher


def _only_overload(dispatcher):
    """``(signature, compiled)`` of a dispatcher compiled for one signature, else None."""
    overloads = getattr(dispatcher, "overloads", None)
    if overloads is None or len(overloads) != 1:
        return None
    (only,) = overloads.items()
    return only


def _substitute(src: str, name: str, code: str) -> str:
    """``src`` with ``name`` replaced by ``code``; code of several lines goes on at the indentation
    of each line it lands on (a constant's lines are written relative to its first), so that one
    constant fits templates that nest it at different depths."""
    if "\n" not in code:
        return src.replace(name, code)
    lines = src.split("\n")
    for k, line in enumerate(lines):
        if name in line:
            indent = line[:len(line) - len(line.lstrip())]
            lines[k] = line.replace(name, code.replace("\n", "\n" + indent))
    return "\n".join(lines)


def _in_memory(src: str, name: str, base, signature: str = ""):
    nb = numba()
    scope = {"np": np, "numba": nb, "base": nb.njit(base) if callable(base) else None}
    exec(compile(_SIGNATURE_HELPERS + src, f"<distscan {name}>", "exec"), scope)  # noqa: S102 - our own templates
    if signature:
        return nb.njit(eval(signature, scope), nogil=True)(scope[name])  # noqa: S307 - our own signature code
    return nb.njit(nogil=True)(scope[name])


_MODULES_LOCK = threading.Lock()  # the loop modules of this process, made one at a time


def _cached(src: str, name: str, base, signature: str = ""):
    """The loop from a module of its own in the cache folder, compiled with numba's disk cache."""
    sig = f"({signature}), " if signature else ""
    # nogil: the pipeline's I/O threads read and write beside a loop (NumPy's own loops let them)
    body = src.replace(f"def {name}(", f"@numba.njit({sig}cache=True, nogil=True)\ndef {name}(", 1)
    module = "import numpy as np\nimport numba\n\n"
    if signature:
        module += _SIGNATURE_HELPERS
    if base is not None:
        module += f"\n@numba.njit(cache=True)\ndef base(a, b):\n    return {base}\n"
    module += body
    digest = hashlib.sha256(module.encode()).hexdigest()[:24]
    folder = cache_dir()
    path = folder / f"loop_{digest}.py"
    try:
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            write_whole(path, module)
        modname = f"distscan_loop_{digest}"
        with _MODULES_LOCK:  # a thread must not take a module another is still running (compiling)
            mod = sys.modules.get(modname)
            if mod is None:
                spec = importlib.util.spec_from_file_location(modname, path)
                mod = importlib.util.module_from_spec(spec)
                sys.modules[modname] = mod  # numba's cached code names its module: it must be importable
                try:
                    spec.loader.exec_module(mod)
                except BaseException:
                    del sys.modules[modname]  # a failed compile leaves nothing a later call would trust
                    raise
        return getattr(mod, name)
    except OSError:  # a folder that cannot be written: compile in memory, every process anew
        scope_src = module.replace("@numba.njit(cache=True)\n", "@numba.njit\n").replace("cache=True, ", "")
        scope = {}
        exec(compile(scope_src, f"<distscan {name}>", "exec"), scope)  # noqa: S102 - our own templates
        return scope[name]
