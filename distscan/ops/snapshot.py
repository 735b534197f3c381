"""What a user's function computes with, as it is now: its code and every value it reads.

numba compiles the globals and closure variables that a function reads as constants, frozen when
it compiles; the Python code that combines the carries between ranks reads them anew at each
call.  A declared combine that reads a global changed between two calls would then run as two
operators in one call (the ranks' compiled loops with the old value, the carries with the new).
So what distscan compiles from a user's function (:func:`distscan.ops.jit.compile_loop`) and the
plans and call kinds of a declared operator (:meth:`distscan.Operator.reads_key`) are keyed by a
:func:`snapshot`: a text of the code and of the current values of what it reads, recursively --

* the globals its code reads (the names of its ``LOAD_GLOBAL`` instructions and those of the code
  nested in it, looked up in its ``__globals__``), and of a module, class or object among them
  the attributes its code names (``LOAD_ATTR``'s);
* its closure cells, defaults and keyword defaults;
* the functions it reaches so (a helper it calls: the same, for that helper), the attributes of
  an object (a callable object's ``__dict__`` and ``__slots__``, the class attributes its code
  names, its ``__call__``), the function and object of a bound method or ``functools.partial``;

never an address, so that the text is the same in every process that defines the function alike
(the ranks compare it: :meth:`distscan.Operator.definition`).  A change of any of these values is
another snapshot: the next call compiles anew and builds a new plan, and no call mixes two.

What libraries define (NumPy, numba, SciPy, the standard library, distscan: their functions,
classes and modules) is described by its name alone: their code is not the user's to change
between calls.  A value that cannot be described cheaply, or at all, makes the snapshot
**opaque** (its text holds the type alone): an array of more than :data:`DIGEST_BYTES` bytes or
of objects, a container of more than :data:`MAX_ITEMS` items, a str or bytes of more than
:data:`DIGEST_BYTES`, an object of a type implemented in C that is none of the above (a random
generator, a file), nesting deeper than :data:`MAX_DEPTH`.  An opaque function is never compiled
(its operator runs its NumPy path, which reads every value anew in each call), and the ranks
cannot compare what it hides (docs/operators.md says so).
"""

from __future__ import annotations

import dis
import fractions
import functools
import hashlib
import operator
import sys
import types
from typing import NamedTuple

import numpy as np

from .._caches import publish

DIGEST_BYTES = 1 << 14  # arrays (and str/bytes) up to this size are hashed at every call; larger are opaque
MAX_ITEMS = 256         # containers up to this many items are described item by item; larger are opaque
MAX_DEPTH = 8           # values nested deeper are opaque

# described by their repr: exact types first (a set lookup; most values read are these), then subclasses
_REPR = frozenset({type(None), bool, int, float, complex, range, slice, type(Ellipsis), fractions.Fraction})
_PLAIN = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, range, slice, type(Ellipsis))
_LIBRARIES = frozenset({"numpy", "numba", "llvmlite", "scipy", "cupy", "mpi4py", "distscan", "builtins"}
                       | set(getattr(sys, "stdlib_module_names", ())))
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python (its instances have attributes to read)


class Snapshot(NamedTuple):
    text: str      # the description (the same in every process that defines the values alike)
    opaque: bool   # something in it could not be described (its text holds the type alone)

    @property
    def digest(self) -> str:
        """A short hash of :attr:`text` (kept for the texts met last: every call asks again)."""
        found = _DIGESTS.get(self.text)
        if found is None:
            found = publish(_DIGESTS, self.text, hashlib.blake2b(self.text.encode(), digest_size=16).hexdigest(),
                            MAX_MEMO)
        return found


def snapshot(*values) -> Snapshot:
    """The description of ``values`` as they are now (see the module docstring)."""
    key = tuple(map(id, values))
    last = _SNAPSHOTS.get(key)
    if last is not None and all(map(operator.is_, last[0], values)) and all(map(_same, last[1], values)):
        return last[2]  # every call asks: the same values, read alike, are the same snapshot
    d = _Describer()
    try:
        found = Snapshot("\n".join([d(v) for v in values]), d.opaque)
    except Exception as exc:  # noqa: BLE001 - never raise: a call asks before its first collective
        return Snapshot(f"unreadable ({type(exc).__name__})", True)  # (a dict another thread changes)
    tokens = [_token(v) for v in values]
    if all(t is not None for t in tokens):
        publish(_SNAPSHOTS, key, (values, tokens, found), MAX_MEMO)
    return found


def describe(value) -> str:
    """``value`` (a part of a declared operator: a function, a ufunc, a constant, an object) as a
    text that is the same in every process that defines it alike, and differs where the
    definitions or the values read differ (:func:`snapshot`'s text)."""
    return snapshot(value).text


@functools.lru_cache(maxsize=1024)
def _library(module) -> bool:
    return isinstance(module, str) and module.partition(".")[0] in _LIBRARIES


_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME", "STORE_NAME", "DELETE_NAME"})


@functools.lru_cache(maxsize=4096)
def _code(code: types.CodeType):
    """A code object's text (bytecode, names, constants; nested code included), the global names
    it and the code nested in it read (LOAD_GLOBAL's, sorted) and the attribute names they read
    (LOAD_ATTR's and the other names: a module's or object's attributes that may be read)."""
    globals_, attrs = set(), set()
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_OPS:
            globals_.add(ins.argval)
    attrs.update(n for n in code.co_names if n not in globals_)
    consts = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            text, inner_globals, inner_attrs = _code(c)
            globals_.update(inner_globals)
            attrs.update(inner_attrs)
            consts.append(text)
        else:
            consts.append(_Describer()(c))  # (a constant: a number, a string, a tuple of them)
    return (f"code {code.co_code.hex()} names {code.co_names} consts ({', '.join(consts)})", tuple(sorted(globals_)),
            tuple(sorted(attrs)))


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not yet assigned
        return False
    return True


class _Describer:
    """One snapshot's walk: :attr:`opaque` once anything could not be described, :attr:`path` the
    ids of the functions and objects being described (a recursive function, a cycle)."""

    __slots__ = ("opaque", "path")

    def __init__(self):
        self.opaque = False
        self.path: set = set()

    def _opaque(self, what: str) -> str:
        self.opaque = True
        return f"opaque {what}"

    def __call__(self, value, depth: int = 0, names: tuple = ()) -> str:
        tp = type(value)
        if tp in _REPR:
            return repr(value)
        if depth > MAX_DEPTH:
            return self._opaque(_type_name(value))
        more = depth + 1
        if tp is types.FunctionType:  # the common reads first: a function, a module, a ufunc
            if _library(value.__module__):
                return f"function {value.__module__}.{value.__qualname__}"
            if id(value) in self.path:
                return f"recursive {_type_name(value)}"
            self.path.add(id(value))
            try:
                return self._function(value, more)
            finally:
                self.path.discard(id(value))
        if tp is types.ModuleType and _library(value.__name__):
            return f"module {value.__name__}"
        if tp is np.ufunc:
            return f"ufunc {value.__name__}"
        if tp is tuple and not value:
            return "tuple()"
        if isinstance(value, np.ufunc):
            return f"ufunc {value.__name__}"
        if isinstance(value, (str, bytes)) and len(value) > DIGEST_BYTES:
            data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
            return f"{type(value).__name__} #{hashlib.blake2b(data, digest_size=16).hexdigest()}"
        if isinstance(value, _PLAIN):
            return repr(value)
        if isinstance(value, np.ndarray):
            data = value
            if data.dtype.hasobject or data.nbytes > DIGEST_BYTES:
                return self._opaque(f"array {data.dtype.str} {data.shape}")
            data = np.ascontiguousarray(data)
            return f"array {data.dtype.str} {data.shape} {hashlib.blake2b(data.tobytes(), digest_size=16).hexdigest()}"
        if id(value) in self.path:
            return f"recursive {_type_name(value)}"
        if isinstance(value, (tuple, list, frozenset, set, dict)):
            if len(value) > MAX_ITEMS:
                return self._opaque(f"{type(value).__name__} of {len(value)} items")
            self.path.add(id(value))
            try:
                if isinstance(value, dict):
                    return "dict(" + ", ".join(sorted(f"{self(k, more)}: {self(v, more, names)}"
                                                      for k, v in value.items())) + ")"
                items = [self(v, more, names) for v in value]
            finally:
                self.path.discard(id(value))
            if isinstance(value, (set, frozenset)):
                items.sort()
            return f"{type(value).__name__}({', '.join(items)})"
        if isinstance(value, types.CodeType):
            return _code(value)[0]
        if isinstance(value, types.MethodType):
            func = value.__func__
            inner = _code(func.__code__)[2] if isinstance(func, types.FunctionType) else ()
            return f"method {self(func, more)} of {self(value.__self__, more, tuple(names) + inner)}"
        if isinstance(value, (staticmethod, classmethod)):
            return f"{type(value).__name__} {self(value.__func__, more, names)}"
        if isinstance(value, property):
            return f"property {self(value.fget, more, names)}"
        if isinstance(value, functools.partial):
            return f"partial {self(value.func, more)} {self(value.args, more)} {self(value.keywords, more)}"
        if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(value, "__self__", None)
            text = f"builtin {getattr(value, '__module__', None)}.{value.__qualname__}"
            if owner is None or isinstance(owner, types.ModuleType):
                return text
            return f"{text} of {self(owner, more)}"  # a bound method of a C type (list.append): its object
        if isinstance(value, types.ModuleType):
            if _library(value.__name__):
                return f"module {value.__name__}"
            return f"module {value.__name__} {self._names(vars(value), names, more)}"
        if isinstance(value, type):
            if _library(value.__module__):
                return f"class {value.__module__}.{value.__qualname__}"
            self.path.add(id(value))
            try:
                return (f"class {value.__module__}.{value.__qualname__} "
                        f"{self._names(_class_dict(value), names, more)}")
            finally:
                self.path.discard(id(value))
        # a numba dispatcher: its Python function (a library's type: its own attributes are safe to read)
        py_func = getattr(value, "py_func", None) if _library(type(value).__module__) else None
        if isinstance(py_func, types.FunctionType):
            return f"numba {self(py_func, more)}"
        self.path.add(id(value))
        try:
            return self._object(value, more, names)
        except Exception:  # noqa: BLE001 - an attribute that raises when read (a property, a broken slot)
            return self._opaque(_type_name(value))
        finally:
            self.path.discard(id(value))

    def _function(self, fn, more: int) -> str:
        read = _reads(fn)
        memo = _MEMO.get(id(fn))
        if memo is not None and memo[0] is fn and len(memo[1]) == len(read) and all(map(operator.is_, memo[1], read)):
            return memo[2]
        code_text, global_names, names = _code(fn.__code__)
        closure = fn.__closure__
        cells = () if closure is None else tuple([c.cell_contents if _filled(c) else None for c in closure])
        g = fn.__globals__
        outer, self.opaque = self.opaque, False
        values = ", ".join([f"{n}: {self(g[n], more, names)}" for n in global_names if n in g])
        text = (f"function {code_text} defaults {self(fn.__defaults__, more)} {self(fn.__kwdefaults__, more)} "
                f"closure {self(cells, more, names)} globals {{{values}}}")
        if not self.opaque and all(map(_stable, read)):
            publish(_MEMO, id(fn), (fn, read, text), MAX_MEMO)
        self.opaque = self.opaque or outer
        return text

    def _names(self, namespace: dict, names: tuple, more: int) -> str:
        """The attributes of a module or class that ``names`` (the code's) name."""
        return "{" + ", ".join(f"{n}: {self(namespace[n], more, names)}" for n in names if n in namespace) + "}"

    def _object(self, value, more: int, names: tuple) -> str:
        """An object: its class, its attributes (``__dict__``, ``__slots__``), its class's ``__call__``
        and the class attributes that ``names`` and its ``__call__``'s code name; opaque where its
        type is implemented in C (nothing to read)."""
        tp = type(value)
        if not tp.__flags__ & _HEAPTYPE:
            return self._opaque(_type_name(value))
        attrs = {}
        try:
            attrs.update(object.__getattribute__(value, "__dict__"))
        except (AttributeError, TypeError):
            pass
        for cls in tp.__mro__:
            slots = cls.__dict__.get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot not in ("__dict__", "__weakref__"):
                    try:
                        attrs[slot] = object.__getattribute__(value, slot)
                    except AttributeError:
                        pass
        call = getattr(tp, "__call__", None)
        if isinstance(call, types.FunctionType) and not _library(call.__module__):
            names = tuple(sorted(set(names) | set(_code(call.__code__)[2]) | {"__call__"}))
        own = _class_dict(tp)
        return (f"object {tp.__module__}.{tp.__qualname__} attributes {self(attrs, more, names)} "
                f"class {self._names(own, names, more)}")


# The last text of the functions whose reads are all _stable (by id, the function kept with it),
# and the digests of the texts met last.
_MEMO: dict = {}
_DIGESTS: dict = {}
MAX_MEMO = 1024
_MISSING = object()  # a name the code reads that is no global (an attribute's name, a builtin)
_STABLE = frozenset(_REPR | {str, bytes, types.CodeType, np.ufunc, np.dtype, type(_MISSING)})


# The last snapshot of values each of which has a _token: kept while each is _same.
_SNAPSHOTS: dict = {}


def _reads(fn) -> list:
    """What a function's text is made of (but the descriptions of the values): its code, defaults,
    closure cells and the globals its code names.  When each is the very object it was at the
    function's last snapshot, and each is immutable and described by itself alone (_stable), its
    text is the same."""
    closure = fn.__closure__
    g = fn.__globals__
    return [fn.__code__, fn.__defaults__, fn.__kwdefaults__,
            *(() if closure is None else [c.cell_contents if _filled(c) else _MISSING for c in closure]),
            *[g.get(n, _MISSING) for n in _code(fn.__code__)[1]]]  # its globals


def _token(value):
    """What ``value``'s text depends on, when that can be checked by identity alone: ``()`` for a
    _stable value; for a user's function, the list of its reads at its last snapshot (_MEMO's),
    where they are all stable and still the same; else None."""
    if type(value) is types.FunctionType and not _library(value.__module__):
        memo = _MEMO.get(id(value))
        if memo is None or memo[0] is not value:
            return None
        read = _reads(value)
        return memo[1] if len(memo[1]) == len(read) and all(map(operator.is_, memo[1], read)) else None
    return () if _stable(value) else None


def _same(token, value) -> bool:
    """Whether ``value`` is described as it was when its :func:`_token` was ``token``."""
    if token == ():
        return True  # (stable: the caller checked that it is the same object)
    now = _token(value)
    return now is token


def _stable(value) -> bool:
    """Whether ``value`` is immutable and its description depends on nothing but itself: the same
    object, the same text (a number, a string, a library's function, class or module, a tuple of
    such values)."""
    tp = type(value)
    if tp in _STABLE or isinstance(value, np.generic) and tp is not np.void:  # (a void may view an array)
        return True
    if tp is types.FunctionType or tp is types.BuiltinFunctionType or tp is type:
        return _library(value.__module__) and (tp is not types.BuiltinFunctionType or value.__self__ is None
                                               or isinstance(value.__self__, types.ModuleType))
    if tp is types.ModuleType:
        return _library(value.__name__)
    if tp is tuple or tp is frozenset:
        return len(value) <= MAX_ITEMS and all(map(_stable, value))
    return False


def _class_dict(cls) -> dict:
    """A class's attributes over its MRO (the nearest first), ``object``'s left out."""
    found: dict = {}
    for c in reversed(cls.__mro__[:-1]):
        found.update(c.__dict__)
    return found


def _type_name(value) -> str:
    tp = type(value)
    return f"{tp.__module__}.{tp.__qualname__}"
