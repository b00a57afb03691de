"""Where a setting's value is lost on its way in: a parameter tested for truth (`if pad_id:`, `pad_id or None`),
which is False for 0 as for None, and a constant of the notebook read where the case gives the setting (`PAD`
where the model's own `model.config.pad_id` belongs).

Both are read from the answer's source, then confirmed by running: the answer's output is the reference's with
the parameter left out (None), or the answer given the case's value in place of the constant is right. Exact
(the source says it and a run confirms it), so they come first among the causes (judging.py): an exercise's
variant would name only the effect (the pads counted as targets).
"""

import ast
import inspect

import numpy as np

from ..rebinding import rebind
from .base import Probe
from .repair import _target, _tree, direct


def _tested_for_truth(fdef):
    """{parameter: the first node that tests it for truth}: `if p:`, `if not p:`, `a if p else b`, `p or q`."""
    args = fdef.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    found = {}
    for node in ast.walk(fdef):
        tests = []
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            tests = [node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
                     else node.test]
        elif isinstance(node, ast.BoolOp):
            tests = node.values[:-1] if isinstance(node.op, ast.Or) else node.values
        for test in tests:
            if isinstance(test, ast.Name) and test.id in params and test.id not in found:
                found[test.id] = node
    return found


def _falsy(value):
    """True for a number that is 0 (falsy, yet not None)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and value == 0


class FalsyParameter(Probe):
    """probe:falsy:<parameter>: `if pad_id:` where the case's pad_id is 0."""

    kind = "falsy"
    exact = True

    def find(self, attempt, probes):
        fn, _ = _target(attempt.student) if attempt.student is not None else (None, None)
        if fn is None or attempt.error is not None or not direct(attempt.student, fn):
            return None
        tree = _tree(fn)
        tested = _tested_for_truth(tree.body[0]) if tree is not None else {}
        if not tested:
            return None
        signature = inspect.signature(attempt.student)
        bound = signature.bind(*attempt.args(), **attempt.kwargs())
        for name, node in tested.items():
            if not _falsy(bound.arguments.get(name)):
                continue
            absent = signature.bind(*attempt.args(), **attempt.kwargs())
            absent.arguments[name] = None
            try:
                value = attempt.reference(*absent.args, **absent.kwargs)
            except Exception:
                continue
            if attempt.is_expected(value) or not attempt.matches(value):
                continue
            test = (f"{'if' if isinstance(node, ast.If) else 'while'} {ast.unparse(node.test)}:"
                    if isinstance(node, (ast.If, ast.While)) else ast.unparse(node))
            return self.finding(attempt, name, (
                f"`{test}` (line {node.lineno}) tests `{name}` for truth, and {name}={bound.arguments[name]!r}, as in "
                f"this case, is false, as None is: your code treats `{name}` = 0 as no `{name}` at all. Test "
                f"`{name} is not None` (or `is None`)."))
        return None


class NotebookConstant(Probe):
    """probe:constant:<NAME>: a global constant (`PAD`) read where the case gives its own value of the setting
    (model.config.pad_id, a parameter pad_id)."""

    kind = "constant"
    exact = True

    def find(self, attempt, probes):
        fn, bind = _target(attempt.student) if attempt.student is not None else (None, None)
        tree = _tree(fn) if fn is not None else None
        if tree is None or attempt.error is not None:
            return None
        constants = {n.id: fn.__globals__[n.id] for n in ast.walk(tree.body[0]) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Load) and type(fn.__globals__.get(n.id)) is int}
        if not constants:
            return None
        settings = _settings(fn, bind, attempt)
        for name, value in constants.items():
            for where, given in settings.get(_stem(name), []):
                if given == value:
                    continue
                try:
                    outcome = attempt.rerun(attempt.args(), attempt.kwargs(), student=bind(rebind(fn, **{name: given})))
                except Exception:
                    continue
                if outcome.error is None and attempt.is_expected(outcome.value):
                    line = next(n.lineno for n in ast.walk(tree.body[0]) if isinstance(n, ast.Name) and n.id == name)
                    return self.finding(attempt, name, (
                        f"your code reads `{name}` = {value} (line {line}), a constant of the notebook, where this case "
                        f"has {where} = {given}: with that value in its place your code is right. Read the setting "
                        f"from what the function is given ({where}), not from a constant that fits one task."))
        return None


def _stem(name):
    name = name.lower()
    return name[:-3] if name.endswith("_id") else name


def answer_arguments(attempt):
    """{parameter: value} of the answer's own function as the case calls it (through a checker's wrapper that
    builds a model, or a method), read by running it once more; {} where that fails."""
    fn, bind = _target(attempt.student) if attempt.student is not None else (None, None)
    if fn is None:
        return {}
    seen = {}

    def spy(*args, **kwargs):
        seen.setdefault("call", (args, kwargs))
        return fn(*args, **kwargs)
    try:
        attempt.rerun(attempt.args(), attempt.kwargs(), student=bind(spy))
        args, kwargs = seen["call"]
        return dict(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except Exception:
        return {}


def _settings(fn, bind, attempt):
    """{stem: [(where, int value)]} of the settings the answer is given on this case: its int parameters and the
    int fields of a parameter's .config, read from the answer's own arguments as it is called."""
    found = {}
    for pname, value in answer_arguments(attempt).items():
        if type(value) is int:
            found.setdefault(_stem(pname), []).append((pname, value))
        config = getattr(value, "config", None)
        for field, item in (vars(config).items() if hasattr(config, "__dict__") else []):
            if type(item) is int:
                found.setdefault(_stem(field), []).append((f"{pname}.config.{field}", item))
    return found


SETTING_PROBES = [FalsyParameter(), NotebookConstant()]
