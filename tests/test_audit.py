"""The static audit (autograder/audit.py): what it zeroes, what it only cautions about, what it allows.

A statement is judged by what it touches: setattr, eval or open(…, "w") on a student's own objects and
files are ordinary Python (the idioms of tests/variants/idioms.py, and the course's own solutions,
catalog mistakes and alternatives, all pass without a finding or a caution); the same calls aimed at
NumPy, the course library, the checkers, builtins, the test machinery or the course's files are
findings, however the target is reached (aliases, getattr, globals(), importlib, exec of a constant…);
a target known only at run time is a caution, which the guard in the kernel checks as it happens.
"""

import sqlite3

import nbformat
import pytest

from autograder import audit, feedback_pages, gradebook, reports
from autograder.audit import audit_cells, audit_notebook
from autograder.course import source_facts
from autograder.pipeline import Job, Row
from encdec.mistakes import CATALOG
from grading_class import alternatives
from nbtools import checks_module, graded_cells, injection_source, lessons, release, set_answer, solution
from variants.idioms import IDIOMS, SETATTR_CACHE, SETATTR_SLIP

# what a lesson's setup cell binds (the course's own cell: it binds names, it is not audited)
SETUP = "import numpy as np\nimport torch\nimport encdec as ref\nfrom encdec import plotting\n"


def audited(snippet):
    return audit_cells([("cell 1", SETUP, True), ("cell 2", snippet)])


def lesson_named(number):
    return next(lesson for lesson in lessons(every=True) if lesson.startswith(number))


# -- code a correct answer may contain -----------------------------------------------------------------------
@pytest.mark.parametrize("idiom", IDIOMS + [SETATTR_CACHE, SETATTR_SLIP], ids=lambda i: f"{i.lesson}-{i.cell}")
def test_every_idiom_passes_without_a_finding_or_a_caution(idiom):
    lesson = lesson_named(idiom.lesson)
    facts = source_facts(lesson)
    found = audit_notebook(set_answer(solution(lesson), idiom.cell, idiom.source), facts.demo, facts.sources)
    assert found.findings == [] and found.cautions == [], [f.evidence() for f in found.findings + found.cautions]


@pytest.mark.parametrize("lesson", lessons(every=True))
def test_the_course_itself_passes(lesson):
    """The solutions and the released notebooks (demo cells run or not), every catalog mistake and every
    correct alternative pasted into the answer cells."""
    facts = source_facts(lesson)
    for nb in (solution(lesson), release(lesson)):
        for skip in (facts.demo, ()):
            found = audit_notebook(nb, skip, facts.sources)
            assert found.findings == [] and found.cautions == [], [f.evidence() for f in found.findings + found.cautions]
    course = [(f"course {i}", source, True) for i, source in enumerate(sorted(facts.sources))]
    for ex in checks_module(lesson).EXERCISES:
        for impl in [m.impl for m in CATALOG[ex.name]] + alternatives(lesson).get(ex.name, []):
            found = audit_cells(course + [("answer", injection_source(ex, impl))])
            assert found.findings == [] and found.cautions == [], (ex.name, impl.__doc__, found)


ALLOWED = {
    "bare imports": "import shutil, sqlite3, subprocess, tempfile, ctypes, signal, gc, importlib, builtins",
    "setattr on its own object": "class C:\n    pass\nc = C()\nsetattr(c, 'x', 1)\ndelattr(c, 'x')\nvars(c)['y'] = 2",
    "setattr on a parameter": "def fill(obj, **values):\n    for k, v in values.items():\n        setattr(obj, k, v)",
    "a frozen dataclass": ("from dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n    x: float\n"
                           "    def __post_init__(self):\n        object.__setattr__(self, 'x', float(self.x))"),
    "super().__setattr__": "class C:\n    def __setattr__(self, k, v):\n        super().__setattr__(k, v)",
    "a name rebound by the student": "from encdec.attention import softmax\ndef softmax(x):\n    return x\nsoftmax.calls = 0",
    "settings and reads": ("import sys, os\ntorch.backends.cudnn.deterministic = True\nsys.path.insert(0, '..')\n"
                           "os.environ['OMP_NUM_THREADS'] = '1'\nprint('torch' in sys.modules)\nnp.random.seed(0)\n"
                           "np.set_printoptions(precision=3)\nx = np.zeros(3)\nx.shape = (3, 1)"),
    "files in its own folder": ("import os, shutil, sqlite3, tempfile\nfrom pathlib import Path\n"
                                "open('notes.txt', 'w').write('x')\nopen('/tmp/x.txt', 'a')\nopen(os.devnull, 'w')\n"
                                "np.save('x.npy', np.zeros(3))\nnp.load('x.npy')\nPath('out/a.txt').write_text('a')\n"
                                "shutil.copy('notes.txt', 'copy.txt')\nsqlite3.connect(':memory:')\n"
                                "d = tempfile.mkdtemp()\ntorch.save({}, os.path.join(d, 'ckpt.pt'))\n"
                                "for i in range(2):\n    open(f'epoch-{i}.txt', 'w')\nos.remove('copy.txt')"),
    "strings and models": "s = 'a-b'.replace('-', '+')\nclass M:\n    def eval(self):\n        return self\nM().eval()",
    "eval and exec of constants": "y = eval('2 + 3 * 4')\nexec('z = y + 1')\nexec(compile('w = 2', '<w>', 'exec'))",
    "stderr": "import sys\nprint('debug', file=sys.stderr)",
    "magics": ("%matplotlib inline\n%config InlineBackend.figure_format = 'retina'\n%load_ext autoreload\n"
               "%time y = np.ones(3).sum()"),
    "writefile in its own folder": "%%writefile helper.py\ndef helper():\n    return 1\n",
    "IPython's display": "from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))",
    "the reference called (the checkers' business)": "ref.softmax(np.zeros(3))",
    "globals() read": "f = globals()['np']\ng = globals().get('ref')\nh = vars()['np'].zeros(2)",
    "importlib and __import__ of constants": "import importlib\nxp = importlib.import_module('numpy')\nm = __import__('math')",
}


@pytest.mark.parametrize("name", ALLOWED)
def test_allowed(name):
    found = audited(ALLOWED[name])
    assert found.findings == [] and found.cautions == [], [f.evidence() for f in found.findings + found.cautions]


# -- what zeroes a lesson -----------------------------------------------------------------------------------
FLAGGED = {
    # replacing what the tests rely on, however the target is reached
    "np.isclose replaced": ("np.isclose = lambda a, b, **k: True", "replaces", "numpy.isclose"),
    "an alias of an alias": ("import numpy\nn = numpy\nm = n\nm.isclose = print", "replaces", "numpy.isclose"),
    "a submodule by its alias": ("import numpy.linalg as la\nla.norm = print", "replaces", "numpy.linalg.norm"),
    "a module imported from one": ("from numpy import random\nrandom.seed = print", "replaces", "numpy.random.seed"),
    "the checkers' package": ("from encdec import checks\nchecks.lesson01.check_softmax = print", "replaces",
                              "encdec.checks.lesson01.check_softmax"),
    "a getattr chain": ("c = getattr(getattr(ref, 'checks'), 'lesson01')\nc.check_softmax = print", "replaces",
                        "encdec.checks.lesson01.check_softmax"),
    "getattr with a name chosen at run time, on the library": ("setattr(getattr(ref, input()), 'x', 1)", "replaces",
                                                               "encdec.?.x"),
    "globals() of the notebook": ("g = globals()\ng['np'].allclose = print", "replaces", "numpy.allclose"),
    "a literal list looped over": ("for m in (np, torch):\n    m.isclose = print", "replaces", "numpy.isclose"),
    "a dict of modules": ("d = {'m': np}\nd['m'].isclose = print", "replaces", "numpy.isclose"),
    "a walrus": ("(n := np).isclose = print", "replaces", "numpy.isclose"),
    "a function's free name bound later": ("def f():\n    m.isclose = print\nm = np\nf()", "replaces", "numpy.isclose"),
    "setattr": ("setattr(np, 'isclose', print)", "replaces", "numpy.isclose"),
    "setattr as an alias": ("s = setattr\ns(np, 'isclose', print)", "replaces", "numpy.isclose"),
    "setattr on __import__": ("setattr(__import__('numpy'), 'isclose', print)", "replaces", "numpy.isclose"),
    "setattr on import_module": ("import importlib\nsetattr(importlib.import_module('encdec.checks.lesson01'), "
                                 "'check_softmax', print)", "replaces", "encdec.checks.lesson01.check_softmax"),
    "setattr on a function imported from the library": ("from encdec.attention import softmax\n"
                                                        "setattr(softmax, '__code__', None)", "replaces",
                                                        "encdec.attention.softmax.__code__"),
    "delattr": ("delattr(np, 'isclose')", "replaces", "numpy.isclose"),
    "object.__setattr__": ("object.__setattr__(np, 'isclose', print)", "replaces", "numpy.isclose"),
    "type.__setattr__": ("type.__setattr__(np.ndarray, 'sum', print)", "replaces", "numpy.ndarray.sum"),
    "module.__setattr__": ("np.__setattr__('isclose', print)", "replaces", "numpy.isclose"),
    "vars()[…] =": ("vars(np)['isclose'] = print", "replaces", "numpy.isclose"),
    "__dict__[…] =": ("np.__dict__['isclose'] = print", "replaces", "numpy.isclose"),
    "vars().update": ("vars(np).update(isclose=print)", "replaces", "numpy"),
    "del": ("del np.isclose", "replaces", "numpy.isclose"),
    "a checker's globals": ("from encdec.checks.lesson01 import check_softmax\n"
                            "check_softmax.__globals__['np'] = None", "replaces", "check_softmax.__globals__.np"),
    "builtins": ("import builtins as b\nb.print = len", "replaces", "builtins.print"),
    "__builtins__": ("__builtins__.len = print", "replaces", "builtins.len"),
    "__builtins__ from globals()": ("globals()['__builtins__'].len = print", "replaces", "builtins.len"),
    "sys.modules replaced": ("import sys\nsys.modules['encdec.checks.lesson01'] = None", "replaces", "sys.modules"),
    "sys.modules deleted": ("import sys\ndel sys.modules['numpy']", "replaces", "sys.modules"),
    "sys.modules popped": ("import sys\nsys.modules.pop('encdec')", "replaces", "sys.modules"),
    "sys.modules through an alias": ("import sys\nm = sys.modules\nm['numpy'].isclose = print", "replaces",
                                     "numpy.isclose"),
    "exec of a constant": ("exec('import numpy; numpy.isclose = None')", "replaces", "numpy.isclose"),
    "exec of compile of a constant": ("exec(compile('np.isclose = 1', '<x>', 'exec'))", "replaces", "numpy.isclose"),
    "eval of a constant": ("eval(\"setattr(np, 'isclose', 1)\")", "replaces", "numpy.isclose"),
    "exec with a namespace": ("exec('m.isclose = 1', {'m': np})", "replaces", "numpy.isclose"),
    "exec in the notebook's globals()": ("exec('np.isclose = 1', globals())", "replaces", "numpy.isclose"),
    "inside %%capture": ("%%capture out\nnp.isclose = print", "replaces", "numpy.isclose"),
    "after a shell escape": ("files = !ls\nnp.isclose = print", "replaces", "numpy.isclose"),
    # the interpreter and the machinery that runs the tests
    "sys.settrace": ("import sys\nsys.settrace(None)", "internals", "sys.settrace"),
    "sys.setprofile": ("from sys import setprofile\nsetprofile(None)", "internals", "sys.setprofile"),
    "threading.settrace": ("import threading\nthreading.settrace(print)", "internals", "threading.settrace"),
    "gc.get_objects": ("import gc\ngc.get_objects()", "internals", "gc.get_objects"),
    "gc.get_referrers": ("import gc\ngc.get_referrers(np.isclose)", "internals", "gc.get_referrers"),
    "ctypes used": ("import ctypes\nctypes.pythonapi.PyObject_SetAttr", "internals", "ctypes"),
    "reload of the library": ("import importlib, encdec.attention\nimportlib.reload(encdec.attention)", "internals",
                              "encdec.attention"),
    "a frame": ("import sys\nsys._getframe(1).f_globals['np'] = None", "internals", "sys._getframe"),
    "a frame through getattr": ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    t = e.__traceback__\n"
                                "f = getattr(t, 'tb_' + 'frame')", "internals", "a frame of the running code"),
    "a caller's frame through getattr": ("def up(f):\n    return getattr(f, 'f_' + 'back')", "internals",
                                         "a frame of the running code"),
    "an input transformer": ("get_ipython().input_transformers_post.append(lambda lines: [])", "internals",
                             "IPython shell"),
    "the shell passed to a function": ("def hook(ip):\n    ip.ast_transformers.append(None)\nhook(get_ipython())",
                                       "internals", "IPython shell"),
    "results not displayed": ("get_ipython().ast_node_interactivity = 'none'", "internals", "IPython shell"),
    "%config of the shell": ("%config ZMQInteractiveShell.ast_node_interactivity = 'none'", "internals",
                             "IPython shell"),
    "a custom exception handler": ("get_ipython().set_custom_exc((Exception,), print)", "internals", "IPython shell"),
    "a printer for floats": ("from IPython.lib.pretty import for_type\nfor_type(float, print)", "internals",
                             "IPython.lib.pretty.for_type"),
    # escaping how the grader runs and times the kernel
    "os._exit": ("import os\nos._exit(0)", "process", "os._exit"),
    "os.kill": ("import os\nos.kill(os.getppid(), 9)", "process", "os.kill"),
    "os.fork": ("import os\nos.fork()", "process", "os.fork"),
    "posix.fork": ("import posix\nposix.fork()", "process", "os.fork"),
    "a signal handler": ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)", "process", "signal.signal"),
    "an alarm": ("from signal import alarm\nalarm(1)", "process", "signal.alarm"),
    # writing where only the course can be
    "climbing out": ("open('../../../gradebook.db', 'w')", "writes", "climbs out"),
    "a mode in a variable": ("mode = 'a'\nopen('../x.py', mode)", "writes", "climbs out"),
    "an absolute path": ("open('/home/student/x', 'w')", "writes", "/home/student/x"),
    "the home folder": ("import os\ntorch.save({}, os.path.expanduser('~/x.pt'))", "writes", "home folder"),
    "the library's folder": ("import encdec, os\nopen(os.path.join(os.path.dirname(encdec.__file__), 'attention.py'), "
                             "'a')", "writes", "encdec.__file__"),
    "pathlib": ("from pathlib import Path\nimport encdec\n(Path(encdec.__file__).parent / 'x.py').write_text('')",
                "writes", "encdec.__file__"),
    "os.remove": ("import os\nos.remove(ref.__file__)", "writes", "encdec.__file__"),
    "shutil.rmtree": ("import shutil, site\nshutil.rmtree(site.getsitepackages()[0])", "writes", "getsitepackages"),
    "shutil.copy into the environment": ("import shutil, sys\nshutil.copy('x.py', sys.prefix + '/lib')", "writes",
                                         "sys.prefix"),
    "np.save into numpy": ("np.save(np.__path__[0] + '/x.npy', 1)", "writes", "numpy.__path__"),
    "sqlite3": ("import sqlite3\nsqlite3.connect('../../gradebook.db')", "writes", "climbs out"),
    "os.rename": ("import os\nos.rename('a.txt', '/etc/x')", "writes", "/etc/x"),
    "%%writefile": ("%%writefile ../helper.py\nprint(1)\n", "writes", "climbs out"),
}


@pytest.mark.parametrize("name", FLAGGED)
def test_flagged(name):
    snippet, kind, what = FLAGGED[name]
    found = audited(snippet)
    assert any(f.kind == kind and what in f.evidence() for f in found.findings), \
        [f.evidence() for f in found.findings + found.cautions]
    assert all(f.cell == "cell 2" and f.line >= 1 for f in found.findings)


def test_the_evidence_is_the_cell_the_line_and_the_code_as_written():
    found = audited("x = 1\nnp.isclose = lambda a, b, **k: True")
    assert [f.evidence() for f in found.findings] == [
        "cell 2, line 2: `np.isclose = lambda a, b, **k: True` replaces numpy.isclose"]
    found = audited("%%writefile ../helper.py\nprint(1)\n")
    assert found.findings[0].code == "%%writefile ../helper.py"  # the magic, not IPython's call for it


# -- what only the run can tell: a caution, never a zero -----------------------------------------------------
CAUTIONED = {
    "setattr on a module imported by a computed name": (
        "import importlib\ndef name():\n    return 'num' + 'py'\n"
        "setattr(importlib.import_module(name()), 'isclose', print)", "setattr on an object chosen at run time"),
    "__import__ of a computed name": ("def name():\n    return 'numpy'\nm = __import__(name())", "imports a module"),
    "a store through globals()[name]": ("k = input()\nglobals()[k].isclose = print", "chosen at run time"),
    "exec of a computed string": ("code = ''.join(reversed(input()))\nexec(code)", "runs code built only at run time"),
    "exec of compile of a computed string": ("src = input()\nexec(compile(src, '<x>', 'exec'))",
                                             "runs code built only at run time"),
    "eval of a computed string": ("value = eval(input())", "runs code built only at run time"),
    "exec with a namespace of its own": ("ns = {}\nexec('m.isclose = 1', ns)", "chosen at run time"),
    "a loop over sys.modules": ("import sys\nfor m in list(sys.modules.values()):\n    setattr(m, 'isclose', print)",
                                "setattr on an object chosen at run time"),
    "setattr passed on as a value": ("import functools\nfunctools.partial(setattr, np)('isclose', print)",
                                     "passes setattr on as a value"),
    "a function of os named at run time": ("import os\ndef name():\n    return 'fo' + 'rk'\ngetattr(os, name())()",
                                           "reaches a function of os"),
    "a write to a path worked out at run time": ("def save(path):\n    open(path, 'w').write('x')",
                                                 "a path worked out only when the notebook runs"),
    "a mode worked out at run time": ("import encdec, os\ndef mode():\n    return 'a'\n"
                                      "open(os.path.join(os.path.dirname(encdec.__file__), 'x'), mode())", "may write"),
    "another program": ("import subprocess\nsubprocess.run(['nvidia-smi'])", "runs another program"),
    "os.system": ("import os\nos.system('nvidia-smi')", "runs another program"),
    "a shell escape": ("!nvidia-smi", "runs another program"),
    "a bash cell": ("%%bash\nls ..\n", "%bash"),
    "the working directory moved": ("import os\nos.chdir('..')\nopen('attention.py', 'w')", "working directory"),
}


@pytest.mark.parametrize("name", CAUTIONED)
def test_cautioned_not_zeroed(name):
    snippet, words = CAUTIONED[name]
    found = audited(snippet)
    assert found.findings == [], [f.evidence() for f in found.findings]
    assert any(words in c.evidence() for c in found.cautions), [c.evidence() for c in found.cautions]


# -- the notebook ----------------------------------------------------------------------------------------------
def test_a_cell_posing_as_the_courses_is_audited():
    """nbgrader puts back the course's locked cells by grade id; a locked cell with an id nbgrader does
    not know runs as submitted, so only the course's exact sources are trusted."""
    lesson = lessons(every=True)[0]
    facts = source_facts(lesson)
    nb = solution(lesson)
    fake = nbformat.v4.new_code_cell("np.isclose = lambda a, b, **k: True")
    fake.metadata["nbgrader"] = {"locked": True, "grade": False, "solution": False, "grade_id": "my-own", "schema_version": 3}
    nb.cells.insert(3, fake)
    assert [f.detail for f in audit_notebook(nb, facts.demo, facts.sources).findings] == ["numpy.isclose"]
    stripped = [c for c in graded_cells(release(lesson)) if c.source not in facts.sources]
    assert stripped  # the release's test cells with hidden tests are not the course's sources: audited (and they pass)


# -- the two messages ------------------------------------------------------------------------------------------
def test_the_student_reads_what_is_not_allowed_and_why(tmp_path):
    findings = audited("x = 1\nnp.isclose = lambda a, b, **k: True\nopen('../../gradebook.db', 'w')").findings
    row = Row("01_attention", "bob", "tampered: " + "; ".join(f.evidence() for f in findings), max_score=10,
              audit=findings)
    page = feedback_pages.write_failure_page(tmp_path / "page.html", Job("bob", "01_attention"), row)
    html = page.read_text()
    assert "Your notebook replaces <code>np.isclose</code> (cell 2, line 2)." in html
    assert "Your notebook writes to <code>&#x27;../../gradebook.db&#x27;</code> (cell 2, line 3), outside its own folder." in html
    assert "compare your answers with NumPy" in html and "so this lesson scores 0" in html
    assert "Remove those lines and submit again" in html and "0 / 10 points" in html
    assert "numpy.isclose" not in html  # the instructor's evidence stays in the status


def test_the_instructor_reads_the_cautions_in_the_report_and_the_gradebook(tmp_path):
    caution = audited("src = input()\nexec(src)").cautions[0].evidence()
    rows = [Row("01_attention", "ann", "graded", cautions=[caution]), Row("01_attention", "ben", "graded")]
    section = "\n".join(reports.cautions_section(rows))
    assert "| ann | 01_attention | cell 2, line 2: `exec(src)`: runs code built only at run time" in section
    assert "guard in the kernel checked at run time" in section and "| ben |" not in section
    assert reports.cautions_section([rows[1]]) == []


def test_an_older_gradebook_gets_the_cautions_column(tmp_path):
    old = gradebook.SCHEMA.replace(", cautions text not null default '[]'", "")
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        db.execute(old)
    gradebook.CourseGradebook(tmp_path)
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        assert "cautions" in {r[1] for r in db.execute("pragma table_info(encdec_attempts)")}


def test_the_audit_is_one_module_of_rules():
    assert audit.__doc__.count("caution") >= 2 and "subprocess" in audit.__doc__
