"""What the audit of a submission looks for (audit.py applies it): the modules, calls and
attributes it flags, and the shape of what it finds (Finding, Audit)."""

from dataclasses import dataclass, field

SENSITIVE = {"os", "signal", "sys", "gc", "importlib", "builtins", "subprocess", "shutil", "ctypes", "threading"}
FLAGGED_CALLS = {
    "process": {"os._exit", "os.kill", "os.killpg", "os.fork", "os.forkpty", "signal.signal", "signal.setitimer",
                "signal.alarm", "signal.pthread_kill", "signal.pthread_sigmask", "signal.siginterrupt"},
    "internals": {"sys.settrace", "sys.setprofile", "threading.settrace", "threading.setprofile",
                  "threading.settrace_all_threads", "threading.setprofile_all_threads", "sys.addaudithook",
                  "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._clear_type_cache"}}
PROGRAMS = ("subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn", "pty.spawn",
            "IPython.shell.system", "IPython.shell.getoutput")
SETATTRS = {"builtins.setattr": False, "builtins.delattr": True}
CODE = {"builtins.exec": "exec", "builtins.eval": "eval", "builtins.compile": "exec", "IPython.shell.run_cell": "exec",
        "IPython.shell.ex": "exec", "IPython.shell.ev": "eval"}
NAMESPACE_CHANGES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
# IPython runs the cells and reads each test cell's score from its output: its shell object may run
# magics and nothing else; the test machinery's modules are not called (IPython's display aside)
SHELL_METHODS = {"run_line_magic", "run_cell_magic", "magic", "system", "getoutput", "run_cell", "ex", "ev", "user_ns"}
MACHINERY = {"IPython", "ipykernel", "jupyter_client", "nbgrader", "traitlets", "zmq"}
DISPLAY = ("IPython.display.", "IPython.core.display.", "IPython.lib.display.", "IPython.get_ipython",
           "IPython.core.getipython.get_ipython", "IPython.shell.")
FRAMES = {"sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes", "inspect.getinnerframes",
          "inspect.trace"}
FRAME_ATTRIBUTES = {"f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}
SHELL = "the IPython shell, which runs the cells and reads their scores"
PYTHON_MAGICS, QUIET_MAGICS = {"capture", "time", "timeit", "prun"}, {"html", "javascript", "js", "latex", "markdown",
                                                                      "svg", "HTML", "SVG", "md", "writefile", "file"}
AS_VALUES = {"builtins.setattr", "builtins.delattr", "builtins.exec", "builtins.eval", "builtins.compile",
             "builtins.__import__"}


@dataclass(frozen=True)
class Finding:
    """One statement the audit found: where, the code as written, and what it touches. kind:
    "replaces", "internals", "process" or "writes" for a finding, "caution" for a caution."""

    cell: str  # "cell 7"
    line: int
    code: str  # the statement or call as written, on one line
    kind: str
    subject: str  # what it touches, as written (`np.isclose`, the path), or for a caution what it does
    detail: str = ""  # what it resolved to (numpy.isclose, why a path is outside)
    verb: str = ""  # replaces, deletes, changes (else VERBS[kind])

    @property
    def where(self):
        return f"{self.cell}, line {self.line}"

    def evidence(self):
        if self.kind == "caution":
            return f"{self.where}: `{self.code}`: {self.subject}"
        return f"{self.where}: `{self.code}` {self.verb or VERBS[self.kind]} {self.detail or self.subject}"


VERBS = {"replaces": "changes", "internals": "uses", "process": "calls", "writes": "writes to"}


@dataclass
class Audit:
    findings: list = field(default_factory=list)  # each zeroes the lesson
    cautions: list = field(default_factory=list)  # for the instructor; checked at run time by the guard
