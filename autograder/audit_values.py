"""What an expression in a submission refers to: the static audit's reading of names (audit.py).

A name is followed through imports (`import numpy.linalg as la`, `from encdec import checks`), assignments
(`m = np`), `getattr` with a constant name, `importlib.import_module("numpy")`, `__import__`, `globals()[…]`,
`vars(m)`, `m.__dict__`, `sys.modules[…]`, literal lists and dicts and the loops over them, `eval` of a
constant, and a function's body as it stands where the function is defined. The student's own objects
(parameters, instances, whatever a call returns) are "local"; what only the run can tell (a computed
attribute name, a module imported by a computed name, `globals()[name]`, a frame) is "unknown".
"""

import ast
import builtins
import threading

from . import audit_paths as paths
from .audit_paths import GLOBALS, LOCAL, UNKNOWN, Val

GUARDED = {"numpy", "encdec", "torch", "builtins", "sys", "importlib", "gc", "math", "nbgrader", "IPython",
           "ipykernel", "jupyter_client", "traitlets", "types", "inspect", "copy", "functools", "contextlib",
           "traceback", "linecache", "numbers", "io", "re", "pkgutil", "ast", "dataclasses", "itertools", "operator"}
BUILTIN_NAMES = set(dir(builtins))
IMPORTERS = {"importlib.import_module", "builtins.__import__", "importlib.__import__"}
# modules known under a second name: what posix.fork is, os.fork is
CANONICAL = {"posix": "os", "nt": "os", "posixpath": "os.path", "ntpath": "os.path", "_signal": "signal",
             "_io": "io", "__builtin__": "builtins", "_imp": "importlib", "_ctypes": "ctypes"}


def canonical(name):
    top, dot, rest = (name or "").partition(".")
    return CANONICAL.get(top, top) + dot + rest


class Scope(dict):
    """Names -> Val. star: modules imported with *; opaque: exec's own namespace (unbound names unknown)."""

    def __init__(self, names=(), star=(), opaque=False):
        super().__init__(names)
        self.star, self.opaque = list(star), opaque


def guarded(v):
    return any(guarded(o) for o in v.data) if v.kind == "union" else (
        v.kind == "ref" and v.data.split(".")[0] in GUARDED)


def unknown(v):
    return v.kind == "unknown" or v.kind == "union" and any(unknown(o) for o in v.data)


def union(*vals):
    flat = tuple(dict.fromkeys(o for v in vals for o in (v.data if v.kind == "union" else (v,))))
    return flat[0] if len(flat) == 1 else Val("union", flat)


def const_str(v):
    return v.data if v.kind == "const" and isinstance(v.data, str) else None


# The grader audits submissions from several threads at once, and CPython 3.11 counts ast.parse's
# recursion depth in interpreter-wide state (gh-106905): two parses that overlap can fail with
# "SystemError: AST constructor recursion depth mismatch". One parse at a time.
_PARSING = threading.Lock()


def _parse(source, mode="exec", ipython=True):
    """The cell as IPython runs it (magics and `!cmd` become get_ipython() calls), parsed."""
    with _PARSING:
        if ipython:
            from IPython.core.inputtransformer2 import TransformerManager
            source = TransformerManager().transform_cell(source)
        return ast.parse(source, mode=mode), source


class Resolver(ast.NodeVisitor):
    """Binds names as the statements of a cell run, in self.scope; store() is called for every
    assignment and deletion (audit.py's rules)."""

    def store(self, target, node, verb, value=None):
        pass

    def lookup(self, name):
        if name in self.scope:
            return self.scope[name]
        if name == "__builtins__":
            return Val("ref", "builtins")
        if name in BUILTIN_NAMES:
            return Val("ref", f"builtins.{name}")
        if name == "get_ipython":
            return Val("ref", "IPython.get_ipython")
        if self.scope.opaque:
            return UNKNOWN
        return Val("ref", f"{self.scope.star[-1]}.{name}") if self.scope.star else LOCAL

    def ev(self, node):
        if isinstance(node, ast.Constant):
            return Val("const", node.value)
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.NamedExpr):
            return self.ev(node.value)
        if isinstance(node, ast.Attribute):
            return self.attr(self.ev(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return self.item(self.ev(node.value), self.ev(node.slice))
        if isinstance(node, ast.Call):
            return self.call_value(node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return Val("seq", tuple(enumerate(self.ev(e) for e in node.elts if not isinstance(e, ast.Starred))))
        if isinstance(node, ast.Dict):
            return Val("seq", tuple((k.value if isinstance(k, ast.Constant) else None, self.ev(v))
                                    for k, v in zip(node.keys, node.values)))
        if isinstance(node, ast.IfExp):
            return union(self.ev(node.body), self.ev(node.orelse))
        if isinstance(node, ast.BoolOp):
            return union(*map(self.ev, node.values))
        if isinstance(node, ast.JoinedStr):
            return paths.joined_string([self.ev(v.value) if isinstance(v, ast.FormattedValue) else self.ev(v)
                                        for v in node.values])
        if isinstance(node, ast.BinOp):
            left, right = self.ev(node.left), self.ev(node.right)
            if isinstance(node.op, ast.Div) and left.is_path:
                return paths.join([left, right], True)
            if isinstance(node.op, ast.Add) and (const_str(left) is not None or left.kind == "place"):
                return paths.joined_string([left, right])
        return LOCAL

    def attr(self, base, name):
        found = paths.path_attr(base, name)
        if found is not None:
            return found
        if name == "__dict__" or base.kind == "place" and name == "name":
            return base
        if base.kind == "ref":
            return Val("ref", f"{base.data}.{name}")
        if base.kind == "union":
            return union(*(self.attr(o, name) for o in base.data))
        return UNKNOWN if unknown(base) else LOCAL

    def item(self, base, key):
        k = key.data if key.kind == "const" else None
        if base.kind == "globals":
            return self.lookup(k) if isinstance(k, str) else UNKNOWN
        if base.kind == "ref" and base.data == "sys.modules":
            return Val("ref", canonical(k)) if isinstance(k, str) else UNKNOWN
        if base.kind == "ref":
            return Val("ref", f"{base.data}.{k if isinstance(k, str) else '?'}")
        if base.kind == "seq":
            picked = [v for key_, v in base.data if key_ == k] if k is not None else []
            return picked[0] if picked else union(LOCAL, *(v for _, v in base.data))
        if base.kind == "union":
            return union(*(self.item(o, key) for o in base.data))
        return base if base.kind == "place" else (UNKNOWN if unknown(base) else LOCAL)

    def call_value(self, node):
        args = [self.ev(a) for a in node.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.ev(k.value) for k in node.keywords if k.arg}
        func, receiver = node.func, None
        if isinstance(func, ast.Attribute):
            receiver = self.ev(func.value)
            made = paths.path_method(receiver, func.attr, args)
            if made is not None:
                return made
            if func.attr == "get" and args and (receiver.kind == "globals" or receiver == Val("ref", "sys.modules")):
                return self.item(receiver, args[0])
            if func.attr == "join" and const_str(receiver) is not None and args and args[0].kind == "seq" \
                    and all(const_str(v) is not None for _, v in args[0].data):
                return Val("const", receiver.data.join(v.data for _, v in args[0].data))
        f = self.attr(receiver, func.attr) if receiver is not None else self.ev(func)
        name = f.data if f.kind == "ref" else ""
        made = paths.path_call(name, args, kwargs)
        if made is not None:
            return made
        if name == "builtins.getattr" and len(args) >= 2:
            return self.attr(args[0], args[1].data) if const_str(args[1]) else (
                Val("ref", f"{args[0].data}.?") if args[0].kind == "ref" else (UNKNOWN if unknown(args[0]) else LOCAL))
        if name == "builtins.vars":
            return args[0] if args else GLOBALS
        if name in ("builtins.globals", "builtins.locals"):
            return GLOBALS
        if name in IMPORTERS:
            module = const_str(args[0]) if args else None
            full = name == "importlib.import_module" or "fromlist" in kwargs or len(args) > 3
            return Val("ref", canonical(module if full else module.split(".")[0])) if module else UNKNOWN
        if name == "builtins.eval":
            try:
                return self.ev(_parse(args[0].data, "eval", False)[0].body) if const_str(args[0]) else UNKNOWN
            except (SyntaxError, ValueError, IndexError):
                return LOCAL
        if name == "builtins.type" and args:
            return Val("ref", "builtins.type") if guarded(args[0]) else (UNKNOWN if unknown(args[0]) else LOCAL)
        if name in ("sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getmodule", "inspect.trace"):
            return UNKNOWN
        if name.endswith("get_ipython") or name.endswith(".instance") and name.split(".")[0] in ("IPython", "ipykernel"):
            return Val("ref", "IPython.shell")
        if name == "builtins.compile":
            return Val("code")
        return UNKNOWN if unknown(f) else LOCAL

    # -- bindings ---------------------------------------------------------------------------------------
    def assign(self, target, val):
        if isinstance(target, ast.Name):
            self.scope[target.id] = val
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = val.kind == "seq" and len(val.data) == len(target.elts) and \
                not any(isinstance(e, ast.Starred) for e in target.elts)
            for i, e in enumerate(target.elts):
                e = e.value if isinstance(e, ast.Starred) else e
                self.assign(e, val.data[i][1] if pairs else (UNKNOWN if unknown(val) or guarded(val) else LOCAL))
        elif isinstance(target, ast.Subscript) and self.ev(target.value).kind == "globals":
            key = const_str(self.ev(target.slice))
            if key:
                self.scope[key] = val

    def iterated(self, node):
        """What a loop's variable is: one of a literal list's elements, unknown over a namespace."""
        v = self.ev(node)
        if v.kind == "seq":
            return union(*(e for _, e in v.data)) if v.data else LOCAL
        reflective = any(isinstance(n, ast.Attribute) and n.attr in ("__dict__", "modules", "__subclasses__") or
                         isinstance(n, ast.Call) and self.ev(n.func).data in
                         ("builtins.vars", "builtins.dir", "builtins.globals", "builtins.locals")
                         for n in ast.walk(node))
        return UNKNOWN if reflective or unknown(v) or guarded(v) else LOCAL

    def visit_Import(self, node):
        for a in node.names:
            top = a.name.split(".")[0]
            self.scope[a.asname or top] = Val("ref", canonical(a.name if a.asname else top))

    def visit_ImportFrom(self, node):
        for a in node.names:
            if node.level:
                self.scope[a.asname or a.name] = LOCAL
            elif a.name == "*":
                self.scope.star.append(canonical(node.module))
            else:
                self.scope[a.asname or a.name] = Val("ref", canonical(f"{node.module}.{a.name}"))

    def visit_Assign(self, node):
        self.visit(node.value)
        val = self.ev(node.value)
        for t in node.targets:
            self.visit(t)
            self.store(t, node, "replaces", node.value)
            self.assign(t, val)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit_Assign(ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno,
                                         col_offset=node.col_offset, end_lineno=node.end_lineno,
                                         end_col_offset=node.end_col_offset))

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        self.store(node.target, node, "changes")
        if isinstance(node.target, ast.Name):
            self.scope[node.target.id] = self.ev(ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value))

    def visit_Delete(self, node):
        for t in node.targets:
            self.visit(t)
            self.store(t, node, "deletes")
            if isinstance(t, ast.Name):
                self.scope.pop(t.id, None)

    def visit_For(self, node):
        self.visit(node.iter)
        self.assign(node.target, self.iterated(node.iter))
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node):
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, self.ev(item.context_expr))
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.assign(node.target, self.ev(node.value))

    def _comprehension(self, node):
        for gen in node.generators:
            self.visit(gen.iter)
            self.assign(gen.target, self.iterated(gen.iter))
            for cond in gen.ifs:
                self.visit(cond)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _inner(self, args, body, own=()):
        """A function's or class's body, at its definition, in a scope of its own: its parameters and
        the names it assigns are its own objects until it binds them to something else."""
        outer, body = self.scope, body if isinstance(body, list) else [body]
        self.scope = Scope(outer, outer.star, outer.opaque)
        names = [a.arg for a in (args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]) if a] \
            if args else []
        for stmt in body:
            names += [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        for name in list(names) + list(own):
            self.scope[name] = LOCAL
        for stmt in body:
            self.visit(stmt)
        self.scope = outer

    def visit_FunctionDef(self, node):
        for part in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(part)
        self.scope[node.name] = LOCAL
        self._inner(node.args, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._inner(node.args, node.body)

    def visit_ClassDef(self, node):
        for part in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(part)
        self._inner(None, node.body)
        self.scope[node.name] = LOCAL
