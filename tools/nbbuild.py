"""Build the nbgrader source notebooks in solutions/ from their percent-format sources in authoring/.

    python tools/nbbuild.py            # build every authoring/NN_slug.py into solutions/NN_slug/NN_slug.ipynb
    python tools/nbbuild.py --check    # exit 1 if a committed notebook differs from its source
    python tools/nbbuild.py 05         # only the lessons whose name starts with 05

A source is plain Python with cell markers:

    # %% [markdown]                 a Markdown cell; each line starts with "# " (or is "#")
    # %%                            an ordinary code cell
    # %% [setup] grade_id           a locked code cell (nbgrader restores it when grading)
    # %% [solution] grade_id        an answer cell: ### BEGIN SOLUTION ... ### END SOLUTION
    # %% [test] 1.2                 the test cell of Exercise 1.2, written by the build
    # %% [demo]                     a code cell tagged "demo": figures, widgets, training runs;
                                    never needed by a graded cell, skipped when grading at scale

An exercise's number, title and points are declared once, beside its checker in
encdec.checks.lessonNN (see encdec.checks.exercises). From that declaration the build writes the
test cell (its nbgrader id and points, the comment "Tests for Exercise 1.2 (4 points).", which names
the method for a method exercise, the import, the hidden-tests block and the call; any lines under
the marker go between the import and the rest)
and appends the points to the exercise's heading: the source writes
`### Exercise 1.2 — `scaled_dot_product_attention(Q, K, V, mask=None)``, the notebook shows
`... (4 points)`. A test cell or heading for an exercise that is not declared, a declared exercise
without its test cell, answer cell or heading, or a heading that states its own points, stops the
build with a message naming the lesson and the exercise.

An answer given as data (an ordering, the tag quiz: encdec.checks.quiz) shows, above
`### BEGIN SOLUTION`, the variable the student defines with `...` for the answer, so that the
released stub says what to write, not only `raise NotImplementedError()`:

    # %% [solution] block_order
    block_order = [...]  # your answer: the step numbers in order
    ### BEGIN SOLUTION
    block_order = [3, 5, 1, 4, 2]
    ### END SOLUTION

A data answer cell without that line stops the build.

The concept checks a lesson declares (CONCEPTS, encdec.checks.concepts) have no source: the build
writes their cells, the check before the lesson right before §N.1 and the check after it right
before the summary (add_concept_checks).
"""

import importlib
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^# %%(?:\s*\[(\w+)\])?\s*(.*)$")
HEADING = re.compile(r"^#{2,4} Exercise (\d+\.\d+)\b")  # an exercise's heading, in a Markdown cell
STATED_POINTS = re.compile(r"\(\s*[\d.]+ points?\s*\)\s*$")
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


class BuildError(ValueError):
    """A source and its lesson's declarations disagree; the message says where and how."""


def _nbgrader(kind, grade_id, points=None):
    meta = {"grade": kind == "test", "grade_id": grade_id, "locked": kind in ("test", "setup"),
            "schema_version": 3, "solution": kind == "solution", "task": False}
    if kind == "test":
        meta["points"] = points
    return meta


def parse(text, name):
    """Split a percent-format source into (kind, options, body) triples."""
    cells, current = [], None
    for line in text.splitlines():
        m = HEADER.match(line)
        if m:
            if current:
                cells.append(current)
            current = [m.group(1) or "code", m.group(2).strip(), []]
            continue
        if current is None:
            if line.strip():
                raise BuildError(f"{name}: text before the first '# %%' marker: {line!r}")
            continue
        current[2].append(line)
    if current:
        cells.append(current)
    return cells


def declarations(source_path):
    """{number: declaration} of the exercises the lesson's checker module grades."""
    from encdec.checks.exercises import declared

    module_name = f"encdec.checks.lesson{source_path.stem[:2]}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise BuildError(f"{source_path.name}: no checker module {module_name} ({exc})") from None
    try:
        return {graded.number: graded for graded in declared(module)}
    except ValueError as exc:
        raise BuildError(f"{source_path.name}: {exc}") from None


def _points(points):
    return int(points) if points == int(points) else points


def test_source(graded, extra_lines, first):
    """The test cell of a declared exercise: comment, import, extra lines, hidden tests, call."""
    from encdec.checks.exercises import points_text

    checker = graded.checker
    method = getattr(graded, "method", None)  # a method exercise's test names the method it tests
    lines = [f"# Tests for Exercise {graded.number}{f', {graded.title}' if method else ''} "
             f"({points_text(graded.points)})." + (" Run this cell after your answer." if first else ""),
             f"from {checker.__module__} import {checker.__name__}", ""]
    if extra_lines:
        lines += extra_lines + [""]
    points = _points(graded.points)
    if graded.has_hidden_tests:
        lines += ["hidden = False", "### BEGIN HIDDEN TESTS", "hidden = True", "### END HIDDEN TESTS",
                  f"{checker.__name__}(points={points}, hidden=hidden)"]
    else:
        lines.append(f"{checker.__name__}(points={points})")
    return "\n".join(lines)


def with_points(body, declared_exercises, name, headings):
    """The Markdown with the declared points appended to each exercise heading."""
    from encdec.checks.exercises import points_text

    out = []
    for line in body.split("\n"):
        m = HEADING.match(line)
        if m:
            number = m.group(1)
            graded = declared_exercises.get(number)
            if graded is None:
                raise BuildError(f"{name}: a heading names Exercise {number}, which "
                                 f"{_module_of(name)} does not declare: {line!r}")
            if STATED_POINTS.search(line):
                raise BuildError(f"{name}: the heading of Exercise {number} states its points; write it "
                                 f"without them (the build adds the declared {points_text(graded.points)})")
            headings.append(number)
            line = f"{line.rstrip()} ({points_text(graded.points)})"
        out.append(line)
    return "\n".join(out)


def is_data_answer(graded):
    """An exercise answered with a variable holding data (an ordering, a quiz), not with code."""
    from encdec.checks.quiz import Quiz
    return isinstance(graded, Quiz)


def shows_placeholder(lines, name):
    """Whether an answer cell assigns `name` a placeholder with `...` before its solution."""
    before = lines[:lines.index("### BEGIN SOLUTION")] if "### BEGIN SOLUTION" in lines else []
    text = "\n".join(before)
    return re.search(rf"^{re.escape(name)}\s*=", text, re.M) is not None and "..." in text


def _module_of(name):
    return f"encdec.checks.lesson{name[:2]}"


def build(source_path):
    source_path = Path(source_path)
    name = source_path.name
    text = source_path.read_text()
    cells = parse(text, name)
    declared_exercises = declarations(source_path)
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    ids, tests, headings, answers = set(), [], [], {}
    for index, (kind, options, lines) in enumerate(cells):
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            body = "\n".join(re.sub(r"^# ?", "", ln) if ln.startswith("#") else ln for ln in lines)
            cell = nbformat.v4.new_markdown_cell(with_points(body, declared_exercises, name, headings))
            cell.id = f"md-{index:03d}"
        elif kind == "test":
            graded = declared_exercises.get(options)
            if graded is None:
                known = ", ".join(declared_exercises) or "none"
                raise BuildError(f"{name}: cell {index}: `# %% [test] {options}` names no exercise that "
                                 f"{_module_of(name)} declares (it declares {known}); a test cell names its "
                                 "exercise by number, e.g. `# %% [test] 1.2`")
            if graded.number in tests:
                raise BuildError(f"{name}: Exercise {graded.number} has more than one test cell")
            cell = nbformat.v4.new_code_cell(test_source(graded, lines, first=not tests))
            cell.metadata["nbgrader"] = _nbgrader("test", graded.grade_id, _points(graded.points))
            cell.id = graded.grade_id
            tests.append(graded.number)
        elif kind in ("code", "demo", "setup", "solution"):
            cell = nbformat.v4.new_code_cell("\n".join(lines))
            grade_id = options.split()[0] if options else None
            if kind in ("setup", "solution"):
                if not grade_id:
                    raise BuildError(f"{name}: a [{kind}] cell needs a grade_id (cell {index})")
                cell.metadata["nbgrader"] = _nbgrader(kind, grade_id)
                cell.id = grade_id
                if kind == "solution":
                    answers[grade_id] = lines
            else:
                cell.id = f"code-{index:03d}"
            if kind == "demo":
                cell.metadata["tags"] = ["demo"]
        else:
            raise BuildError(f"{name}: unknown cell kind [{kind}]")
        if cell.id in ids:
            raise BuildError(f"{name}: duplicate cell id {cell.id}")
        ids.add(cell.id)
        nb.cells.append(cell)
    for number, graded in declared_exercises.items():
        if is_concept_check(graded):  # written by add_concept_checks below, not from the source
            continue
        if number not in tests:
            raise BuildError(f"{name}: {_module_of(name)} declares Exercise {number} ({graded.title}), but there "
                             f"is no `# %% [test] {number}` cell")
        if graded.answer_cell not in answers:
            raise BuildError(f"{name}: Exercise {number} ({graded.title}) has no answer cell "
                             f"`# %% [solution] {graded.answer_cell}`")
        if headings.count(number) != 1:
            raise BuildError(f"{name}: Exercise {number} ({graded.title}) needs exactly one heading "
                             f"`### Exercise {number} — ...`, found {headings.count(number)}")
        if is_data_answer(graded) and not shows_placeholder(answers[graded.answer_cell], graded.name):
            raise BuildError(f"{name}: the answer cell of Exercise {number} ({graded.title}) must show the "
                             f"variable students define above `### BEGIN SOLUTION`, with `...` for the answer, "
                             f"e.g. `{graded.name} = [...]  # your answer: ...`")
    # the check after the lesson first, then the pitfalls right before the summary: the pitfalls explain the
    # very misconceptions the check's wrong options come from, so they must not come before it
    add_concept_checks(nb, declared_exercises, name)
    insert_pitfalls(nb, source_path)  # the generated "Common pitfalls" section, right before the summary
    nbformat.validate(nb)
    return nb


# -- the concept checks before and after the lesson (encdec.checks.concepts): cells of the build's own ----------
def is_concept_check(graded):
    from encdec.checks.concepts import ConceptCheck
    return isinstance(graded, ConceptCheck)


def add_concept_checks(nb, declared_exercises, name):
    """Each concept check's cells (its questions, the answer cell, the test cell), written from its
    declaration: the check before the lesson right before §N.1, the one after it right before the
    summary (the pitfalls, inserted after it, then come between the two). A summary that shares its Markdown cell
    with the text before it gets a cell of its own."""
    for graded in declared_exercises.values():
        if not is_concept_check(graded):
            continue
        intro = nbformat.v4.new_markdown_cell(graded.markdown())
        answer = nbformat.v4.new_code_cell(graded.answer_source())
        test = nbformat.v4.new_code_cell(test_source(graded, [], first=False))
        intro.id, answer.id, test.id = f"md-{graded.name}", graded.answer_cell, graded.grade_id
        answer.metadata["nbgrader"] = _nbgrader("solution", graded.answer_cell)
        test.metadata["nbgrader"] = _nbgrader("test", graded.grade_id, _points(graded.points))
        at = _first_section(nb, graded, name) if graded.phase == "before" else _summary(nb, name)
        nb.cells[at:at] = [intro, answer, test]


def _first_section(nb, graded, name):
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown" and c.source.startswith(f"## {graded.lesson}.1 "):
            return i
    raise BuildError(f"{name}: no section `## {graded.lesson}.1 ...` to put Exercise {graded.number} before")


def _summary(nb, name):
    for i, c in enumerate(nb.cells):
        found = re.search(r"^## Summary\b", c.source, re.M) if c.cell_type == "markdown" else None
        if found and found.start() > 0:
            summary = nbformat.v4.new_markdown_cell(c.source[found.start():])
            summary.id, c.source = f"{c.id}-summary", c.source[:found.start()].rstrip()
            nb.cells.insert(i + 1, summary)
            return i + 1
        if found:
            return i
    raise BuildError(f"{name}: no `## Summary` section to put the concept check after the lesson before")


def insert_pitfalls(nb, source_path):
    """The "Common pitfalls" cell, generated from the catalog of mistakes (tools/pitfalls.py)."""
    tools = str(Path(__file__).resolve().parent)
    if tools not in sys.path:
        sys.path.insert(0, tools)
    import pitfalls
    try:
        pitfalls.insert(nb, source_path)
    except ValueError as exc:
        raise BuildError(str(exc)) from None


def target_of(source_path):
    slug = source_path.stem
    return ROOT / "solutions" / slug / f"{slug}.ipynb"


def render(nb):
    return nbformat.writes(nb) + "\n"


def main(argv):
    sources = sorted((ROOT / "authoring").glob("[0-9][0-9]_*.py"))
    only = [a for a in argv if not a.startswith("--")]
    if only:
        sources = [s for s in sources if any(s.stem.startswith(o) for o in only)]
    stale = []
    for src in sources:
        try:
            text = render(build(src))
        except BuildError as exc:
            print(f"error: authoring/{exc}", file=sys.stderr)
            return 2
        target = target_of(src)
        if "--check" in argv:
            if not target.exists() or target.read_text() != text:
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
                print(f"built {target.relative_to(ROOT)}")
    if stale:
        print("out of date with authoring/ (run `make notebooks`): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
