"""Errors whose message comes from Python, NumPy or PyTorch, said in the student's names with their usual
cause: a shape unpacked into fewer names than its axes, -inf written into an integer array, einsum
subscripts without `...` for the batch axes, F.cross_entropy given (B, m, V) logits with (B, m) targets, and
the library's attention told keys and values of two lengths (projected from two inputs), and a name read
where its only assignment sits in a branch that did not run (UnboundLocalError), np.min(a, b) for the smaller
of two values (its second argument is an axis), and a call that runs with two of its arguments exchanged. Read from the failing line like
failed_lines.py; always on, after it.
"""

import ast
import inspect
import itertools
import re

from .base import Probe, quiet
from .call_edits import _ELEMENTWISE, two_value_reduction
from .nodes import function_of
from .failing import _failed, failed_nodes, failing_line
from .nodes import NO_VALUE, value_in_frame
from .shapes import _resolve


class InfinityIntoIntegers(Probe):
    """`mask = np.zeros((m, m), dtype=int)` then `mask[...] = -np.inf`: an integer array cannot hold -inf."""

    kind = "dtype"

    def find(self, attempt, probes):
        for frame, line, node in failed_nodes(attempt, OverflowError, "cannot convert float infinity to integer"):
            target = node.value if isinstance(node, ast.Subscript) else node
            a = _resolve(target, frame) if isinstance(target, (ast.Name, ast.Attribute)) else None
            if a is None or a.dtype.kind not in "iub":
                continue
            name, kind = ast.unparse(target), "booleans" if a.dtype.kind == "b" else "integers"
            return self.finding(attempt, "integer_array", (
                f"`{line}` writes -inf into `{name}`, an array of {a.dtype} ({kind}), which cannot hold it. The array "
                "was made with an integer dtype (dtype=int, or zeros_like of token ids): make "
                f"`{name}` a float array (np.zeros(..., dtype=float), or np.full(..., 0.0))."))
        return None


class EinsumWithoutEllipsis(Probe):
    """`np.einsum("md,vd->mv", h, E)` on a batch h (..., m, d): the subscripts name fewer axes than h has."""

    kind = "einsum"

    def find(self, attempt, probes):
        for _, _, node in failed_nodes(attempt, ValueError, "more dimensions than subscripts given in einstein sum"):
            spec = _subscripts(node)
            if spec is None:
                continue
            ins, _, out = spec.replace(" ", "").partition("->")
            batched = ",".join("..." + s if s and not s.startswith("...") else s for s in ins.split(","))
            fixed = batched + ("->..." + out if out and not out.startswith("...") else "->" + out if out else "")
            return self.finding(attempt, "no_ellipsis", (
                f"the subscripts \"{spec}\" of `{ast.unparse(node)}` name one letter per axis, and an input comes "
                "with more axes (a batch in front). Inputs come with any number of leading axes (the docstring's "
                f"`...`): write `...` for them, \"{fixed}\"."))
        return None


def _subscripts(node):
    """The subscripts string of an einsum call, or None."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "einsum" \
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


_TARGET_SIZE = re.compile(r"Expected target size \[([\d, ]*)\], got \[([\d, ]*)\]")


class CrossEntropyClassAxis(Probe):
    """F.cross_entropy(logits (B, m, V), targets (B, m)): torch reads the classes on dim 1."""

    kind = "cross_entropy"

    def find(self, attempt, probes):
        found = _failed(attempt, RuntimeError, "Expected target size")
        sizes = _TARGET_SIZE.search(str(attempt.error)) if found else None
        if sizes is None or "cross_entropy" not in found[1]:
            return None
        return self.finding(attempt, "class_axis", (
            f"`{found[1].strip()}`: F.cross_entropy reads the classes on dim 1 (logits (N, V), or (N, V, d...) with "
            f"targets (N, d...)), so (B, m, V) logits are taken as B rows of m classes over V positions (it expected "
            f"targets of shape [{sizes.group(1)}]). Flatten both, `F.cross_entropy(logits.reshape(-1, logits.shape[-1]), "
            "tgt.reshape(-1), ...)`, or move the classes to dim 1 with `logits.transpose(1, 2)`."))


class ShapeUnpacked(Probe):
    """`m, d_k = Q.shape` on a batched Q (B, h, m, d_k): a shape unpacked as if the input had no batch axes."""

    kind = "unpack"

    def find(self, attempt, probes):
        for frame, line, node in failed_nodes(attempt, ValueError, "too many values to unpack"):
            if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple)
                    and isinstance(node.value, ast.Attribute) and node.value.attr in ("shape", "size")):
                continue
            a = _resolve(node.value.value, frame) if isinstance(node.value.value, (ast.Name, ast.Attribute)) else None
            names = [ast.unparse(t) for t in node.targets[0].elts]
            owner = ast.unparse(node.value.value)
            has = f" has shape {tuple(a.shape)}" if a is not None and hasattr(a, "shape") else " has more axes"
            last = ", ".join(f"{owner}.shape[{k - len(names)}]" for k in range(len(names)))
            return self.finding(attempt, "shape_unpacked", (
                f"`{ast.unparse(node)}` unpacks the shape into {len(names)} names ({', '.join(names)}), as if `{owner}` "
                f"had exactly {len(names)} axes; here it{has}: inputs come with any number of leading (batch, head) "
                f"axes. Read the sizes from the end ({last}), or `*lead, {', '.join(names)} = {owner}.shape`."))
        return None


class KeysAndValuesApart(Probe):
    """"K (3, 5, 4) and V (3, 7, 4) must have the same number of positions": the keys and the values projected
    from two different inputs (`K = query_input @ W_k`, `V = key_value_input @ W_v`), read from the function."""

    kind = "kv_inputs"

    def find(self, attempt, probes):
        found = _failed(attempt, ValueError, "must have the same number of positions")
        if found is None:
            return None
        frame, _, tree = found
        call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) >= 3), None)
        function = function_of(frame)
        if call is None or function is None:
            return None
        sources = [_projected_from(function, _bare(arg), frame.f_lineno) for arg in call.args[1:3]]
        if None in sources or sources[0][0] == sources[1][0]:
            return None
        (k_input, k_line), (v_input, v_line) = sources
        return self.finding(attempt, "apart", (
            f"the keys are made from `{k_input}` (line {k_line.lineno}: `{ast.unparse(k_line)}`) and the values from "
            f"`{v_input}` (line {v_line.lineno}: `{ast.unparse(v_line)}`): keys and values are two projections of one "
            "input, key_value_input (the other sequence, in cross-attention; query_input only when it is None)."))


def _bare(node):
    """`K` for `split(K)` or `K`: the name inside one-argument wrappers."""
    while isinstance(node, ast.Call) and len(node.args) >= 1:
        node = node.args[0]
    return node.id if isinstance(node, ast.Name) else None


def _projected_from(function, name, before):
    """(the input name, the statement) of the last `name = <input> @ W` before line `before`, or None."""
    last = None
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and node.lineno < before and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value
            while isinstance(value, ast.Call) and value.args:
                value = value.args[0]
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.MatMult) and isinstance(value.left, ast.Name):
                if last is None or node.lineno > last[1].lineno:
                    last = (value.left.id, node)
    return last


class AssignedOnlyInABranch(Probe):
    """UnboundLocalError: `weights` read where the only lines that assign it sit in a branch or loop that did
    not run on this case (a softmax indented into `if mask is not None:`)."""

    kind = "unbound"

    def find(self, attempt, probes):
        exc = attempt.error
        if not isinstance(exc, UnboundLocalError):
            return None
        match = re.search(r"local variable '(\w+)'", str(exc))
        found = failing_line(exc)
        function = function_of(found[0]) if found is not None else None
        if match is None or function is None:
            return None
        name = match.group(1)
        for block in ast.walk(function):
            if not isinstance(block, (ast.If, ast.For, ast.While)):
                continue
            inside = [n for n in ast.walk(block) if isinstance(n, ast.Name) and n.id == name
                      and isinstance(n.ctx, ast.Store)]
            everywhere = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
                          and isinstance(n.ctx, ast.Store)]
            if inside and len(inside) == len(everywhere):
                head = ast.unparse(block).splitlines()[0]
                return self.finding(attempt, "branch", (
                    f"`{name}` is assigned only inside `{head}` (line {block.lineno}), which did not run on this case, "
                    f"and line {found[0].f_lineno} reads it. If that assignment belongs to every case, take it out of "
                    "the block (check its indentation): only what depends on the condition goes inside."))
        return None


class ReductionOfTwoValues(Probe):
    """`np.min(decay, ramp)` for the smaller of two numbers: np.min's second argument is the axis, so the call
    fails (a float is no axis; an axis out of range) instead of comparing the two."""

    kind = "reduction"

    def find(self, attempt, probes):
        exc = attempt.error
        if not isinstance(exc, (TypeError, ValueError, IndexError)) or not any(
                words in str(exc) for words in ("cannot be interpreted as an integer", "axis", "scalar index")):
            return None
        found = failing_line(exc)
        for node in ast.walk(found[2]) if found is not None else ():
            if not two_value_reduction(node):
                continue
            second = node.args[1]
            if isinstance(second, (ast.Constant, ast.Tuple, ast.UnaryOp)):
                continue  # an axis written as a number: the call means what it says
            module, name = node.func.value.id, node.func.attr
            a, b = (ast.unparse(arg) for arg in node.args[:2])
            return self.finding(attempt, "axis_for_a_value", (
                f"`{ast.unparse(node)}` does not compare two values: {module}.{name} reduces one array, and its "
                f"second argument is the axis to reduce along, so `{b}` is read as an axis (`{module}.{name}({a}, "
                f"axis={b})`). For the {'smaller' if 'min' in name else 'larger'} of two values write "
                f"`{name.removeprefix('a')}({a}, {b})` or `{module}.{_ELEMENTWISE[name]}({a}, {b})` (entry by entry)."))
        return None




class ArgumentsSwapped(Probe):
    """`rms_norm(gamma, x + out)` for `rms_norm(x + out, gamma)`: the call fails, and the same call with two of its
    arguments exchanged runs."""

    kind = "arguments"

    def find(self, attempt, probes):
        exc = attempt.error
        found = failing_line(exc) if isinstance(exc, (ValueError, TypeError, IndexError, RuntimeError)) else None
        for node in ast.walk(found[2]) if found is not None else ():
            if not (isinstance(node, ast.Call) and 2 <= len(node.args) <= 4 and not node.keywords):
                continue
            function = value_in_frame(node.func, found[0])
            values = [value_in_frame(a, found[0]) for a in node.args]
            if not inspect.isfunction(function) or function.__code__ is found[0].f_code \
                    or any(v is NO_VALUE for v in values):
                continue
            for i, j in itertools.combinations(range(len(values)), 2):
                swapped = list(values)
                swapped[i], swapped[j] = swapped[j], swapped[i]
                if not _runs(function, values) and _runs(function, swapped):
                    return self.finding(attempt, "swapped", _swapped_words(node, function, i, j),
                                        weak=True)  # "the call runs", not "the answer is right": the repair first
        return None


def _runs(function, args):
    """True where function(*args) returns, on copies of the arrays (a function that writes into its arguments
    leaves the case's arrays as they were)."""
    try:
        with quiet():
            function(*(a.copy() if hasattr(a, "copy") and hasattr(a, "shape") else a for a in args))
        return True
    except Exception:
        return False


def _swapped_words(node, function, i, j):
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        names = []
    a, b = ast.unparse(node.args[i]), ast.unparse(node.args[j])
    args = [ast.unparse(x) for x in node.args]
    args[i], args[j] = b, a
    name = ast.unparse(node.func)
    order = f"{name} takes ({', '.join(names[:len(node.args)])}), so " if len(names) >= len(node.args) else ""
    into = (f"`{a}` goes in as `{names[i]}` and `{b}` as `{names[j]}`" if len(names) > j else
            f"`{a}` and `{b}` go in each other's place")
    return (f"`{ast.unparse(node)}` passes its arguments in another order than {name}'s: {order}{into}. With the "
            f"two exchanged, `{name}({', '.join(args)})`, the call runs.")


LIBRARY_ERROR_PROBES = [ShapeUnpacked(), InfinityIntoIntegers(), EinsumWithoutEllipsis(), CrossEntropyClassAxis(),
                        KeysAndValuesApart(), AssignedOnlyInABranch(), ReductionOfTwoValues(), ArgumentsSwapped()]
