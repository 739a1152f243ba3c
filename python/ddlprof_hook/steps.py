"""Steps and phases of the training loop.

* Each optimizer's step() is one step event; the report ends an iteration
  at the steps of the optimizer that steps least often (several optimizers
  in one iteration count once), as Kineto's step tracker counts
  optimizer.step(). A step inside another on the same thread (a subclass
  calling super().step(), GradScaler.step calling optimizer.step) counts
  once, the outermost. GradScaler.step is a step even when it skips the
  optimizer's (an overflow), so no iteration is lost.
* backward(): the outermost Tensor.backward / torch.autograd.backward on
  the thread, as a phase. DistributedDataParallel.forward as a phase.

Optimizer classes are patched as torch 1.13 and 2.x patch them for their
own profiler: on the first instance of each class, the step function of
the class that defines it.
"""
from . import PHASE_BACKWARD, PHASE_FORWARD, WRAP_CALL, WRAP_STEP, patch, wrap


def _patch_class_step(opt, result):
    from . import lib

    lib.ddlprof_py_forget(id(opt))  # an optimizer made where a freed one was
    cls = type(opt)  # patched where its step is defined
    patch(cls, "step", lambda o: wrap(o, WRAP_STEP, 0), "optimizer %s.step" % cls.__name__)


def _self(*args, **kwargs):
    return args[0] if args else None


def arm(torch):
    # Optimizer.__init__: after it, the instance's class's step (a call, not a phase)
    patch(torch.optim.Optimizer, "__init__",
          lambda o: wrap(o, WRAP_CALL, 0, _self, _patch_class_step), "torch.optim.Optimizer.__init__")
    patch(torch.Tensor, "backward", lambda o: wrap(o, PHASE_BACKWARD), "Tensor.backward")
    patch(torch.autograd, "backward", lambda o: wrap(o, PHASE_BACKWARD, method=False),
          "torch.autograd.backward")
    patch(torch.nn.parallel.DistributedDataParallel, "forward", lambda o: wrap(o, PHASE_FORWARD),
          "DistributedDataParallel.forward")
    # torch.amp.GradScaler (2.3 on), torch.cuda.amp's its subclass or itself
    for amp in (getattr(torch, "amp", None), getattr(getattr(torch, "cuda", None), "amp", None)):
        scaler = getattr(amp, "GradScaler", None)
        if isinstance(scaler, type):
            patch(scaler, "step", lambda o: wrap(o, WRAP_STEP, 1), "GradScaler.step")
