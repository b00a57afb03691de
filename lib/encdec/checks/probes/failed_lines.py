"""Errors that are not about two shapes meeting, read from the student's failing line like shapes.py reads a
shape error: an index written for one sequence (indexing.py: more axes than the array has, a boolean index of
a batch, a gather with np.arange), a slice assigned
a value of another length (an odd size split in halves), None used as an array (an optional argument not
given), a tuple used as an array (a call that returns two values, not unpacked), axes written out for one
batch axis (np.transpose(K, (0, 2, 1))), an array used as a condition (`if mask:`), and an in-place
operation whose result must grow (`mask += causal`). Each names the
variable, its shape or value, and the usual cause, in the student's names. Always on, after the repair.
"""

import ast
import re

from .base import Probe
from .failing import _failed, failing_line
from .indexing import INDEXING_PROBES
from .nodes import function_of
from .shapes import _resolve


_INTO = re.compile(r"could not broadcast input array from shape \(([\d, ]*)\) into shape \(([\d, ]*)\)")


def _slice_count(s, size):
    try:
        return len(range(size)[slice(*(None if p is None else int(ast.literal_eval(ast.unparse(p)))
                                       for p in (s.lower, s.upper, s.step)))])
    except Exception:
        return None


class SliceAssignment(Probe):
    """`PE[:, 1::2] = np.cos(angles)` where the value has one column more than the slice: with an odd size,
    `0::2` takes one entry more than `1::2`."""

    kind = "slice_assignment"

    def find(self, attempt, probes):
        exc = attempt.error
        match = _INTO.search(str(exc)) if isinstance(exc, ValueError) else None
        found = failing_line(exc) if match else None
        if found is None:
            return None
        frame, line, tree = found
        value_shape = tuple(int(x) for x in match.group(1).replace(" ", "").split(",") if x)
        target_shape = tuple(int(x) for x in match.group(2).replace(" ", "").split(",") if x)
        assign = next((n for n in ast.walk(tree) if isinstance(n, ast.Assign)), None)
        target = assign.targets[0] if assign is not None else None
        if not isinstance(target, ast.Subscript):
            return None
        base = _resolve(target.value, frame)
        if base is None:
            return None
        elts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        said = (f"`{ast.unparse(target)}` has shape {target_shape} and the value written into it has shape "
                f"{value_shape}. ")
        for axis, e in enumerate(elts):
            if isinstance(e, ast.Slice) and e.step is not None and axis < base.ndim:
                size = base.shape[axis]
                count = _slice_count(e, size)
                if count is not None and size % 2 == 1:
                    said += (f"Along axis {axis} (size {size}, odd), `{ast.unparse(e)}` takes {count} entries: with an "
                             f"odd size, `0::2` takes {(size + 1) // 2} and `1::2` takes {size // 2}. Make the value as "
                             "long as the slice it fills (compute it for that slice's own positions, or cut it).")
                    return self.finding(attempt, "odd_size", said)
        said += "Make the value the shape of the slice it fills (count what each slice takes)."
        return self.finding(attempt, "shapes", said)


class NoneOperand(Probe):
    """`scores + mask` with mask=None: an optional argument used without checking that it was given."""

    kind = "none"

    def find(self, attempt, probes):
        found = _failed(attempt, (TypeError, AttributeError), "NoneType")
        if found is None:
            return None
        frame, line, tree = found
        code = frame.f_code
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        for node in _none_names(tree, frame, attempt.error):
                if node.id in params and not _defaults_to_none(frame, node.id):
                    return self.finding(attempt, "none_argument", (
                        f"`{node.id}` is None here: the call passed None for it, and `{line.removeprefix('return ')}` "
                        "cannot use None as an array. Look at what the caller gives: a value not made yet (a cache's "
                        "entry before its first append, a list's placeholder), or the result of something that "
                        "returns nothing."))
                if node.id in params:
                    return self.finding(attempt, "optional_argument", (
                        f"`{node.id}` is None here (the call gave no {node.id}: None is its default), and "
                        f"`{line.removeprefix('return ')}` cannot use None as an array. Use it only when it is given: "
                        f"`if {node.id} is not None: ...`."))
                return self.finding(attempt, "none_value", (
                    f"`{node.id}` is None on that line: it was made by something that returns nothing (a function "
                    "without `return`, or a method that works in place, such as list.sort)."))
        return None


class UndefinedCourseName(Probe):
    """`split_heads(...)` in a lesson whose notebook does not define it: a helper of the course library (or of another
    lesson) that the answer's notebook never imports."""

    kind = "undefined"

    def find(self, attempt, probes):
        exc = attempt.error
        said = re.search(r"name '(\w+)' is not defined", str(exc)) if isinstance(exc, NameError) else None
        if said is None:
            return None
        import encdec
        name = said.group(1)
        if name.startswith("_") or not callable(getattr(encdec, name, None)):
            return None
        return self.finding(attempt, name, (
            f"`{name}` is not defined where your code runs: it is a helper of the course, and a notebook sees only "
            "what its own cells define or import when they run. Write that step in your answer, or define "
            f"`{name}` in the same cell."))


def _defaults_to_none(frame, name):
    """True when the parameter `name` of the failing function has the default None (read from its source); True
    too where the source cannot be read, the message for an optional argument being the one said before."""
    tree = function_of(frame)
    fdef = tree.body[0] if tree is not None and tree.body and isinstance(
        tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if fdef is None:
        return True
    args = [*fdef.args.posonlyargs, *fdef.args.args]
    pairs = list(zip(args[len(args) - len(fdef.args.defaults):], fdef.args.defaults))
    pairs += [(a, d) for a, d in zip(fdef.args.kwonlyargs, fdef.args.kw_defaults) if d is not None]
    return any(a.arg == name and isinstance(d, ast.Constant) and d.value is None for a, d in pairs)


def _none_names(tree, frame, error):
    """The names of the failing line that hold None, the one the error is about first (`k` of `k.transpose` where
    the error says "no attribute 'transpose'"); a name the line itself tests against None (`0 if mask is None
    else mask`) is guarded there, and left out."""
    said = re.search(r"has no attribute '(\w+)'", str(error))
    guarded = {n.left.id for n in ast.walk(tree) if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name)
               and any(isinstance(op, (ast.Is, ast.IsNot)) for op in n.ops)
               and any(isinstance(c, ast.Constant) and c.value is None for c in n.comparators)}
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in frame.f_locals
             and frame.f_locals[n.id] is None and n.id not in guarded]
    about = [n for n in ast.walk(tree) if said and isinstance(n, ast.Attribute) and n.attr == said.group(1)
             and isinstance(n.value, ast.Name)]
    first = [n for n in names if any(a.value is n for a in about)]
    return first + [n for n in names if n not in first]


class TupleOperand(Probe):
    """`x = block(x, ...)` where the block returns (output, weights): x is then a tuple, not an array."""

    kind = "tuple"

    def find(self, attempt, probes):
        exc = attempt.error
        if exc is None:
            return None
        found = failing_line(exc)
        if found is None:
            return None
        frame, line, tree = found
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(frame.f_locals.get(node.id), tuple):
                value = frame.f_locals[node.id]
                shapes = [tuple(getattr(v, "shape", ())) for v in value if hasattr(v, "shape")]
                if not shapes or len(shapes) != len(value):
                    continue
                listed = " and ".join(str(s) for s in shapes)
                return self.finding(attempt, "not_unpacked", (
                    f"`{node.id}` is a tuple of {len(value)} arrays (shapes {listed}), not an array: the call that "
                    f"made it returns more than one value (a block or an attention returns its output and its "
                    f"weights). Unpack it where it is made: `{node.id}, _ = ...`."))
        if isinstance(exc, ValueError) and "inhomogeneous" in str(exc):  # x + attend(...): the tuple never named
            calls = [side for op in ast.walk(tree) if isinstance(op, ast.BinOp)
                     for side in (op.left, op.right) if isinstance(side, ast.Call)]
            if len(calls) == 1:
                call = ast.unparse(calls[0])
                return self.finding(attempt, "call_not_unpacked", (
                    f"`{call}` is used as an array, and NumPy could not make one array of what it returned: it "
                    "returns more than one value (a block or an attention returns its output and its weights). "
                    f"Unpack it first: `out, _ = {call}`, then use `out`."))
        return None


class AxesForOneBatch(Probe):
    """`np.transpose(K, (0, 2, 1))` on an unbatched K (n, d_k): the axes written out for exactly one batch axis."""

    kind = "axes"

    def find(self, attempt, probes):
        found = _failed(attempt, ValueError, "axes don't match array")
        if found is None:
            return None
        frame, line, tree = found
        for node in ast.walk(tree):
            target, axes = _transposed(node)
            a = _resolve(target, frame) if target is not None else None
            if a is None:
                continue
            return self.finding(attempt, "one_batch_axis", (
                f"`{ast.unparse(node)}` names {axes} axes, and `{ast.unparse(target)}` has {a.ndim} (shape "
                f"{a.shape}): axes written out one by one fit only inputs with exactly that many leading (batch) "
                "axes, and inputs come with any number (the docstring's `...`). Exchange axes counted from the end, "
                "whatever leads: `np.swapaxes(x, -1, -2)` for the last two (`-2, -3` for the heads' axis and the "
                "positions')."))
        return None


def _transposed(node):
    """(the array, how many axes are named) of np.transpose(x, (0, 2, 1)), x.transpose(0, 2, 1) or
    x.transpose((0, 2, 1)); (None, 0) for anything else."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose"):
        return None, 0
    if isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy"):
        if len(node.args) == 2 and isinstance(node.args[1], (ast.Tuple, ast.List)):
            return node.args[0], len(node.args[1].elts)
        return None, 0
    if len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)):
        return node.func.value, len(node.args[0].elts)
    return (node.func.value, len(node.args)) if len(node.args) > 1 else (None, 0)


class ArrayAsCondition(Probe):
    """`if mask:` where mask is an array: the truth of an array is ambiguous; an optional argument is tested
    with `is not None`."""

    kind = "condition"

    def find(self, attempt, probes):
        found = _failed(attempt, ValueError, "truth value of an array")
        if found is None:
            return None
        frame, line, tree = found
        code = frame.f_code
        params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and hasattr(frame.f_locals.get(node.id), "shape"):
                if node.id in params:
                    return self.finding(attempt, "optional_argument", (
                        f"`{line}` asks whether the array `{node.id}` is true, which NumPy cannot say for more than one "
                        f"number. To use an optional argument only when it is given, test `if {node.id} is not None:`."))
                return self.finding(attempt, "array", (
                    f"`{line}` asks whether the array `{node.id}` is true, which NumPy cannot say for more than one "
                    "number: say which you mean, `.any()` or `.all()`, or `is not None` for a value that may be None."))
        return None


_GROW = re.compile(r"non-broadcastable output operand with shape \(([\d, ]*)\) doesn't match the broadcast shape "
                   r"\(([\d, ]*)\)")
_AUGMENTED = re.compile(r"^([\w.\[\]]+)\s*(\+|-|\*|/|//|@|\*\*)=\s*(.+)$")


class InPlaceGrows(Probe):
    """`mask += causal` where mask (..., 1, 1, m) must grow to (..., 1, m, m): an in-place operation writes
    into the array it starts from, which cannot change its shape."""

    kind = "in_place"

    def find(self, attempt, probes):
        found = _failed(attempt, ValueError, "non-broadcastable output operand")
        shapes = _GROW.search(str(attempt.error)) if found else None
        written = _AUGMENTED.match(found[1]) if shapes else None
        if written is None:
            return None
        target, op, value = written.groups()
        return self.finding(attempt, "in_place_grows", (
            f"`{found[1]}` writes its result into `{target}` itself, whose shape is ({shapes.group(1)}); the result "
            f"has the broadcast shape ({shapes.group(2)}), which does not fit. Make a new array: "
            f"`{target} = {target} {op} {value}`."))


FAILED_LINE_PROBES = [*INDEXING_PROBES, UndefinedCourseName(), SliceAssignment(), NoneOperand(), TupleOperand(), AxesForOneBatch(),
                      ArrayAsCondition(), InPlaceGrows()]
