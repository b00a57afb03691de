"""The grader reads the checkers' structured records, never their printed text.

Graded notebooks are made by hand here, with records as the checkers emit them (a display output
of MIME type application/vnd.encdec.check+json), so the readers are tested without nbgrader:
the `make grade` table, the cohort report (counted by catalog key) and the HTML feedback.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import feedback, records, reports
from autograder.pipeline import Outputs, Row
from nbtools import ROOT

LESSON = "01_attention"
MAXIMA = {LESSON: {"test_softmax": 3.0, "test_scaled_dot_product_attention": 4.0}}
NO_SCALE = "the scores are not divided by sqrt(d_k)."


def record(exercise="1.2", title="scaled_dot_product_attention", points=4, score=2.25, misconceptions=(),
           message=None, parts=None):
    return {"schema": 1, "exercise": exercise, "title": title, "points": points, "score": score, "hidden": True,
            "status": "not implemented" if message else "checked", "message": message,
            "parts": parts if parts is not None else [
                {"label": "unbatched, rectangular (m != n)", "weight": 1.0, "passed": True,
                 "cases": [{"label": "m=3, n=5", "hidden": False, "outcome": "passed"}], "message": None},
                {"label": "masks (causal and padding)", "weight": 1.0, "passed": False,
                 "cases": [{"label": "causal mask, m=n=4", "hidden": False, "outcome": "passed"},
                           {"label": "padding, batch of 3", "hidden": True, "outcome": "failed"},
                           {"label": "both masks", "hidden": False, "outcome": "not run"}],
                 "message": "[padding, batch of 3] weights: values differ at index (0, 1)"}],
            "misconceptions": [{"key": key, "exercise": "scaled_dot_product_attention", "diagnosis": words}
                               for key, words in misconceptions],
            "notes": []}


def graded_cell(grade_id, points, score, printed="", rec=None, error=None):
    """A graded test cell as nbgrader leaves it: printed text, the record, the score."""
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)] if printed else []
    if rec is not None:
        outputs.append(nbformat.v4.new_output("display_data", data={
            records.MIME: rec, "text/plain": f"Exercise {rec['exercise']} · {rec['score']:g} / {rec['points']:g} points"}))
    if error:
        outputs.append(nbformat.v4.new_output("error", ename=error[0], evalue=error[1], traceback=[]))
    else:
        outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(score))},
                                              execution_count=1))
    c = nbformat.v4.new_code_cell(f"check_something(points={points})")
    c.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "locked": True, "points": points,
                              "solution": False, "schema_version": 3}
    c.outputs = outputs
    return c



def graded(out, student, cells):
    nb = nbformat.v4.new_notebook(cells=cells)
    path = out.graded_notebook(student, LESSON)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    scores = {c.metadata.nbgrader.grade_id: float(
        next((o.data["text/plain"] for o in c.outputs if o.output_type == "execute_result"), 0.0)) for c in cells}
    return Row(LESSON, student, "graded", cells=scores, score=sum(scores.values()), max_score=7.0)


def softmax_cell(score=3.0):
    return graded_cell("test_softmax", 3, score, rec=record("1.1", "softmax", 3, score))


@pytest.fixture
def out(tmp_path):
    return Outputs.under(tmp_path)


def test_the_cohort_report_counts_a_misconception_by_key_whatever_its_wording(out, tmp_path):
    rows = [
        graded(out, "ann", [softmax_cell(), graded_cell("test_scaled_dot_product_attention", 4, 2.25,
                                                      rec=record(misconceptions=[("no_scale", NO_SCALE)]))]),
        graded(out, "bob", [softmax_cell(), graded_cell("test_scaled_dot_product_attention", 4, 2.25, rec=record(
            misconceptions=[("no_scale", "the attention scores were never scaled by 1/sqrt(d_k).")]))]),
    ]
    counts = reports.misconception_counts(rows, MAXIMA, out)
    assert counts == {(LESSON, "1.2 scaled_dot_product_attention", "no_scale"): (2, NO_SCALE)}
    reports.write_report(rows, MAXIMA, out, tmp_path / "report.md")
    text = (tmp_path / "report.md").read_text()
    assert f"| 2 | {LESSON} | 1.2 scaled_dot_product_attention | `no_scale` | {NO_SCALE} |" in text


def test_the_counts_come_from_records_not_from_printed_text(out, tmp_path):
    printed = "Exercise 1.2 · scaled_dot_product_attention: 2.25 / 4 points\n  ✗ masks\n      Likely cause: X\n"
    rows = [
        graded(out, "says-x-record-silent", [softmax_cell(), graded_cell(
            "test_scaled_dot_product_attention", 4, 2.25, printed=printed, rec=record())]),
        graded(out, "says-x-no-record", [softmax_cell(), graded_cell(
            "test_scaled_dot_product_attention", 4, 2.25, printed=printed)]),
    ]
    assert reports.misconception_counts(rows, MAXIMA, out) == {}
    reports.write_report(rows, MAXIMA, out, tmp_path / "report.md")
    text = (tmp_path / "report.md").read_text()
    assert "None: no graded notebook showed a known misconception." in text and "| X |" not in text


def test_a_record_that_disagrees_with_the_gradebook_is_not_used(out):
    """nbgrader's score is the judge: a record claiming other points (written by student code, or
    a cell that also wrote to stderr and so scored 0) is ignored, and the cell keeps its score."""
    forged = record(score=4.0, misconceptions=[("no_scale", NO_SCALE)])
    row = graded(out, "forger", [softmax_cell(), graded_cell("test_scaled_dot_product_attention", 4, 0.0, rec=forged)])
    assert reports.row_records(row, MAXIMA, out).keys() == {"test_softmax"}
    assert reports.misconception_counts([row], MAXIMA, out) == {}


def test_the_last_record_of_a_cell_is_the_checkers(out):
    early = record(misconceptions=[("mask_after_softmax", "the mask is added after the softmax.")])
    cell = graded_cell("test_scaled_dot_product_attention", 4, 2.25, rec=early)
    cell.outputs.insert(-1, nbformat.v4.new_output("display_data", data={
        records.MIME: record(misconceptions=[("no_scale", NO_SCALE)]), "text/plain": "Exercise 1.2"}))
    row = graded(out, "two-records", [softmax_cell(), cell])
    keys = {key for (_, _, key) in reports.misconception_counts([row], MAXIMA, out)}
    assert keys == {"no_scale"}


def test_malformed_records_are_ignored():
    assert records.parse({"schema": 2, "exercise": "1.1", "points": 3, "score": 3}) is None
    assert records.parse({"schema": 1, "exercise": "1.1", "points": "three", "score": 3}) is None
    assert records.parse("not a dict") is None
    assert records.parse(record()).parts[1].cases[1] == records.Case("padding, batch of 3", True, "failed")


def test_the_make_grade_table_shows_titles_and_the_first_diagnosis(out, capsys):
    row = graded(out, "me", [
        graded_cell("test_softmax", 3, 0.0, rec=record("1.1", "softmax", 3, 0.0, parts=[],
                                                      message="not implemented yet: replace `raise NotImplementedError()`")),
        graded_cell("test_scaled_dot_product_attention", 4, 2.25, rec=record(misconceptions=[("no_scale", NO_SCALE)]))])
    reports.print_table([row], MAXIMA, out)
    shown = capsys.readouterr().out
    softmax, attention = [line for line in shown.splitlines() if line.startswith("  ✗")]
    assert "1.1 softmax" in softmax and " 0 / 3    not run " in softmax \
        and softmax.endswith("  not implemented yet: replace `raise NotImplementedError()`")
    assert "1.2 scaled_dot_product_attention" in attention and attention.endswith(
        "2.25 / 4    0 of 3 visible (1 not run), 1 of 1 hidden  masks (causal and padding): [padding, batch of 3] "
        f"weights: values differ at index (0, 1) -> {NO_SCALE}")


def test_without_records_the_table_falls_back_to_scores(out, capsys):
    printed = "Exercise 1.1 · softmax: 0 / 3 points\n  ✗ not implemented yet\n"
    row = graded(out, "me", [graded_cell("test_softmax", 3, 0.0, printed=printed),
                             graded_cell("test_scaled_dot_product_attention", 4, 0.0, error=("NameError", "x"))])
    reports.print_table([row], MAXIMA, out)
    shown = capsys.readouterr().out
    assert "✗ test_softmax" in shown and "not implemented" not in shown
    assert "✗ test_scaled_dot_product_attention" in shown and "NameError: x" in shown


def test_feedback_shows_the_record_as_a_table_of_cases():
    cell = graded_cell("test_scaled_dot_product_attention", 4, 2.25, rec=record(misconceptions=[("no_scale", NO_SCALE)]))
    feedback.RecordsAsHTML().preprocess_cell(cell, {}, 0)
    html = cell.outputs[0].data["text/html"]
    assert "✗ padding, batch of 3 (hidden)" in html and "· both masks" in html
    assert f"Likely cause: {NO_SCALE}" in html
    forged = graded_cell("test_scaled_dot_product_attention", 4, 0.0, rec=record(score=4.0))
    feedback.RecordsAsHTML().preprocess_cell(forged, {}, 0)
    assert "text/html" not in forged.outputs[0].data


def test_importing_the_grader_changes_no_global_state():
    code = ("import os, sys; env, path = dict(os.environ), list(sys.path); "
            "import autograder.cli, autograder.pipeline, autograder.reports, autograder.feedback, autograder.sandbox; "
            "assert dict(os.environ) == env, 'environment changed'; assert sys.path == path, 'sys.path changed'")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("module", ["records", "reports", "feedback", "pipeline", "cli", "nbgrader_glue", "gradebook",
                                    "classroom", "feedback_pages"])
def test_no_regular_expression_reads_printed_text(module):
    tree = ast.parse((ROOT / "autograder" / f"{module}.py").read_text())
    imported = {a.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for a in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "re" not in imported, f"autograder/{module}.py imports re"


# -- through real nbgrader, with the checkers' own records ----------------------------------------------------
def report_line(report, key):
    """The cells of the cohort report's misconception line for a catalog key, or None."""
    for line in report.splitlines():
        if f"| `{key}` |" in line:
            return [c.strip() for c in line.strip("|").split("|")]
    return None


@pytest.mark.nbgrader
@pytest.mark.slow
def test_a_reworded_diagnosis_is_still_counted_under_its_catalog_key(graded_class, tmp_path):
    """The one-mistake student graded again by a course whose catalog words that mistake's
    diagnosis differently: same points, same key, same count; only the words shown change."""
    from encdec.mistakes import CATALOG
    from grading_class import FIRST
    from nbtools import autograde, checks_module, course_copy, write_submission

    first = checks_module(FIRST).EXERCISES[0]
    m = CATALOG[first.name][0]
    reworded = "REWORDED " + " ".join(reversed(m.diagnosis.split()))
    root = course_copy(tmp_path / "course")
    catalog_module = root / "lib" / Path(*m.impl.__module__.split(".")).with_suffix(".py")
    catalog_module.write_text(catalog_module.read_text() + (
        "\n\nfrom encdec.mistakes import CATALOG as _CATALOG\n"
        f"for _m in _CATALOG[{first.name!r}]:\n"
        f"    if _m.key == {m.key!r}:\n"
        f"        object.__setattr__(_m, 'diagnosis', {reworded!r})\n"))
    submitted = tmp_path / "submitted"
    src = graded_class["submitted"] / "one-mistake" / FIRST / f"{FIRST}.ipynb"
    write_submission(submitted, "one-mistake", FIRST, src.read_text())
    _, rows, output = autograde(submitted, tmp_path / "out", jobs=1, root=root)
    assert rows[("one-mistake", FIRST)] == graded_class["rows"][("one-mistake", FIRST)], output[-2000:]

    before = report_line((graded_class["out"] / "report.md").read_text(), m.key)
    after = report_line((tmp_path / "out" / "report.md").read_text(), m.key)
    assert before is not None and after is not None, f"no line for `{m.key}` in the cohort report"
    assert after[:4] == ["1", FIRST, before[2], f"`{m.key}`"]
    assert after[4] == reworded.replace("|", "/") and before[4] == m.diagnosis.replace("|", "/")
