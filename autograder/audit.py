"""Static audit of a submission, done outside the kernel before it runs.

Student code runs in the same Python process as the tests, so a notebook could rewrite what
the tests rely on (`np.allclose = lambda *a, **k: True`, a replaced checker, an edited
reference function, a fake module in sys.modules) or write to files it should not touch.
This audit reads the code cells that will be executed and reports such statements. A notebook
with a finding scores zero for that lesson; the report says what was found and where.

It flags:
- assigning to, or deleting, an attribute or item of numpy, encdec, builtins, sys, importlib,
  gc, math, torch, nbgrader or IPython (directly or through an alias, e.g. `np.isclose = ...`);
- setattr/delattr on those modules; anything touching `sys.modules`, `sys.setprofile`,
  `sys.settrace`, `builtins`, `__builtins__`, `gc.get_objects`/`get_referrers`, `ctypes`;
- exec, eval, compile and __import__ (which would hide the above from this audit);
- importlib.reload of course modules;
- writing files (open(..., "w"/"a"/"x"/"+"), os.remove, shutil, sqlite3, Path.write_*),
  and signal handlers (used to ignore the grader's interrupt).
"""

import ast
import re
import threading

GUARDED = {"numpy", "encdec", "builtins", "sys", "importlib", "gc", "math", "torch", "nbgrader", "IPython"}
FORBIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "setattr", "delattr"}
WRITE_CALLS = {("os", "remove"), ("os", "unlink"), ("os", "rename"), ("os", "replace"), ("os", "rmdir"),
               ("os", "system"), ("os", "kill"), ("os", "_exit"), ("signal", "signal"),
               ("subprocess", "run"), ("subprocess", "Popen"), ("subprocess", "call"),
               ("sqlite3", "connect")}
FORBIDDEN_MODULES = {"ctypes", "shutil", "sqlite3", "subprocess", "signal"}


# The grader audits submissions from several threads at once, and CPython 3.11 counts ast.parse's
# recursion depth in interpreter-wide state (gh-106905): two parses that overlap can fail with
# "SystemError: AST constructor recursion depth mismatch". One parse at a time.
_PARSING = threading.Lock()


def _parse(source):
    with _PARSING:
        return ast.parse(_strip_magics(source))


def _strip_magics(source):
    """IPython magics and shell escapes are not Python: drop those lines before parsing."""
    return "\n".join("" if re.match(r"\s*[%!]", line) else line for line in source.splitlines())


class _Auditor(ast.NodeVisitor):
    def __init__(self, aliases):
        self.aliases = aliases  # local name -> top-level package it refers to
        self.findings = []

    def flag(self, node, what):
        self.findings.append((getattr(node, "lineno", 0), what))

    def root(self, node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def guarded(self, node):
        name = self.root(node)
        return name is not None and (self.aliases.get(name) in GUARDED or name in ("__builtins__",))

    def visit_Import(self, node):
        for a in node.names:
            top = a.name.split(".")[0]
            self.aliases[(a.asname or a.name).split(".")[0] if not a.asname else a.asname] = top
            if top in FORBIDDEN_MODULES:
                self.flag(node, f"imports {a.name}")
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        top = (node.module or "").split(".")[0]
        for a in node.names:
            self.aliases[a.asname or a.name] = top
        if top in FORBIDDEN_MODULES:
            self.flag(node, f"imports from {node.module}")
        if top == "importlib" and any(a.name == "reload" for a in node.names):
            self.flag(node, "imports importlib.reload")
        self.generic_visit(node)

    def _targets(self, node, targets):
        """Flag `module.attr = ...` and `module.attr[...] = ...`; an index that merely reads a
        module (`d[np.sqrt(2)] = ...`) is fine."""
        for t in targets:
            for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                e = e.value if isinstance(e, ast.Starred) else e
                if isinstance(e, (ast.Tuple, ast.List)):
                    self._targets(node, [e])
                elif isinstance(e, (ast.Attribute, ast.Subscript)) and self.guarded(e):
                    self.flag(node, f"modifies {ast.unparse(e)}")

    def visit_Assign(self, node):
        self._targets(node, node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._targets(node, [node.target])
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._targets(node, [node.target])
        self.generic_visit(node)

    def visit_Delete(self, node):
        self._targets(node, node.targets)
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else None
        if name in FORBIDDEN_CALLS:
            self.flag(node, f"calls {name}()")
        if isinstance(f, ast.Attribute):
            base = self.root(f)
            pair = (self.aliases.get(base, base), f.attr)
            if pair in WRITE_CALLS:
                self.flag(node, f"calls {ast.unparse(f)}()")
            if f.attr in ("reload",) and self.aliases.get(base) == "importlib":
                self.flag(node, "calls importlib.reload()")
            if f.attr in ("get_objects", "get_referrers") and self.aliases.get(base) == "gc":
                self.flag(node, f"calls gc.{f.attr}()")
            if f.attr in ("setprofile", "settrace") and self.aliases.get(base) == "sys":
                self.flag(node, f"calls sys.{f.attr}()")
            if f.attr in ("write_text", "write_bytes", "unlink", "rmdir", "rename", "touch", "mkdir"):
                self.flag(node, f"writes files ({ast.unparse(f)}())")
        if name == "open" or (isinstance(f, ast.Attribute) and f.attr == "open"):
            mode = None
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                mode = node.args[1].value
            for kw in node.keywords:
                if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
                    mode = kw.value.value
            if isinstance(mode, str) and re.search(r"[wax+]", mode):
                self.flag(node, f"opens a file for writing ({ast.unparse(node)[:60]})")
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr == "modules" and self.aliases.get(self.root(node)) == "sys":
            self.flag(node, "touches sys.modules")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == "__builtins__":
            self.flag(node, "touches __builtins__")
        self.generic_visit(node)


def audit_cells(cells):
    """cells: list of (label, source). Returns a list of 'label, line N: what' findings."""
    aliases = {}
    findings = []
    for label, source in cells:
        try:
            tree = _parse(source)
        except SyntaxError:
            continue  # it will fail when run; that costs its own points
        auditor = _Auditor(aliases)
        auditor.visit(tree)
        aliases = auditor.aliases  # imports carry over to later cells, as in the kernel
        findings += [f"{label}, line {line}: {what}" for line, what in auditor.findings]
    return findings


def audit_notebook(nb, skip_ids=(), trusted_sources=()):
    """Audit the code cells that will run: not the skipped (demo) cells, and not cells whose
    source is exactly one of the course's own (setup and test cells are restored by nbgrader)."""
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or cell.get("id") in skip_ids or cell.source in trusted_sources:
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") or meta.get("locked"):
            continue  # nbgrader replaces these with the course's own source before running
        cells.append((f"cell {i + 1}", cell.source))
    return audit_cells(cells)
