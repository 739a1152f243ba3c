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
        """Finds nothing itself: when torch is imported, asks the finders
        after it, and has the loader they found patch torch once it has run
        torch's own code. It stays in place until that has happened (an
        import of torch that fails leaves it for the next try)."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is not self and find is not None:
                    spec = find(name, path, target)
                    if spec is not None:
                        break
            if spec is not None:
                _watch(spec, self)
            return spec

    sys.meta_path.insert(0, DdlprofTorchFinder())


def _watch(spec, finder):
    """Has SPEC's loader patch torch after it has run torch's own code, once.
    The loader may be shared with other modules (torch's submodules among
    them, imported while torch runs): only torch's module patches, and the
    loader is as it was as soon as torch's starts. An import of torch that
    fails leaves the finder for the next try. A loader that takes no
    attribute is left alone (then torch runs unpatched)."""
    loader = spec.loader
    real_exec = getattr(loader, "exec_module", None)
    if real_exec is None or getattr(real_exec, "_ddlprof", False):
        return
    had = getattr(loader, "__dict__", {}).get("exec_module", _watch)

    def exec_module(module):
        if getattr(module, "__name__", None) != "torch":
            return real_exec(module)
        try:  # the loader as it was, for whatever comes next
            if had is _watch:
                del loader.exec_module
            else:
                loader.exec_module = had
        except (AttributeError, TypeError):
            pass
        try:
            sys.meta_path.remove(finder)
        except ValueError:
            pass
        try:
            real_exec(module)
        except BaseException:
            sys.meta_path.insert(0, finder)
            raise
        _patch_torch()

    exec_module._ddlprof = True
    try:
        loader.exec_module = exec_module
    except (AttributeError, TypeError):
        pass


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
    try:
        ddlprof_hook.arm()
    except Exception:  # a torch we do not fit at all: it runs unpatched
        pass


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
