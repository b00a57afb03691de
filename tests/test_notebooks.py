"""The notebooks: built from their sources, released by nbgrader, stripped, and runnable."""

import re
import subprocess
import sys
import time

import nbformat
import pytest
from nbclient import NotebookClient

from nbtools import COURSE, ROOT, SOLUTIONS, checks_module, lessons, read, solution, graded_cells

LESSONS = lessons()


def test_there_are_lessons():
    assert "01_attention" in LESSONS


def test_solutions_are_built_from_authoring_sources():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "nbbuild.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_figures_are_drawn_by_the_plotting_module():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "figures.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr



def test_committed_course_equals_a_fresh_release(tmp_path):
    """course/ is exactly what `make release` generates from solutions/."""
    from autograder.nbgrader_glue import api_for, scratch_config
    api = api_for(scratch_config(tmp_path, tmp_path / "release"))
    for lesson in LESSONS:
        result = api.generate_assignment(lesson, force=True, create=True)
        assert result["success"], result.get("error")
        fresh = (tmp_path / "release" / lesson / f"{lesson}.ipynb").read_text()
        committed = (COURSE / lesson / f"{lesson}.ipynb").read_text()
        assert fresh == committed, f"course/{lesson} is stale: run `make release`"
    for page in SOLUTIONS.glob("*.md"):
        assert (COURSE / page.name).read_text() == page.read_text(), f"course/{page.name} is stale: run `make release`"
    figures = {p.name: p.read_bytes() for p in (SOLUTIONS / "figures").glob("*.svg")}
    assert figures and figures == {p.name: p.read_bytes() for p in (COURSE / "figures").glob("*.svg")}, \
        "course/figures differs from solutions/figures: run `make release`"
    released = sorted(p.name for p in COURSE.iterdir() if p.is_dir() and p.name != "figures")
    assert released == lessons(every=True), "course/ holds a lesson that solutions/ does not (or misses one)"


@pytest.mark.parametrize("folder", [SOLUTIONS, COURSE], ids=["solutions", "course"])
@pytest.mark.parametrize("lesson", LESSONS)
def test_notebooks_are_committed_without_outputs(folder, lesson):
    nb = read(folder / lesson / f"{lesson}.ipynb")
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None, f"{folder.name}/{lesson}: a cell has outputs"


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_has_stubs_and_no_solutions_or_hidden_tests(lesson):
    text = (COURSE / lesson / f"{lesson}.ipynb").read_text()
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "raise NotImplementedError()" in text


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_structure(lesson):
    """Learning goals, a summary, a pointer onward, >= 3 graded exercises, points that agree."""
    nb = solution(lesson)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert re.search(r"learning goals", markdown, re.I), "no learning goals"
    assert re.search(r"^#+ .*summary", markdown, re.I | re.M), "no summary section"
    if not lesson.startswith("10"):
        assert re.search(r"next", markdown, re.I), "no pointer to the next lesson"
    tests = graded_cells(nb)
    module = checks_module(lesson)
    assert len(module.EXERCISES) >= 3
    graded_names = {c.metadata.nbgrader.grade_id for c in tests}
    for c in tests:
        points = c.metadata.nbgrader.points
        m = re.search(r"points=([\d.]+)", c.source)
        assert m and float(m.group(1)) == float(points), f"{c.metadata.nbgrader.grade_id}: call and cell disagree on points"
        assert re.search(rf"\({points:g} points?\)", c.source), f"{c.metadata.nbgrader.grade_id}: the comment must state the points"
    for ex in module.EXERCISES:
        assert any(ex.name in c.source or ex.answer_cell in c.source for c in tests), f"no test cell for {ex.name}"
        assert ex.answer_cell in {c.metadata.nbgrader.grade_id for c in nb.cells if "nbgrader" in c.metadata}
    assert graded_names


@pytest.mark.parametrize("lesson", LESSONS)
def test_ordering_prompts_appear_verbatim(lesson):
    nb = solution(lesson)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for ordering in getattr(checks_module(lesson), "ORDERINGS", []):
        assert ordering.prompt() in markdown, f"the notebook's list for Exercise {ordering.exercise} differs from its checker"
        assert ordering.shown != sorted(ordering.shown), "the steps must be shown shuffled"


def execute(nb, cwd, timeout=120):
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_notebook_runs_clean_with_full_marks(lesson):
    """Every cell runs without error, nothing reaches stderr in a test cell, every test gives full points."""
    nb = solution(lesson)
    execute(nb, SOLUTIONS / lesson)
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        errors = [o for o in c.outputs if o.output_type == "error"]
        assert not errors, f"cell {c.id} raised {errors[0].ename}: {errors[0].evalue}"
    for c in graded_cells(nb):
        meta = c.metadata.nbgrader
        assert not [o for o in c.outputs if o.output_type == "stream" and o.name == "stderr"], f"{meta.grade_id} wrote to stderr"
        results = [o for o in c.outputs if o.output_type == "execute_result"]
        assert results, f"{meta.grade_id} returned no score"
        assert float(results[0].data["text/plain"]) == float(meta.points), "".join(
            o.get("text", "") for o in c.outputs)
