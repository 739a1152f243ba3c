#!/usr/bin/env python3
"""A Python program that never imports torch: what it sees of itself
(its modules, its path, its flags) and a file it reads, printed."""
import json
import sys

print(json.dumps(sorted(sys.modules)))
print(json.dumps(sys.path))
print(sys.flags)
with open(__file__, "rb") as f:
    print(len(f.read()))
print("sitecustomize" in sys.modules and getattr(sys.modules["sitecustomize"], "__file__", None))
