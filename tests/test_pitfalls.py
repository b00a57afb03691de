"""The "Common pitfalls" section (tools/pitfalls.py): in every lesson, solutions and release, after the
exercises and before the summary; in step with the catalog; each item a catalog entry its checker
rejects, with the symptom shown; and nothing in it that the released lesson keeps for grading."""

import contextlib
import html
import importlib.util
import io
import json
import re

import numpy as np
import pytest

from nbtools import COURSE, ROOT, SOLUTIONS, checks_module, lessons, read

_spec = importlib.util.spec_from_file_location("pitfalls", ROOT / "tools" / "pitfalls.py")
pitfalls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pitfalls)

LESSONS = lessons()
MIN_LINE = 25  # as tests/test_site.py: shorter lines are not distinctive enough to look for
ITEM = re.compile(r"\*\*\d+\.\*\* In `(?P<where>[^`]+)`:\n\n```diff\n(?P<lines>.*?)\n```\n\n"
                  r"\*What the test shows:\* (?P<shows>.*?)\n\n"
                  r"\*Why:\* (?P<why>.*?)(?=\n\n\*\*\d+\.|\n\n</details>)", re.S)
BLOCK = re.compile(r"<details><summary>Exercise (?P<number>\d+\.\d+) — <code>[^<]+</code></summary>\n(?P<body>.*?)"
                   r"\n</details>", re.S)


def tagged(nb):
    return [c for c in nb.cells if "pitfalls" in c.get("metadata", {}).get("tags", [])]


def items(source):
    """{exercise number: [item match]} of a section."""
    return {b["number"]: list(ITEM.finditer(b["body"].rstrip() + "\n\n</details>")) for b in BLOCK.finditer(source)}


def collapsed(text):
    return " ".join(text.split())


def plain(markdown):
    """Text the section escaped for Markdown, as the checker wrote it."""
    return html.unescape(re.sub(r"\\(.)", r"\1", markdown))


def released_text(nb):
    """Everything the released notebook says outside its pitfalls, cell by cell, whitespace collapsed."""
    return "\n".join(collapsed(c.source) for c in nb.cells if not tagged_cell(c))


def tagged_cell(c):
    return "pitfalls" in c.get("metadata", {}).get("tags", [])


def secret_lines(lesson_nb, released):
    """The distinctive lines of a notebook's solutions and hidden tests that its release does not show
    (tests/test_site.py's rule, with the pitfalls themselves left out of what counts as shown)."""
    found = set()
    for cell in lesson_nb.cells:
        for region in pitfalls.regions(cell.source)[1]:
            found |= {collapsed(line) for line in region if len(collapsed(line)) >= MIN_LINE}
    return {line for line in found if line not in released}


ALL_SECRETS = None


def every_secret(released):
    """The secret lines of every lesson's solutions (a section could quote another lesson's)."""
    global ALL_SECRETS
    if ALL_SECRETS is None:
        ALL_SECRETS = set().union(*(secret_lines(read(SOLUTIONS / n / f"{n}.ipynb"), "") for n in lessons(every=True)))
    return {line for line in ALL_SECRETS if line not in released}


def summary_index(nb):
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("## Summary"))


# -- where it is --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("where", ["solutions", "course"])
def test_the_section_is_after_the_exercises_and_before_the_summary(lesson, where):
    nb = read((SOLUTIONS if where == "solutions" else COURSE) / lesson / f"{lesson}.ipynb")
    cells = tagged(nb)
    assert len(cells) == 1, f"{where}/{lesson}: {len(cells)} pitfalls cells"
    cell = cells[0]
    at = nb.cells.index(cell)
    assert cell.cell_type == "markdown" and cell.source.startswith(pitfalls.HEADING + "\n")
    assert "nbgrader" not in cell.metadata, "an ordinary Markdown cell: nbgrader neither grades nor locks it"
    module = checks_module(lesson)
    test_ids = {g.grade_id for g in [*module.EXERCISES, *getattr(module, "ORDERINGS", [])]}
    tests = [i for i, c in enumerate(nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") in test_ids
             and c.metadata["nbgrader"].get("grade")]
    assert len(tests) == len(test_ids) and max(tests) < at < summary_index(nb), \
        f"{where}/{lesson}: the pitfalls (cell {at}) go after the last exercise's test cell ({max(tests)}) " \
        f"and before the summary ({summary_index(nb)})"
    assert "after the exercises on purpose" in cell.source
    assert "a real wrong answer that the tests recognise" in cell.source


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_release_has_the_same_section(lesson):
    solution = tagged(read(SOLUTIONS / lesson / f"{lesson}.ipynb"))[0]
    released = tagged(read(COURSE / lesson / f"{lesson}.ipynb"))[0]
    assert released.source == solution.source and released.metadata == solution.metadata


# -- in step with the catalog -------------------------------------------------------------------------------
_build_spec = importlib.util.spec_from_file_location("nbbuild", ROOT / "tools" / "nbbuild.py")
nbbuild = importlib.util.module_from_spec(_build_spec)
_build_spec.loader.exec_module(nbbuild)


def committed_and_built(lesson):
    """(the committed section, the section the build makes now from authoring/ and the catalog)."""
    committed = tagged(read(SOLUTIONS / lesson / f"{lesson}.ipynb"))[0].source
    return committed, tagged(nbbuild.build(ROOT / "authoring" / f"{lesson}.py"))[0].source


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_section_is_what_the_catalog_gives_now(lesson):
    committed, now = committed_and_built(lesson)
    assert committed == now, f"{lesson}: the pitfalls differ from the catalog's: run `make notebooks release`"
    # every coded exercise that has something to show is there, with at most PER_EXERCISE items
    found = items(committed)
    assert found and all(1 <= len(v) <= pitfalls.PER_EXERCISE for v in found.values())
    assert set(found) <= {ex.number for ex in checks_module(lesson).EXERCISES}


def test_a_changed_diagnosis_shows_in_the_section(monkeypatch):
    from encdec.mistakes import CATALOG
    lesson = LESSONS[0]
    committed = tagged(read(SOLUTIONS / lesson / f"{lesson}.ipynb"))[0].source
    shown = next(m for ex in checks_module(lesson).EXERCISES for m in CATALOG[ex.name]
                 if f"*Why:* {pitfalls.prose(m.diagnosis)}" in committed)
    monkeypatch.setattr(shown, "diagnosis", "a diagnosis rewritten since the notebooks were built.")
    _, now = committed_and_built(lesson)
    assert now != committed and "*Why:* a diagnosis rewritten since the notebooks were built." in now


# -- each item: a catalog entry its checker rejects, with the symptom shown ---------------------------------
def first_failure_line(exercise, impl):
    from encdec.checks.record import collected
    np.random.seed(0)
    with collected() as records, contextlib.redirect_stdout(io.StringIO()):
        score = exercise.checker(exercise.answer_from(impl), points=exercise.points, hidden=False)
    messages = [p["message"] for p in records[-1]["parts"] if not p["passed"]] + [records[-1]["message"]]
    return float(score), next(m for m in messages if m).split("\n")[0]


KINDS = [("NaN", "got nan"), ("wrong values", "values differ"), ("a shape error", "shape: expected"),
         ("an error, ", "your code raised ")]


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_item_is_a_catalog_entry_the_visible_test_rejects_as_shown(lesson):
    from encdec.mistakes import CATALOG
    nb = read(SOLUTIONS / lesson / f"{lesson}.ipynb")
    about = pitfalls.Lesson(nb)
    by_number = {ex.number: ex for ex in checks_module(lesson).EXERCISES}
    for number, found in items(tagged(nb)[0].source).items():
        exercise = by_number[number]
        for item in found:
            entry = [m for m in CATALOG[exercise.name] if pitfalls.prose(m.diagnosis) == item["why"]]
            assert len(entry) == 1, f"{number}: no catalog entry of {exercise.name} says {item['why'][:80]!r}"
            code = {collapsed(ln) for ln in pitfalls.function_lines(entry[0].impl, about.words)}
            for line in item["lines"].split("\n"):
                assert line[:2] in ("+ ", "- "), line
                if line.startswith("+ "):
                    assert collapsed(line[2:]) in code, f"{number} {entry[0].key}: {line!r} is not the entry's code"
            score, message = first_failure_line(exercise, entry[0].impl)
            assert score < exercise.points, f"{number} {entry[0].key} keeps its points on the visible cases"
            shows = item["shows"]
            kind = next(((k, raw) for k, raw in KINDS if shows.startswith(k)), None)
            assert kind is None or kind[1] in message, \
                f"{number} {entry[0].key}: shows {shows!r}, the test says {message!r}"
            case = re.search(r"\(case: (.*)\)\.?$", shows)
            assert case is None or message.startswith("[" + plain(case[1]) + "]"), (shows, message)
            if kind is None:  # shown as the test words it
                assert collapsed(plain(shows)).rstrip(".")[:60] in collapsed(message), (shows, message)


# -- nothing given away -------------------------------------------------------------------------------------
def leaks(section, released, secrets):
    """The code lines of a section that are neither an entry's `+` line nor already in the release, and
    the secret lines anywhere in it."""
    bad = []
    for block in re.findall(r"```diff\n(.*?)\n```", section, re.S):
        for line in block.split("\n"):
            if line.startswith("- ") and collapsed(line[2:]) not in released:
                bad.append(f"a right line the release does not show: {line}")
            elif line.startswith("+ ") and any(s in collapsed(line[2:]) for s in secrets):
                bad.append(f"a slip line that holds a solution line: {line}")
            elif not line.startswith(("- ", "+ ")):
                bad.append(f"a code line that is neither: {line}")
    text = collapsed(plain(section))
    return bad + [f"a solution line: {s}" for s in secrets if s in text]


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_section_gives_nothing_away_that_the_release_keeps(lesson):
    """Every code line of the section is an entry's slip (checked above to be its code, and here to hold
    no solution line) or already in the released notebook's other cells; no solution line of any lesson
    appears anywhere in it, the explanations included."""
    course = read(COURSE / lesson / f"{lesson}.ipynb")
    released = released_text(course)
    assert "BEGIN SOLUTION" not in released and "raise NotImplementedError()" in released  # the release, stubbed
    secrets = secret_lines(read(SOLUTIONS / lesson / f"{lesson}.ipynb"), released) | every_secret(released)
    assert secrets, "the solutions' lines were not found: the check would check nothing"
    assert leaks(tagged(course)[0].source, released, secrets) == []


def test_the_leak_check_finds_a_solution_line(tmp_path):
    """The check itself: a right line the release does not show, and a solution line in the prose, are found."""
    lesson = LESSONS[0]
    course = read(COURSE / lesson / f"{lesson}.ipynb")
    released = released_text(course)
    secrets = secret_lines(read(SOLUTIONS / lesson / f"{lesson}.ipynb"), released)
    line = sorted(secrets)[0]
    section = f"## Common pitfalls\n\n```diff\n- {line}\n+ x = 1\n```\n\n*Why:* use {line} instead."
    found = leaks(section, released, secrets)
    assert any("right line" in f for f in found) and any(f"a solution line: {line}" == f for f in found)
    visible = next(ln for c in course.cells if c.cell_type == "code" and not tagged_cell(c)
                   for ln in c.source.splitlines() if len(ln.strip()) > 10)
    assert leaks(f"```diff\n- {visible.strip()}\n```", released, secrets) == []


def test_the_course_notebooks_are_json_with_the_cell_tagged():
    """Tools find the section by its tag in the committed JSON, whatever its position."""
    for lesson in LESSONS:
        data = json.loads((COURSE / lesson / f"{lesson}.ipynb").read_text())
        assert sum("pitfalls" in c.get("metadata", {}).get("tags", []) for c in data["cells"]) == 1
