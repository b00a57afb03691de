"""Every checker, proven: each catalog mistake is rejected with its own diagnosis, every correct
variant gets full marks, and the reference itself is refused as delegation. Runs over all lessons."""

import contextlib
import importlib
import io
import pkgutil

import pytest

import encdec.checks
from encdec.mistakes import CATALOG


def lesson_modules():
    return [importlib.import_module(f"encdec.checks.{m.name}")
            for m in pkgutil.iter_modules(encdec.checks.__path__) if m.name.startswith("lesson")]


def variants(module):
    lesson = module.__name__.rsplit(".", 1)[1]
    try:
        return importlib.import_module(f"variants.{lesson}").ALTERNATIVES
    except ModuleNotFoundError:
        return {}


def lesson_mark(module):
    """pytest -m lesson05 selects lesson 05's proofs."""
    return getattr(pytest.mark, module.__name__.rsplit(".", 1)[1])


EXERCISES = [pytest.param(m, ex, marks=lesson_mark(m), id=f"{ex.number}-{ex.name}")
             for m in lesson_modules() for ex in m.EXERCISES]
ORDERINGS = [pytest.param(o, marks=lesson_mark(m), id=o.number)
             for m in lesson_modules() for o in getattr(m, "ORDERINGS", [])]
MISTAKES = [pytest.param(p.values[0], p.values[1], mk, marks=p.marks, id=f"{p.values[1].number}-{mk.key}")
            for p in EXERCISES for mk in CATALOG[p.values[1].name]]
ALTERNATIVES = [pytest.param(p.values[0], p.values[1], alt, marks=p.marks, id=f"{p.values[1].number}-{i}")
                for p in EXERCISES for i, alt in enumerate(variants(p.values[0]).get(p.values[1].name, []))]


def run(checker, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = checker(*args, **kwargs)
    return score, out.getvalue()


def ident(x):
    return getattr(x, "key", None) or getattr(x, "name", None) or getattr(x, "number", None) or getattr(x, "__name__", str(x))


@pytest.mark.parametrize("module,exercise", EXERCISES)
def test_every_exercise_has_at_least_three_catalogued_mistakes_and_one_alternative(module, exercise):
    assert len(CATALOG[exercise.name]) >= 3
    assert variants(module).get(exercise.name), f"no correct variant for {exercise.name} in tests/variants"


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("module,exercise,mistake", MISTAKES)
def test_mistake_is_rejected_with_its_own_diagnosis(module, exercise, mistake, hidden, capsys):
    score, text = run(exercise.checker, exercise.answer_from(mistake.impl), points=exercise.points, hidden=hidden)
    assert score < exercise.points, f"{mistake.key} earned full marks:\n{text}"
    assert mistake.diagnosis in text, f"{mistake.key} was not diagnosed as such:\n{text}"
    assert capsys.readouterr().err == "", "a checker must never write to stderr (nbgrader scores that 0)"


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("module,exercise,alt", ALTERNATIVES)
def test_correct_variant_gets_full_marks(module, exercise, alt, hidden, capsys):
    answer = exercise.answer_from(alt)
    if exercise.method is None:  # an alternative may call other exercises by their notebook names
        alt.__globals__.update({e.name: e.reference for e in (p.values[1] for p in EXERCISES)
                                if e.name != exercise.name and e.method is None})
    score, text = run(exercise.checker, answer, points=exercise.points, hidden=hidden)
    assert score == exercise.points, text
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("module,exercise", EXERCISES)
def test_calling_the_reference_is_refused(module, exercise):
    if exercise.method is None:
        reference = exercise.reference

        def answer(*args, **kwargs):
            return reference(*args, **kwargs)
    else:
        answer = exercise.answer_from(getattr(exercise.reference, exercise.method))
    score, text = run(exercise.checker, answer, points=exercise.points, hidden=False)
    assert score == 0, text
    assert "the very function this exercise asks you to write" in text


@pytest.mark.parametrize("ordering", ORDERINGS)
def test_ordering_accepts_the_right_order_and_names_each_swapped_pair(ordering):
    score, text = run(ordering.check, ordering.answer, points=1)
    assert score == 1, text
    right = ordering.answer
    for i in range(len(right) - 1):
        wrong = list(right)
        wrong[i], wrong[i + 1] = wrong[i + 1], wrong[i]
        score, text = run(ordering.check, wrong, points=1)
        assert score == 0
        assert f"step {wrong[i]} (" in text and f"before step {wrong[i + 1]} (" in text, text
    for bad, says in (([1] * len(right), "exactly once"), ("1 2 3", "should be a list"),
                      (right[:-1], f"it has {len(right) - 1} entries")):
        score, text = run(ordering.check, bad, points=1)
        assert score == 0 and says in text, text


def test_exercise_names_are_unique_across_the_course():
    """The catalog is keyed by the exercise's name, so two lessons must never share one."""
    names = [p.values[1].name for p in EXERCISES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
