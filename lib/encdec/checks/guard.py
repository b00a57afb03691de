"""What the checks rely on, snapshotted before any student code runs, and verified after.

When grading, the kernel imports this module and calls `take()` at start-up, before the first
cell (autograder/nbgrader_config.py passes it to the kernel; a kernel forked by the grader's zygote
has it from the zygote, taken before any student's code ran), so the snapshot holds the real
NumPy, builtins, reference library and checkers. Every checker calls `violations()` before it
reports a score: if a function or class the tests use was replaced (`np.allclose = ...`, a
checker swapped for a lambda, a reference function edited), the exercise scores zero and the
message names what was changed. It is one line of defence: the grading driver also audits the
notebook's source before running it (autograder/audit.py).
"""

import builtins
import sys
import types

_snapshot = []  # (module, name, object)
# The kernel itself swaps some builtins between cells (input, getpass); watch the ones the
# checks use.
BUILTINS = {"abs", "all", "any", "bool", "callable", "dict", "enumerate", "float", "getattr", "hasattr",
            "int", "isinstance", "issubclass", "iter", "len", "list", "max", "min", "next", "object",
            "print", "range", "repr", "round", "set", "sorted", "str", "sum", "super", "tuple", "type",
            "vars", "zip", "__import__", "__build_class__", "id", "hash", "setattr", "delattr", "globals"}
_methods = []  # (class, name, object)


def _watched_modules():
    for name, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType):
            continue
        if name in ("builtins", "numpy", "math") or name.startswith(("encdec", "numpy._core", "numpy.linalg")):
            yield module


def take():
    """Record every function, class and module now reachable from the watched modules, once: a
    later call keeps the first record. The grader's zygote (autograder/zygote.py) takes it before it
    forks each kernel, whose start-up call then finds it there; and a notebook that calls it cannot
    move the record past its own changes."""
    if _snapshot:
        return
    import importlib
    import pkgutil

    import numpy  # noqa: F401  (watched)
    import encdec  # noqa: F401
    checks = __name__.rpartition(".")[0]
    for name in (checks, checks.rpartition(".")[0] + ".mistakes"):  # every lesson's checkers and catalog,
        package = importlib.import_module(name)  # loaded by name: the checkers import this module
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{name}.{info.name}")
    del _snapshot[:], _methods[:]
    for module in _watched_modules():
        for name, value in list(vars(module).items()):
            if module is builtins and name not in BUILTINS:
                continue
            if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType)) \
                    or callable(value) and type(value).__module__.startswith("numpy"):
                _snapshot.append((module, name, value))
                if isinstance(value, type) and value.__module__.startswith("encdec"):
                    for attr, member in list(vars(value).items()):
                        if isinstance(member, (types.FunctionType, property, staticmethod, classmethod)):
                            _methods.append((value, attr, member))
    _snapshot.append((sys, "modules", sys.modules))


def violations():
    """Names of watched objects that are no longer what the snapshot recorded."""
    changed = []
    for module, name, value in _snapshot:
        if vars(module).get(name, _MISSING) is not value:
            changed.append(f"{getattr(module, '__name__', module)}.{name}")
    for cls, name, member in _methods:
        if vars(cls).get(name, _MISSING) is not member:
            changed.append(f"{cls.__module__}.{cls.__qualname__}.{name}")
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("encdec") and module is not None and \
                not getattr(module, "__file__", "").replace("\\", "/").count("/encdec/"):
            changed.append(f"sys.modules[{module_name!r}]")
    return changed


_MISSING = object()
