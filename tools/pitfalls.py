"""The "Common pitfalls" section of a lesson, generated from the catalog of known mistakes.

    python tools/pitfalls.py 01        # print Lesson 1's section as the build writes it

tools/nbbuild.py calls `insert(nb, source)` on every notebook it builds: one Markdown cell, tagged
"pitfalls", right before the summary. For each exercise answered with code it shows a few entries of
encdec.mistakes.CATALOG: the slip, what the visible test reports for it, and the catalog's diagnosis.

Which entries. There is no data on real students. The entries are ranked by how many of the slips in
bench/slips (wrong answers written without looking at the catalog) the checker names as that entry,
hidden cases included (as bench/bench_diagnosis.py grades them); ties, most of them, keep the
catalog's order. The first `PER_EXERCISE` that can be shown are taken: not one whose slip is more than
`MAX_LINES` lines, calls a helper the lesson never shows, or would show a line of a solution (in its
code, its diagnosis or its symptom).

What is shown. The entry's code is compared with the right answer (the solution between BEGIN and END
SOLUTION, or the library's reference, whichever is closer), both as canonical lines (ast.unparse).
`+` lines are the entry's lines that no right form holds (the solution, the reference, the correct
variants of tests/variants, the lines three entries share); a `-` line, the right answer's, is shown
only when the released lesson already shows it (a statement, a hint, a docstring), so the section
gives away nothing the lesson does not. The symptom is the first failing part's message on the
visible cases, reduced to its kind where the numbers would be noise, under a fixed seed.
"""

import ast
import builtins
import contextlib
import difflib
import functools
import importlib
import inspect
import io
import keyword
import re
import sys
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
TAG, HEADING = "pitfalls", "## Common pitfalls"
PER_EXERCISE, MAX_LINES = 3, 6
USUAL = 3  # a line three catalog entries of an exercise share is the right form they were written from
INTRO = ("This section comes after the exercises on purpose, so that it gives nothing away while you work "
         "on them. Each item is a real wrong answer that the tests recognise: the slip (`+` lines are the wrong "
         "code), what the visible test reports for it, and why it is wrong.")


def _collapse(line):
    return " ".join(re.sub(r"\s+#[^'\"]*$", "", line).split())  # without a trailing comment


# -- what the release shows, and what it keeps for grading -------------------------------------------------
def regions(source):
    """(the lines the release shows, [the lines of each region between BEGIN and END SOLUTION or HIDDEN
    TESTS]): nbgrader keeps the regions for grading."""
    shown, hidden, inside = [], [], False
    for line in source.splitlines():
        word = line.strip()
        if word in ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"):
            inside = hidden.append([]) or True
        elif word in ("### END SOLUTION", "### END HIDDEN TESTS"):
            inside = False
        else:
            (hidden[-1] if inside else shown).append(line)
    return shown, hidden


def visible(nb):
    """{collapsed line} the released notebook shows, the pitfalls aside: its lines, and Markdown's code."""
    seen = set()
    for cell in nb.cells:
        if TAG not in cell.get("metadata", {}).get("tags", []):
            for line in regions(cell.source)[0]:
                seen |= {_collapse(line)} | set(map(_collapse, re.findall(r"`([^`]+)`", line)))
    return seen - {""}


def hidden_lines(source):
    """{collapsed line} of the regions the release leaves out, as written and in canonical form."""
    return {c for region in regions(source)[1] for c in map(_collapse, region + canonical("\n".join(region))) if c}


@functools.lru_cache(maxsize=None)
def every_solution_line():
    """The hidden lines of every lesson's source: no lesson's section may show one."""
    return frozenset().union(*(hidden_lines(p.read_text()) for p in (ROOT / "authoring").glob("[0-9][0-9]_*.py")))


# -- code as canonical lines --------------------------------------------------------------------------------
def lines_of(statements):
    """Statements as canonical lines (one layout, no comments); a tuple returned or assigned loses the
    brackets ast.unparse gives it."""
    out = []
    for line in ast.unparse(ast.Module(body=statements, type_ignores=[])).splitlines():
        bare = re.match(r"^(\s*(?:return |[\w.,\[\] *]+ = ))\((.*)\)$", line)
        try:
            if bare and ast.dump(ast.parse((bare[1] + bare[2]).strip())) == ast.dump(ast.parse(line.strip())):
                line = bare[1] + bare[2]
        except SyntaxError:
            pass
        out += [line] if line.strip() else []
    return out


def canonical(text):
    """Dedented source as canonical lines; as it is written when it does not parse on its own."""
    text = textwrap.dedent(text)
    try:
        return lines_of(AsWritten({}, (), source=text).visit(ast.parse(text)).body)
    except SyntaxError:
        return [ln.rstrip() for ln in text.splitlines() if ln.strip()]


class AsWritten(ast.NodeTransformer):
    """Code as the student writes it: numbers and strings as the source has them (1e-9, not 1e-09), the
    library's functions under the lesson's names (softmax_ is softmax), and a private helper that is one
    `return` written out (_T(a) is np.swapaxes(a, -1, -2)). An entry that calls another helper is not shown."""

    def __init__(self, names, words, source=None, values=None, depth=0):
        self.names, self.words, self.source, self.values, self.depth = names, words, source, values or {}, depth

    def visit_JoinedStr(self, node):  # an f-string stays as it is
        return node

    def visit_Constant(self, node):
        text = self.source and ast.get_source_segment(self.source, node)
        if text and "\n" not in text and text != repr(node.value) and isinstance(node.value, (int, float, str)):
            return ast.copy_location(ast.Name(id=text, ctx=ast.Load()), node)
        return node

    def visit_Name(self, node):
        if node.id in self.values:
            return self.values[node.id]
        obj = self.names.get(node.id)
        for other in (node.id.rstrip("_") if node.id.endswith("_") and not node.id.startswith("__") else None,
                      getattr(obj, "__name__", None) if callable(obj) else None):
            if other and other != node.id and not other.startswith("_") and other in self.words:
                node.id = other
                break
        return node

    def visit_Call(self, node):
        helper = self.names.get(node.func.id) if isinstance(node.func, ast.Name) else None
        self.generic_visit(node)
        found = _body(helper) if inspect.isfunction(helper) and helper.__name__.startswith("_") else None
        if found and self.depth < 3 and len(found[1]) == 1 and isinstance(found[1][0], ast.Return) \
                and len(found[0].args.args) == len(node.args) and not node.keywords \
                and not any(isinstance(a, ast.Starred) for a in node.args) and found[1][0].value is not None:
            values = {a.arg: v for a, v in zip(found[0].args.args, node.args)}
            return AsWritten(helper.__globals__, self.words, None, values, self.depth + 1).visit(found[1][0].value)
        return node


def _body(fn):
    """(the function's definition, its statements without the docstring), numbers as written; or None."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = AsWritten({}, (), source=source).visit(ast.parse(source)).body[0]
    except (TypeError, OSError, SyntaxError, IndexError):
        return None
    first = tree.body[0]
    doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    return tree, tree.body[1:] if doc else tree.body


def function_lines(fn, words):
    """A function's body, no signature or docstring, as a student writes it, in canonical lines."""
    found = _body(fn)
    return lines_of([AsWritten(getattr(fn, "__globals__", {}), words).visit(s) for s in found[1]]) if found else []


# -- the slip ---------------------------------------------------------------------------------------------
class Lesson:
    """A built notebook and what a snippet is checked against: the lines its release shows, every
    solution's hidden lines, its words (the names a student knows), each exercise's right forms."""

    def __init__(self, nb):
        self.nb, self.shown = nb, visible(nb)
        self.hidden = set().union(every_solution_line(), *(hidden_lines(c.source) for c in nb.cells)) - self.shown
        self.words = set(re.findall(r"\w+", " ".join(self.shown)))

    def gives_away(self, text):
        """Whether `text` is, or holds, a line of a solution that the release does not show."""
        text = _collapse(text)
        return text in self.hidden or any(len(s) >= 25 and s in text for s in self.hidden)

    @functools.lru_cache(maxsize=None)
    def right(self, exercise):
        """(solution lines, reference lines, {lines that are not slips}, {lines a third of the entries share})."""
        from encdec.mistakes import CATALOG
        solution = next(canonical("\n".join(regions(c.source)[1][0])) for c in self.nb.cells
                        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == exercise.answer_cell)
        ref = exercise.reference
        reference = function_lines(getattr(ref, exercise.method) if exercise.method else ref, self.words)
        seen = [set(map(_collapse, function_lines(m.impl, self.words))) for m in CATALOG[exercise.name]]
        usual = {ln for ln in set().union(*seen) if sum(ln in s for s in seen) >= USUAL}
        common = {ln for ln in usual if sum(ln in s for s in seen) >= len(seen) / 3}
        variants = {_collapse(ln) for v in _bench().variants(exercise) for ln in function_lines(v, self.words)}
        return solution, reference, usual | variants | set(map(_collapse, solution + reference)), common


def _changes(right, wrong):
    return [ln for ln in difflib.unified_diff(right, wrong, lineterm="", n=0) if ln[:1] in "+-"
            and not ln.startswith(("+++", "---"))]


def snippet(exercise, mistake, lesson):
    """(the slip's lines, "- right" and "+ wrong", ""), or (None, why it is not shown)."""
    solution, reference, right, common = lesson.right(exercise)
    wrong = function_lines(mistake.impl, lesson.words)
    slip = [ln for ln in wrong if _collapse(ln) not in right]
    base = min((r for r in (solution, reference) if r), key=lambda r: len(_changes(r, wrong)))
    minus = [ln[1:] for ln in _changes(base, wrong) if ln[0] == "-" and _collapse(ln[1:]) in lesson.shown & common
             and _collapse(ln[1:]) not in map(_collapse, wrong)]
    if not slip and (not minus or len(wrong) < len(base) - MAX_LINES):
        return None, "nothing to show: it moves right lines, or leaves out lines the lesson does not show"
    if len(slip) + len(minus) > MAX_LINES:
        return None, f"{len(slip) + len(minus)} changed lines"
    for line in [*slip, mistake.diagnosis]:
        if lesson.gives_away(line):
            return None, f"{line.strip()!r} holds a line of a solution"
        for name in re.findall(r"(?<![\w.])([A-Za-z_]\w*)\s*\(", line):
            if not (keyword.iskeyword(name) or hasattr(builtins, name) or name in lesson.words
                    or re.search(rf"\b(def|class)\s+{name}\b|\b{name}\s*=", "\n".join(wrong))):
                return None, f"it calls {name}, a helper the lesson does not show"
    lines = textwrap.dedent("\n".join([*minus, *slip])).splitlines()
    return [f"- {ln}" for ln in lines[:len(minus)]] + [f"+ {ln}" for ln in lines[len(minus):]], ""


# -- what the visible test reports ----------------------------------------------------------------------------
def first_failure(exercise, mistake):
    """(score, the first line of the first failing part's message) on the visible cases, seeded."""
    import numpy as np

    from encdec.checks.record import collected

    state = np.random.get_state()
    np.random.seed(0)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(0)
    try:
        with collected() as records, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            score = exercise.checker(exercise.answer_from(mistake.impl), points=exercise.points, hidden=False)
    finally:
        np.random.set_state(state)
    failed = [p["message"] for p in records[-1]["parts"] if not p["passed"]] + [records[-1]["message"]]
    return float(score), (next((m for m in failed if m), "") or "").split("\n")[0]


SPECIAL = {"0", "1", "-1", "inf", "-inf", "nan", "True", "False"}
ITEM = r"^(?:(?P<item>[\w .,()'-]+?): )?"
DIFFER = re.compile(ITEM + r"values differ(?: at index \([\d, ]*\))?: expected (?P<e>[^ ,]+), got (?P<g>[^ ,]+) \(")
SHAPE = re.compile(ITEM + r"shape: expected (?P<e>\(.*?\)), got (?P<g>\(.*?\))")
RAISED = re.compile(r"^your code raised (?P<type>\w+): (?P<text>.*)$")


def symptom(message):
    """What the visible test shows, in short: the kind of failure, and the case ("[case] ...")."""
    depth, label, rest = 0, "", message
    for i, ch in enumerate(message if message.startswith("[") else ""):  # a case's label may hold brackets
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth == 0:
            label, rest = message[1:i], message[i + 1:].lstrip()
            break
    on = f" (case: {label})" if label else ""
    if m := DIFFER.match(rest):
        where = f" in `{m['item']}`" if m["item"] else ""
        if m["g"] == "nan":
            return f"NaN{where} where a number is expected{on}"
        exact = f": expected {m['e']}, got {m['g']}" if {m["e"], m["g"]} <= SPECIAL else ""
        return f"wrong values{where}{exact}{on}"
    if m := SHAPE.match(rest):
        return f"a shape error{f' of `{m[1]}`' if m[1] else ''}: expected {m['e']}, got {m['g']}{on}"
    if m := RAISED.match(rest):
        sizes = re.search(r"\(size \d+ is different from \d+\)", m["text"])
        text = m["text"] if not (sizes and "matmul" in m["text"]) else \
            f"the sizes of a matrix product do not match {sizes[0]}"
        return f"an error, {m['type']}: {_cut(text, 90)}{on}"
    return _cut(rest, 160) + on


def _cut(text, width):
    return text.strip() if len(text.strip()) <= width else text[:width].rsplit(" ", 1)[0] + " …"


# -- which entries ----------------------------------------------------------------------------------------------
def _bench():
    """bench/bench_diagnosis.py: it grades the slips, and knows where the correct variants are."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    return importlib.import_module("bench_diagnosis")


def lesson_exercises(lesson):
    """The exercises of Lesson `lesson` ("01") answered with code, in order."""
    return list(importlib.import_module(f"encdec.checks.lesson{lesson}").EXERCISES)


@functools.lru_cache(maxsize=None)
def slip_counts(lesson):
    """{(exercise name, catalog key): how many of the lesson's bench/slips the checker names as it}."""
    bench, exercises, counts = _bench(), {ex.name: ex for ex in lesson_exercises(lesson)}, {}
    for s in importlib.import_module("slips").all_slips():
        if s.exercise in exercises:
            named = bench.grade(exercises[s.exercise], s.impl).misconceptions
            for key in {m.get("key") for m in named if m.get("exercise") == s.exercise}:
                counts[(s.exercise, key)] = counts.get((s.exercise, key), 0) + 1
    return counts


def ranked(exercise, lesson):
    from encdec.mistakes import CATALOG
    entries, counts = list(CATALOG[exercise.name]), slip_counts(lesson)
    return sorted(entries, key=lambda m: (-counts.get((exercise.name, m.key), 0), entries.index(m)))


def pitfalls(exercise, lesson, about):
    """[(mistake, snippet lines, symptom)] shown for the exercise, best first (`about`: a Lesson)."""
    chosen = []
    for mistake in ranked(exercise, lesson):
        lines, _ = snippet(exercise, mistake, about)
        score, message = first_failure(exercise, mistake) if lines else (exercise.points, "")
        if lines and score < exercise.points and message and not about.gives_away(symptom(message)):
            chosen.append((mistake, lines, symptom(message)))
        if len(chosen) == PER_EXERCISE:
            break
    return chosen


# -- the section --------------------------------------------------------------------------------------------------
def prose(text):
    """Catalog text as Markdown: code spans kept, what Markdown, HTML or MathJax would read escaped."""
    return "".join(p if p.startswith("`") else re.sub(r"([\\*_$\[\]])", r"\\\1", p).replace("<", "&lt;")
                   .replace(">", "&gt;") for p in re.split(r"(`[^`]*`)", text))


def section(nb, lesson):
    """The Markdown of the lesson's "Common pitfalls" section."""
    out, about = [HEADING, "", INTRO], Lesson(nb)
    for exercise in lesson_exercises(lesson):
        items = pitfalls(exercise, lesson, about)
        where = exercise.title if exercise.method is None else f"{exercise.name}.{exercise.method}"
        out += ["", f"<details><summary>Exercise {exercise.number} — <code>{where}</code></summary>"] if items else []
        for i, (mistake, lines, shows) in enumerate(items, 1):
            out += ["", f"**{i}.** In `{where}`:", "", "```diff", *lines, "```", "",
                    f"*What the test shows:* {prose(shows)}{'' if shows.endswith(('.', '…')) else '.'}", "",
                    f"*Why:* {prose(mistake.diagnosis)}"]
        out += ["", "</details>"] if items else []
    return "\n".join(out)


def insert(nb, source):
    """Put the section right before the summary (a "## Summary" that shares its Markdown cell with the text
    before it gets a cell of its own, as the build gives it)."""
    at, found = next(((i, m) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                      for m in [re.search(r"^## Summary\b", c.source, re.M)] if m), (None, None))
    if found is None:
        raise ValueError(f"{Path(source).name}: no `## Summary` section to put the common pitfalls before")
    if found.start() > 0:
        summary, before = nbformat.v4.new_markdown_cell(nb.cells[at].source[found.start():]), nb.cells[at]
        summary.id, before.source = f"{before.id}-summary", before.source[:found.start()].rstrip()
        at += 1
        nb.cells.insert(at, summary)
    cell = nbformat.v4.new_markdown_cell(section(nb, Path(source).stem[:2]))
    cell.id, cell.metadata["tags"] = TAG, [TAG]
    nb.cells.insert(at, cell)
    return nb


def cell_of(nb):
    """The notebook's pitfalls cell, or None."""
    return next((c for c in nb.cells if TAG in c.get("metadata", {}).get("tags", [])), None)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tools"))
    import nbbuild
    for arg in sys.argv[1:] or ["01"]:
        print(cell_of(nbbuild.build(next((ROOT / "authoring").glob(f"{arg}_*.py")))).source, end="\n\n")
