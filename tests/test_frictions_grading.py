"""The frictions of issue 16 (item 4), through real nbgrader: a course copy is released by
`python -m autograder release --lesson 5`, and a self-learner's notebooks are graded by
`python -m autograder self --lesson 1,5` (what `make grade LESSON=1,5` runs).

Lesson 1: softmax wrong for large logits (partial credit, 1.5 of 3), scaled_dot_product_attention
renamed (missing from the notebook). Lesson 5: the release, untouched (block_order still `[...]`).
"""

import csv
import html
import subprocess
import sys

import nbformat
import pytest

from nbtools import cell, course_copy, release

pytestmark = [pytest.mark.nbgrader, pytest.mark.slow]
FIRST, FIFTH = "01_attention", "05_block_ordering"
WRONG_SOFTMAX = """def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
"""
RENAMED = """def my_attention(Q, K, V, mask=None):
    return None
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("frictions")
    root = course_copy(tmp / "root")
    released = subprocess.run([sys.executable, "-m", "autograder", "release", "--lesson", "5"], cwd=root,
                              capture_output=True, text=True)
    assert released.returncode == 0, released.stdout + released.stderr
    mine = tmp / "course"
    first = release(FIRST)
    cell(first, "softmax").source = WRONG_SOFTMAX
    cell(first, "scaled_dot_product_attention").source = RENAMED
    (mine / FIRST).mkdir(parents=True)
    nbformat.write(first, str(mine / FIRST / f"{FIRST}.ipynb"))
    (mine / FIFTH).mkdir(parents=True)
    fifth = nbformat.read(str(root / "course" / FIFTH / f"{FIFTH}.ipynb"), as_version=4)
    nbformat.write(fifth, str(mine / FIFTH / f"{FIFTH}.ipynb"))
    out = tmp / "self"
    proc = subprocess.run([sys.executable, "-m", "autograder", "self", "--course", str(mine), "--out", str(out),
                           "--lesson", "1,5"], cwd=root, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / "grades.csv") as f:
        rows = {row["assignment"]: row for row in csv.DictReader(f)}
    return {"root": root, "out": out, "stdout": proc.stdout, "rows": rows, "released": fifth}


def feedback(graded, lesson):
    return (graded["out"] / "feedback" / "me" / lesson / f"{lesson}.html").read_text()


def test_the_release_shows_the_variable_of_the_ordering(graded):
    stub = cell(graded["released"], "block_order").source
    assert stub.startswith("block_order = [...]  # your answer") and stub.endswith("raise NotImplementedError()")
    assert "3, 5, 1, 4, 2" not in stub


def test_partial_credit_counts_in_the_gradebook_and_grades_csv(graded):
    row = graded["rows"][FIRST]
    assert float(row["01:test_softmax"]) == pytest.approx(1.5), row
    assert float(row["01:test_scaled_dot_product_attention"]) == 0
    graded_nb = nbformat.read(str(graded["out"] / "autograded" / "me" / FIRST / f"{FIRST}.ipynb"), as_version=4)
    result = next(o for o in cell(graded_nb, "test_softmax").outputs if o.output_type == "execute_result")
    assert result.data["text/plain"] == "1.5" and "1.5 / 3 points" in result.data["text/html"]
    assert "1.5 / 3 points" in html.unescape(feedback(graded, FIRST))


def test_the_grader_says_the_answer_is_missing_from_the_notebook_not_run_the_cell(graded):
    page = html.unescape(feedback(graded, FIRST))
    assert "no function named `scaled_dot_product_attention` is defined in the submitted notebook" in page
    assert "Run the cell that defines it" not in page and "run this test again" not in page
    assert "defined in the submitted notebook" in graded["stdout"]


def test_an_untouched_ordering_scores_0_not_answered_yet(graded):
    assert float(graded["rows"][FIFTH]["05:test_block_order"]) == 0
    line = next(line for line in graded["stdout"].splitlines() if line.startswith("  ✗ 5.1 "))
    assert "0 / 1" in line and "not answered yet: replace each `...` in `block_order`" in line, graded["stdout"]
    assert "NameError" not in graded["stdout"]
    assert "not answered yet" in html.unescape(feedback(graded, FIFTH))


def test_the_table_counts_cases_and_names_the_real_feedback_pages(graded):
    shown = graded["stdout"]
    assert f"Lesson {FIRST}: " in shown and f"Lesson {FIFTH}: " in shown and "Lesson 02" not in shown
    assert "hidden grading cases included" in shown and "cases failed" in shown
    softmax = next(line for line in shown.splitlines() if "1.1 softmax" in line)
    assert "1.5 / 3" in softmax and " visible" in softmax and " hidden" in softmax, softmax
    assert "<lesson>" not in shown
    for lesson in (FIRST, FIFTH):
        assert f"self/feedback/me/{lesson}/{lesson}.html" in shown
