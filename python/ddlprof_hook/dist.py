"""torch.distributed: process groups and the program's own collective and
point-to-point calls.

* init_process_group and new_group: the group is recorded (its global
  ranks, this rank's place, the backend) under a key every member computes
  alike (its ranks and how many groups of those ranks came before), and
  while it is made, the gloo contexts it creates are keyed from it, so the
  report can gather every member's view of each communicator.
* all_reduce, broadcast, ... send, recv: a COLLECTIVE phase on the calling
  thread with the operation, this rank's bytes, bytes per element, the
  group and the root or peer. The gradient buckets DistributedDataParallel
  reduces never pass through Python; libddlprof sees them in gloo
  (libddlprof/gloo.c) and in NCCL.
"""
import os

from . import PHASE_COLLECTIVE, WRAP_GROUP, patch, wrap

# enum ddl_pyop (include/ddlprof/trace.h): name -> (op, tensor argument, peer argument)
_CALLS = {
    "all_reduce": (1, "tensor", None),
    "broadcast": (2, "tensor", "src"),
    "reduce": (3, "tensor", "dst"),
    "all_gather": (4, "tensor", None),
    "all_gather_into_tensor": (4, "input_tensor", None),
    "_all_gather_base": (4, "input_tensor", None),
    "gather": (5, "tensor", "dst"),
    "scatter": (6, "tensor", "src"),
    "reduce_scatter": (7, "output", None),
    "reduce_scatter_tensor": (7, "output", None),
    "_reduce_scatter_base": (7, "output", None),
    "all_to_all": (8, "input_tensor_list", None),
    "all_to_all_single": (8, "input", None),
    "barrier": (9, None, None),
    "send": (10, "tensor", "dst"),
    "isend": (10, "tensor", "dst"),
    "recv": (11, "tensor", "src"),
    "irecv": (11, "tensor", "src"),
}
_ASYNC_ALWAYS = ("isend", "irecv")

_comm = {}  # id(process group) -> communicator id
_made = {}  # group key text -> how many groups of those ranks so far
_world = [None]  # the default group's communicator id


def _lib():
    from . import lib

    return lib


def _ranks_text(ranks):
    """0,1,2,3,8 as "0-3,8"."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else "%d-%d" % (ranks[i], ranks[j]))
        i = j + 1
    return ",".join(out)


def _group_begin(ranks, rank, backend):
    """Records a group about to be made; returns its communicator id."""
    text = _ranks_text(ranks)
    n = _made[text] = _made.get(text, 0) + 1
    key = "torch:%s#%d" % (text, n)
    return _lib().ddlprof_py_group(key.encode(), text.encode(), rank, len(ranks),
                                   str(backend or "-").encode())


def _env_int(name):
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return -1


def _init_before(*args, **kwargs):
    params = ("backend", "init_method", "timeout", "world_size", "rank")
    given = dict(zip(params, args))
    given.update(kwargs)
    world, rank = given.get("world_size", -1), given.get("rank", -1)
    world = world if isinstance(world, int) and world > 0 else _env_int("WORLD_SIZE")
    rank = rank if isinstance(rank, int) and rank >= 0 else _env_int("RANK")
    if world > 0 and 0 <= rank < world:
        return _group_begin(list(range(world)), rank, given.get("backend"))
    return 0


def _make_init_after(c10d):
    def after(cid, result):
        if cid:
            _world[0] = cid
            _comm[id(c10d._get_default_group())] = cid

    return after


def _make_new_before(c10d):
    def before(*args, **kwargs):
        ranks = args[0] if args else kwargs.get("ranks")
        ranks = sorted(ranks) if ranks else list(range(c10d.get_world_size()))
        me = c10d.get_rank()
        if me in ranks:
            return _group_begin(ranks, ranks.index(me), kwargs.get("backend"))
        text = _ranks_text(ranks)  # not a member: the count goes on, as on the members
        _made[text] = _made.get(text, 0) + 1
        return 0

    return before


def _new_after(cid, pg):
    if cid:
        _comm[id(pg)] = cid


def _nbytes(t):
    if t is None:
        return 0, 0
    if isinstance(t, (list, tuple)):
        b, e = 0, 0
        for x in t:
            xb, e = _nbytes(x)
            b += xb
        return b, e
    e = t.element_size()
    return t.numel() * e, e


def _make_describe(name, orig):
    """What the library records of a call of NAME: (op, bytes, elem, comm, peer, async)."""
    import inspect

    op, tname, pname = _CALLS[name]
    params = list(inspect.signature(orig).parameters)
    ti = params.index(tname) if tname in params else None
    pi = params.index(pname) if pname in params else None
    gi = params.index("group") if "group" in params else None
    ai = params.index("async_op") if "async_op" in params else None
    always = name in _ASYNC_ALWAYS

    def arg(args, kwargs, i, n):
        if n in kwargs:
            return kwargs[n]
        return args[i] if i is not None and i < len(args) else None

    def describe(*args, **kwargs):
        nbytes, elem = _nbytes(arg(args, kwargs, ti, tname)) if tname else (0, 0)
        peer = arg(args, kwargs, pi, pname) if pname else None
        group = arg(args, kwargs, gi, "group")
        cid = _comm.get(id(group), 0) if group is not None else (_world[0] or 0)
        asy = always or bool(arg(args, kwargs, ai, "async_op"))
        return (op, nbytes, elem, cid, peer if isinstance(peer, int) else -1, int(asy))

    return describe


def arm(torch):
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return
    c10d = dist.distributed_c10d
    makers = {
        "init_process_group": lambda o: wrap(o, WRAP_GROUP, 0, _init_before, _make_init_after(c10d),
                                             method=False),
        "new_group": lambda o: wrap(o, WRAP_GROUP, 0, _make_new_before(c10d), _new_after,
                                    method=False),
    }
    for name in _CALLS:
        makers[name] = lambda o, n=name: wrap(o, PHASE_COLLECTIVE, 0, _make_describe(n, o),
                                              method=False)
    for name, make in makers.items():
        if not hasattr(c10d, name):
            continue
        orig = patch(c10d, name, make, "torch.distributed." + name)
        if orig is not None and getattr(dist, name, None) is orig:
            setattr(dist, name, getattr(c10d, name))  # the same function, under both names
