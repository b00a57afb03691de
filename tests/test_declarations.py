"""Each exercise is declared once, beside its checker, and the notebook, the checker and the release
agree with the declaration: the test cell's id and points (nbgrader metadata, comment, call), the
points in the exercise's heading, one test cell and one answer cell per declared exercise, no test
cell that is not declared, and the checker's default points. A source that disagrees does not build."""

import importlib.util
import re
from pathlib import Path

import pytest

from encdec.checks.exercises import Exercise, Graded, declared, points_text
from encdec.checks.record import collected
from nbtools import COURSE, ROOT, SOLUTIONS, checks_module, lessons, read

_spec = importlib.util.spec_from_file_location("nbbuild", ROOT / "tools" / "nbbuild.py")
nbbuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbbuild)

LESSONS = lessons()


def lesson_param(lesson, *more):
    return pytest.param(lesson, *more, marks=getattr(pytest.mark, f"lesson{lesson[:2]}"), id=lesson)


def cells_with(nb, **meta):
    return [c for c in nb.cells if all(c.get("metadata", {}).get("nbgrader", {}).get(k) == v for k, v in meta.items())]


def headings(nb, number):
    return [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
            if re.match(rf"#+ Exercise {re.escape(number)} ", line)]


def agreement_problems(nb, graded_list):
    """What in notebook `nb` disagrees with the declarations (empty when everything agrees)."""
    problems = []
    declared_tests = {g.grade_id for g in graded_list}
    for c in cells_with(nb, grade=True):
        if c.metadata.nbgrader.grade_id not in declared_tests:
            problems.append(f"test cell {c.metadata.nbgrader.grade_id} is not declared")
    for g in graded_list:
        tests = cells_with(nb, grade=True, grade_id=g.grade_id)
        answers = cells_with(nb, solution=True, grade_id=g.answer_cell)
        if len(tests) != 1 or len(answers) != 1:
            problems.append(f"{g.number}: {len(tests)} test cells {g.grade_id}, "
                            f"{len(answers)} answer cells {g.answer_cell}")
            continue
        source, points = tests[0].source, tests[0].metadata.nbgrader.points
        if points != g.points:
            problems.append(f"{g.number}: nbgrader points {points}, declared {g.points}")
        if not re.match(rf"# Tests for Exercise {re.escape(g.number)}\b.* \({points_text(g.points)}\)\.", source):
            problems.append(f"{g.number}: the comment does not state the declared points: {source.splitlines()[0]!r}")
        calls = re.findall(rf"^{g.checker.__name__}\(points=([\d.]+)", source, re.M)
        if [float(p) for p in calls] != [g.points]:
            problems.append(f"{g.number}: the call passes points={calls}, declared {g.points}")
        found = headings(nb, g.number)
        if len(found) != 1 or not found[0].endswith(f" ({points_text(g.points)})"):
            problems.append(f"{g.number}: headings {found} do not end with ({points_text(g.points)})")
    return problems


@pytest.mark.parametrize("lesson", [lesson_param(lesson) for lesson in LESSONS])
def test_every_graded_exercise_is_declared_once_and_the_build_agrees(lesson):
    graded_list = declared(checks_module(lesson))
    assert graded_list, f"lesson {lesson} declares no exercise"
    assert agreement_problems(read(SOLUTIONS / lesson / f"{lesson}.ipynb"), graded_list) == []


@pytest.mark.parametrize("lesson", [lesson_param(lesson) for lesson in LESSONS])
def test_the_release_agrees_with_the_declarations(lesson):
    problems = agreement_problems(read(COURSE / lesson / f"{lesson}.ipynb"), declared(checks_module(lesson)))
    assert problems == [], "course/ disagrees with the declarations (run `make release`)"


@pytest.mark.parametrize("lesson", [lesson_param(lesson) for lesson in LESSONS])
def test_a_checker_called_without_points_uses_the_declared_points(lesson):
    for graded in declared(checks_module(lesson)):
        with collected() as records:
            score = graded.checker()  # nothing of that name here: "no answer", 0 of the declared points
        assert score == 0
        assert [(r["exercise"], r["title"], r["points"], r["status"]) for r in records] == \
            [(graded.number, graded.title, graded.points, "no answer")]


def test_the_agreement_check_sees_a_disagreement():
    """The check above can fail: a notebook whose metadata, call or heading has other points."""
    lesson = LESSONS[0]
    graded_list = declared(checks_module(lesson))
    first = graded_list[0]
    nb = read(SOLUTIONS / lesson / f"{lesson}.ipynb")
    cell = cells_with(nb, grade_id=first.grade_id)[0]
    cell.metadata.nbgrader.points = first.points + 1
    cell.source = cell.source.replace(f"points={first.points:g}", f"points={first.points + 1:g}")
    problems = agreement_problems(nb, graded_list)
    assert any("nbgrader points" in p for p in problems) and any("the call passes" in p for p in problems)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != graded_list[-1].grade_id]
    assert any(p.startswith(f"{graded_list[-1].number}: 0 test cells") for p in agreement_problems(nb, graded_list))


# -- the build refuses a source that disagrees with the declarations ------------------------------------
SOURCE = ROOT / "authoring" / "01_attention.py"


def build_edited(tmp_path, edit):
    path = tmp_path / SOURCE.name
    path.write_text(edit(SOURCE.read_text()))
    return nbbuild.build(path)


def test_the_unedited_source_builds_to_the_committed_notebook(tmp_path):
    nb = build_edited(tmp_path, lambda text: text)
    assert nbbuild.render(nb) == (SOLUTIONS / "01_attention" / "01_attention.ipynb").read_text()


EDITS = {  # id: (text replaced in the source, its replacement, what the build error says)
    "undeclared test": ("# %% [test] 1.3\n", "# %% [test] 1.99\n",
                        "names no exercise that encdec.checks.lesson01 declares"),
    "missing test": ("# %% [test] 1.3\n", "# %%\n",
                     "declares Exercise 1.3 (sinusoidal_positions), but there is no `# %% [test] 1.3` cell"),
    "old marker": ("# %% [test] 1.1\n", "# %% [test] test_softmax points=3\n",
                   "a test cell names its exercise by number"),
    "two tests": ("# %% [test] 1.2\n", "# %% [test] 1.1\n", "Exercise 1.1 has more than one test cell"),
    "stated points": ("`softmax(x, axis=-1)`\n", "`softmax(x, axis=-1)` (3 points)\n",
                      "the heading of Exercise 1.1 states its points"),
    "undeclared heading": ("# ### Exercise 1.3 —", "# ### Exercise 1.99 —",
                           "a heading names Exercise 1.99, which encdec.checks.lesson01 does not declare"),
    "no answer cell": ("# %% [solution] softmax\n", "# %% [solution] my_softmax\n",
                       "Exercise 1.1 (softmax) has no answer cell `# %% [solution] softmax`"),
}


@pytest.mark.parametrize("old, new, says", list(EDITS.values()), ids=list(EDITS))
def test_a_source_that_disagrees_with_the_declarations_does_not_build(tmp_path, old, new, says):
    assert old in SOURCE.read_text()
    with pytest.raises(nbbuild.BuildError, match=re.escape(says)) as error:
        build_edited(tmp_path, lambda text: text.replace(old, new))
    assert str(error.value).startswith("01_attention.py: ")


def test_an_incomplete_declaration_is_a_build_error_naming_lesson_and_exercise(tmp_path, monkeypatch):
    module = checks_module("01_attention")
    last = module.EXERCISES[-1]
    monkeypatch.setattr(module, "EXERCISES", module.EXERCISES[:-1])
    with pytest.raises(nbbuild.BuildError, match=re.escape(
            f"encdec.checks.lesson01: Exercise {last.number} ({last.title}) is declared but listed in none of")):
        build_edited(tmp_path, lambda text: text)
    monkeypatch.setattr(module, "EXERCISES", module.EXERCISES + [Exercise("2.1", "stray", 1)])
    with pytest.raises(nbbuild.BuildError, match=re.escape("lesson01: Exercise 2.1 is numbered for lesson 2")):
        build_edited(tmp_path, lambda text: text)


def test_the_build_command_reports_a_disagreement_and_fails(tmp_path, monkeypatch, capsys):
    authoring = tmp_path / "authoring"
    authoring.mkdir()
    (authoring / SOURCE.name).write_text(SOURCE.read_text().replace("# %% [test] 1.3\n", "# %% [test] 1.99\n"))
    monkeypatch.setattr(nbbuild, "ROOT", tmp_path)
    assert nbbuild.main(["--check"]) == 2
    assert "error: authoring/01_attention.py: cell" in capsys.readouterr().err


@pytest.mark.parametrize("number, points, says", [
    ("1", 3, "an exercise number is a string like '1.2'"),
    ("1.1", 0, "Exercise 1.1: points must be a positive number"),
    ("1.1", "3", "Exercise 1.1: points must be a positive number"),
])
def test_a_malformed_declaration_is_refused_where_it_is_written(number, points, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        Graded(number, "demo", "demo", points)


def test_a_declaration_names_its_cells_and_documents_its_checker():
    from encdec.checks import lesson02
    assert (lesson02.MULTI_HEAD_ATTENTION.title, lesson02.MULTI_HEAD_ATTENTION.answer_cell,
            lesson02.MULTI_HEAD_ATTENTION.grade_id) == ("MultiHeadAttention.__call__", "multi_head_attention",
                                                        "test_multi_head_attention")
    assert lesson02.check_rms_norm.__doc__.startswith("Exercise 2.1 (2 points): ")
    assert Path(lesson02.check_rms_norm.__code__.co_filename).name == "exercises.py"  # the guarded wrapper
