"""Static audit of a submission, done outside the kernel before it runs: what it may not do.

Student code runs in the same Python process as the tests. What it does to the machine is the
sandbox's business (sandbox.py: the Python environment and the course library read-only, its own
scratch folder as working directory, /tmp in memory, no network, no other process); without the
sandbox, integrity.py finds and restores any change to the course's files. This audit protects the
grading itself and judges a statement by what it touches, never by the function it calls: setattr,
eval or open(…, "w") on the student's own objects and files are ordinary Python. Names are followed
through imports, aliases, getattr, globals(), importlib, vars() and loops over literals to what they
are (audit_values.py).

A finding zeroes the lesson (status `tampered: <cell, line, the code as written>`; the notebook never
runs). Found are:
- replacing or deleting an attribute or item of numpy, torch, encdec (the library and its checkers),
  builtins or the test machinery (sys, importlib, gc, math, IPython, nbgrader, and the standard
  modules the checkers use), by assignment, del, setattr/delattr, __setattr__, vars(m)[…] =,
  m.__dict__.update(…); changes to sys.modules;
- reaching into the interpreter or the machinery that runs the cells: sys.settrace/setprofile (the
  checkers use the profiler to catch delegation), sys.monitoring, sys.addaudithook, gc's object
  lists, ctypes, frames, importlib.reload of a course module, IPython's shell beyond running magics
  (input and AST transformers, events, results not displayed, %config of the shell: IPython reads
  each test cell's score from what it shows), calls into nbgrader or ipykernel;
- escaping how the grader runs and times the kernel: os._exit, os.kill, os.fork, signal handlers;
- writing where only the course can be (audit_paths.py): an absolute path outside /tmp, `..` out of
  the notebook's folder, the home folder, an installed module's folder, sys.prefix, … by open(),
  os.remove/rename, pathlib, shutil, sqlite3, np.save, torch.save or %%writefile.

A caution changes no score: the instructor sees it (report.md, the gradebook), the student does not.
It is a statement whose target is known only at run time (setattr or a store on something computed,
a module imported by a computed name, exec/eval/compile of a string built at run time, a write to a
path worked out at run time), which the guard in the kernel (encdec.checks.guard) checks as it
happens: if anything the checks rely on was replaced, every check scores 0 and names it. exec, eval
and compile of a constant string are audited like a cell. Running another program (subprocess,
os.system, `!cmd`, %%bash) is a caution too: a correct answer may call nvidia-smi in a GPU lesson;
the program runs in the kernel's sandbox (killed with the job, no network, the course read-only),
and without the sandbox integrity.py catches what it writes to the course. A bare import is never
a finding.
"""

import ast
import re

from . import audit_paths as paths
from .audit_paths import Val
from .audit_rules import (AS_VALUES, CODE, DISPLAY, FLAGGED_CALLS, FRAME_ATTRIBUTES, FRAMES,  # noqa: F401
                          MACHINERY, NAMESPACE_CHANGES, PROGRAMS, PYTHON_MAGICS, QUIET_MAGICS, SENSITIVE,
                          SETATTRS, SHELL, SHELL_METHODS, VERBS, Audit, Finding)
from .audit_values import IMPORTERS, Resolver, Scope, _parse, const_str, guarded, unknown


def named(v):
    """The dotted name of a guarded value (of its first guarded option)."""
    return v.data if v.kind == "ref" else next(named(o) for o in v.data if guarded(o))


def shell(v):
    return any(shell(o) for o in v.data) if v.kind == "union" else (
        v.kind == "ref" and v.data.startswith("IPython.shell"))


class _State:
    def __init__(self):
        self.scope, self.moved, self.audit, self.deferred = Scope(), False, Audit(), []


class _Auditor(Resolver):
    def __init__(self, state, cell, source, tree, quiet=False, origin=None, depth=0, written=None):
        self.state, self.scope, self.cell, self.source = state, state.scope, cell, source
        self.written = (written or source).splitlines()  # the cell as the student wrote it (magics and all)
        self.quiet, self.origin, self.depth = quiet, origin, depth  # origin: (line, code) of an exec'd string
        self.direct = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)} | \
            {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)}  # called, or bound to a name

    # -- reporting ------------------------------------------------------------------------------------
    def text(self, node):
        text = " ".join((ast.get_source_segment(self.source, node) or ast.unparse(node)).split())
        return text if len(text) <= 90 else text[:87] + "…"

    def shown(self, node):
        """(line, the code as written): a magic's own line (%%writefile ../x.py), not IPython's call for it."""
        line, code = getattr(node, "lineno", 0), self.text(node)
        if "get_ipython()" in code and 0 < line <= len(self.written):
            code = self.written[line - 1].strip()
        return line, code

    def report(self, node, kind, subject, detail="", verb=""):
        if self.quiet:
            return
        line, code = self.origin or self.shown(node)
        into = self.state.audit.cautions if kind == "caution" else self.state.audit.findings
        same = (lambda f: (f.cell, f.line, f.subject) == (self.cell, line, subject)) if kind == "caution" else \
            (lambda f: (f.cell, f.line, f.kind) == (self.cell, line, kind))  # one finding of a kind per line
        if not any(same(f) for f in into):
            into.append(Finding(self.cell, line, code, kind, subject, detail, verb))

    # -- the rules --------------------------------------------------------------------------------------
    def store(self, target, node, verb, value=None):
        """`m.attr = …`, `m[k] = …`, `del m.attr` and the like on a guarded object."""
        if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            for e in (target.elts if not isinstance(target, ast.Starred) else [target.value]):
                self.store(e, node, verb, None)
            return
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return
        base = self.ev(target.value)
        if guarded(base):
            if base.kind == "ref" and base.data.startswith("torch.backends") and isinstance(value, ast.Constant):
                return  # a setting (torch.backends.cudnn.deterministic = True), not a replacement
            key = target.attr if isinstance(target, ast.Attribute) else const_str(self.ev(target.slice))
            where = named(base)
            self.report(node, "replaces", self.text(target), f"{where}.{key}" if key else f"{where}[…]", verb)
        elif unknown(base):
            self.report(node, "caution", f"{verb} an attribute or item of an object chosen at run time")

    def target(self, node, target, name=None, deleting=False):
        """setattr(target, name, …) and its kind."""
        t = self.ev(target)
        attr = const_str(self.ev(name)) if name is not None else None
        if guarded(t):
            where = named(t)
            self.report(node, "replaces", f"{self.text(target)}.{attr or '…'}", f"{where}.{attr or '…'}",
                        "deletes" if deleting else "replaces")
        elif unknown(t):
            verb = "delattr" if deleting else "setattr"
            self.report(node, "caution", f"{verb} on an object chosen at run time")

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            return
        v = self.lookup(node.id)
        if v.kind == "ref" and v.data.split(".")[0] in ("ctypes", "_ctypes"):
            self.report(node, "internals", "ctypes", v.data)
        if v.kind == "ref" and v.data in AS_VALUES and id(node) not in self.direct:
            self.report(node, "caution", f"passes {node.id} on as a value: what it is applied to is known only at run time")

    def visit_Call(self, node):
        self.generic_visit(node)
        func, args = node.func, node.args
        method = func.attr if isinstance(func, ast.Attribute) else None
        receiver = self.ev(func.value) if method else None
        f = self.attr(receiver, method) if method else self.ev(func)
        name = f.data if f.kind == "ref" else ""
        if name in SETATTRS and args:
            self.target(node, args[0], args[1] if len(args) > 1 else None, SETATTRS[name])
        if method in ("__setattr__", "__delattr__"):
            unbound = len(args) == (3 if method == "__setattr__" else 2)
            self.target(node, args[0] if unbound else func.value, args[1 if unbound else 0] if args else None,
                        method == "__delattr__")
        if method in NAMESPACE_CHANGES and guarded(receiver) and not str(receiver.data).startswith(("sys.path", "sys.argv")):
            self.report(node, "replaces", self.text(func.value), str(receiver.data))
        if name.split(".")[0] in MACHINERY and not name.startswith(DISPLAY) or name in FRAMES:
            self.report(node, "internals", self.text(func), name)
        for value in args + [k.value for k in node.keywords]:
            self.leak(value)
        for kind, names in FLAGGED_CALLS.items():
            if name in names or kind == "internals" and name.startswith("sys.monitoring."):
                self.report(node, kind, self.text(func), name)
        if name in CODE:
            self.code(node, name)
        elif name in IMPORTERS and args and const_str(self.ev(args[0])) is None:
            self.report(node, "caution", "imports a module whose name is known only at run time")
        elif name in ("importlib.reload", "imp.reload") and args:
            module = self.ev(args[0])
            if guarded(module):
                self.report(node, "internals", self.text(args[0]), module.data, "reloads")
            elif unknown(module):
                self.report(node, "caution", "reloads a module chosen at run time")
        elif name.startswith(PROGRAMS):
            self.report(node, "caution", "runs another program (contained by the sandbox)")
        elif name == "builtins.getattr" and len(args) > 1 and const_str(self.ev(args[1])) in FRAME_ATTRIBUTES:
            self.report(node, "internals", self.text(node), "a frame of the running code")  # as `x.tb_frame` is
        elif name == "builtins.getattr" and len(args) > 1 and const_str(self.ev(args[1])) is None:
            module = str(self.ev(args[0]).data).split(".")[0]
            if module in SENSITIVE:
                self.report(node, "caution", f"reaches a function of {module} named only at run time")
        elif name.endswith(".?") and name.split(".")[0] in SENSITIVE:
            self.report(node, "caution", f"reaches a function of {name.split('.')[0]} named only at run time")
        elif name == "os.chdir" and args:
            self.chdir(node, self.ev(args[0]))
        elif name in ("IPython.shell.run_line_magic", "IPython.shell.run_cell_magic"):
            self.magic(node, name)
        self.writes(node, receiver, name)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if shell(self.ev(node.value)) and node.attr not in SHELL_METHODS:
            self.report(node, "internals", self.text(node), SHELL)
        if node.attr in FRAME_ATTRIBUTES:
            self.report(node, "internals", self.text(node), "a frame of the running code")

    def leak(self, node):
        """The shell passed on, returned or put in a container: what receives it is not known here."""
        if node is not None and shell(self.ev(node)):
            self.report(node, "internals", self.text(node), SHELL)

    def visit_Return(self, node):
        self.generic_visit(node)
        self.leak(node.value)

    visit_Yield = visit_YieldFrom = visit_Return

    def _elements(self, node):
        self.generic_visit(node)
        for e in getattr(node, "elts", []) + getattr(node, "values", []):
            self.leak(e)

    visit_List = visit_Tuple = visit_Set = visit_Dict = _elements

    def visit_FunctionDef(self, node):
        if self.scope is self.state.scope and not self.quiet and not self.origin:
            self.state.deferred.append((self, node))  # read again with the notebook's last bindings
        super().visit_FunctionDef(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def code(self, node, name):
        """exec, eval, compile: a constant string is audited like a cell, anything else is a caution."""
        a, kw = node.args, {k.arg: k.value for k in node.keywords if k.arg}
        source = a[0] if a else kw.get("source")
        if source is None or self.ev(source).kind == "code":
            return  # exec(compile(…)): compile's own audit
        text, mode = const_str(self.ev(source)), CODE[name]
        if name == "builtins.compile":
            mode = const_str(self.ev(a[2])) if len(a) > 2 else const_str(self.ev(kw.get("mode", ast.Constant("exec"))))
        if text is None:
            self.report(node, "caution", "runs code built only at run time, which the audit cannot read")
            return
        namespace = (a[1] if len(a) > 1 else kw.get("globals")) if name != "builtins.compile" else None
        scope = self.scope if namespace is None or self.ev(namespace).kind != "globals" else self.state.scope
        if isinstance(namespace, ast.Dict):  # its names are what the dict binds
            scope = Scope({k.value: self.ev(v) for k, v in zip(namespace.keys, namespace.values)
                           if isinstance(k, ast.Constant)}, opaque=True)
        elif namespace is not None and self.ev(namespace).kind != "globals" and \
                not (isinstance(namespace, ast.Constant) and namespace.value is None):
            scope = Scope(opaque=True)
        self.nested(text, mode or "exec", node, scope)

    def nested(self, text, mode, node, scope=None, ipython=False):
        if self.depth > 5:
            return
        try:
            tree, source = _parse(text, mode, ipython)
        except (SyntaxError, ValueError):
            return  # it fails when it runs
        outer, self.state.scope = self.state.scope, scope if scope is not None else self.scope
        origin = self.origin or self.shown(node)
        _Auditor(self.state, self.cell, source, tree, self.quiet, origin, self.depth + 1).visit(tree)
        self.state.scope = outer

    def chdir(self, node, where):
        if paths.place(where, self.state.moved)[0] != "scratch":
            self.state.moved = True  # relative paths from now on are not known to be the notebook's folder
            self.report(node, "caution", "changes the working directory away from the notebook's folder")

    def magic(self, node, name):
        """%cd, %%writefile, %%time … as IPython runs them (get_ipython().run_line_magic(…))."""
        args = [const_str(self.ev(a)) for a in node.args]
        if not args or args[0] is None:
            return
        magic, line = args[0], (args[1] if len(args) > 1 else None) or ""
        if magic == "cd":
            self.chdir(node, Val("const", line.strip() or "~"))
        elif magic == "config" and re.search(r"Shell|Kernel|Formatter|Display|ast_node|Application|Session|Hook", line):
            self.report(node, "internals", f"%config {line}", SHELL)
        elif magic in ("writefile", "file"):
            path = " ".join(w for w in line.split() if w not in ("-a", "--append"))
            self.write(node, Val("const", path), True, path)
        elif magic in PYTHON_MAGICS:
            body = args[2] if len(args) > 2 else line
            if body:
                self.nested(body, "exec", node, ipython=True)
        elif magic in ("run", "sx", "system", "sc", "save", "logstart", "store", "load") or \
                name.endswith("cell_magic") and magic not in QUIET_MAGICS:
            self.report(node, "caution", f"the magic %{magic}: what it runs is not read by the audit")

    def writes(self, node, receiver, name):
        """open() for writing, os.remove, shutil, np.save, torch.save, pathlib's write_text…"""
        for path, writing in paths.written(node, name, receiver, self.ev):
            if writing is not False:
                self.write(node, self.ev(path), writing, self.text(path))

    def write(self, node, value, certain, shown):
        if value.kind == "stream":
            return
        kind, why = paths.place(value, self.state.moved)
        if kind == "outside" and certain:
            self.report(node, "writes", shown, why)
        elif kind != "scratch":
            self.report(node, "caution", f"{'writes' if certain else 'may write'} to {why}")


def audit_cells(cells):
    """cells: (label, source) or (label, source, trusted) in the order they run; a trusted cell (the
    course's own) only binds names. Returns an Audit: its findings zero the lesson, its cautions are
    for the instructor."""
    state = _State()
    for label, source, *trusted in cells:
        try:
            tree, text = _parse(source)
        except (SyntaxError, ValueError):
            continue  # it will fail when run; that costs its own points
        _Auditor(state, label, text, tree, quiet=bool(trusted and trusted[0]), written=source).visit(tree)
    for auditor, node in state.deferred:  # a function runs when called: its free names may be bound later
        auditor.scope = state.scope
        auditor._inner(node.args, node.body)
    return state.audit


def audit_notebook(nb, skip_ids=(), trusted_sources=()):
    """Audit the code cells that will run: every one but the skipped (demo) cells. A cell whose source
    is exactly one of the course's own (setup and test cells) only binds names: its imports count
    (`np` in an answer is the setup cell's NumPy). A locked or graded cell is audited like any other
    unless its source is the course's: nbgrader puts back the course's test cells, but a cell whose
    grade id it does not know runs as it was submitted."""
    cells = [(f"cell {i + 1}", c.source, c.source in trusted_sources) for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and c.get("id") not in skip_ids]
    return audit_cells(cells)
