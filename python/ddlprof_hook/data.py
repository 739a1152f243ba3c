"""The input pipeline.

* The training thread's wait for the next batch: every __next__ of a
  DataLoader iterator (single- and multi-process, pin-memory thread
  included), a DATA_WAIT phase whose value is the batch's number. The
  pin-memory thread is named so in the trace.
* A loader's work on one batch, fetch and collate together: the dataset
  fetcher's fetch(), a BATCH phase, in a worker process or, with no workers,
  inside the training thread's wait. The report splits it into fetch (the
  file and socket reads made meanwhile) and prep (the rest).
* Which process is a loader's worker: its first batch says so (meta role).
* ddlprof --data synthetic (DDLPROF_DATA=synthetic): each iterator serves
  its first DDLPROF_DATA_KEEP batches (default 1) as they come, then the
  same ones again in turn, without loading, until it has served as many as
  it would have (its length; without one, until the program stops
  asking). The same objects are served again: a program that changes its
  batches in place sees its own changes.
"""
import os
import weakref

from . import PHASE_BATCH, PHASE_DATA_WAIT, WRAP_CALL, meta, patch, wrap


def _wrap_next_synthetic(orig, keep):
    """ddlprof --data synthetic: Python, for it changes what the program gets on purpose."""
    from . import lib

    begin, end = lib.ddlprof_py_begin, lib.ddlprof_py_phase
    count = [0]
    kept = weakref.WeakKeyDictionary()  # iterator -> [batches, served]

    def ddlprof_next_synthetic(self, *args, **kwargs):
        count[0] += 1
        begin()
        try:
            try:
                k = kept.get(self)
                if k is None:
                    k = kept[self] = [[], 0]
            except TypeError:  # an iterator that takes no weak reference: served as is
                k = [[], 0]
            if len(k[0]) < keep:
                batch = orig(self, *args, **kwargs)
                k[0].append(batch)
            else:
                try:
                    total = len(self)
                except TypeError:
                    total = None
                if total is not None and k[1] >= total:
                    kept.pop(self, None)
                    raise StopIteration
                batch = k[0][k[1] % len(k[0])]
            k[1] += 1
            return batch
        finally:
            end(PHASE_DATA_WAIT, count[0])

    ddlprof_next_synthetic.__name__ = orig.__name__
    ddlprof_next_synthetic.__qualname__ = orig.__qualname__
    return ddlprof_next_synthetic


def _say_role(*args):
    """A process's first batch: a loader's worker says whose it is."""
    import torch.utils.data as tud

    info = tud.get_worker_info()
    if info is not None:  # a worker process of some rank's DataLoader
        meta("role", "dataloader_worker")
        meta("worker_id", info.id)
        meta("workers", info.num_workers)
        meta("serves_pid", _parent_pid())


def _parent_pid():
    """The process that made this worker (a forkserver's or spawn's worker
    has it as multiprocessing's parent, not as its parent process)."""
    import multiprocessing

    parent = getattr(multiprocessing, "parent_process", None)
    p = parent() if parent is not None else None
    pid = getattr(p, "pid", None)
    return pid if pid else os.getppid()


def _pin_thread(*args, **kwargs):
    """The pin-memory thread, as it starts: named so in the trace."""
    from . import lib

    lib.ddlprof_py_thread(b"pin_memory")


def arm(torch):
    dl = torch.utils.data.dataloader
    if os.environ.get("DDLPROF_DATA") == "synthetic":
        try:
            keep = max(1, int(os.environ.get("DDLPROF_DATA_KEEP", "1")))
        except ValueError:
            keep = 1
        patch(dl._BaseDataLoaderIter, "__next__", lambda o: _wrap_next_synthetic(o, keep),
              "_BaseDataLoaderIter.__next__ (synthetic)")
    else:
        patch(dl._BaseDataLoaderIter, "__next__", lambda o: wrap(o, PHASE_DATA_WAIT),
              "_BaseDataLoaderIter.__next__")
    pin = getattr(torch.utils.data._utils, "pin_memory", None)
    if pin is not None:
        patch(pin, "_pin_memory_loop", lambda o: wrap(o, WRAP_CALL, 0, _pin_thread, method=False),
              "_pin_memory_loop")
    fetch = torch.utils.data._utils.fetch
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch, name, None)
        if cls is not None:
            patch(cls, "fetch", lambda o: wrap(o, PHASE_BATCH, 0, _say_role), name + ".fetch")
