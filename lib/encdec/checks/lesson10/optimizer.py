"""Exercise 10.3, make_optimizer: AdamW with two parameter groups. Observed parts: every parameter in one
group, weight decay on the matrices only, and two steps equal to NumPy's AdamW."""

import numpy as np

from ... import optim
from ...mistakes import CATALOG
from ..comparing import RTOL
from ..exercises import Exercise, Later
from ..fixtures import generator
from ..running import run_student
from .small_models import _flat_name, _np_model
from .torch_checker import TorchChecker, _check_parts, _one_thread
from .torch_references import references


def _make_optimizer_forbidden():
    R = references()
    return [R.capstone.build_optimizer, R.make_optimizer]


def _optimizer_of(fn, model, lr, weight_decay, betas):
    """(optimizer or None, problem or '', outcome)."""
    R = references()
    outcome = run_student(fn, (model, lr, weight_decay, betas), forbidden=_make_optimizer_forbidden())
    if outcome.error is not None:
        return None, "", outcome
    opt = outcome.value
    if not isinstance(opt, R.torch.optim.Optimizer):
        return None, (f"return the optimizer (a torch.optim.AdamW), got {type(opt).__name__}"
                      + (" (did you forget `return`?)" if opt is None else "")), outcome
    return opt, "", outcome


def _observe_groups(fn, seed, sizes):
    """Part 1: every parameter in the optimizer, once."""
    R = references()
    model = R.tm.from_numpy(_np_model(seed, *sizes))
    opt, problem, outcome = _optimizer_of(fn, model, 0.01, 0.1, (0.8, 0.95))
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    if opt is None:
        return ("returned", problem), problem, outcome
    held = [id(p) for group in opt.param_groups for p in group["params"]]
    names = {id(p): n for n, p in model.named_parameters()}
    missing = [n for i, n in names.items() if i not in held]
    twice = sorted({names.get(i, "?") for i in held if held.count(i) > 1})
    foreign = [i for i in held if i not in names]
    summary = ("groups", tuple(missing), tuple(twice), len(foreign))
    if missing:
        return summary, (f"{len(missing)} parameters are in no group, so they are never trained: "
                         + ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else "")
                         + _used_up(opt, model, missing)), outcome
    if twice or foreign:
        return summary, "some parameters are listed twice, or tensors that are not the model's are listed", outcome
    return ("ok",), "", outcome


def _observe_decay(fn, seed, sizes, lr=0.01, weight_decay=0.1):
    """Part 2: one step with every gradient zero. Adam's move is then 0 / (0 + eps) = 0, so only the
    decay acts: a decayed parameter is multiplied by 1 - lr * weight_decay, the others do not move."""
    R = references()
    torch = R.torch
    model = R.tm.from_numpy(_np_model(seed, *sizes))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt, problem, outcome = _optimizer_of(fn, model, lr, weight_decay, (0.8, 0.95))
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    if opt is None:
        return ("returned", problem), problem, outcome
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    step = run_student(opt.step)
    if step.error is not None:
        return ("error", type(step.error).__name__, str(step.error)), None, step
    status = {}
    for n, p in model.named_parameters():
        after = p.detach()
        if torch.equal(after, before[n]):
            status[n] = "kept"
        elif torch.allclose(after, before[n] * (1 - lr * weight_decay), rtol=1e-12, atol=1e-15):
            status[n] = "decayed"
        else:
            status[n] = "moved"
    summary = ("decay", tuple(sorted(status.items())))
    matrices = {n for n, p in model.named_parameters() if p.ndim >= 2}
    moved = [n for n, s in status.items() if s == "moved"]
    wrongly = [n for n, s in status.items() if s == "decayed" and n not in matrices]
    skipped = [n for n, s in status.items() if s == "kept" and n in matrices]
    if moved:
        return summary, (f"with every gradient zero, {len(moved)} parameters moved by more than the decay "
                         f"(p -> (1 - lr * weight_decay) * p), e.g. {', '.join(moved[:3])}"), outcome
    if wrongly:
        return summary, (f"gains or biases are decayed: {', '.join(wrongly[:4])}" + (" ..." if len(wrongly) > 4 else "")
                         + " (with a zero gradient they shrank by the factor 1 - lr * weight_decay)"), outcome
    if skipped:
        return summary, f"these matrices are not decayed: {', '.join(skipped[:4])}" + (" ..." if len(skipped) > 4 else "") \
            + _why_kept(opt, skipped, matrices, weight_decay), outcome
    return ("ok",), "", outcome


def _used_up(opt, model, missing):
    """Why a whole group is empty where its parameters exist: the parameters read from one generator twice."""
    empty = [g for g in opt.param_groups if len(g.get("params", ())) == 0]
    small = {n for n, p in model.named_parameters() if p.ndim < 2}
    if not empty or set(missing) != small:
        return ""
    return ("; the group meant for them is empty. model.parameters() is a generator: the first pass over it (the "
            "first list) uses it up, and a second pass finds nothing. Make a list once, "
            "params = list(model.parameters()), and build both groups from it")


def _why_kept(opt, skipped, matrices, weight_decay):
    """Why no matrix is decayed, read from the optimizer's groups: the decayed group holds none of them (a test
    that leaves out ndim == 2), or no group has the weight decay."""
    if set(skipped) != matrices:
        return ""
    groups = getattr(opt, "param_groups", [])
    decaying = [g for g in groups if g.get("weight_decay") == weight_decay]
    if not decaying:
        return (f"; no parameter group has weight_decay={weight_decay:g}: give it to the group of matrices "
                "(torch.optim.AdamW's own default is 0.01, not the argument)")
    if all(len(g.get("params", ())) == 0 for g in decaying):
        return (f"; the group with weight_decay={weight_decay:g} is empty: every matrix here, the embedding "
                "included, has p.ndim == 2, and the test that picks the group's parameters leaves that out "
                "(p.ndim > 2, where p.ndim >= 2 is meant)")
    return ""


def _grads(seed, params):
    r = generator(seed)
    return {n: r.normal(size=p.shape) * 10.0 ** r.uniform(-2, 1) for n, p in params.items()}


def _numpy_adamw_run(seed, sizes, lr, weight_decay, betas, steps=2):
    """Parameters after `steps` AdamW steps with fixed random gradients, in NumPy."""
    np_model = _np_model(seed, *sizes)
    params = np_model.parameters()
    opt = optim.AdamW(params, lr=lr, betas=betas, eps=1e-8, weight_decay=weight_decay)
    for k in range(steps):
        opt.step(_grads(100 * seed + k, params))
    return np.concatenate([params[n].ravel() for n in sorted(params)])


def _observe_steps(fn, seed, sizes, lr=0.02, weight_decay=0.3, betas=(0.8, 0.95)):
    """Part 3: two steps with fixed random gradients, against NumPy's AdamW."""
    R = references()
    torch = R.torch
    np_model = _np_model(seed, *sizes)
    model = R.tm.from_numpy(np_model)
    opt, problem, outcome = _optimizer_of(fn, model, lr, weight_decay, betas)
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    if opt is None:
        return ("returned", problem), problem, outcome
    named = dict(model.named_parameters())
    for k in range(2):
        for n, g in _grads(100 * seed + k, np_model.parameters()).items():
            named[n].grad = torch.from_numpy(g)
        step = run_student(opt.step)
        if step.error is not None:
            return ("error", type(step.error).__name__, str(step.error)), None, step
    got = np.concatenate([named[n].detach().numpy().ravel() for n in sorted(named)])
    expected = _numpy_adamw_run(seed, sizes, lr, weight_decay, betas)
    bad = ~np.isclose(got, expected, rtol=RTOL, atol=1e-9)
    if np.any(bad):
        i = int(np.argwhere(bad)[0][0])
        problem = (f"values differ in {_flat_name(i, sizes)}: expected {expected[i]:.6g}, got {got[i]:.6g} "
                   f"({int(bad.sum())} of {bad.size} numbers differ)")
        return ("steps", got), f"the parameters after two steps: {problem}" + _settings_said(opt, lr, betas), outcome
    return ("ok",), "", outcome


def _settings_said(opt, lr, betas):
    """What of the optimizer's own settings differs from what the two steps were computed with: '; ...' or ''."""
    R = references()
    said = []
    if type(opt) is not R.torch.optim.AdamW:
        said.append(f"it is a {type(opt).__name__}, not torch.optim.AdamW (whose weight decay is decoupled: "
                    "p -> p - lr * weight_decay * p, apart from the Adam step)")
    want = {"lr": lr, "betas": tuple(betas), "eps": 1e-8, "amsgrad": False, "maximize": False}
    for key, value in want.items():
        got = {repr(tuple(g[key]) if isinstance(g.get(key), (list, tuple)) else g.get(key)) for g in opt.param_groups}
        if got != {repr(value)}:
            said.append(f"its groups have {key}={', '.join(sorted(got))} where {value!r} is meant"
                        + (" (AdamW's default; leave it out)" if key == "eps" else ""))
    return ("; " + "; ".join(said)) if said else ""


MAKE_OPTIMIZER = Exercise("10.3", "make_optimizer", points=2, reference=Later(lambda: references().make_optimizer))


@MAKE_OPTIMIZER.checked_by
@_one_thread
def check_make_optimizer(make_optimizer=None, *, points=None, hidden=False):
    """AdamW with two parameter groups, weight decay on the matrices only."""
    c = TorchChecker(MAKE_OPTIMIZER, points, hidden)
    fn = c.find(make_optimizer, "make_optimizer")
    sizes = [(11, 8, 2, 12, 1, 1)] + ([(13, 12, 3, 16, 2, 2)] if hidden else [])
    args = [(seed, size) for seed, size in enumerate(sizes)]
    parts = [("every parameter in the optimizer, each in one group (a model of 1 + 1 blocks)", _observe_groups, args),
             ("weight decay on the matrices, the embedding included; none on gains and biases (one step, "
              "every gradient zero: only the decay moves a parameter)", _observe_decay, args),
             ("two steps equal NumPy's AdamW (lr 0.02, weight_decay 0.3, betas (0.8, 0.95), random gradients)",
              _observe_steps, args)]
    if fn is not None:
        _check_parts(c, fn, parts, CATALOG["make_optimizer"])
    return c.result()
