"""Exercise 10.1, load_numpy_parameters: NumPy arrays copied into a torch model's parameters by name, in
place. Three observed parts (the values, what stays in place, the refusals) and the probe of a round
trip through a lower precision."""

import copy

import numpy as np

from ...mistakes import CATALOG
from ...model import Seq2Seq, shift_right
from ..comparing import compare
from ..exercises import Exercise, Later
from ..fixtures import BOS, EOS, PAD, generator, randomize
from ..probes import Finding
from ..running import run_student
from .torch_checker import TorchChecker, _check_parts, _one_thread
from .torch_references import references


def _transfer_setup(seed, dtype_name, sizes=(13, 8, 2, 12, 1, 2)):
    """(torch model with torch's own initial weights, NumPy parameters with other random values)."""
    R = references()
    V, d, h, d_ff, ne, nd = sizes
    np_model = Seq2Seq(vocab_size=V, d_model=d, n_heads=h, d_ff=d_ff, n_encoder_layers=ne, n_decoder_layers=nd, rng=seed)
    randomize(np_model, generator(1030 + seed))
    twin = R.tm.Seq2Seq(np_model.config, seed=seed).to(getattr(R.torch, dtype_name))
    return twin, np_model


def _transfer_forbidden():
    R = references()
    return [R.tm.load_numpy_parameters, R.tm.from_numpy]


def _observe_values(fn, seed, sizes):
    """Part 1: float64 model. Returns (summary for diagnosis, problem message or '', outcome)."""
    twin, np_model = _transfer_setup(seed, "float64", sizes)
    params = {k: v.copy() for k, v in np_model.parameters().items()}
    outcome = run_student(fn, (twin, params), forbidden=_transfer_forbidden())
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    got = {name: p.detach().numpy() for name, p in twin.named_parameters()}
    rounded = _rounded_through(got, np_model.parameters())
    for name, value in np_model.parameters().items():
        problem = compare(got[name], value)
        if problem:
            return ("values", tuple(got[k] for k in sorted(got)), rounded), f"parameter `{name}`: {problem}", outcome
    if outcome.value is not twin:
        return ("returned", type(outcome.value).__name__), (
            "return the module itself, so that `model = load_numpy_parameters(model, params)` works "
            f"(got {type(outcome.value).__name__})"), outcome
    R = references()
    V = np_model.config.vocab_size
    src = np.where(np.arange(5) < [[4], [5]], 3 + np.arange(10).reshape(2, 5) % (V - 3), PAD)
    tgt_in = shift_right(np.array([[5, 6, EOS, PAD], [7, 8, 3, EOS]]) % V, BOS)
    with R.torch.no_grad():
        diff = np.max(np.abs(twin(R.torch.from_numpy(src), R.torch.from_numpy(tgt_in)).numpy() - np_model(src, tgt_in)))
    if diff > 1e-10:
        return ("forward", float(diff), rounded), f"the loaded model's logits differ from NumPy's by {diff:.2e}", outcome
    return ("ok",), "", outcome


def _rounded_through(got, params):
    """"float32" (or "float16") when every loaded float64 parameter is exactly its NumPy array rounded to that
    precision, and some differ from the array itself: the values made a round trip through a lower precision
    on the way in. None otherwise."""
    if set(got) != set(params) or all(np.array_equal(got[k], v) for k, v in params.items()):
        return None
    for dtype in ("float32", "float16"):
        if all(np.shape(got[k]) == np.shape(v) and np.array_equal(got[k], np.asarray(v).astype(dtype).astype(np.float64))
               for k, v in params.items()):
            return dtype
    return None


def _precision_probe(summary):
    """Part 1's probe: the float64 model holds the NumPy values rounded to a lower precision."""
    if summary[0] in ("values", "forward", "in place") and summary[-1]:
        dtype = summary[-1]
        return Finding("load_numpy_parameters", f"probe:precision:through_{dtype}", (
            f"the values went through {dtype} on the way in: every parameter holds its NumPy array rounded to "
            f"{dtype}, though the model keeps more digits. Convert each array to the parameter's own dtype, not to a fixed one "
            "(torch.from_numpy(value) keeps float64; p.copy_(...) then casts to p's dtype; torch.tensor(value, "
            f"dtype=torch.{dtype}) or .float() loses the digits a float64 model keeps)."))
    return None


def _observe_in_place(fn, seed, sizes):
    """Part 2: float32 model, an optimizer made before the copy. (summary, problem, outcome)."""
    R = references()
    twin, np_model = _transfer_setup(seed, "float32", sizes)
    params = {k: v.copy() for k, v in np_model.parameters().items()}
    before = dict(twin.named_parameters())
    optimizer = R.torch.optim.SGD(twin.parameters(), lr=0.1)
    outcome = run_student(fn, (twin, params), forbidden=_transfer_forbidden())
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    after = dict(twin.named_parameters())
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    same = all(after[k] is before[k] for k in before) and all(id(p) in held for p in after.values())
    dtype = all(p.dtype == R.torch.float32 for p in after.values())
    grad = all(p.requires_grad for p in after.values())
    values = all(np.array_equal(after[k].detach().numpy(), v.astype(np.float32)) for k, v in params.items())
    half = not values and all(np.array_equal(after[k].detach().float().numpy(), v.astype(np.float16).astype(np.float32))
                              for k, v in params.items())
    for v in params.values():
        v += 1.0  # change the NumPy arrays: the module must not see it
    independent = all(np.array_equal(after[k].detach().float().numpy(), (v - 1.0).astype(np.float32))
                      for k, v in params.items())
    summary = ("in place", same, dtype, grad, values, independent, "float16" if half else None)
    if not dtype:
        return summary, "the float32 model's parameters are no longer float32 after your copy", outcome
    if not same:
        return summary, ("the parameters are new tensors, not the model's own: an optimizer made before "
                         "the copy still holds the old ones"), outcome
    if not independent:
        return summary, "the parameters share memory with the NumPy arrays: changing an array changes the model", outcome
    if not grad:
        return summary, "the parameters no longer require grad, so the model cannot be trained", outcome
    if not values:
        return summary, "the float32 parameters do not hold the NumPy values (rounded to float32)", outcome
    return ("ok",), "", outcome


def _observe_refusals(fn, seed, sizes):
    """Part 3: three dicts that do not fit the model. (summary, problem, outcome of a delegation or None)."""
    twin, np_model = _transfer_setup(seed, "float64", sizes)
    params = np_model.parameters()
    missing = {k: v for k, v in params.items() if k != "encoder_norm_gamma"}
    extra = {**params, "decoder.7.ffn.W1": params["decoder.0.ffn.W1"]}
    wrong = {**params, "decoder.0.ffn.W1": params["decoder.0.ffn.W1"].T.copy()}
    results = []
    for label, bad in (("without `encoder_norm_gamma`", missing), ("with an unexpected `decoder.7.ffn.W1`", extra),
                       (f"with `decoder.0.ffn.W1` of shape {wrong['decoder.0.ffn.W1'].shape} "
                        f"instead of {params['decoder.0.ffn.W1'].shape}", wrong)):
        outcome = run_student(fn, (copy.deepcopy(twin), {k: v.copy() for k, v in bad.items()}),
                              forbidden=_transfer_forbidden())
        if outcome.delegated or isinstance(outcome.error, NotImplementedError):
            return ("stopped",), None, outcome
        kind = type(outcome.error).__name__ if outcome.error is not None else "none"
        results.append((label, kind))
    summary = ("refusals",) + tuple(k for _, k in results)
    lacking, unexpected = results[0][1], results[1][1]
    if (lacking == "none") != (unexpected == "none") and "ValueError" in (lacking, unexpected):
        return summary, _one_way(*(label for label, _ in results[:2]), lacking == "none"), None
    for label, kind in results:
        if kind != "ValueError":
            said = "was accepted" if kind == "none" else f"raised {kind}, not ValueError"
            return summary, f"a dict {label} {said}", None
    return ("ok",), "", None


def _one_way(lacking, unexpected, lacking_accepted):
    """Why one of the two name checks is missing: the names are compared in one direction only."""
    if lacking_accepted:
        return (f"a dict {lacking} was accepted, while one {unexpected} was refused: your check of the names goes "
                "one way only, from the dict's names to the module's. A parameter the dict lacks then keeps its old "
                "value without a word. Check both ways: the module's names missing from the dict, and the dict's "
                "names the module lacks (compare the two sets of names).")
    return (f"a dict {unexpected} was accepted, while one {lacking} was refused: your check of the names goes one "
            "way only, from the module's names to the dict's. A name the module lacks (a typo) is then ignored "
            "without a word. Check both ways: the module's names missing from the dict, and the dict's names the "
            "module lacks (compare the two sets of names).")


LOAD_NUMPY_PARAMETERS = Exercise("10.1", "load_numpy_parameters", points=2,
                                 reference=Later(lambda: references().tm.load_numpy_parameters))


@LOAD_NUMPY_PARAMETERS.checked_by
@_one_thread
def check_load_numpy_parameters(load_numpy_parameters=None, *, points=None, hidden=False):
    """Copy NumPy arrays into a torch model's parameters by name, in place."""
    c = TorchChecker(LOAD_NUMPY_PARAMETERS, points, hidden)
    fn = c.find(load_numpy_parameters, "load_numpy_parameters")
    sizes = [(13, 8, 2, 12, 1, 2)] + ([(9, 12, 3, 20, 2, 1)] if hidden else [])
    args = [(seed, size) for seed, size in enumerate(sizes)]
    parts = [("every array lands in the parameter of the same name (float64 model, logits equal NumPy's)",
              _observe_values, args, _precision_probe),
             ("in place: dtype, Parameter objects and requires_grad kept (float32 model, an optimizer made before)",
              _observe_in_place, args, _precision_probe),
             ("a dict that does not fit the model is refused with a ValueError", _observe_refusals, args)]
    if fn is not None:
        _check_parts(c, fn, parts, CATALOG["load_numpy_parameters"])
    return c.result()
