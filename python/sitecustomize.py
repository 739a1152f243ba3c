"""ddlprof's Python hook, installed by the ddlprof launcher.

The launcher puts this directory first on PYTHONPATH, so Python runs this
sitecustomize at start-up. It does two things and nothing else at start:

* runs the sitecustomize the program would have run without ddlprof (the
  next one on sys.path), so the user's own keeps working, with its errors
  reported by Python as they would be;
* unless DDLPROF_PYTHON=0, watches the import system for torch; only once
  the program itself imports torch does it load ddlprof_hook and patch
  torch (steps, data loader, torch.distributed). Nothing else is imported.

This directory is taken off sys.path again, so the program sees the
sys.path it would have had. Under python -I, -S or -E none of this runs.
"""
import sys

_DIR = __file__.rpartition("/")[0] or "."


def _arm():
    import os  # imported by site already

    if os.environ.get("DDLPROF_PYTHON", "1") in ("0", "off", "no", "false"):
        return
    if "ddlprof" not in os.environ.get("LD_PRELOAD", ""):
        return  # the library is not in this process: nothing to record into

    class DdlprofTorchFinder:
        """Finds nothing itself: when torch is imported, runs its real loader,
        then hands the module to ddlprof_hook to patch."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            sys.meta_path.remove(self)  # once: torch is imported once
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if find is not None:
                    spec = find(name, path, target)
                    if spec is not None:
                        break
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            loader = spec.loader
            real_exec = loader.exec_module

            def exec_module(module):
                try:
                    real_exec(module)
                finally:
                    del loader.exec_module  # the loader as it was
                _patch_torch()

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, DdlprofTorchFinder())


def _patch_torch():
    sys.path.insert(0, _DIR)
    try:
        import ddlprof_hook
    except Exception:  # never the program's problem
        return
    finally:
        try:
            sys.path.remove(_DIR)
        except ValueError:
            pass
    ddlprof_hook.arm()


def _chain():
    """Runs the sitecustomize that comes after this one on sys.path, if any:
    then it is the program's sys.modules["sitecustomize"], as without us.
    Its errors go to site.py, which reports them as it would have. Without
    one, this module stays in sys.modules: the import system that is running
    it expects to find it there when it returns."""
    me = sys.modules.pop("sitecustomize")
    try:
        __import__("sitecustomize")
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        sys.modules["sitecustomize"] = me


while _DIR in sys.path:
    sys.path.remove(_DIR)
_arm()
_chain()
