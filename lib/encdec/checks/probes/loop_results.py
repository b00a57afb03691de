"""A result a loop made at each pass, of which the answer returns only the last pass's.

`return np.concatenate(rows, axis=-2), step_w`, where `step_w` is assigned at every pass of the loop and
collected nowhere: the weights returned are the last step's, with 1 where the steps' count belongs on one axis.
Read from the returned value's shape and the answer's own source, with the reference's output on the failing
case; like results.py's probes it names the slip only when the numbers and the code both say so.
"""

import ast

from .base import Probe
from .repair import answer_function
from .results import _pairs


def _axis_of_the_passes(got, expected):
    """The one axis on which `got` holds fewer entries than `expected`, a whole fraction of them, else None."""
    if got is None or expected is None or got.ndim != expected.ndim or got.shape == expected.shape:
        return None
    differ = [k for k, (g, e) in enumerate(zip(got.shape, expected.shape)) if g != e]
    if len(differ) != 1:
        return None
    k = differ[0]
    return k if 0 < got.shape[k] < expected.shape[k] and expected.shape[k] % got.shape[k] == 0 else None


def _returned(fdef, item, items):
    """(the Return node, the returned expression of item `item` of `items`) of the function's last top-level
    return, or None."""
    last = next((node for node in reversed(fdef.body) if isinstance(node, ast.Return) and node.value is not None), None)
    if last is None:
        return None
    value = last.value
    if items > 1:
        if not (isinstance(value, ast.Tuple) and len(value.elts) == items):
            return None
        value = value.elts[item]
    return last, value


def _stores(fdef, name):
    """The nodes that assign `name` in the function (targets of =, +=, for, with)."""
    return [node for node in ast.walk(fdef) if isinstance(node, ast.Name) and node.id == name
            and isinstance(node.ctx, ast.Store)]


def _loop_holding(fdef, node):
    """The outermost loop of the function whose body holds `node`, else None."""
    for loop in fdef.body:
        if isinstance(loop, (ast.For, ast.While)) and any(n is node for n in ast.walk(loop)):
            return loop
    return None


def _collected(loop):
    """The name of a list the loop appends to at each pass (`rows.append(step_out)`), else None."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                and isinstance(node.func.value, ast.Name):
            return node.func.value.id
    return None


class LastPass(Probe):
    """probe:result:last_pass: a returned name assigned only inside a loop, which the answer returns after it: the
    last pass's value, where the passes together belong."""

    kind = "result"

    def find(self, attempt, probes):
        if attempt.error is not None:
            return None
        pairs = _pairs(attempt)
        fdef = None
        for item, (label, got, expected) in enumerate(pairs):
            axis = _axis_of_the_passes(got, expected)
            if axis is None:
                continue
            fdef = fdef or answer_function(attempt.student)
            found = _returned(fdef, item, len(pairs)) if fdef is not None else None
            if found is None or not isinstance(found[1], ast.Name):
                continue
            ret, name = found[0], found[1].id
            stores = _stores(fdef, name)
            loops = {id(_loop_holding(fdef, node)) for node in stores}
            loop = _loop_holding(fdef, stores[0]) if stores else None
            if loop is None or len(loops) != 1 or ret.lineno <= loop.end_lineno:
                continue
            where = min(node.lineno for node in stores)
            shown = "as its result" if len(pairs) == 1 else f"as the {label}"
            other = _collected(loop)
            collect = f"Collect it at each pass, as `{other}` is," if other and other != name \
                else "Collect it at each pass in a list"
            return self.finding(attempt, "last_pass", (
                f"`{name}`, which your function returns {shown}, is assigned on line {where} at each pass of the "
                f"loop on line {loop.lineno}: after the loop it holds the last pass's value alone, of shape "
                f"{tuple(got.shape)}, where {tuple(expected.shape)} is expected, the passes' values joined along "
                f"axis {axis - got.ndim}. {collect} and join them along axis {axis - got.ndim} (np.concatenate) "
                "before returning."))
        return None


LOOP_RESULT_PROBES = [LastPass()]
