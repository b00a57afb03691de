"""Checkers for lesson 10, Capstone: the model in PyTorch.

Exercise 10.1 TorchMultiHeadAttention.forward (3 points), 10.2 TorchDecoderBlock.forward (3),
10.3 load_numpy_parameters (2), 10.4 torch_train_step (3), 10.5 the steps of a data-parallel training
step, in order (1).

Every torch answer is checked against the NumPy reference on the CPU, on the same weights: the
answer runs in float64 (and once in float32), the reference in NumPy float64, so a correct answer
agrees to rounding. Nothing is trained; every check takes a fraction of a second.

torch is imported on first use, not with this module: every grading kernel imports all the
checkers at start-up (encdec.checks.guard), and only this lesson needs torch. The exercise list
(EXERCISES), whose reference classes are torch modules, is built on first access for that reason.
"""

import copy
import functools
from types import SimpleNamespace

import numpy as np

from .. import attention, layers, training
from ..attention import create_causal_mask
from ..loss import softmax_cross_entropy
from ..mistakes import CATALOG
from ..mistakes import lesson10 as _register  # noqa: F401  (fills the catalog)
from ..model import Seq2Seq, shift_right
from .core import Case, Checker, Exercise, Mistake, compare, rebind, run_student
from .ordering import Ordering, Step

POINTS = {"10.1": 3, "10.2": 3, "10.3": 2, "10.4": 3, "10.5": 1}
PAD, BOS, EOS = 0, 1, 2


def _rng(seed):
    return np.random.default_rng(seed)


def _randomize(params, r, scale=0.4):
    """Every parameter random: gains near 1, biases and matrices noisy (no all-ones that hide a norm)."""
    for name, p in params.items():
        if "gamma" in name:
            p[...] = r.uniform(0.5, 1.5, size=p.shape)
        elif p.ndim == 1:
            p[...] = r.normal(0.0, 0.3, size=p.shape)
        else:
            p[...] = r.normal(0.0, scale, size=p.shape)
    return params


# -- the torch side, built on first use ----------------------------------------------------------------
@functools.cache
def references():
    """The torch reference classes and functions the checks compare with and put in place."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from .. import torch_model as tm

    class MultiHeadAttention(tm.MultiHeadAttention):
        """The twin's attention, always returning (output, weights): the exercise's contract."""

        def forward(self, query_input, key_value_input=None, mask=None, need_weights=True):
            return tm.MultiHeadAttention.forward(self, query_input, key_value_input, mask, need_weights=True)

    class DecoderBlock(tm.DecoderBlock):
        """The twin's decoder block, built from the attention above; returns (output, cross_weights)."""

        def __init__(self, d_model, n_heads, d_ff):
            nn.Module.__init__(self)
            self.self_attn = MultiHeadAttention(d_model, n_heads)
            self.cross_attn = MultiHeadAttention(d_model, n_heads)
            self.ffn = tm.FeedForward(d_model, d_ff)
            self.norm1_gamma = nn.Parameter(torch.ones(d_model))
            self.norm2_gamma = nn.Parameter(torch.ones(d_model))
            self.norm3_gamma = nn.Parameter(torch.ones(d_model))

        def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
            return tm.DecoderBlock.forward(self, x, encoder_output, self_attn_mask, cross_attn_mask,
                                           need_weights=True)

    def rms_norm(x, gamma, eps=1e-6):
        return F.rms_norm(x, gamma.shape, gamma, eps)

    def train_step(model, optimizer, src, tgt, bos_id):
        tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    return SimpleNamespace(torch=torch, tm=tm, MultiHeadAttention=MultiHeadAttention, DecoderBlock=DecoderBlock,
                           FeedForward=tm.FeedForward, rms_norm=rms_norm, train_step=train_step)


def _to_numpy(value):
    """Tensors (alone or in a tuple) -> float64 NumPy arrays; anything else unchanged."""
    if isinstance(value, (tuple, list)):
        return tuple(_to_numpy(v) for v in value)
    torch = references().torch
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64).numpy()
    return value


def _tensor_call(module):
    """Call a torch module with NumPy inputs: float64 tensors, or a float32 copy of the module
    and float32 tensors when the inputs are float32."""
    torch = references().torch
    f32 = {}

    def call(*args, **kwargs):
        single = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
        target = module
        if single:
            if "module" not in f32:
                f32["module"] = copy.deepcopy(module).float()
            target = f32["module"]
        dtype = torch.float32 if single else torch.float64

        def conv(a):
            return torch.from_numpy(np.array(a)).to(dtype) if isinstance(a, np.ndarray) else a

        with torch.no_grad():
            return target(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})

    return call


def _build(c, cls, args, params, what):
    """The student's module built with the given constructor, float64, holding `params` (NumPy
    arrays by name); None when that fails (with a message)."""
    R = references()
    outcome = run_student(cls, args)
    if outcome.error is not None:
        c.stopped = (f"building `{cls.__name__}{args}` raised {outcome.error_text}. Keep the given "
                     "constructor, and run the cell that defines the class again.")
        return None
    module = outcome.value
    try:
        R.tm.load_numpy_parameters(module.double(), params)
    except Exception as exc:
        c.record(what, False, f"could not give your module the test weights ({type(exc).__name__}: {exc}); "
                              "keep the parameter names of the given constructor")
        return None
    return module


def _catalog_calls(mistakes, reference_cls, args, params):
    """Catalog mistakes written as forward methods, each made a module with the same weights."""
    R = references()
    out = []
    for m in mistakes:
        cls = type(reference_cls.__name__, (reference_cls,), {"forward": m.impl})
        module = R.tm.load_numpy_parameters(cls(*args).double(), params)
        out.append(Mistake(m.exercise, m.key, m.diagnosis, _tensor_call(module)))
    return out


# -- Exercise 10.1 ---------------------------------------------------------------------------------------
def mha_parts():
    r = _rng(101)
    causal = create_causal_mask(5)
    pad = np.where(np.array([[0, 0, 0, 0, 1], [0, 0, 1, 1, 1]]) == 1, -np.inf, 0.0)[:, None, None, :]
    return [
        ("self-attention (d_model=8, 2 heads)", 8, 2, [
            Case("one sequence x of shape (5, 8)", (r.normal(size=(5, 8)),)),
            Case("a batch x of shape (2, 5, 8)", (r.normal(size=(2, 5, 8)),)),
            Case("leading shape (2, 3): x of shape (2, 3, 4, 8)", (r.normal(size=(2, 3, 4, 8)),), hidden=True)]),
        ("cross-attention, m != n (d_model=8, 2 heads)", 8, 2, [
            Case("queries (2, 3, 8) over keys and values (2, 5, 8)", (r.normal(size=(2, 3, 8)), r.normal(size=(2, 5, 8)))),
            Case("one query (1, 8) over 6 positions (6, 8)", (r.normal(size=(1, 8)), r.normal(size=(6, 8))), hidden=True)]),
        ("masks (d_model=12, 3 heads)", 12, 3, [
            Case("self-attention with the causal mask (5, 5)", (r.normal(size=(2, 5, 12)), None, causal)),
            Case("cross-attention with a padding mask (2, 1, 1, 5)", (r.normal(size=(2, 4, 12)), r.normal(size=(2, 5, 12)), pad)),
            Case("causal mask, large inputs (entries about 10)", (r.normal(size=(5, 12)) * 10, None, causal), hidden=True)]),
        ("float32 (d_model=8, 4 heads)", 8, 4, [
            Case("float32 x of shape (2, 5, 8)", (r.normal(size=(2, 5, 8)).astype(np.float32),), float32=True)]),
    ]


def check_multi_head_attention(TorchMultiHeadAttention=None, *, points=POINTS["10.1"], hidden=False):
    """Exercise 10.1: forward(query_input, key_value_input=None, mask=None) -> (output, weights),
    in torch, against the NumPy reference on the same weights."""
    c = Checker("10.1", "TorchMultiHeadAttention.forward", points, hidden)
    cls = c.find(TorchMultiHeadAttention, "TorchMultiHeadAttention", kind="class")
    R = references()
    forbidden = [R.tm.MultiHeadAttention.forward, R.MultiHeadAttention.forward,
                 attention.MultiHeadAttention.__call__, attention.MultiHeadAttention.attend]
    for seed, (label, d_model, n_heads, cases) in enumerate(mha_parts()):
        if c.stopped:
            break
        if not hidden and all(case.hidden for case in cases):
            continue
        ref = attention.MultiHeadAttention(d_model, n_heads, rng=seed)
        _randomize(ref.parameters(), _rng(1010 + seed))
        module = _build(c, cls, (d_model, n_heads), ref.parameters(), label)
        if module is None:
            continue
        catalog = _catalog_calls(CATALOG["TorchMultiHeadAttention"], R.MultiHeadAttention, (d_model, n_heads),
                                 ref.parameters())
        c.check_cases(label, _tensor_call(module), ref, cases, catalog=catalog, forbidden=forbidden,
                      names=("output", "weights"), postprocess=_to_numpy)
    return c.result()


# -- Exercise 10.2 ---------------------------------------------------------------------------------------
def decoder_block_parts():
    r = _rng(102)

    def masks(tgt_pad, src_pad):
        """Causal plus target padding (B, 1, m, m) and source padding (B, 1, 1, n), additive."""
        m, n = tgt_pad.shape[-1], src_pad.shape[-1]
        self_mask = create_causal_mask(m) + np.where(tgt_pad, -np.inf, 0.0)[:, None, None, :]
        return self_mask, np.where(src_pad, -np.inf, 0.0)[:, None, None, :]

    tgt_pad = np.array([[0, 0, 0, 1], [0, 0, 0, 0]], dtype=bool)
    src_pad = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0]], dtype=bool)
    self_mask, cross_mask = masks(tgt_pad, src_pad)
    return [
        ("one sequence, no masks (d_model=8, 2 heads, d_ff=12)", (8, 2, 12), [
            Case("x (3, 8), encoder_output (5, 8)", (r.normal(size=(3, 8)), r.normal(size=(5, 8)))),
            Case("x (1, 8), encoder_output (2, 8)", (r.normal(size=(1, 8)), r.normal(size=(2, 8))), hidden=True)]),
        ("a batch with both masks (d_model=8, 2 heads, d_ff=12)", (8, 2, 12), [
            Case("x (2, 4, 8), encoder_output (2, 6, 8), causal + padding masks",
                 (r.normal(size=(2, 4, 8)), r.normal(size=(2, 6, 8)), self_mask, cross_mask)),
            Case("the causal mask alone, x (2, 4, 8), encoder_output (2, 3, 8)",
                 (r.normal(size=(2, 4, 8)), r.normal(size=(2, 3, 8)), create_causal_mask(4)), hidden=True)]),
        ("float32 and large inputs (d_model=12, 3 heads, d_ff=20)", (12, 3, 20), [
            Case("float32 x (2, 4, 12), encoder_output (2, 5, 12)",
                 (r.normal(size=(2, 4, 12)).astype(np.float32), r.normal(size=(2, 5, 12)).astype(np.float32)),
                 float32=True),
            Case("large inputs (entries about 20)", (r.normal(size=(4, 12)) * 20, r.normal(size=(5, 12)) * 20), hidden=True)]),
    ]


def check_decoder_block(TorchDecoderBlock=None, *, points=POINTS["10.2"], hidden=False):
    """Exercise 10.2: forward(x, encoder_output, self_attn_mask=None, cross_attn_mask=None) ->
    (output, cross_weights): pre-norm self-attention, cross-attention, FFN, each with its residual.

    The block's attention, feed-forward network and `rms_norm` run as the reference while this is
    checked, so a mistake in Exercise 10.1 is not charged again here.
    """
    c = Checker("10.2", "TorchDecoderBlock.forward", points, hidden)
    cls = c.find(TorchDecoderBlock, "TorchDecoderBlock", kind="class")
    R = references()
    if cls is not None:
        cls = rebind(cls, TorchMultiHeadAttention=R.MultiHeadAttention, TorchFeedForward=R.FeedForward,
                     rms_norm=R.rms_norm)
    forbidden = [R.tm.DecoderBlock.forward, R.DecoderBlock.forward, layers.DecoderBlock.__call__]
    for seed, (label, sizes, cases) in enumerate(decoder_block_parts()):
        if c.stopped:
            break
        if not hidden and all(case.hidden for case in cases):
            continue
        ref = layers.DecoderBlock(*sizes, rng=seed)
        _randomize(ref.parameters(), _rng(1020 + seed))
        module = _build(c, cls, sizes, ref.parameters(), label)
        if module is None:
            continue
        catalog = _catalog_calls(CATALOG["TorchDecoderBlock"], R.DecoderBlock, sizes, ref.parameters())
        c.check_cases(label, _tensor_call(module), ref, cases, catalog=catalog, forbidden=forbidden,
                      names=("output", "cross_weights"), postprocess=_to_numpy)
    return c.result()


# -- Exercise 10.3 ---------------------------------------------------------------------------------------
def _transfer_setup(seed, dtype_name, sizes=(13, 8, 2, 12, 1, 2)):
    """(torch model with torch's own initial weights, NumPy parameters with other random values)."""
    R = references()
    V, d, h, d_ff, ne, nd = sizes
    np_model = Seq2Seq(vocab_size=V, d_model=d, n_heads=h, d_ff=d_ff, n_encoder_layers=ne, n_decoder_layers=nd, rng=seed)
    _randomize(np_model.parameters(), _rng(1030 + seed))
    twin = R.tm.Seq2Seq(np_model.config, seed=seed).to(getattr(R.torch, dtype_name))
    return twin, np_model


def _observe_values(fn, seed, sizes):
    """Part 1: float64 model. Returns (summary for diagnosis, problem message or '', outcome)."""
    twin, np_model = _transfer_setup(seed, "float64", sizes)
    params = {k: v.copy() for k, v in np_model.parameters().items()}
    outcome = run_student(fn, (twin, params), forbidden=_transfer_forbidden())
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    got = {name: p.detach().numpy() for name, p in twin.named_parameters()}
    for name, value in np_model.parameters().items():
        problem = compare(got[name], value)
        if problem:
            return ("values", tuple(got[k] for k in sorted(got))), f"parameter `{name}`: {problem}", outcome
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
        return ("forward", float(diff)), f"the loaded model's logits differ from NumPy's by {diff:.2e}", outcome
    return ("ok",), "", outcome


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
    for v in params.values():
        v += 1.0  # change the NumPy arrays: the module must not see it
    independent = all(np.array_equal(after[k].detach().float().numpy(), (v - 1.0).astype(np.float32))
                      for k, v in params.items())
    summary = ("in place", same, dtype, grad, values, independent)
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
    """Part 3: three dicts that do not fit the model. (summary, problem, None)."""
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
        if outcome.delegated:
            return ("delegated",), None, outcome
        kind = type(outcome.error).__name__ if outcome.error is not None else "none"
        results.append((label, kind))
    summary = ("refusals",) + tuple(k for _, k in results)
    for label, kind in results:
        if kind != "ValueError":
            said = "was accepted" if kind == "none" else f"raised {kind}, not ValueError"
            return summary, f"a dict {label} {said}", None
    return ("ok",), "", None


def _transfer_forbidden():
    R = references()
    return [R.tm.load_numpy_parameters, R.tm.from_numpy]


def _diagnose_part(observe, student_summary, catalog, *args):
    """The diagnosis of the first mistake whose behaviour in this part equals the student's."""
    for m in catalog:
        summary, _, _ = observe(m.impl, *args)
        if _same(summary, student_summary):
            return m.diagnosis
    return ""


def _same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return compare(a, b) is None
    return a == b


def check_load_numpy_parameters(load_numpy_parameters=None, *, points=POINTS["10.3"], hidden=False):
    """Exercise 10.3: copy NumPy arrays into a torch model's parameters by name, in place."""
    c = Checker("10.3", "load_numpy_parameters", points, hidden)
    fn = c.find(load_numpy_parameters, "load_numpy_parameters")
    catalog = CATALOG["load_numpy_parameters"]
    sizes = [(13, 8, 2, 12, 1, 2)] + ([(9, 12, 3, 20, 2, 1)] if hidden else [])
    parts = [("every array lands in the parameter of the same name (float64 model, logits equal NumPy's)", _observe_values),
             ("in place: dtype, Parameter objects and requires_grad kept (float32 model, an optimizer made before)",
              _observe_in_place),
             ("a dict that does not fit the model is refused with a ValueError", _observe_refusals)]
    for label, observe in parts:
        if c.stopped:
            break
        for seed, size in enumerate(sizes):
            summary, problem, outcome = observe(fn, seed, size)
            if outcome is not None:
                c._absorb(outcome, label)
                if outcome.delegated:
                    c._explain_error(outcome)
                    c.record(label, False, c.stopped)
                    break
            if summary[0] == "error":
                diagnosis = c._once(_diagnose_part(observe, summary, catalog, seed, size))
                message = c._explain_error(outcome) + (f"\n      Likely cause: {diagnosis}" if diagnosis else "")
                c.record(label, False, message)
                break
            if problem:
                diagnosis = c._once(_diagnose_part(observe, summary, catalog, seed, size))
                c.record(label, False, problem + (f"\n      Likely cause: {diagnosis}" if diagnosis else ""))
                break
        else:
            c.record(label, True)
    return c.result()


# -- Exercise 10.4 ---------------------------------------------------------------------------------------
def _train_batches(seed, vocab_size):
    """Two batches (src (3, 5), tgt (3, 4)): targets end in EOS, then pads; sources right-padded."""
    r = _rng(seed)
    out = []
    for _ in range(2):
        src = r.integers(3, vocab_size, size=(3, 5))
        src[0, 3:] = PAD
        tgt = r.integers(3, vocab_size, size=(3, 4))
        tgt[0, 1], tgt[0, 2:] = EOS, PAD
        tgt[1, 3] = EOS
        tgt[2, 2], tgt[2, 3] = EOS, PAD
        out.append((src, tgt))
    return out


def _train_model(seed):
    m = Seq2Seq(vocab_size=11, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=1, n_decoder_layers=1, rng=seed)
    _randomize(m.parameters(), _rng(1040 + seed))
    return m


LR = 0.5


def reference_two_steps(seed, dtype="float64"):
    """What two SGD steps of train_step must give, computed in NumPy: (loss 1, loss 2, parameters)."""
    model = _train_model(seed)
    losses = []
    for src, tgt in _train_batches(seed, 11):
        logits, cache = training.forward_with_cache(model, src, shift_right(tgt, BOS))
        loss, dlogits = softmax_cross_entropy(logits, tgt, PAD)
        grads = training.backward(model, dlogits, cache)
        for name, p in model.parameters().items():
            p -= LR * grads[name]
        losses.append(loss)
    flat = np.concatenate([p.ravel() for _, p in sorted(model.parameters().items())])
    return np.array(losses[0]), np.array(losses[1]), flat


def _two_steps(fn):
    """Run a train_step answer for two steps on the torch twin of the NumPy model, with SGD."""
    def run(seed, dtype="float64"):
        R = references()
        twin = R.tm.from_numpy(_train_model(seed), dtype=getattr(R.torch, dtype))
        optimizer = R.torch.optim.SGD(twin.parameters(), lr=LR)
        losses = []
        for src, tgt in _train_batches(seed, 11):
            losses.append(fn(twin, optimizer, R.torch.from_numpy(src), R.torch.from_numpy(tgt), BOS))
        losses = [float(x.detach()) if isinstance(x, R.torch.Tensor) else x for x in losses]
        params = dict(twin.named_parameters())
        flat = np.concatenate([params[k].detach().double().numpy().ravel() for k in sorted(params)])
        return np.array(losses[0], dtype=np.float64), np.array(losses[1], dtype=np.float64), flat
    return run


def check_torch_train_step(torch_train_step=None, *, points=POINTS["10.4"], hidden=False):
    """Exercise 10.4: one teacher-forced step in torch. Two steps with plain SGD (lr 0.5) on the
    torch twin of a NumPy model must give NumPy's losses and NumPy's updated weights, whose
    gradients come from Lesson 7's backward pass."""
    c = Checker("10.4", "torch_train_step", points, hidden)
    fn = c.find(torch_train_step, "torch_train_step")
    R = references()
    forbidden = [R.train_step, training.train_step]
    catalog = [Mistake(m.exercise, m.key, m.diagnosis, _two_steps(m.impl)) for m in CATALOG["torch_train_step"]]
    names = ("the first step's loss", "the second step's loss", "the weights after two steps")
    student = _two_steps(fn) if fn is not None else None
    c.check_cases("two steps on batches with padding (float64)", student, reference_two_steps,
                  [Case("two batches of 3 (sources of 5, targets of 4, some padded), SGD lr 0.5", (0,)),
                   Case("two other batches, another model", (1,), hidden=True)],
                  catalog=catalog, forbidden=forbidden, names=names)
    c.check_cases("a float32 model", student, reference_two_steps,
                  [Case("the same two steps in float32", (2, "float32"), float32=True)],
                  catalog=catalog, forbidden=forbidden, names=names)
    return c.result()


# -- Exercise 10.5 ---------------------------------------------------------------------------------------
DDP_STEP_ORDER = Ordering(
    "10.5", "one data-parallel training step, in order", "ddp_step_order",
    steps=[
        Step("every process builds the step's global batch from the step number",
             "Every process must agree on the batch before any of them can take its share, so the same "
             "global batch, rebuilt from the step number alone, comes first."),
        Step("each process keeps its own slice of the batch's rows",
             "A process can only take its slice of a batch that exists: the global batch comes first, "
             "and the forward pass then reads only this slice."),
        Step("forward pass and loss on the slice, scaled so that the average over processes is the global mean",
             "The loss is computed from this process's rows, so the slice must be taken before; the "
             "gradients then come from this loss."),
        Step("backward pass: each process's gradients of its own loss",
             "Backpropagation needs the loss, so it comes after the forward pass; it produces the local "
             "gradients the processes then average."),
        Step("all-reduce: DDP averages every gradient over the processes",
             "Only gradients that exist can be averaged: DDP starts each all-reduce as soon as the "
             "backward pass has produced that gradient, and the update must wait for the average."),
        Step("optimizer step, the same update on every process, so the weights stay identical",
             "The update uses the averaged gradients; applied to identical weights, it leaves every "
             "process with the same model for the next step."),
    ],
    shown=[4, 2, 0, 5, 1, 3],
)


def check_ddp_step_order(ddp_step_order=None, *, points=POINTS["10.5"]):
    """Exercise 10.5: all or nothing."""
    return DDP_STEP_ORDER.check(ddp_step_order, points)


ORDERINGS = [DDP_STEP_ORDER]


@functools.cache
def _exercises():
    R = references()
    return [
        Exercise("10.1", "TorchMultiHeadAttention", check_multi_head_attention, POINTS["10.1"], R.MultiHeadAttention,
                 method="forward", cell="multi_head_attention"),
        Exercise("10.2", "TorchDecoderBlock", check_decoder_block, POINTS["10.2"], R.DecoderBlock,
                 method="forward", cell="decoder_block"),
        Exercise("10.3", "load_numpy_parameters", check_load_numpy_parameters, POINTS["10.3"],
                 R.tm.load_numpy_parameters),
        Exercise("10.4", "torch_train_step", check_torch_train_step, POINTS["10.4"], R.train_step),
    ]


def __getattr__(name):
    if name == "EXERCISES":  # built on first access: it holds torch classes
        return _exercises()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
