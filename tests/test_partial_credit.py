"""One partial-credit rule (encdec.checks.core.Checker.worth and earned; AUTHORING.md, "How points are
given"), proven on every catalog mistake of every exercise, graded with the hidden cases:

- each part's worth is the exercise's points times its weight over the sum of the weights, the parts'
  worths add up to the points, and the score is the worth of the parts earned;
- a mistake that fails every ordinary part earns nothing for passing a robust one (large, tiny or
  float32 inputs);
- no message calls a slip harmless, equivalent or fine while it loses points.
"""

import contextlib
import importlib
import io
import math
import re

import pytest

from encdec.checks.record import collected
from encdec.mistakes import CATALOG

HARMLESS = re.compile(r"just as well|harmless|equally (?:good|right|correct|valid)|also (?:right|correct|fine)|"
                      r"works (?:too|as well)|no harm|does(?:n't| not) matter|makes no difference|"
                      r"is (?:a )?fine\b|perfectly (?:fine|valid)|acceptable|equivalent", re.IGNORECASE)


def lesson_modules():
    return [importlib.import_module(f"encdec.checks.lesson{k:02d}") for k in range(1, 11)]


MISTAKES = [pytest.param(ex, mk, marks=getattr(pytest.mark, m.__name__.rsplit(".", 1)[1]), id=f"{ex.number}-{mk.key}")
            for m in lesson_modules() for ex in m.EXERCISES for mk in CATALOG[ex.name]]


def graded(exercise, impl):
    with collected() as records, contextlib.redirect_stdout(io.StringIO()) as out:
        score = exercise.checker(exercise.answer_from(impl), points=exercise.points, hidden=True)
    return float(score), records[-1], out.getvalue()


@pytest.mark.parametrize("exercise,mistake", MISTAKES)
def test_points_follow_the_rule_and_the_message(exercise, mistake):
    score, record, text = graded(exercise, mistake.impl)
    parts = record["parts"]
    if record["status"] == "checked" and parts:
        total = sum(p["weight"] for p in parts)
        for p in parts:
            assert math.isclose(p["worth"], round(exercise.points * p["weight"] / total, 4))
        assert math.isclose(sum(p["worth"] for p in parts), exercise.points, abs_tol=1e-3)
        earned = exercise.points * sum(p["weight"] for p in parts if p["earned"]) / total
        assert score == math.floor(earned * 100 + 1e-6) / 100, text
        for p in parts:  # earned means passed, and a robust part waits for the ordinary ones
            ordinary = all(q["passed"] for q in parts if q.get("values", True) and not q["robust"])
            plain = p.get("values", True) and not p["robust"]
            assert p["earned"] == (p["passed"] and (plain or ordinary)), text
        if not any(p["passed"] for p in parts if p.get("values", True) and not p["robust"]):
            assert score == 0.0, f"{mistake.key} fails every ordinary part and keeps {score}:\n{text}"
    if score < exercise.points:
        said = [mistake.diagnosis] + [m["diagnosis"] for m in record["misconceptions"]]
        calm = [d for d in said if HARMLESS.search(d)]
        assert not calm, f"{mistake.key} loses {exercise.points - score} points, and its message says: {calm[0]}"


def test_the_harmless_words_are_found():
    for text in ("With ordinary scores it hides them just as well", "It is a fine activation", "an equivalent form"):
        assert HARMLESS.search(text)
    assert not HARMLESS.search("the scores are not divided by sqrt(d_k)")
