#!/usr/bin/env python3
"""The house's layering, read from the #include lines (docs/architecture.md).

- lib/'s folders form one order: a folder includes itself and the folders
  before it, never one after it.
- kernels/ and mpi/ (the modules lt loads on use) include lib/common/ alone.
- lib/include/ (lt.h, lt.hpp, the installed contract) includes nothing of lib/.
- The tools in apps/, but lt-bench, include lt.h / lt.hpp, apps/common and
  their own folder: nothing of lib/'s internals.

Usage: check_layers.py ROOT    (exit 1 and one line per violation)
       check_layers.py --self-test    (plants violations in a scratch tree)
"""
import os
import re
import sys
import tempfile

# Bottom first. Each folder's one-line reason is docs/architecture.md's table.
LIB_ORDER = ["common", "backend", "core", "io", "audio", "ops", "attention", "heads", "optim", "model",
             "speech", "train", "api"]
# Outside lib/, what a folder may reach besides the order: the tables of the
# modules it loads (kernels/launchers.h, mpi/mpi_table.h).
MODULE_TABLES = {"backend": {"kernels/launchers.h"}, "train": {"mpi/mpi_table.h"}}
MODULES = ["kernels", "mpi"]
# Tools that time the internals, as the tests do.
INTERNAL_TOOLS = {"lt-bench"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE = re.compile(r"\.(h|hpp|cpp|cu|cuh)$")


def sources(root, folder):
    for dirpath, _, names in os.walk(os.path.join(root, folder)):
        for name in sorted(names):
            if SOURCE.search(name):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1)


def resolve(root, path, name, search):
    """The file an include names, relative to root: beside the includer, then
    each search folder in turn; None when it is not in the tree (generated)."""
    for base in [os.path.dirname(path)] + [os.path.join(root, s) for s in search]:
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(candidate):
            return os.path.relpath(candidate, root)
    return None


def check(root):
    bad = []

    def report(path, line, name, why):
        bad.append(f"{os.path.relpath(path, root)}:{line}: includes {name}: {why}")

    for rank, folder in enumerate(LIB_ORDER):
        allowed = set(LIB_ORDER[:rank + 1])
        for path in sources(root, os.path.join("lib", folder)):
            for line, name in includes(path):
                target = resolve(root, path, name, ["lib", "."])
                if target is None or target in MODULE_TABLES.get(folder, set()):
                    continue
                parts = target.split(os.sep)
                if parts[0] == "lib" and parts[1] in allowed:
                    continue
                where = parts[1] if parts[0] == "lib" else parts[0]
                report(path, line, name, f"{folder}/ may include only the folders up to it, "
                       f"not {where}/ (lib/, bottom first: {' < '.join(LIB_ORDER)})")
    for module in MODULES:
        for path in sources(root, module):
            for line, name in includes(path):
                target = resolve(root, path, name, ["lib"])
                if target is None:
                    continue
                parts = target.split(os.sep)
                if parts[0] == module or parts[:2] == ["lib", "common"]:
                    continue
                report(path, line, name, f"{module}/ may include only itself and lib/common/")
    for path in sources(root, os.path.join("lib", "include")):
        for line, name in includes(path):
            target = resolve(root, path, name, [])
            if target is None or target.split(os.sep)[:2] != ["lib", "include"]:
                report(path, line, name, "the installed contract includes nothing of lib/'s internals")
    apps = os.path.join(root, "apps")
    for tool in sorted(os.listdir(apps)) if os.path.isdir(apps) else []:
        if not os.path.isdir(os.path.join(apps, tool)) or tool in INTERNAL_TOOLS:
            continue
        for path in sources(root, os.path.join("apps", tool)):
            for line, name in includes(path):
                target = resolve(root, path, name, ["apps/common", "lib/include", "lib"])
                if target is None:
                    continue
                parts = target.split(os.sep)
                if parts[0] == "apps" and parts[1] in (tool, "common") or parts[:2] == ["lib", "include"]:
                    continue
                report(path, line, name, "a tool uses lt.h / lt.hpp and apps/common alone, "
                       "not the library's internals (only lt-bench may)")
    return bad


def self_test():
    """The checker finds each kind of violation in a scratch tree, and passes
    the same tree without them."""
    def write(root, rel, text=""):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    with tempfile.TemporaryDirectory() as root:
        write(root, "lib/common/random.h")
        write(root, "lib/core/tensor.h", '#include "common/random.h"\n')
        write(root, "lib/model/sequence_model.h", '#include "core/tensor.h"\n')
        write(root, "lib/include/lt.h")
        write(root, "kernels/heads.cu", '#include "common/random.h"\n#include "heads.h"\n')
        write(root, "kernels/heads.h")
        write(root, "apps/common/terminal.h", '#include "lt.h"\n')
        write(root, "apps/lt-x/main.cpp", '#include "lt.h"\n#include "terminal.h"\n')
        write(root, "apps/lt-bench/main.cpp", '#include "model/sequence_model.h"\n')
        if check(root):
            return ["self-test: a clean tree was refused: " + "; ".join(check(root))]
        planted = [("lib/core/tensor.h", '#include "model/sequence_model.h"\n', "core/ may include only the folders up to it, not model/"),
                   ("kernels/heads.cu", '#include "core/tensor.h"\n', "kernels/ may include only"),
                   ("lib/include/lt.h", '#include "core/tensor.h"\n', "the installed contract"),
                   ("apps/lt-x/main.cpp", '#include "core/tensor.h"\n', "a tool uses lt.h")]
        failures = []
        for rel, text, expected in planted:
            path = os.path.join(root, rel)
            with open(path) as f:
                before = f.read()
            with open(path, "a") as f:
                f.write(text)
            found = check(root)
            if len(found) != 1 or expected not in found[0]:
                failures.append(f"self-test: {rel} with {text.strip()} gave {found}")
            with open(path, "w") as f:
                f.write(before)
        return failures


def main():
    if sys.argv[1:] == ["--self-test"]:
        bad = self_test()
    elif len(sys.argv) == 2:
        bad = check(sys.argv[1])
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
