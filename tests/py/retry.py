#!/usr/bin/env python3
"""A program whose first import of torch fails and whose second works, with
a torch of its own (first on sys.path, as a vendored or mocked one is):
it prints what it sees of the import system, which must be the same with
ddlprof's hook and without. The hook is armed by the second import; this
torch has nothing the hook patches, so arming fails, silently."""
import os
import sys
import tempfile

root = tempfile.mkdtemp()
pkg = os.path.join(root, "torch")
os.mkdir(pkg)
with open(os.path.join(pkg, "__init__.py"), "w") as f:
    f.write("import os\n"
            "flag = os.path.join(os.path.dirname(__file__), 'tried')\n"
            "if not os.path.exists(flag):\n"
            "    open(flag, 'w').close()\n"
            "    raise ImportError('the first import of this torch fails')\n"
            "__version__ = 'fake'\n"
            "from . import sub\n")
with open(os.path.join(pkg, "sub.py"), "w") as f:
    f.write("VALUE = 42\n")
sys.path.insert(0, root)
try:
    import torch
except ImportError as e:
    print("first:", e)
import torch  # noqa: E402

loader = torch.__spec__.loader
print("second:", torch.__version__, torch.sub.VALUE)
print("loader:", type(loader).__name__, "exec_module" in vars(loader))
print("modules:", sorted(m for m in sys.modules if m.split(".")[0] == "torch"))
