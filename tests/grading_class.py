"""One fixture class of students, graded once through the real driver and nbgrader.

Honest students (the solutions, the untouched release, one mistake, a different catalog mistake
in every exercise), mutants (three wrong implementations of every exercise, one correct
alternative) and adversaries (tampering, endless loops, crashing kernels, broken files) sit in
the same class, so the tests can also show that honest students' grades are unaffected.
"""

import contextlib
import importlib
import io

import nbformat

from encdec.mistakes import CATALOG
from nbtools import (autograde, cell, checks_module, course_copy, graded_cells, inject, lessons, release,
                     solution, write_submission)

LESSONS = lessons()
FIRST = LESSONS[0]
CELL_TIMEOUT, NOTEBOOK_TIMEOUT = 20, 90


def unit_score(exercise, impl):
    """What the checker gives this answer outside nbgrader, hidden cases included."""
    with contextlib.redirect_stdout(io.StringIO()):
        return exercise.checker(exercise.answer_from(impl), points=exercise.points, hidden=True)


def grade_id_of(nb, exercise):
    calls = f"{exercise.checker.__name__}("
    for c in graded_cells(nb):
        if calls in c.source:
            return c.metadata.nbgrader.grade_id
    raise KeyError(f"no test cell calls {calls}")


def alternatives(lesson):
    try:
        return importlib.import_module(f"variants.lesson{lesson[:2]}").ALTERNATIVES
    except ModuleNotFoundError:
        return {}


def full_marks(nb):
    return {c.metadata.nbgrader.grade_id: float(c.metadata.nbgrader.points) for c in graded_cells(nb)}


def mutant(lesson, k):
    """Every exercise gets its k-th catalog mistake (a different one per exercise)."""
    nb, module = solution(lesson), checks_module(lesson)
    scores = full_marks(nb)
    used = {}
    for i, ex in enumerate(module.EXERCISES):
        mistakes = CATALOG[ex.name]
        m = mistakes[(i + k) % len(mistakes)]
        nb = inject(nb, ex, m.impl)
        scores[grade_id_of(nb, ex)] = unit_score(ex, m.impl)
        used[ex.number] = m.key
    return nb, scores, used


def alternative_notebook(lesson):
    nb, module = solution(lesson), checks_module(lesson)
    for ex in module.EXERCISES:
        nb = inject(nb, ex, alternatives(lesson)[ex.name][0])
    return nb, full_marks(nb)


def edit(nb, grade_id, fn):
    nb = nbformat.from_dict(nb)
    fn(cell(nb, grade_id), nb)
    return nb


def adversaries(expected_wrong):
    """(student, notebook or bytes, expected) for lesson 01. `expected` is either per-cell scores
    (status graded) or a status prefix with a zero score."""
    base, wrong_scores, _ = expected_wrong
    sol = solution(FIRST)
    full = full_marks(sol)
    tests = [c.metadata.nbgrader.grade_id for c in graded_cells(sol)]
    exercises = checks_module(FIRST).EXERCISES
    first_test, first_answer = grade_id_of(sol, exercises[0]), exercises[0].answer_cell
    last_test, last_answer = grade_id_of(sol, exercises[-1]), exercises[-1].answer_cell
    wrong = dict(wrong_scores)

    def set_source(text):
        return lambda c, nb: setattr(c, "source", text)

    def strip_meta(c, nb):
        c.metadata.pop("nbgrader")
        c.source = "3.0"

    def raise_points(c, nb):
        c.metadata.nbgrader["points"] = 100
        c.source = "100"

    def delete(c, nb):
        nb.cells.remove(c)

    def no_hidden(c, nb):
        c.source = "\n".join(line for line in c.source.splitlines()
                             if "HIDDEN" not in line and "hidden = True" not in line)

    def append(code):
        return lambda c, nb: setattr(c, "source", c.source + "\n" + code)

    def prepend(code):
        return lambda c, nb: setattr(c, "source", code + "\n" + c.source)

    cases = [
        ("assert-true", edit(base, first_test, set_source("assert True")), {"cells": wrong}),
        ("deleted-test", edit(base, first_test, delete), {"cells": wrong}),
        ("stripped-metadata", edit(base, first_test, strip_meta), {"cells": wrong}),
        ("raised-points", edit(base, first_test, raise_points), {"cells": wrong}),
        ("hidden-removed", edit(edit(base, tests[0], no_hidden), tests[1], no_hidden), {"cells": wrong}),
        ("loop-in-answer", edit(sol, first_answer, append(
            f"def {first_answer}(*args, **kwargs):\n    while True:\n        pass")),
         {"cells": {**full, first_test: 0.0}}),
        ("loop-top-level", edit(sol, last_answer, prepend("while True:\n    pass")),
         {"cells": {**full, last_test: 0.0}}),
        ("sigint-ignored", edit(sol, first_answer, append(
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")),
         {"status": "tampered"}),
        ("uninterruptible", edit(sol, first_answer, append("sum(range(10**13))  # C code that never checks for interrupts")),
         {"status": "failed: a cell ran past the time limit"}),
        ("kernel-exits", edit(sol, first_answer, append("import os\nos._exit(1)")), {"status": "tampered"}),
        ("kernel-crashes", edit(sol, first_answer, append("import faulthandler\nfaulthandler._sigsegv()")),
         {"status": "failed: the kernel died"}),
        ("sys-exit", edit(sol, first_answer, append("import sys\nsys.exit()")), {"cells": full}),
        ("huge-output", edit(sol, first_answer, append("print('x' * 100_000_000)")), {"cells": full}),
        ("not-json", "{ not a notebook", {"status": "failed: not valid JSON"}),
        ("empty-file", "", {"status": "failed: the notebook file is empty"}),
        ("calls-reference", edit(sol, first_answer, append(
            f"from encdec import {first_answer} as _ref\ndef {first_answer}(*args, **kwargs):\n"
            f"    return _ref(*args, **kwargs)")), {"cells": {**full, first_test: 0.0}}),
        ("patches-numpy", edit(base, first_answer, append("np.allclose = lambda *a, **k: True\n"
                                                          "np.isclose = lambda a, b, **k: np.ones(np.shape(a), bool)")),
         {"status": "tampered"}),
        ("replaces-checker", edit(base, first_answer, append(
            "import encdec.checks.lesson01 as L\nL.check_softmax = lambda **k: 3.0")), {"status": "tampered"}),
        ("edits-reference", edit(base, first_answer, append(
            f"import encdec\nencdec.attention.{first_answer} = {first_answer}")), {"status": "tampered"}),
        ("patches-at-runtime", edit(base, first_answer, append(
            "vars(np)['isclose'] = lambda a, b, **k: np.ones(np.broadcast(a, b).shape, bool)")),
         {"cells": {k: 0.0 for k in full}}),
        ("writes-library", edit(sol, first_answer, append(
            "import encdec, os\nmode = 'a'\n"
            "open(os.path.join(os.path.dirname(encdec.__file__), 'attention.py'), mode).write('\\nraise SystemExit\\n')")),
         {"status": "tampered: the notebook changed files outside its own folder"}),
        ("writes-gradebook", edit(sol, first_answer, append(
            "mode = 'w'\nopen('../../../gradebook.db', mode).write('gone')")), {"status": "failed"}),
    ]
    return cases


def build_and_grade(tmp_path_factory):
    submitted = tmp_path_factory.mktemp("submitted")
    out = tmp_path_factory.mktemp("out")
    expected, mutants_used = {}, {}
    for lesson in LESSONS:
        sol = solution(lesson)
        full = full_marks(sol)
        module = checks_module(lesson)
        write_submission(submitted, "solution", lesson, sol)
        expected[("solution", lesson)] = {"cells": full}
        write_submission(submitted, "untouched", lesson, release(lesson))
        expected[("untouched", lesson)] = {"cells": {k: 0.0 for k in full}}
        first = module.EXERCISES[0]
        m = CATALOG[first.name][0]
        nb = inject(sol, first, m.impl)
        write_submission(submitted, "one-mistake", lesson, nb)
        expected[("one-mistake", lesson)] = {"cells": {**full, grade_id_of(nb, first): unit_score(first, m.impl)}}
        for k in range(3):
            nb, scores, used = mutant(lesson, k)
            write_submission(submitted, f"mutant-{k + 1}", lesson, nb)
            expected[(f"mutant-{k + 1}", lesson)] = {"cells": scores}
            mutants_used[(f"mutant-{k + 1}", lesson)] = used
        nb, scores = alternative_notebook(lesson)
        write_submission(submitted, "alternative", lesson, nb)
        expected[("alternative", lesson)] = {"cells": scores}
    wrong = mutant(FIRST, 0)
    for student, nb, exp in adversaries(wrong):
        write_submission(submitted, student, FIRST, nb)
        expected[(student, FIRST)] = exp
    # a misnamed notebook is graded (and the row says so); a student with a lesson missing gets a row
    path = write_submission(submitted, "wrong-name", FIRST, solution(FIRST))
    path.rename(path.with_name("my_attention.ipynb"))
    expected[("wrong-name", FIRST)] = {"cells": full_marks(solution(FIRST)), "status": "graded (submitted as"}
    write_submission(submitted, "lesson-missing", LESSONS[1], solution(LESSONS[1]))
    expected[("lesson-missing", FIRST)] = {"status": "missing"}
    expected[("lesson-missing", LESSONS[1])] = {"cells": full_marks(solution(LESSONS[1]))}
    root = course_copy(tmp_path_factory.mktemp("course"))
    code, rows, output = autograde(submitted, out, jobs=2, root=root,
                                   env={"GRADE_CELL_TIMEOUT": str(CELL_TIMEOUT), "GRADE_TIMEOUT": str(NOTEBOOK_TIMEOUT)})
    return {"code": code, "rows": rows, "output": output, "expected": expected, "out": out,
            "root": root, "submitted": submitted, "mutants": mutants_used}
