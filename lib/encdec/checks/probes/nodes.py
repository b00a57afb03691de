"""What the repair's edits (edits.py, moves.py, arithmetic.py) share: the Edit record, reading an answer's
syntax tree (a node's text, the int it writes, a call's axis arguments, the array a reduction reduces) and
putting a new node where an old one sits.

Each kind of edit is a generator `kind(index, node, function)` of Edit(index, kind, apply, said, why):
`apply(node, function)` changes the node at `index` (in `ast.walk` order) of a copy of the function's tree,
in place, and returns False when the edit does not apply there; `said` says what changes, in the student's
code; `why` says why that is the usual slip.
"""

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass

from .base import quiet

_REDUCTIONS = {"sum", "mean", "max", "min", "amax", "amin", "var", "std", "logsumexp", "prod", "all", "any"}
_JOINS = {"concatenate", "stack", "cat", "hstack", "vstack"}
_AXIS_WORDS = ("axis", "dim", "axes")
_NOT_WRAPPERS = {"len", "range", "int", "float", "tuple", "list", "enumerate", "zip", "print", "isinstance", "abs",
                 "asarray", "array", "float64", "copy", "sum", "max", "min"}


@dataclass
class Edit:
    index: int
    kind: str
    apply: object
    said: str
    why: str
    lineno: int = 0


def _text(node):
    try:
        return ast.unparse(node)
    except Exception:
        return "?"


def _atom(node):
    """The node's text, in parentheses where an attribute after it would bind to a part of it."""
    text = _text(node)
    return text if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)) else f"({text})"


def _const_int(node):
    """The int a node writes (3, -1), or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _parameters(fdef):
    """The names of a function's parameters, `self` left out."""
    return [a.arg for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs) if a.arg != "self"]


def _int_node(k):
    return ast.UnaryOp(ast.USub(), ast.Constant(-k)) if k < 0 else ast.Constant(k)


def _callee(call):
    """'sum' for np.sum(...), x.sum(...) and sum(...)."""
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _axis_slots(call):
    """[(getter, setter, the value node)] of the call's axis arguments: axis=/dim= keywords, and the second
    positional argument of a join or of np.<reduction>(x, k), the first of x.<reduction>(k)."""
    slots = []
    for kw in call.keywords:
        if kw.arg in _AXIS_WORDS:
            slots.append(kw)
    name = _callee(call)
    module_call = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
        and call.func.value.id in ("np", "numpy", "torch")
    position = None
    if name in _JOINS or (name in _REDUCTIONS and module_call) or name in ("softmax", "log_softmax", "swapaxes"):
        position = 1
    elif name in _REDUCTIONS and isinstance(call.func, ast.Attribute):
        position = 0
    if position is not None and len(call.args) > position and _const_int(call.args[position]) is not None:
        slots.append(position)
    return slots


def _reduced(call):
    """The array a reduction reduces: its first argument (np.sum(x, ...)) or its owner (x.sum(...))."""
    module_call = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
        and call.func.value.id in ("np", "numpy", "torch")
    if module_call or isinstance(call.func, ast.Name):
        return call.args[0] if call.args else None
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def _inside_unary(fdef, node):
    return any(isinstance(p, ast.UnaryOp) and p.operand is node for p in ast.walk(fdef))


def _axis_values(fdef):
    """The ids of the nodes that are axis arguments (the axis edits try those)."""
    ids = set()
    for call in (n for n in ast.walk(fdef) if isinstance(n, ast.Call)):
        for slot in _axis_slots(call):
            value = slot.value if isinstance(slot, ast.keyword) else call.args[slot]
            ids |= {id(v) for v in ast.walk(value)}
    return ids


# -- where a node sits -----------------------------------------------------------------------------------
def _parent(tree, child):
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            if value is child or isinstance(value, list) and any(v is child for v in value):
                return node
    return None


def _replace_child(parent, old, new):
    """Put `new` where `old` is among `parent`'s fields; False when it is not there."""
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return True
        if isinstance(value, list):
            for k, v in enumerate(value):
                if v is old:
                    value[k] = new
                    return True
    return False


def replaced(tree, old, new):
    """Put `new` where `old` sits in `tree`; False when it is not there."""
    parent = _parent(tree, old)
    return parent is not None and _replace_child(parent, old, new)


def operator_edit(i, node, new, old_text, new_text, why):
    """The edit that puts the operator `new` (an ast class) in place of the binary operation's own."""
    def apply(n, tree):
        n.op = new()
        return True
    return Edit(i, "operator", apply, f"`{new_text}` in place of `{old_text}` in `{_text(node)}`", why)


def function_of(frame):
    """The syntax tree of the function a frame runs, its lines numbered as in its file, or None."""
    try:
        lines, start = inspect.getsourcelines(frame.f_code)
        module = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    ast.increment_lineno(module, max(start, 1) - 1)
    return module


_NUMBERED = re.compile(r"^(.*?)(\d)(.*)$")


def numbered_siblings(name):
    """The names alike with another digit 1-3 in the place of its digit (`norm1_gamma`, `norm3_gamma` for
    `norm2_gamma`); [] for a name without one."""
    match = _NUMBERED.match(name)
    return [f"{match.group(1)}{d}{match.group(3)}" for d in "123" if d != match.group(2)] if match else []


def unread_siblings(name, fdef):
    """numbered_siblings(name) that no attribute of the function reads (`norm2_gamma` where the code reads
    `norm1_gamma` and `norm3_gamma`): the one whose place `name` took."""
    read = {a.attr for a in ast.walk(fdef) if isinstance(a, ast.Attribute)}
    return [other for other in numbered_siblings(name) if other not in read]


_PLAIN = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator,
          ast.unaryop)
NO_VALUE = object()


def value_in_frame(node, frame):
    """The value of an expression made of names, attributes, indices, numbers and arithmetic (`x + attn`,
    `tgt.shape[1]`) in a frame (a failing one); NO_VALUE where it calls anything or fails."""
    if not all(isinstance(n, _PLAIN) for n in ast.walk(node)):
        return NO_VALUE
    try:
        with quiet():
            return eval(compile(ast.Expression(node), "<argument>", "eval"), dict(frame.f_globals), dict(frame.f_locals))
    except Exception:
        return NO_VALUE
