"""Answers that are close copies of the reference source, for the instructor to judge (never a
penalty): the course is open, so a student can read solutions/ and lib/encdec.

    found = close_copies(graded_notebook, lesson)   # [(exercise heading, which source, ratio)]

Each answer (the code of an answer cell) is compared with the solution notebook's answer and with
the library's reference implementation on the normalised syntax tree: docstrings dropped, every
local name (arguments, assigned variables, loop variables) renamed in order of appearance, so that
renaming variables or reformatting does not hide a copy, while a different formula does not match.
"""

import ast
import difflib
import importlib
import inspect
import re
import textwrap
from pathlib import Path

THRESHOLD = 0.9  # similarity of the normalised trees from which an answer is reported
MIN_NODES = 25  # answers shorter than this are too small to tell a copy from the obvious


class _Canonical(ast.NodeTransformer):
    """Local names -> v0, v1, … in order of first appearance (the function's own name is not
    compared); docstrings, annotations and decorators removed."""

    def __init__(self):
        self.names = {}

    def _name(self, name):
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        node.annotation = None
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store) or node.id in self.names:
            node.id = self._name(node.id)
        return node

    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        if hasattr(node, "returns"):
            node.returns = None
        node.decorator_list = []
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        node.name = "f"
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = _body


def normalised(source):
    """The normalised tree of some code, as a list of tokens; None when it does not parse."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError):
        return None
    tree = _Canonical().visit(tree)
    return re.findall(r"\w+|[^\w\s]", ast.dump(tree, annotate_fields=False, include_attributes=False))


def ratio(a, b):
    """How alike two normalised trees are, 0 to 1."""
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def answer_cells(notebook):
    """{answer cell id: source} of a notebook's answer cells."""
    import nbformat
    nb = nbformat.read(str(notebook), as_version=4)
    return {c.metadata.nbgrader.grade_id: c.source for c in nb.cells
            if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")}


def own_code(answer, stub):
    """The lines of an answer cell that the release's stub cell does not have: what the student
    wrote, without the scaffolding (signature, docstring) every student shares."""
    added = [line[2:] for line in difflib.ndiff(stub.splitlines(), answer.splitlines()) if line.startswith("+ ")]
    return textwrap.dedent("\n".join(added))


def solution_region(source):
    """The code between BEGIN and END SOLUTION."""
    body = re.search(r"### BEGIN SOLUTION\n(.*?)[ \t]*### END SOLUTION", source, re.S)
    return textwrap.dedent(body.group(1)) if body else ""


def library_body(exercise):
    """The body of the reference implementation (no signature, no docstring), or None when it is
    made on first use, not a function, or has no source."""
    from encdec.checks.exercises import Later
    ref = getattr(exercise, "_reference", None)
    if ref is None or isinstance(ref, Later):
        return None
    target = getattr(ref, exercise.method, None) if getattr(exercise, "method", None) else ref
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(target)))
    except (OSError, TypeError, SyntaxError):
        return None
    fn = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if fn is None:
        return None
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
        getattr(fn.body[0], "value", None), ast.Constant) else fn.body
    return "\n".join(ast.unparse(node) for node in body)


def close_copies(graded_notebook, lesson, solutions, release, threshold=THRESHOLD):
    """[(exercise heading, 'the solution notebook' or 'encdec.<module>.<name>', ratio)] for each
    answer of a graded notebook that is a close copy of a reference (solutions/ and release/ are
    the source and release folders, lesson NN_slug in NN_slug/NN_slug.ipynb)."""
    path = Path(graded_notebook)
    try:
        module = importlib.import_module(f"encdec.checks.lesson{lesson[:2]}")
        answers = answer_cells(path)
        solved = answer_cells(Path(solutions) / lesson / f"{lesson}.ipynb")
        stubs = answer_cells(Path(release) / lesson / f"{lesson}.ipynb")
    except (ModuleNotFoundError, OSError, ValueError):
        return []
    found = []
    for exercise in getattr(module, "EXERCISES", []):
        cell = exercise.answer_cell
        answer = normalised(own_code(answers.get(cell, ""), stubs.get(cell, "")))
        if not answer or len(answer) < MIN_NODES:
            continue
        sources = [("the solution notebook", solution_region(solved.get(cell, "")))]
        body = library_body(exercise)
        if body:
            ref = exercise.reference
            target = getattr(ref, exercise.method) if exercise.method else ref
            sources.append((f"{target.__module__}.{target.__qualname__}", body))
        best = max(((where, ratio(answer, normalised(code) or [])) for where, code in sources if code),
                   key=lambda x: x[1], default=None)
        if best and best[1] >= threshold:
            found.append((f"{exercise.number} {exercise.title}", best[0], round(best[1], 3)))
    return found
