"""Mutation proof of the whole course: for every graded exercise of every lesson, three wrong
implementations lose that exercise's points through real nbgrader, and a correct alternative
gets full marks."""

import pytest

from grading_class import LESSONS, grade_id_of
from nbtools import cell_score, checks_module, solution
from test_grading_e2e import check_row

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]


def test_every_mutant_is_caught_and_every_alternative_accepted(graded_class):
    rows, summary = graded_class["rows"], []
    exercises = mutants = caught = accepted = 0
    for lesson in LESSONS:
        sol = solution(lesson)
        for ex in checks_module(lesson).EXERCISES:
            exercises += 1
            test_id = grade_id_of(sol, ex)
            for k in (1, 2, 3):
                mutants += 1
                if cell_score(rows[(f"mutant-{k}", lesson)], lesson, test_id) < ex.points:
                    caught += 1
                else:
                    summary.append(f"NOT CAUGHT {lesson} {ex.number} {graded_class['mutants'][(f'mutant-{k}', lesson)][ex.number]}")
            if cell_score(rows[("alternative", lesson)], lesson, test_id) == ex.points:
                accepted += 1
            else:
                summary.append(f"REJECTED alternative {lesson} {ex.number}")
    print(f"\nmutation proof: {exercises} exercises, {mutants} mutants, {caught} caught, "
          f"{accepted} of {exercises} alternatives accepted")
    assert caught == mutants and accepted == exercises, "\n".join(summary)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_mutants_lose_exactly_the_checkers_score(graded_class, k):
    for lesson in LESSONS:
        check_row(graded_class, f"mutant-{k}", lesson)


def test_alternatives_get_full_marks(graded_class):
    for lesson in LESSONS:
        check_row(graded_class, "alternative", lesson)
