"""The grader's modules (autograder/) import one another without a circle, and each stays small
enough to hold one job: at most about 300 lines (LIMIT, with a margin of a tenth).

The import graph is read as tests/test_import_graph.py reads lib/encdec's: every import statement
counts, at the top or inside a function (a function-level import only hides a circle until the
function runs), and importing a.b runs the package a first.
"""

import ast
from pathlib import Path

from test_import_graph import find_cycle

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "autograder"
LIMIT = 330  # lines: about 300, at most a tenth over


def modules():
    """{module name: path} of every module of autograder/ (nbgrader_config.py is nbgrader's file,
    not a module of the package, and is counted for its length only)."""
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        name = "autograder" if path.name == "__init__.py" else f"autograder.{path.stem}"
        found[name] = path
    return found


def imported(name, path, known):
    package = "autograder"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            target = (package + (f".{node.module}" if node.module else "")) if node.level else node.module
            found.add(target)
            found |= {f"{target}.{alias.name}" for alias in node.names}  # `from . import pipeline` names a module
    return {t for t in found if t in known and t != name and t != package}


def graph():
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_the_graph_sees_the_grader_s_imports():
    edges = graph()
    assert "autograder.pipeline" in edges["autograder.classroom"]  # from . import … pipeline …
    assert "autograder.jobs" in edges["autograder.collection"]  # from .jobs import Job
    assert "autograder.kernel_cell" in edges["autograder.timed_process"]


def test_the_grader_has_no_import_circle():
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_every_grader_module_is_about_300_lines_at_most():
    lengths = {path.name: len(path.read_text().splitlines()) for path in PACKAGE.glob("*.py")}
    biggest = max(lengths, key=lengths.get)
    print(f"the biggest module: autograder/{biggest}, {lengths[biggest]} lines")
    over = {name: n for name, n in lengths.items() if n > LIMIT}
    assert not over, f"modules over {LIMIT} lines (split them by job): {over}"
