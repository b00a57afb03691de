"""Every lesson shows before it tells: it opens with the course map, its diagrams are there with alt
text, and it asks at least three self-check questions before the cells that answer them."""

import re

import pytest

from nbtools import SOLUTIONS, lessons, read

LESSONS = lessons()
IMAGE = re.compile(r"!\[([^\]]*)\]\(\.\./figures/([\w-]+\.svg)\)")
SELF_CHECK = re.compile(r"^\*\*Self-check (\d+)\.(\d+) — (predict, then run|explain why)\.\*\*(.*)", re.S)
ANSWER = re.compile(r"\n\n<details><summary>Answer</summary>\n\n(.+?)\n\n</details>\s*$", re.S)


def lesson_mark(lesson):
    return getattr(pytest.mark, f"lesson{lesson[:2]}")


def by_lesson(**kwargs):
    return pytest.mark.parametrize("lesson", [pytest.param(name, marks=lesson_mark(name)) for name in LESSONS], **kwargs)


def cells(lesson):
    return read(SOLUTIONS / lesson / f"{lesson}.ipynb").cells


def self_checks(lesson):
    """(index, number, kind, question, answer) of every self-check cell."""
    found = []
    for i, c in enumerate(cells(lesson)):
        m = SELF_CHECK.match(c.source) if c.cell_type == "markdown" else None
        if m:
            answer = ANSWER.search(m.group(4))
            question = m.group(4)[:answer.start()] if answer else m.group(4)
            found.append((i, f"{m.group(1)}.{m.group(2)}", m.group(3), question.strip(),
                          answer.group(1).strip() if answer else ""))
    return found


@by_lesson()
def test_lesson_opens_with_its_course_map(lesson):
    first = cells(lesson)[0]
    images = IMAGE.findall(first.source)
    assert (images and images[0][1] == f"course_map_{lesson[:2]}.svg"), \
        f"{lesson}: the first cell must show ../figures/course_map_{lesson[:2]}.svg"
    assert len(images[0][0].split()) >= 10, "the course map needs alt text that says what it shows"


@by_lesson()
def test_every_figure_a_lesson_shows_exists_and_has_alt_text(lesson):
    for c in cells(lesson):
        for alt, name in IMAGE.findall(c.source) if c.cell_type == "markdown" else ():
            assert (SOLUTIONS / "figures" / name).exists(), f"{lesson} shows figures/{name}, which is not drawn"
            assert len(alt.split()) >= 8, f"{lesson}: figures/{name} needs alt text that says what it shows"
        assert "](figures/" not in c.source and "](./figures/" not in c.source, "figures live in ../figures/"


@by_lesson()
def test_at_least_three_self_checks_of_both_kinds(lesson):
    found = self_checks(lesson)
    assert len(found) >= 3, f"{lesson} has {len(found)} self-check questions; at least three"
    kinds = {kind for _, _, kind, _, _ in found}
    assert kinds == {"predict, then run", "explain why"}, f"{lesson}: self-checks of both kinds, found {kinds}"
    numbers = [number for _, number, _, _, _ in found]
    assert numbers == [f"{int(lesson[:2])}.{k}" for k in range(1, len(found) + 1)], \
        f"{lesson}: self-checks numbered {numbers}; number them {int(lesson[:2])}.1, {int(lesson[:2])}.2, ..."


@by_lesson()
def test_self_check_answers_are_folded_away_after_the_question(lesson):
    for _, number, _, question, answer in self_checks(lesson):
        assert len(question.split()) >= 6, f"self-check {number}: the question is missing"
        assert "<details>" not in question, f"self-check {number}: the question must come before <details>"
        assert len(answer.split()) >= 10, \
            f"self-check {number}: the answer goes in <details><summary>Answer</summary> … </details>, with a why"


@by_lesson()
def test_predict_questions_come_right_before_the_cell_that_answers_them(lesson):
    nb_cells = cells(lesson)
    for i, number, kind, _, _ in self_checks(lesson):
        if kind == "predict, then run":
            assert i + 1 < len(nb_cells) and nb_cells[i + 1].cell_type == "code", \
                f"self-check {number} asks for a prediction: put it right before the code cell that answers it"
