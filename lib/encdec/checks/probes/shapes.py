"""Errors become diagnoses: a failed operation's arrays and step, read from the student's failing line
(NumPy's shape errors, torch's, and a product whose operands name the slip)."""

import ast
import linecache
import traceback

import numpy as np

from .base import Finding, Probe
from .shape_causes import cause, reshaped_with_another_size
from .shape_reasons import size_named
from .views import view


# -- errors: the arrays and the step of a failed operation -------------------------------------------------
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@", ast.Pow: "**",
        ast.FloorDiv: "//", ast.Mod: "%"}
_SHAPE_WORDS = ("broadcast", "matmul", "shapes", "reshape", "core dimension", "aligned", "dimension")


def _student_frame(exc):
    """The traceback entry and frame of the last frame that is the student's code."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "encdec" not in name and "site-packages" not in name and "/lib/python" not in name \
                and (name.endswith(".py") or name.startswith("<")):
            found = tb
        tb = tb.tb_next
    return found


def _resolve(node, frame):
    """The array a name (x), or an attribute of one (self.W_q), holds in the frame; never runs code."""
    if isinstance(node, ast.Name):
        value = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    elif isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        holder = _resolve_object(node.value, frame)
        if isinstance(holder, np.ndarray) and node.attr in ("T", "mT"):  # x.T: a view, nothing runs
            return holder.T if node.attr == "T" or holder.ndim < 2 else np.swapaxes(holder, -1, -2)
        value = vars(holder).get(node.attr) if hasattr(holder, "__dict__") else None
    else:
        return None
    return value if isinstance(value, np.ndarray) else None


def _resolve_object(node, frame):
    if isinstance(node, ast.Name):
        return frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    if isinstance(node, ast.Attribute):
        holder = _resolve_object(node.value, frame)
        return vars(holder).get(node.attr) if hasattr(holder, "__dict__") else None
    return None


def _fails(op, a, b, sizes=None):
    """Why `a op b` fails for these shapes, or None when it works; with the case's `sizes` ({name: value}),
    the sizes that clash are named (5 (m) against 6 (n))."""
    if op == "@":
        if a.ndim == 0 or b.ndim == 0:
            return "@ needs arrays of at least one dimension"
        inner_a, inner_b = a.shape[-1], (b.shape[-2] if b.ndim >= 2 else b.shape[0])
        if inner_a != inner_b:
            return (f"the last axis of the left ({size_named(inner_a, sizes)}) must equal the second-to-last of the right "
                    f"({size_named(inner_b, sizes)})" + _clash(inner_a, inner_b, sizes))
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            return "their leading (batch) axes do not broadcast"
        return None
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        pairs = [(x, y) for x, y in zip(reversed(a.shape), reversed(b.shape)) if x != y and 1 not in (x, y)]
        which = (f" ({size_named(pairs[0][0], sizes)} against {size_named(pairs[0][1], sizes)})" + _clash(*pairs[0], sizes)
                 if pairs else "")
        return ("they do not broadcast: lined up from the right, each pair of sizes must be equal or 1" + which)
    return None


class ShapeError(Probe):
    """A shape error in the student's code: names the arrays, their shapes and the operation that
    failed (e.g. "scores (2, 4, 3, 3) + mask (3, 5): they do not broadcast"). Always on. Arrays are
    read from the failing frame; a subclass says which errors, which arrays and which reshapes it reads
    (TorchShapeError)."""

    kind = "shape_error"
    errors = (ValueError,)
    words = _SHAPE_WORDS
    reshapes = ("reshape",)
    library = "NumPy"

    def resolve(self, node, frame):
        return view(node, frame, _resolve)

    def find(self, attempt, probes):
        exc = attempt.error
        if not isinstance(exc, self.errors) or not any(w in str(exc) for w in self.words):
            return None
        tb = _student_frame(exc)
        if tb is None:
            return None
        frame = tb.tb_frame
        entry = traceback.extract_tb(tb, limit=1)[0]
        raw = linecache.getline(entry.filename, entry.lineno) or entry.line or ""
        snippet = raw.strip()
        if getattr(entry, "colno", None) is not None and entry.lineno == entry.end_lineno \
                and raw[entry.colno:entry.end_colno].strip():
            snippet = raw[entry.colno:entry.end_colno].strip()
        tree = _parsed(snippet, raw.strip())
        if tree is None:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
                a, b = self.resolve(node.left, frame), self.resolve(node.right, frame)
                if a is None or b is None:
                    continue
                op = _OPS[type(node.op)]
                sa, sb = _shape_of(a), _shape_of(b)
                why = _fails(op, _Shaped(sa), _Shaped(sb), attempt.sizes)
                if why:
                    left, right = ast.unparse(node.left), ast.unparse(node.right)
                    if op == "@" and len(sa) >= 3 and len(sb) == 2 and sa[-3] > 1 and sa[-3] * sa[-1] == sb[-2]:
                        return self.finding(attempt, "heads_split", (
                            f"`{left} {op} {right}` fails: {left} has shape {sa}, still split into {sa[-3]} heads of "
                            f"{sa[-1]}, and {right} has shape {sb}, which needs the {sb[-2]} features in one axis. "
                            f"Merge the heads first (merge_heads: (..., h, positions, d_k) to (..., positions, "
                            f"h * d_k)), then multiply by {right}."))
                    said = f"`{left} {op} {right}` fails: {left} has shape {sa} and {right} has shape {sb}; {why}. "
                    found = cause(frame, [node.left, node.right], self.resolve, attempt.sizes)
                    if found is not None:
                        return self.finding(attempt, found[0], said + found[1])
                    return self.finding(attempt, "matmul" if op == "@" else "broadcast", said + (
                        "Print the shapes before that line and compare them with the shapes the docstring gives."))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in self.reshapes:
                a = self.resolve(node.func.value, frame)
                found = reshaped_with_another_size(node, frame, self.resolve, str(exc)) if a is None else None
                if found is not None:  # an expression's reshape: its size read from the error
                    return self.finding(attempt, found[0], f"`{ast.unparse(node)}` fails: {found[1]}")
                if a is not None:
                    name = ast.unparse(node.func.value)
                    found = reshaped_with_another_size(node, frame, self.resolve)
                    if found is not None:
                        return self.finding(attempt, found[0], f"`{ast.unparse(node)}` fails: {found[1]}")
                    return self.finding(attempt, "reshape", (
                        f"`{ast.unparse(node)}` fails: {name} has shape {_shape_of(a)} ({int(np.prod(_shape_of(a)))} "
                        "numbers), which the shape asked for cannot hold. A reshape keeps the number of entries: "
                        f"check each size you pass (-1 lets {self.library} work one out)."))
        named = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.Name, ast.Attribute)):
                a = self.resolve(node, frame)
                text = ast.unparse(node)
                if a is not None and text not in [n for n, _ in named]:
                    named.append((text, _shape_of(a)))
        if not named:
            return None
        shapes = ", ".join(f"{n} {s}" for n, s in named)
        split = heads_split_apart(named)
        if split:
            return self.finding(attempt, "heads_split", f"a shape error in `{snippet}`, where {shapes}: {split}")
        found = cause(frame, list(ast.walk(tree)), self.resolve, attempt.sizes)
        if found is not None:
            return self.finding(attempt, found[0], f"a shape error in `{snippet}`, where {shapes}: {found[1]}")
        return self.finding(attempt, "shapes", (
            f"a shape error in `{snippet}`, where {shapes}. Compare these shapes with what the operation needs "
            "(the docstring gives the shape of every input and output)."))


def heads_split_apart(named):
    """The words for arrays of one step of which some are split into heads and one is not (or the other way
    round): `Q` (m, d_model) where K is (h, n, d_k) with h * d_k = d_model; '' when no pair is so."""
    for a, sa in named:
        for b, sb in named:
            if len(sa) >= 2 and len(sb) == len(sa) + 1 and sa[-1] == sb[-3] * sb[-1] and sb[-3] > 1 \
                    and sa[:-2] == sb[:-3]:
                return (f"`{a}` has its {sa[-1]} features in one axis, where `{b}` is split into {sb[-3]} heads of "
                        f"{sb[-1]}, (..., h, positions, d_k). Every array of one attention step must be split the "
                        f"same way: split `{a}` into heads too (split_heads), or, after the heads, merge them before "
                        "what needs (..., positions, d_model).")
    return ""


def _clash(a, b, sizes):
    """', an array over one meets an array over the other' when both sizes are named sizes of the case."""
    named = [name for name, value in (sizes or {}).items() if value in (a, b) and not name.startswith("B")]
    if size_named(a, sizes) != str(a) and size_named(b, sizes) != str(b) and len(named) >= 2:
        return (": an array over one of those sizes meets one over the other; one of the two is likely the wrong "
                "array, or made with the wrong size")
    return ""


def _parsed(*texts):
    """The syntax tree of the first of `texts` that parses, as an expression or else as statements."""
    for text in texts:
        for mode in ("eval", "exec"):
            try:
                return ast.parse(text, mode=mode)
            except SyntaxError:
                continue
    return None


def _shape_of(x):
    return tuple(int(s) for s in x.shape)


class _Shaped:
    """Only a shape (what _fails reads), for arrays and tensors alike."""

    def __init__(self, shape):
        self.shape, self.ndim = tuple(shape), len(shape)


_TORCH_SHAPE_WORDS = ("shapes cannot be multiplied", "must match the size", "size mismatch", "is invalid for input of size",
                      "Expected size", "doesn't match the broadcast shape", "Dimension out of range",
                      "The size of tensor")


def _resolve_tensor(node, frame):
    """The array or tensor a name (x) or an attribute chain (self.W_q, b.cross_attn.W_k) holds in the frame."""
    if isinstance(node, ast.Name):
        value = frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    elif isinstance(node, ast.Attribute):
        holder = _resolve_object(node.value, frame)
        if holder is None:
            return None
        try:
            value = vars(holder).get(node.attr)
            if value is None:
                value = getattr(type(holder), "__getattr__", None) and holder.__getattr__(node.attr)
        except Exception:
            return None
    else:
        return None
    shape = getattr(value, "shape", None)
    return value if shape is not None and hasattr(value, "ndim") else None


class TorchShapeError(ShapeError):
    """A torch shape error in the student's code (RuntimeError: "mat1 and mat2 shapes cannot be
    multiplied", "The size of tensor a (5) must match ...", "shape '[2, 3]' is invalid for input of
    size 8"): names the tensors, their shapes and the step that failed, like ShapeError for NumPy.
    Tensors are read from the failing frame (names and attribute chains, such as b.self_attn.W_q)."""

    errors = (RuntimeError, IndexError)
    words = _TORCH_SHAPE_WORDS
    reshapes = ("reshape", "view")
    library = "torch"

    def resolve(self, node, frame):
        return view(node, frame, _resolve_tensor)


ERROR_PROBES = [ShapeError(), TorchShapeError()]  # always on, after a check's own probes


class FailedProduct(Probe):
    """A product `a @ b` that fails in the student's code (read from the failing line, as ShapeError reads
    it), named by what its operands are: products(attempt) -> [(left shape, right shape, detail, diagnosis)],
    the shapes an input-shaped left and right operand have in that slip (e.g. dK left untransposed: dscores,
    shaped like the weights, @ Q). Named only when exactly one product has the operands' shapes, so that
    two slips that fail with one message (weights @ dout, dscores @ Q) are told apart by their operands.
    Key: probe:<kind>:<detail>; or, where the diagnosis given is a catalog entry (anything with .key and
    .diagnosis), that entry's key and words, so that one slip is recorded once."""

    def __init__(self, kind, products):
        self.kind, self.products = kind, products

    def find(self, attempt, probes):
        exc = attempt.error
        if not isinstance(exc, ValueError) or not any(w in str(exc) for w in _SHAPE_WORDS):
            return None
        tb = _student_frame(exc)
        if tb is None:
            return None
        entry = traceback.extract_tb(tb, limit=1)[0]
        line = (linecache.getline(entry.filename, entry.lineno) or entry.line or "").strip()
        try:
            tree = ast.parse(line)
        except SyntaxError:
            return None
        products = [(tuple(left), tuple(right), detail, diagnosis)
                    for left, right, detail, diagnosis in self.products(attempt)]
        for node in ast.walk(tree):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)):
                continue
            a, b = _resolve(node.left, tb.tb_frame), _resolve(node.right, tb.tb_frame)
            if a is None or b is None or not _fails("@", a, b):
                continue
            fits = [p for p in products if p[0] == a.shape and p[1] == b.shape]
            if len(fits) == 1:
                _, _, detail, diagnosis = fits[0]
                where = f"`{ast.unparse(node)}` fails: shapes {a.shape} and {b.shape}."
                if hasattr(diagnosis, "key") and hasattr(diagnosis, "diagnosis"):
                    return Finding(attempt.exercise, diagnosis.key, diagnosis.diagnosis, where)
                return self.finding(attempt, detail, diagnosis, where)
        return None
