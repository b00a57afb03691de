"""The modules of `encdec` import one another without a circle.

A module depends on every module it imports, wherever the import statement sits (at the top or
inside a function: a function-level import only hides a circle until the function runs), and
importing `a.b.c` runs the packages `a` and `a.b` first, so they count too, except a module's own
enclosing packages (which are being imported already when it runs).
"""

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"


def module_name(path):
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules():
    """{module name: path} of every module of the package under lib/encdec."""
    return {module_name(p): p for p in sorted((LIB / "encdec").rglob("*.py"))}


def imported(name, path, known):
    """The modules of `known` that module `name` (at `path`) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.add(target)
            found |= {f"{target}.{alias.name}" for alias in node.names}  # `from . import core` names a module
    with_packages = set()
    for target in found:
        pieces = target.split(".")
        with_packages |= {".".join(pieces[:i]) for i in range(1, len(pieces) + 1)}
    own_packages = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return {t for t in with_packages if t in known and t != name and t not in own_packages}


def graph():
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def find_cycle(edges):
    """One import circle as a list of module names (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_graph_sees_relative_function_level_and_package_imports():
    edges = graph()
    assert "encdec.attention" in edges["encdec.layers"]  # from .attention import ...
    assert "encdec.checks.catalog" in edges["encdec.mistakes"]
    assert "encdec.checks" in edges["encdec.mistakes"]  # importing encdec.checks.catalog runs encdec/checks/__init__
    assert "encdec.checks.guard" in edges["encdec.checks.core"]  # imported inside Checker.result


def test_find_cycle_finds_a_circle_and_only_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_there_is_no_import_circle():
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


@pytest.mark.parametrize("module", sorted(m for m in modules() if m.startswith("encdec.mistakes")))
def test_the_mistakes_depend_on_the_catalog_and_the_library_only(module):
    """The catalog of mistakes sits below the checkers: it may use the reference library and the small
    catalog module, nothing else of the checking layer."""
    checking = {m for m in graph()[module] if m.startswith("encdec.checks")}
    assert checking <= {"encdec.checks", "encdec.checks.catalog"}, sorted(checking)
