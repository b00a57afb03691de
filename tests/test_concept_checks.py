"""The concept checks before and after every lesson (encdec.checks.concepts): what the checker says
and records for answers all right, all wrong, not answered and partly answered; the check before the
lesson never shows an answer, the check after it explains every answer once all are answered; nothing
goes to stderr; 0 points unless autograder/concept_checks.toml says otherwise; and the cells the
build writes, where it writes them."""

import importlib.util
import re

import pytest

from encdec.checks import guard
from encdec.checks.concepts import concept_checks
from encdec.checks.record import collected
from encdec.concepts import config
from nbtools import COURSE, ROOT, SOLUTIONS, cell, checks_module, lessons, read

LESSONS = lessons()
_spec = importlib.util.spec_from_file_location("nbbuild", ROOT / "tools" / "nbbuild.py")
nbbuild = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nbbuild)


def by_lesson(**kwargs):
    return pytest.mark.parametrize("lesson", [pytest.param(name, marks=getattr(pytest.mark, f"lesson{name[:2]}"))
                                              for name in LESSONS], **kwargs)


def checks(lesson):
    return checks_module(lesson).CONCEPTS


def wrong(item):
    if item.options:
        return next(letter for letter in item.letters if letter != item.answer)
    return item.answer + 10 * item.tolerance + 1


def answers(check, how):
    """{number: answer}: every answer right, every answer wrong, or the first half answered right."""
    if how == "right":
        return dict(check.answer)
    if how == "wrong":
        return {n: wrong(item) for n, item in enumerate(check.items, start=1)}
    half = len(check.items) // 2
    return {n: (check.answer[n] if n <= half else ...) for n in range(1, len(check.items) + 1)}


def run(check, answer, capfd, points=None):
    """(score, printed text, record) of the check's own checker; nothing may reach stderr."""
    capfd.readouterr()
    with collected() as records:
        score = check.checker(answer) if points is None else check.checker(answer, points=points)
    out, err = capfd.readouterr()
    assert err == "", err
    return score, out, records[-1]


def flat(text):
    return " ".join(text.split())


def explained(check, text):
    """How many of the check's explanations the text shows."""
    return sum(flat(item.explanation) in flat(text) for item in check.items)


def items(record):
    return [(i["concept"], i["answered"], i["correct"]) for i in record["concepts"]["items"]]


# -- the check before the lesson ------------------------------------------------------------------------------------
@by_lesson()
@pytest.mark.parametrize("how", ["right", "wrong", "partly"])
def test_the_check_before_records_the_answers_and_never_shows_one(lesson, how, capfd):
    before, after = checks(lesson)
    score, text, rec = run(before, answers(before, how), capfd)
    N, half = len(before.items), len(before.items) // 2
    answered = N if how != "partly" else half
    assert score == 0 and rec["points"] == 0 and rec["status"] == "checked"
    assert f"{answered} of {N} questions answered." in text
    assert explained(before, text) == explained(after, text) == 0, text
    assert "the answer is" not in text and not re.search(r"\d+ of \d+ right", text) and "✓" not in text
    assert f"Exercise {after.number}" in text  # where the answers come back
    concepts = [item.concept for item in before.items]
    expected = {"right": [(c, True, True) for c in concepts], "wrong": [(c, True, False) for c in concepts],
                "partly": [(c, n <= half, n <= half) for n, c in enumerate(concepts, start=1)]}[how]
    assert items(rec) == expected
    assert rec["concepts"]["phase"] == "before" and rec["concepts"]["lesson"] == int(lesson[:2])
    assert [p["label"] for p in rec["parts"]] == [f"question {n} answered" for n in range(1, N + 1)]


# -- the check after the lesson -------------------------------------------------------------------------------------
@by_lesson()
@pytest.mark.parametrize("how", ["right", "wrong"])
def test_the_check_after_marks_and_explains_every_answer_once_all_are_answered(lesson, how, capfd):
    _, after = checks(lesson)
    score, text, rec = run(after, answers(after, how), capfd)
    N = len(after.items)
    assert score == 0 and rec["status"] == "checked"
    assert f"{N if how == 'right' else 0} of {N} right." in text
    assert explained(after, text) == N, text
    assert text.count("✓") == (N if how == "right" else 0) and text.count("the answer is") == (0 if how == "right" else N)
    assert items(rec) == [(item.concept, True, how == "right") for item in after.items]
    assert [p["passed"] for p in rec["parts"]] == [how == "right"] * N


@by_lesson()
def test_the_check_after_partly_answered_says_what_is_missing_and_explains_nothing(lesson, capfd):
    _, after = checks(lesson)
    answer = answers(after, "partly")
    answer[1] = wrong(after.items[0])
    score, text, rec = run(after, answer, capfd)
    half = len(after.items) // 2
    assert score == 0 and explained(after, text) == 0 and "the answer is" not in text
    assert f"{half} of {len(after.items)} questions answered." in text and "not answered yet" in text
    assert [p["label"] for p in rec["parts"]] == ["every question answered"]
    assert items(rec) == [(item.concept, n <= half, 1 < n <= half) for n, item in enumerate(after.items, start=1)]


@by_lesson()
@pytest.mark.parametrize("phase", [0, 1], ids=["before", "after"])
def test_an_unanswered_check_is_not_answered_yet_and_recorded_so(lesson, phase, capfd):
    check = checks(lesson)[phase]
    placeholder = {n: ... for n in range(1, len(check.items) + 1)}
    score, text, rec = run(check, placeholder, capfd)
    assert score == 0 and rec["status"] == "not implemented" and "not answered yet" in text
    assert f"`{check.name}`" in text and explained(check, text) == 0
    assert items(rec) == [(item.concept, False, False) for item in check.items]


def test_an_answer_that_cannot_be_read_counts_as_not_answered_and_says_why(capfd):
    before, after = checks(LESSONS[0])
    answer = dict(before.answer)
    choice = next(n for n, item in enumerate(before.items, start=1) if item.options)
    answer[choice] = "z"
    _, text, rec = run(before, answer, capfd)
    assert "'z' is not one of the letters" in text and rec["concepts"]["items"][choice - 1]["answered"] is False
    numeric = next(n for n, item in enumerate(after.items, start=1) if not item.options)
    answer = {**after.answer, numeric: "six"}
    _, text, rec = run(after, answer, capfd)
    assert "is not a number" in text and explained(after, text) == 0
    for bad, says in (([1, 2], "should be a dict"), ({0: "a"}, "not question numbers"), ({"1": "b"}, "not question numbers")):
        score, text, rec = run(before, bad, capfd)
        assert score == 0 and says in text and rec["status"] == "error"
        assert not any(i["answered"] for i in rec["concepts"]["items"])


def test_letters_and_numbers_are_read_leniently():
    before, after = checks(LESSONS[0])
    choice = next(item for item in before.items if item.options)
    for given in (choice.answer, choice.answer.upper(), f" ({choice.answer}) "):
        assert choice.is_right(choice.read(given)[0])
    number = next(item for item in after.items if not item.options)
    assert number.is_right(number.read(str(number.answer))[0])
    assert number.is_right(number.read(number.answer + number.tolerance)[0])
    assert not number.is_right(number.read(number.answer + number.tolerance + 0.01)[0])
    assert number.read(True)[0] is None


def test_the_check_after_compares_with_the_answers_before_the_lesson_in_the_notebook(capfd):
    module = checks_module(LESSONS[0])
    before, after = module.CONCEPTS
    ns = {"check_concepts_after": module.check_concepts_after,
          "concepts_before": {n: (before.answer[n] if n <= 2 else wrong(item))
                              for n, item in enumerate(before.items, start=1)},
          "concepts_after": dict(after.answer)}
    exec("score = check_concepts_after(points=0)", ns)
    assert f"Before the lesson (Exercise {before.number}): 2 of {len(before.items)}." in capfd.readouterr().out


def test_a_tampered_check_records_nothing_answered(monkeypatch, capfd):
    before, _ = checks(LESSONS[0])
    monkeypatch.setattr(guard, "violations", lambda: ["numpy.allclose"])
    _, text, rec = run(before, dict(before.answer), capfd)
    assert rec["status"] == "tampered" and "modified" in text
    assert not any(i["answered"] or i["correct"] for i in rec["concepts"]["items"])


# -- points ---------------------------------------------------------------------------------------------------------
@by_lesson()
def test_both_checks_are_worth_0_points_by_default(lesson):
    assert config.points(int(lesson[:2]), "before") == config.points(int(lesson[:2]), "after") == 0
    assert [c.points for c in checks(lesson)] == [0, 0]
    for nb in (read(SOLUTIONS / lesson / f"{lesson}.ipynb"), read(COURSE / lesson / f"{lesson}.ipynb")):
        for check in checks(lesson):
            test = cell(nb, check.grade_id)
            assert test.metadata.nbgrader.points == 0 and f"{check.checker.__name__}(points=0)" in test.source


def test_the_configured_points_are_the_declarations_and_the_checkers(tmp_path, capfd):
    path = tmp_path / "concept_checks.toml"
    path.write_text("before = 1\nafter = 2\n[lesson.05]\nafter = 3\n")
    assert (config.points(1, "before", path), config.points(1, "after", path), config.points(5, "after", path)) == (1, 2, 3)
    module = checks_module("05_block_ordering")
    before, after = concept_checks(5, [*module.EXERCISES, *module.ORDERINGS], config=path)
    assert (before.points, after.points) == (1, 3)
    half = answers(before, "partly")
    score, _, rec = run(before, half, capfd)  # before the lesson: points for answering, right or wrong
    assert score == pytest.approx(len(before.items) // 2 / len(before.items), abs=0.01) and rec["points"] == 1
    two_right = {n: (after.answer[n] if n <= 2 else wrong(item)) for n, item in enumerate(after.items, start=1)}
    score, _, rec = run(after, two_right, capfd)
    assert score == pytest.approx(3 * 2 / len(after.items), abs=0.01) and rec["points"] == 3
    assert "earned by answering every question" in before.markdown() and "share of the 3 points" in after.markdown()


@pytest.mark.parametrize("text, says", [
    ("before = -1\n", "must be a number >= 0"), ("after = true\n", "must be a number >= 0"),
    ("durign = 2\n", "unknown settings"), ("[lesson.05]\nbonus = 1\n", "may set only before and after"),
    ("before = \n", "not valid TOML")])
def test_a_wrong_configuration_is_refused_with_the_file_named(tmp_path, text, says):
    path = tmp_path / "concept_checks.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(says)) as error:
        config.points(5, "before", path) if "before" in text or "bonus" in text else config.points(5, "after", path)
    assert str(path) in str(error.value)


def test_the_build_writes_the_configured_points(tmp_path, monkeypatch):
    path = tmp_path / "concept_checks.toml"
    path.write_text("before = 1\nafter = 2\n")
    module = checks_module("05_block_ordering")
    made = concept_checks(5, [*module.EXERCISES, *module.ORDERINGS], config=path)
    monkeypatch.setattr(module, "CONCEPTS", made)
    monkeypatch.setattr(module, "check_concepts_before", made[0].checker)
    monkeypatch.setattr(module, "check_concepts_after", made[1].checker)
    nb = nbbuild.build(ROOT / "authoring" / "05_block_ordering.py")
    for check, points, heading in zip(made, (1, 2), ("(1 point)", "(2 points)")):
        test = cell(nb, check.grade_id)
        assert test.metadata.nbgrader.points == points and f"check_concepts_{check.phase}(points={points})" in test.source
        intro = next(c for c in nb.cells if c.id == f"md-{check.name}")
        assert f"### Exercise {check.number} — {check.title} {heading}" in intro.source


# -- the cells the build writes -------------------------------------------------------------------------------------
@by_lesson()
def test_the_check_before_opens_the_lesson_and_the_check_after_closes_it(lesson):
    nb = read(SOLUTIONS / lesson / f"{lesson}.ipynb")
    before, after = checks(lesson)
    ids = [c.id for c in nb.cells]
    start = ids.index(f"md-{before.name}")
    assert ids[start:start + 3] == [f"md-{before.name}", before.answer_cell, before.grade_id]
    assert "setup" in ids[:start] and nb.cells[start + 3].source.startswith(f"## {int(lesson[:2])}.1 ")
    end = ids.index(f"md-{after.name}")
    assert ids[end:end + 3] == [f"md-{after.name}", after.answer_cell, after.grade_id]
    pitfalls = [i for i, c in enumerate(nb.cells) if "pitfalls" in c.metadata.get("tags", [])]
    # the pitfalls explain the misconceptions the check's wrong options come from: they come after it
    assert pitfalls == [end + 3] and nb.cells[end + 4].source.startswith("## Summary")
    graded = [c.metadata.nbgrader.grade_id for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert graded[0] == before.grade_id and graded[-1] == after.grade_id  # every exercise lies between them
    for check, where in ((before, start), (after, end)):
        text = nb.cells[where].source
        assert f"### Exercise {check.number} — {check.title} (0 points)" in text
        assert all(item.prompt in text for item in check.items)


@by_lesson()
def test_the_release_shows_the_variable_and_no_answer(lesson):
    nb = read(COURSE / lesson / f"{lesson}.ipynb")
    for check in checks(lesson):
        stub = cell(nb, check.answer_cell).source
        first = stub.splitlines()[0]
        assert first.startswith(f"{check.name} = {{1: ..., 2: ...") and "# your answers" in first
        assert stub.endswith("raise NotImplementedError()") and "BEGIN SOLUTION" not in stub
        assert check.answer_source().splitlines()[2] not in stub  # the solution's line
