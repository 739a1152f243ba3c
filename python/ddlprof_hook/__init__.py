"""ddlprof's PyTorch hook: loaded by ddlprof's sitecustomize once the program
imports torch, never before. It patches torch so that each optimizer step,
each wait for the next batch, each loader batch and each torch.distributed
call is recorded through libddlprof (include/ddlprof/python.h), which the
ddlprof launcher preloaded: no thread, and no Python of ours on the way of
a call (about 150 ns a call, in C).

Every patch calls the original and returns what it returned, exceptions
included. The patches are made by the library (ddlprof_py_wrap): C
callables, so a traceback through one is the one the program would have
had, with no frame of ours in it. What a patch runs of ours in Python
(describing a collective's arguments, say) runs beside the original's
call, never around it, and what it raises is dropped. A patch that does
not fit this torch is skipped, and the trace says so (meta
python_hook_skipped). One module per thing hooked: steps, data, dist.
"""
import ctypes
import os
import sys
from types import MethodType as _bound  # torch imported it already

ABI = 1

# enum ddl_phase (include/ddlprof/trace.h)
PHASE_DATA_WAIT = 1
PHASE_FORWARD = 2
PHASE_BACKWARD = 3
PHASE_BATCH = 4
PHASE_COLLECTIVE = 5
# the library's other kinds of wrapper (libddlprof/python.c)
WRAP_STEP = 64
WRAP_GROUP = 65
WRAP_CALL = 66

lib = None  # the library's entry points, once armed


def _bind():
    """The library's entry points, or None when this process has none."""
    try:
        dll = ctypes.PyDLL(None)  # the process's own symbols; PyDLL keeps the GIL
        abi = dll.ddlprof_py_abi
    except (OSError, AttributeError):
        return None
    abi.restype = ctypes.c_int
    abi.argtypes = []
    if abi() != ABI:
        return None
    sigs = {
        "ddlprof_py_begin": (None, []),
        "ddlprof_py_phase": (None, [ctypes.c_int, ctypes.c_longlong]),
        "ddlprof_py_step": (None, [ctypes.c_int, ctypes.c_longlong]),
        "ddlprof_py_collective": (None, [ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int,
                                         ctypes.c_uint, ctypes.c_int, ctypes.c_int]),
        "ddlprof_py_group": (ctypes.c_uint, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                             ctypes.c_int, ctypes.c_char_p]),
        "ddlprof_py_group_end": (None, []),
        "ddlprof_py_meta": (None, [ctypes.c_char_p, ctypes.c_char_p]),
        "ddlprof_py_forget": (None, [ctypes.c_void_p]),
        "ddlprof_py_thread": (None, [ctypes.c_char_p]),
        "ddlprof_py_wrap": (ctypes.py_object, [ctypes.py_object, ctypes.c_char_p, ctypes.c_int]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(dll, name, None)
        if f is None:  # a library of another make: nothing is patched
            return None
        f.restype = res
        f.argtypes = args
    return dll


def meta(key, value):
    """A key=value fact about this process, in its trace."""
    if lib is not None:
        lib.ddlprof_py_meta(str(key).encode(), str(value).encode("utf-8", "replace"))


_skipped = []
_ours = {}  # id(wrapper) -> wrapper: what patch() made, kept alive


class _Function:
    """A wrapper: an object whose class's __call__ is the library's C callable,
    so a call through it is C from end to end (slot_tp_call, no frame of
    ours), while the object takes attributes as a function does: the
    original's name, docstring, __wrapped__, and what torch sets on it."""


class _Method(_Function):
    """... that binds as a method does, when set on a class. __get__ runs in
    the attribute lookup, before the call, never around it."""

    def __get__(self, obj, objtype=None):
        return self if obj is None else _bound(self, obj)


def wrap(orig, kind, arg=0, before=None, after=None, method=True):
    """The library's wrapper of ORIG (see libddlprof/python.c): KIND the phase
    it records or WRAP_*, ARG the optimizer's position for WRAP_STEP, BEFORE
    and AFTER callables of ours run beside the call. METHOD: it binds as a
    method when set on a class."""
    name = getattr(orig, "__name__", "wrapper")
    call = lib.ddlprof_py_wrap((orig, kind, arg, before, after), name.encode(), 0)
    cls = type(name, (_Method if method else _Function,), {"__call__": call})
    w = cls()
    for a in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(w, a, getattr(orig, a))
        except (AttributeError, TypeError):
            pass
    w.__dict__.update(getattr(orig, "__dict__", {}))  # torch's own marks ("hooked")
    w.__wrapped__ = orig
    _ours[id(w)] = w
    return w


def is_ours(f):
    """Whether F is one of our wrappers, or wraps one (functools.wraps' chain)."""
    for _ in range(32):
        if f is None:
            return False
        if id(f) in _ours:
            return True
        f = getattr(f, "__wrapped__", None)
    return False


def patch(owner, name, make, where):
    """Replaces owner.NAME by make(original); a patch that does not fit is
    left out and named in the trace. Returns the original or None. On a
    class, the patch goes where NAME is defined (the first class of its MRO
    that has it), so its subclasses keep inheriting it."""
    try:
        if isinstance(owner, type):
            owner = next(c for c in owner.__mro__ if name in c.__dict__)
            orig = owner.__dict__[name]
        else:
            orig = getattr(owner, name)
        if is_ours(orig):
            return None  # patched already (or torch wrapped our wrapper)
        new = make(orig)
        setattr(owner, name, new)
        return orig
    except Exception as e:  # a torch we do not fit: record, never raise
        _skipped.append("%s: %s" % (where, e.__class__.__name__))
        return None


def arm():
    """Patches torch, which has just been imported. Once per process."""
    global lib
    if lib is not None:
        return
    import time  # torch imported it already

    t0 = time.perf_counter()
    lib = _bind()
    if lib is None:
        return
    torch = sys.modules.get("torch")
    from . import data, dist, steps

    for part in (steps, data, dist):
        try:
            part.arm(torch)
        except Exception as e:  # a torch without what this part patches
            _skipped.append("%s: %s" % (part.__name__.rpartition(".")[2], e.__class__.__name__))
    meta("python_hook", "torch %s, python %d.%d, armed in %.1f ms"
         % (getattr(torch, "__version__", "?"), sys.version_info[0], sys.version_info[1],
            1e3 * (time.perf_counter() - t0)))
    if _skipped:
        meta("python_hook_skipped", ", ".join(_skipped))
    if os.environ.get("DDLPROF_DATA") == "synthetic":
        meta("data", "synthetic")
