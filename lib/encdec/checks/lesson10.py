"""Checkers for lesson 10, Capstone: training, evaluating and decoding in PyTorch.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

Every torch answer is checked against the NumPy reference on the same weights: the schedule against
`encdec.optim.warmup_cosine_schedule`; the optimizer and the training step against the NumPy model's
own backward pass, `encdec.optim.AdamW` and clipping done in NumPy; decoding against
`encdec.decoding.greedy_decode` (without a cache). Models are tiny and nothing trains for more than
two steps: every check takes a fraction of a second.

What cannot be seen in a return value is observed while the answer runs:
- exact_match gets a real torch Seq2Seq whose decoder follows a script (so every edge case of the
  comparison is exercised on purpose), and which records, each time the answer calls it, whether
  it is in training mode and whether autograd is recording. So a missing model.eval() is seen
  without relying on dropout (once the torch model has dropout, it would also change the scores);
- greedy_decode_cached runs under a torch function mode that counts the rows multiplied by the
  encoder's and every decoder block's W_q and W_k: one new position per step means B rows per
  step in self-attention, and the encoder output's B * n rows once.

torch is imported on first use, not with this module: every grading kernel imports all the
checkers at start-up (encdec.checks.guard), and only this lesson needs torch. The exercises'
references are torch functions, so each is made on first use (a `Later`).
"""

import contextlib
import copy
import functools
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .. import decoding, optim, training
from ..loss import softmax_cross_entropy
from ..mistakes import CATALOG
from ..mistakes import lesson10 as _register  # noqa: F401  (fills the catalog)
from ..model import ModelConfig, Seq2Seq, shift_right
from .catalog import wrapped
from .core import RTOL, RTOL32, Attempt, Case, Checker, compare, run_student, with_cause
from . import exercises
from .exercises import Exercise, Later
from .fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model, randomize
from .ordering import Ordering, Step
from .probes import Combos, DecodedRows, Finding, Probes, find_slip
from .quiz import Quiz, unanswered
from .record import collected


class Returned(Exception):
    """An answer returned something of the wrong kind (the message says what)."""


DELEGATED = {  # library functions an answer may not call, in the words the student reads
    "Seq2Seq.greedy_decode": "your code calls `model.greedy_decode`, the course's decoding without a cache. "
                             "This exercise asks you to write the decoding loop yourself, with a cache.",
}


_PASSED = {}  # exercise number -> the last answer object whose check earned every part (for yours_or_ours)


class TorchChecker(Checker):
    """A Checker whose messages speak of PyTorch, not NumPy. It remembers the last answer that earned every
    part of its check, so that a demonstration right after the test cell (yours_or_ours) need not run the
    same check again; grading never reads it."""

    def find(self, obj, name, kind="function"):
        self.answer = super().find(obj, name, kind)
        return self.answer

    def result(self):
        score = super().result()
        answer = getattr(self, "answer", None)
        if answer is not None and self.status == "checked" and self.parts and all(self.earned(p) for p in self.parts):
            _PASSED[self.exercise] = answer
        return score

    def _explain_error(self, outcome):
        if isinstance(outcome.error, Returned):
            return str(outcome.error)
        text = super()._explain_error(outcome)
        if outcome.delegated:
            text = DELEGATED.get(outcome.delegated) or text.replace("Write it yourself with NumPy.",
                                                                    "Write it yourself, in PyTorch.")
            self.stop(text, "delegated")
        return text


def _one_thread(check):
    """Run a check with torch on one thread (restored afterwards): the models are tiny, and threads only
    fight each other on a machine that grades several notebooks at once."""
    @functools.wraps(check)
    def run(*args, **kwargs):
        torch = references().torch
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return check(*args, **kwargs)
        finally:
            torch.set_num_threads(before)
    return run


# -- the torch side, built on first use ----------------------------------------------------------------
@functools.cache
def references():
    """The torch references the checks compare with, and the instruments they observe answers with."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    from .. import capstone
    from .. import torch_model as tm
    from ..layers import sinusoidal_positions

    # what the notebook gives, for the references' own use
    def rms_norm(x, gamma, eps=1e-6):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma

    def attend(Q, K, V, mask=None):
        scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
        if mask is not None:
            scores = scores + mask
        return scores.softmax(dim=-1) @ V

    def embed_at(model, tokens, position):
        d = model.config.d_model
        x = F.embedding(tokens[:, None], model.embedding) * math.sqrt(d)
        pe = torch.from_numpy(sinusoidal_positions(position + 1, d)[position])
        return x + pe.to(device=x.device, dtype=x.dtype)

    # the answers
    def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
        return float(optim.warmup_cosine_schedule(step, peak_lr, warmup_steps, total_steps, min_lr))

    def make_optimizer(model, lr, weight_decay, betas):
        params = list(model.parameters())
        groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    def train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
        for group in optimizer.param_groups:
            group["lr"] = lr
        tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        return loss.item(), norm.item()

    def exact_match(model, src, tgt, bos_id, eos_id, max_len):
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                pred = model.greedy_decode(src, bos_id, eos_id, max_len)
        finally:
            model.train(was_training)
        pad = model.config.pad_id
        width = max(pred.shape[1], tgt.shape[1])
        pred = F.pad(pred, (0, width - pred.shape[1]), value=pad)
        target = F.pad(tgt, (0, width - tgt.shape[1]), value=pad)
        is_eos = target == eos_id
        compared = ((is_eos.cumsum(dim=1) - is_eos.long()) == 0) & (target != pad)  # up to the first <eos>
        return ((pred == target) | ~compared).all(dim=1).double().mean().item()

    def start_decoding(model, src):
        """Encode once; every decoder block's cross-attention K, V once; empty self-attention caches."""
        H_enc, src_mask = model.encode(src)
        h = model.config.n_heads
        cross = [(tm.split_heads(H_enc @ b.cross_attn.W_k, h), tm.split_heads(H_enc @ b.cross_attn.W_v, h))
                 for b in model.decoder]
        return {"cross": cross, "src_mask": src_mask, "self": [None] * len(model.decoder), "t": 0}

    def decoder_step(model, state, tokens):
        """Feed tokens (B,) at position state['t']; returns the logits (B, V) of the new position."""
        h, eps = model.config.n_heads, model.config.eps
        x = embed_at(model, tokens, state["t"])  # (B, 1, d_model)
        for i, b in enumerate(model.decoder):
            a = rms_norm(x, b.norm1_gamma, eps)
            K, V = tm.split_heads(a @ b.self_attn.W_k, h), tm.split_heads(a @ b.self_attn.W_v, h)  # (B, h, 1, d_k)
            if state["self"][i] is not None:
                K = torch.cat([state["self"][i][0], K], dim=-2)
                V = torch.cat([state["self"][i][1], V], dim=-2)
            state["self"][i] = (K, V)
            x = x + tm.merge_heads(attend(tm.split_heads(a @ b.self_attn.W_q, h), K, V)) @ b.self_attn.W_o
            a = rms_norm(x, b.norm2_gamma, eps)
            K_c, V_c = state["cross"][i]
            x = x + tm.merge_heads(attend(tm.split_heads(a @ b.cross_attn.W_q, h), K_c, V_c, state["src_mask"])) \
                @ b.cross_attn.W_o
            x = x + b.ffn(rms_norm(x, b.norm3_gamma, eps))
        state["t"] += 1
        return (rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[:, 0]

    def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
        pad = model.config.pad_id
        with torch.no_grad():
            state = start_decoding(model, src)
            token = torch.full((src.shape[0],), bos_id, dtype=torch.long, device=src.device)
            done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
            out = []
            for _ in range(max_len):
                logits = decoder_step(model, state, token).clone()
                logits[:, [pad, bos_id]] = float("-inf")
                token = torch.where(done, pad, logits.argmax(dim=-1))
                out.append(token)
                done = done | (token == eos_id)
                if bool(done.all()):
                    break
            return torch.stack(out, dim=1)

    def cached_logits(model, src, tgt_in):
        """Teacher forcing through the cache: tgt_in (B, m) fed one column per step; logits (B, m, V)."""
        with torch.no_grad():
            state = start_decoding(model, src)
            return torch.stack([decoder_step(model, state, tgt_in[:, t]) for t in range(tgt_in.shape[1])], dim=1)

    class ScriptedSeq2Seq(tm.Seq2Seq):
        """A tiny torch Seq2Seq whose decoder follows a script: at position j of the row whose source is
        sources[r], the largest logit is scripts[r][j], whatever the decoder reads. So greedy decoding
        (the model's own, or any loop over decode) returns the scripted outputs. Records, each time it is
        called from outside, whether it is in training mode and whether autograd records (`seen`)."""

        def __init__(self, sources, scripts, vocab_size=12, bos_id=BOS, eos_id=EOS):
            super().__init__(ModelConfig(vocab_size=vocab_size, d_model=8, n_heads=2, d_ff=8, n_encoder_layers=1,
                                         n_decoder_layers=1, pad_id=PAD), seed=0)
            self.rows = {self._key(s): r for r, s in enumerate(sources)}
            width = 64
            scripted = np.full((len(scripts), width), eos_id, dtype=np.int64)
            for r, s in enumerate(scripts):
                scripted[r, :len(s)] = s
            self.scripts = torch.from_numpy(scripted)
            self.bos_id, self.eos_id = bos_id, eos_id
            self.seen = []
            self.depth = 0

        @staticmethod
        def _key(tokens):
            return tuple(int(t) for t in tokens if int(t) != PAD)

        @contextlib.contextmanager
        def _called(self, what):
            if self.depth == 0:
                self.seen.append((what, any(m.training for m in self.modules()), torch.is_grad_enabled()))
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1

        def encode(self, src):
            with self._called("encode"):
                rows = torch.tensor([self.rows[self._key(s)] for s in src.reshape(-1, src.shape[-1])])
                H = torch.zeros(*src.shape, self.config.d_model, dtype=self.embedding.dtype)
                H[..., 0, 0] = rows.reshape(src.shape[:-1]).to(H.dtype)  # the row, for decode to read
                return H, self.padding_mask(src, H.dtype)

        def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
            with self._called("decode"):
                rows = H_enc[..., 0, 0].long()  # (B,)
                m = tgt_in.shape[-1]
                script = self.scripts[rows][..., :m].clone()  # (B, m)
                # a decoder started from another token than the script's <bos> says <eos> at once, as a
                # model conditioned on a start token it never saw says something else
                script[tgt_in[..., 0] != self.bos_id] = self.eos_id
                logits = torch.zeros(*script.shape, self.config.vocab_size, dtype=H_enc.dtype)
                logits.scatter_(-1, script[..., None], 8.0)
                return (logits, [None]) if return_attention else logits

        def forward(self, src, tgt_in):
            with self._called("forward"):
                return super().forward(src, tgt_in)

        def greedy_decode(self, src, bos_id, eos_id, max_len):
            with self._called("greedy_decode"):
                return tm.Seq2Seq.greedy_decode(self, src, bos_id, eos_id, max_len)

    matmuls = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.Tensor.__rmatmul__, torch.mm,
               torch.Tensor.mm, torch.bmm, torch.Tensor.bmm, F.linear, torch.einsum, torch.addmm, torch.Tensor.addmm,
               torch.baddbmm, torch.Tensor.baddbmm, torch.tensordot, torch.inner, torch.mv, torch.Tensor.mv,
               torch.chain_matmul, torch.linalg.multi_dot}

    def tensors_in(obj):
        if isinstance(obj, torch.Tensor):
            yield obj
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                yield from tensors_in(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                yield from tensors_in(o)

    class WeightRows(TorchFunctionMode):
        """Counts, for each watched weight matrix, the rows (positions) multiplied by it. A tensor made
        from a watched weight (a view, a copy, a concatenation) is watched under the same labels, so
        fused projections (x @ torch.cat([W_q, W_k, W_v], 1)) count for each of their parts."""

        def __init__(self, weights, d_model):
            super().__init__()
            self.labels = {w.untyped_storage().data_ptr(): frozenset([label]) for label, w in weights.items()}
            self.rows = {label: 0 for label in weights}
            self.d_model = d_model
            self.keep = []  # derived watched tensors stay alive, so their memory is never reused

        def _labels(self, t):
            try:
                return self.labels.get(t.untyped_storage().data_ptr(), frozenset())
            except (RuntimeError, NotImplementedError):
                return frozenset()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            inputs = [(t, self._labels(t)) for t in tensors_in((args, kwargs))]
            hit = frozenset().union(*(labels for _, labels in inputs))
            if not hit:
                return out
            if func in matmuls:
                rows = sum(t.numel() // self.d_model for t, labels in inputs if not labels)
                for label in hit:
                    self.rows[label] += rows
            else:
                for t in tensors_in(out):
                    key = t.untyped_storage().data_ptr()
                    self.labels[key] = self.labels.get(key, frozenset()) | hit
                    self.keep.append(t)
            return out

    for f in (lr_at, make_optimizer, train_step, exact_match, greedy_decode_cached, cached_logits, decoder_step):
        f.__qualname__ = f.__name__  # messages name `lr_at`, not `references.<locals>.lr_at`
    return SimpleNamespace(
        torch=torch, F=F, tm=tm, capstone=capstone, rms_norm=rms_norm, attend=attend, embed_at=embed_at,
        lr_at=lr_at, make_optimizer=make_optimizer, train_step=train_step, exact_match=exact_match,
        greedy_decode_cached=greedy_decode_cached, cached_logits=cached_logits, start_decoding=start_decoding,
        decoder_step=decoder_step, ScriptedSeq2Seq=ScriptedSeq2Seq, WeightRows=WeightRows)


def _to_numpy(value):
    """Tensors (alone or in a tuple) -> NumPy arrays (floats as float64); anything else unchanged."""
    if isinstance(value, (tuple, list)):
        return tuple(_to_numpy(v) for v in value)
    torch = references().torch
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.numpy() if not value.is_floating_point() else value.double().numpy()
    return value


def _same(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return compare(a, b) is None
    return a == b


def _diagnose_part(observe, student_summary, catalog, *args, history=()):
    """The mistake whose behaviour in this part equals the student's, else None. When several do (the same
    library call fails the same way for many slips), the one that also behaved as the answer did in the
    parts already checked (`history`: (observe, args, summary)) is named, and none if that leaves several."""
    same = []
    for m in catalog:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                summary, _, _ = observe(m.impl, *args)
            except Exception:
                continue
        if _same(summary, student_summary):
            same.append(m)
    if len(same) <= 1:
        return same[0] if same else None
    agreeing = []
    for m in same:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                if all(_same(seen_observe(m.impl, *seen_args)[0], seen) for seen_observe, seen_args, seen in history):
                    agreeing.append(m)
            except Exception:
                continue
    return agreeing[0] if len(agreeing) == 1 else None


def _check_parts(c, fn, parts, catalog):
    """Parts decided by observe(fn, *args) -> (summary, problem message or '', outcome or None).

    Stops the exercise on delegation or a missing implementation; a part with a problem is recorded
    with the diagnosis of the first catalog mistake that behaves the same way, else of the part's own
    probe, when the part has one: a fourth item, probe(summary) -> Finding or None (a kind of slip read
    from the student's summary)."""
    history = []  # (observe, args, the answer's summary) of the parts checked so far
    for label, observe, args_list, *probe in parts:
        if c.stopped:
            break
        for args in args_list:
            summary, problem, outcome = observe(fn, *args)
            history.append((observe, args, summary))
            if outcome is not None:
                c._absorb(outcome, label)
                if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                    c._explain_error(outcome)
                    c.part(label, False, c.stopped)
                    break
            if summary[0] == "error":
                found = _diagnose_part(observe, summary, catalog, *args, history=history[:-1])
                if found is None and outcome is not None and outcome.error is not None:
                    found = _error_cause(c, Case(label, tuple(args)), outcome.error)
                diagnosis = c.likely_cause(found)
                c.part(label, False, with_cause(c._explain_error(outcome), diagnosis))
                break
            if problem:
                found = _diagnose_part(observe, summary, catalog, *args, history=history[:-1])
                if found is None and probe:
                    try:
                        found = probe[0](summary)
                    except Exception:  # a probe is an extra: the check stands without it
                        found = None
                diagnosis = c.likely_cause(found)
                c.part(label, False, with_cause(problem, diagnosis))
                break
        else:
            c.part(label, True)


# -- Exercise 10.1 ---------------------------------------------------------------------------------------
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
    for label, kind in results:
        if kind != "ValueError":
            said = "was accepted" if kind == "none" else f"raised {kind}, not ValueError"
            return summary, f"a dict {label} {said}", None
    return ("ok",), "", None


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


# -- Exercise 10.2 ---------------------------------------------------------------------------------------
CAPSTONE_SCHEDULE = (2e-3, 100, 800, 4e-5)  # peak_lr, warmup_steps, total_steps, min_lr: encdec.capstone.DEFAULT


def _curve(fn):
    """The rates of steps 1..total_steps as one array (index i is step i + 1)."""
    def run(peak_lr, warmup_steps, total_steps, min_lr):
        return np.array([float(fn(s, peak_lr, warmup_steps, total_steps, min_lr)) for s in range(1, total_steps + 1)])
    return run


def _as_float(fn):
    def run(*args):
        value = fn(*args)
        torch = references().torch
        return float(value) if isinstance(value, (int, float, np.number, torch.Tensor)) else value
    return run


def _lr_model(k, step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    """lr_at with knobs: warm_shift (step + shift in the warm-up), decay_shift (step + shift in the decay's
    progress), span ("decay": progress over total_steps - warmup_steps; "total": over total_steps), half
    (False: cos alone, without 0.5 (1 + ...)), floor (False: min_lr ignored), clamp (False: no clamp after
    total_steps)."""
    if step <= warmup_steps:
        return float(peak_lr * (step + k.get("warm_shift", 0)) / warmup_steps)
    span = total_steps - warmup_steps if k.get("span", "decay") == "decay" else total_steps
    progress = (step + k.get("decay_shift", 0) - warmup_steps) / max(span, 1)
    if k.get("clamp", True):
        progress = min(progress, 1.0)
    low = min_lr if k.get("floor", True) else 0.0
    wave = 0.5 * (1.0 + math.cos(math.pi * progress)) if k.get("half", True) else math.cos(math.pi * progress)
    return float(low + (peak_lr - low) * wave)


LR_PROBES = Probes(_lr_model, Combos("lr", [
    ("warm_shift", [(0, "", ""), (1, "warmup_one_step_early", "the warm-up runs one step early (step + 1)"),
                    (-1, "warmup_one_step_late", "the warm-up runs one step late (step - 1): step 1 gets a rate of 0")]),
    ("decay_shift", [(0, "", ""), (-1, "decay_one_step_late", "the decay's progress counts one step late "
                                                              "(step - 1 - warmup_steps)"),
                     (1, "decay_one_step_early", "the decay's progress counts one step early (step + 1 - warmup_steps)")]),
    ("span", [("decay", "", ""), ("total", "progress_over_total", "the progress is divided by total_steps, not by the "
                                                                  "length of the decay, total_steps - warmup_steps")]),
    ("half", [(True, "", ""), (False, "cosine_without_half", "the decay uses cos(pi progress) alone, not "
                                                             "0.5 (1 + cos(pi progress))")]),
    ("floor", [(True, "", ""), (False, "min_lr_ignored", "min_lr is ignored: the decay goes to 0")]),
    ("clamp", [(True, "", ""), (False, "no_clamp", "after total_steps the cosine goes on instead of staying at min_lr")]),
], "lr = peak_lr step / warmup_steps for step <= warmup_steps; then min_lr + 0.5 (peak_lr - min_lr) (1 + cos(pi p)) with "
   "p = min((step - warmup_steps) / (total_steps - warmup_steps), 1)."))


def _lr_curve_model(k, *args):
    return _curve(lambda *a: _lr_model(k, *a))(*args)


LR_CURVE_PROBES = Probes(_lr_curve_model, *LR_PROBES.probes)


LR_AT = Exercise("10.2", "lr_at", points=2, reference=Later(lambda: references().lr_at),
                 reads=("peak_lr", "warmup_steps", "total_steps", "min_lr"))


@LR_AT.checked_by
@_one_thread
def check_lr_at(lr_at=None, *, points=None, hidden=False):
    """Linear warm-up to peak_lr over warmup_steps, then cosine decay to min_lr at total_steps,
    min_lr after it; steps count from 1."""
    c = TorchChecker(LR_AT, points, hidden)
    fn = c.find(lr_at, "lr_at")
    R = references()
    forbidden = [optim.warmup_cosine_schedule, R.capstone.learning_rate, R.lr_at]
    catalog = CATALOG["lr_at"]
    common = dict(catalog=wrapped(catalog, _as_float),
                  forbidden=forbidden, probes=LR_PROBES)
    student = _as_float(fn) if fn is not None else None
    c.check_cases("the warm-up (peak_lr 1e-3, 10 warm-up steps of 100, min_lr 1e-5)", student, R.lr_at, [
        Case("step 1: the first step already learns, peak_lr / 10", (1, 1e-3, 10, 100, 1e-5)),
        Case("step 4", (4, 1e-3, 10, 100, 1e-5)),
        Case("step 10, the last warm-up step: peak_lr", (10, 1e-3, 10, 100, 1e-5)),
        Case("a warm-up of 3 steps, step 2", (2, 0.5, 3, 20, 0.0), hidden=True)], **common)
    c.check_cases("the cosine decay (the same schedule)", student, R.lr_at, [
        Case("step 55, half way through the decay: (peak_lr + min_lr) / 2", (55, 1e-3, 10, 100, 1e-5)),
        Case("step 11, the first step after the warm-up", (11, 1e-3, 10, 100, 1e-5)),
        Case("step 100, the last: min_lr", (100, 1e-3, 10, 100, 1e-5)),
        Case("step 83 of a schedule decaying to 0", (83, 3e-4, 20, 120, 0.0), hidden=True)], **common)
    c.check_cases("after total_steps the rate stays at min_lr", student, R.lr_at, [
        Case("step 130 of 100", (130, 1e-3, 10, 100, 1e-5)),
        Case("step 250 of 100", (250, 1e-3, 10, 100, 1e-5), hidden=True)], **common)
    curve = dict(common, catalog=wrapped(catalog, _curve), probes=LR_CURVE_PROBES)
    c.check_cases("the capstone's whole schedule", _curve(fn) if fn is not None else None, _curve(R.lr_at), [
        Case("steps 1 to 800 (index i is step i + 1): peak 2e-3, 100 warm-up steps, min_lr 4e-5",
             CAPSTONE_SCHEDULE)], **curve)
    return c.result()


# -- Exercise 10.3 ---------------------------------------------------------------------------------------
def _np_model(seed, V=11, d=8, h=2, d_ff=12, ne=1, nd=1, pad_id=PAD):
    m = Seq2Seq(vocab_size=V, d_model=d, n_heads=h, d_ff=d_ff, n_encoder_layers=ne, n_decoder_layers=nd,
                pad_id=pad_id, rng=seed)
    randomize(m, generator(1040 + seed))
    return m


def _make_optimizer_forbidden():
    R = references()
    return [R.capstone.build_optimizer, R.make_optimizer]


@functools.cache
def _flat_names(sizes=(11, 8, 2, 12, 1, 1)):
    """[(name, shape, start)] of the parameters of _np_model(*, *sizes), flattened in name order."""
    out, start = [], 0
    for name, p in sorted(_np_model(0, *sizes).parameters().items()):
        out.append((name, p.shape, start))
        start += p.size
    return out


def _flat_name(i, sizes=(11, 8, 2, 12, 1, 1)):
    """Entry i of the flattened parameters, as `name[index]`."""
    for name, shape, start in reversed(_flat_names(sizes)):
        if i >= start:
            index = np.unravel_index(i - start, shape)
            return f"`{name}`[{', '.join(str(int(k)) for k in index)}]"
    return f"entry {i}"


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
                         + ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else "")), outcome
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
        return summary, f"these matrices are not decayed: {', '.join(skipped[:4])}" + (" ..." if len(skipped) > 4 else ""), outcome
    return ("ok",), "", outcome


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
        return ("steps", got), f"the parameters after two steps: {problem}", outcome
    return ("ok",), "", outcome


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


# -- Exercise 10.4 ---------------------------------------------------------------------------------------
def _train_batches(seed, vocab_size, pad_id=PAD, first=3):
    """Two batches (src (3, 5), tgt (3, 4)): targets end in EOS, then pads; sources right-padded. Tokens are
    drawn from `first` up, past every special id."""
    r = generator(seed)
    out = []
    for _ in range(2):
        src = r.integers(first, vocab_size, size=(3, 5))
        src[0, 3:] = pad_id
        tgt = r.integers(first, vocab_size, size=(3, 4))
        tgt[0, 1], tgt[0, 2:] = EOS, pad_id
        tgt[1, 3] = EOS
        tgt[2, 2], tgt[2, 3] = EOS, pad_id
        out.append((src, tgt))
    return out


TRAIN_SETUPS = {  # optimizer, the rates of the two steps, max_norm, (pad id of the model, bos id)
    "sgd": ("SGD", (0.5, 0.3), 1.0, (PAD, BOS)),
    "sgd-unclipped": ("SGD", (0.5, 0.3), 100.0, (PAD, BOS)),
    "sgd-other-ids": ("SGD", (0.5, 0.3), 1.0, (3, 4)),
    "adamw": ("AdamW", (0.01, 0.02), 1.0, (PAD, BOS)),
}


def _setup(seed, setup):
    """(optimizer kind, rates, max_norm, NumPy model, its two batches, bos id) of one case."""
    kind, lrs, max_norm, (pad_id, bos_id) = TRAIN_SETUPS[setup]
    model = _np_model(seed, pad_id=pad_id)
    first = 3 if (pad_id, bos_id) == (PAD, BOS) else max(pad_id, bos_id) + 1
    return kind, lrs, max_norm, model, _train_batches(seed, model.config.vocab_size, pad_id, first), bos_id
MADE_WITH_LR = 7.0  # the optimizer is made with another rate: the step must set its own


def _clip_numpy(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_, in NumPy: (norm before clipping); grads scaled in place."""
    norm = float(np.sqrt(sum(np.sum(g * g) for g in grads.values())))
    coef = min(max_norm / (norm + 1e-6), 1.0)
    for g in grads.values():
        g *= coef
    return norm


def reference_two_steps(seed, setup, dtype="float64"):
    """What two training steps must give, computed in NumPy: (loss 1, norm 1, change of the parameters
    in step 1, loss 2, norm 2, change in step 2). Each step's change, not the new values, is compared:
    clipping by hand without torch's 1e-6 guard (max_norm / norm) scales a change by a relative
    1e-6 / norm, within the tolerance, which it would not be for values near 0."""
    kind, lrs, max_norm, model, batches, bos_id = _setup(seed, setup)
    params = model.parameters()
    adamw = optim.AdamW(params, lr=MADE_WITH_LR, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.1) if kind == "AdamW" else None
    out = []
    for (src, tgt), lr in zip(batches, lrs):
        logits, cache = training.forward_with_cache(model, src, shift_right(tgt, bos_id))
        loss, dlogits = softmax_cross_entropy(logits, tgt, model.config.pad_id)
        grads = training.backward(model, dlogits, cache)
        norm = _clip_numpy(grads, max_norm)
        before = np.concatenate([params[n].ravel() for n in sorted(params)])
        if adamw is not None:
            adamw.step(grads, lr=lr)
        else:
            for name, p in params.items():
                p -= lr * grads[name]
        out += [np.array(loss), np.array(norm), np.concatenate([params[n].ravel() for n in sorted(params)]) - before]
    return tuple(out)


def _two_steps(fn):
    """Run a torch_train_step answer for two steps on the torch twin of the NumPy model."""
    def run(seed, setup, dtype="float64"):
        R = references()
        torch = R.torch
        kind, lrs, max_norm, model, batches, bos_id = _setup(seed, setup)
        twin = R.tm.from_numpy(model, dtype=getattr(torch, dtype))
        if kind == "AdamW":
            optimizer = R.make_optimizer(twin, MADE_WITH_LR, 0.1, (0.9, 0.98))
        else:
            params = list(twin.parameters())
            optimizer = torch.optim.SGD([{"params": [p for p in params if p.ndim >= 2]},
                                         {"params": [p for p in params if p.ndim < 2]}], lr=MADE_WITH_LR)
        out = []
        for (src, tgt), lr in zip(batches, lrs):
            params = dict(twin.named_parameters())
            before = {k: p.detach().double().clone() for k, p in params.items()}
            result = fn(twin, optimizer, torch.from_numpy(src), torch.from_numpy(tgt), bos_id, lr, max_norm)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise Returned("return two numbers, (loss, grad_norm); your function returned "
                               + (f"{len(result)} items" if isinstance(result, (tuple, list)) else type(result).__name__)
                               + (" (did you forget `return`?)" if result is None else ""))
            out += [np.array(float(x), dtype=np.float64) for x in result]
            out.append(np.concatenate([(params[k].detach().double() - before[k]).numpy().ravel() for k in sorted(params)]))
        return tuple(out)
    return run


def _compare_steps(got, expected, float32=False, select=range(6)):
    """None when two runs agree, else a message. Losses and norms to the usual tolerance; each step's
    change of the weights to the usual relative tolerance plus an absolute one of that tolerance times
    its largest entry: the second step's gradient is computed at weights that carry the first step's
    rounding, which for tiny entries of the change is more than rounding. `select`: the results compared."""
    if not isinstance(got, tuple) or len(got) != len(expected):
        return f"expected {len(expected)} results, got {got!r:.60}"
    rtol = RTOL32 if float32 else RTOL
    for k in select:
        name, g, e = STEP_NAMES[k], got[k], expected[k]
        if np.ndim(e) == 0:
            problem = compare(g, e, float32)
        else:
            g, e = np.asarray(g, dtype=np.float64), np.asarray(e, dtype=np.float64)
            if g.shape != e.shape:
                problem = f"shape: expected {e.shape}, got {g.shape}"
            else:
                bad = ~(np.abs(g - e) <= rtol * np.abs(e) + rtol * np.max(np.abs(e)))
                problem = None
                if np.any(bad):
                    i = int(np.argwhere(bad)[0][0])
                    problem = (f"values differ in {_flat_name(i)}: expected {e[i]:.6g}, got {g[i]:.6g} "
                               f"({int(bad.sum())} of {bad.size} numbers differ)")
        if problem:
            return f"{name}: {problem}"
    return None


STEP_NAMES = ("the first step's loss", "the first step's gradient norm (before clipping)",
              "the first step's change of the weights", "the second step's loss",
              "the second step's gradient norm", "the second step's change of the weights")


def _check_runs(c, label, student, cases, catalog, forbidden, select=range(6)):
    """Like Checker.check_cases, with _compare_steps (of the results in `select`) for the comparison
    and the diagnosis."""
    if c.stopped:
        return False
    cases = c.to_run(cases)
    for case in cases:
        outcome = run_student(student, case.args, {}, forbidden)
        c._absorb(outcome, case.label)
        expected = reference_two_steps(*case.args)
        if outcome.error is not None:
            if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                c._explain_error(outcome)
                return c.part(label, False, c.stopped, cases=cases, failed=case)
            found = None
            for m in catalog:
                _, error = m.run(case.args, {})
                if error is not None and type(error) is type(outcome.error) and str(error) == str(outcome.error):
                    found = m
                    break
            found = found or _error_cause(c, case, outcome.error)
            message = f"[{case.label}] {c._explain_error(outcome)}"
            return c.part(label, False, with_cause(message, c.likely_cause(found)), cases=cases, failed=case)
        problem = _compare_steps(outcome.value, expected, case.float32, select)
        if problem:
            found = None
            for m in catalog:
                value, error = m.run(case.args, {})
                if error is None and _compare_steps(outcome.value, value, case.float32, select) is None:
                    found = m
                    break
            return c.part(label, False, with_cause(f"[{case.label}] {problem}", c.likely_cause(found)),
                          cases=cases, failed=case)
    return c.part(label, True, cases=cases)


TORCH_TRAIN_STEP = Exercise("10.4", "torch_train_step", points=3, reference=Later(lambda: references().train_step),
                            reads=("bos_id", "lr", "max_norm", "model.config.pad_id"))


@TORCH_TRAIN_STEP.checked_by
@_one_thread
def check_torch_train_step(torch_train_step=None, *, points=None, hidden=False):
    """Set the rate, teacher forcing, loss over real tokens, zero_grad, backward, clip, step. Two
    steps on the torch twin of a NumPy model must give NumPy's losses, gradient norms (before
    clipping) and weight changes, whose gradients come from Lesson 7's backward pass."""
    c = TorchChecker(TORCH_TRAIN_STEP, points, hidden)
    fn = c.find(torch_train_step, "torch_train_step")
    R = references()
    forbidden = [R.train_step, training.train_step, R.capstone.loss_and_stats]
    catalog = wrapped(CATALOG["torch_train_step"], _two_steps)
    student = _two_steps(fn) if fn is not None else None
    sgd = [Case("SGD, batches of 3 (sources of 5, targets of 4, some padded); lr 0.5 then 0.3, max_norm 1 "
                f"(the optimizer was made with lr {MADE_WITH_LR:g})", (0, "sgd")),
           Case("SGD, max_norm 100: nothing to clip", (0, "sgd-unclipped")),
           Case("SGD, a model whose pad id is 3 (model.config.pad_id), with <bos> 4", (5, "sgd-other-ids")),
           Case("SGD, two other batches, another model", (1, "sgd"), hidden=True)]
    adamw = [Case("AdamW (weight decay 0.1 on the matrices); lr 0.01 then 0.02, max_norm 1", (2, "adamw")),
             Case("AdamW, another model", (3, "adamw"), hidden=True)]
    common = (catalog, forbidden)
    _check_runs(c, "the loss of each step: teacher forcing, the mean over the real target tokens (float64)",
                student, sgd, *common, select=(0, 3))
    _check_runs(c, "the gradient norm of each step, before clipping", student, sgd, *common, select=(1, 4))
    _check_runs(c, "each step's change of the weights with SGD: fresh gradients, clipped, this step's rate in "
                "every group", student, sgd, *common, select=(2, 5))
    # the norm is judged in its own part only: a wrong norm does not cost the AdamW and float32 parts too
    _check_runs(c, "two steps with AdamW, as the capstone trains", student, adamw, *common, select=(0, 2, 3, 5))
    _check_runs(c, "a float32 model", student, [Case("the SGD steps in float32", (4, "sgd", "float32"), float32=True)],
                *common, select=(0, 2, 3, 5))
    return c.result()


# -- Exercise 10.5 ---------------------------------------------------------------------------------------
def exact_match_scenarios(hidden=False):
    """(label, sources, targets, predictions, bos_id, eos_id, max_len, {row: what it shows}) per scenario.

    Predictions are what the scripted model says at each step; greedy decoding returns them up to and
    including <eos>, or cut after max_len tokens."""
    E = EOS
    first = ("six predictions against their targets (max_len 7)",
             [[3, 4, 5], [3, 5, 4], [4, 3, 5], [4, 5, 3], [5, 3, 4], [5, 4, 3]],
             [[3, 4, 5, E], [3, 4, 5, E], [3, 4, 5, E], [3, 4, 5, E], [6, 7, 8, 9, 10, E], [3, 4, E]],
             [[3, 4, 5, E], [3, 4, E], [3, 4, 5, 6, E], [3, 4, 5, 6, 6, 6, 6], [6, 7, 8, 9, 10, E], [4, 4, E]],
             BOS, EOS, 7,
             ["right", "stops one token early (a prefix of the target, then <eos>)",
              "one extra token before <eos>", "never says <eos> (its first tokens are right)",
              "right, a target that fills the padded width", "the first token is wrong"])
    cut = ("max_len 3 cuts predictions short",
           [[3, 3], [4, 4], [5, 5]],
           [[3, E], [3, 4, 5, 6, E], [5, 6, 7, E]],
           [[3, E], [3, 4, 5, 6, E], [5, 6, 8]],
           BOS, EOS, 3,
           ["right", "cut by max_len: its 3 tokens are the target's first 3 (a prefix)", "the third token is wrong"])
    other_ids = ("other ids: <bos> 9, <eos> 10 (max_len 5)",
                 [[3, 4], [4, 3], [5, 6], [6, 5]],
                 [[3, 4, 10], [10], [5, 6, 7, 10], [3, 10]],
                 [[3, 4, 10], [10], [5, 6, 7, 8, 10], [3, 4, 10]],
                 9, 10, 5,
                 ["right", "right: an empty sequence, just <eos>", "one extra token before <eos>",
                  "one extra token before <eos>"])
    return [first, cut, other_ids]


def _scenario_model(scenario):
    R = references()
    label, sources, targets, predictions, bos_id, eos_id, max_len, _ = scenario
    model = R.ScriptedSeq2Seq(sources, predictions, bos_id=bos_id, eos_id=eos_id)
    width = max(len(t) for t in targets) + 1  # one column of padding more than the longest target
    tgt = np.full((len(targets), width), PAD, dtype=np.int64)
    for r, t in enumerate(targets):
        tgt[r, :len(t)] = t
    src = np.full((len(sources), max(len(s) for s in sources) + 1), PAD, dtype=np.int64)
    for r, s in enumerate(sources):
        src[r, :len(s)] = s
    return model, R.torch.from_numpy(src), R.torch.from_numpy(tgt)


def _fraction(value):
    torch = references().torch
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    return None


def _observe_rows(fn, index, hidden):
    """Parts 1 and 2: the whole batch, then every row alone. (summary, problem, outcome)."""
    R = references()
    scenario = exact_match_scenarios(hidden)[index]
    label, sources, targets, predictions, bos_id, eos_id, max_len, what = scenario
    forbidden = [R.exact_match, R.capstone.exact_match, _plain(R.capstone.predict)]
    model, src, tgt = _scenario_model(scenario)
    model.eval()
    right = R.exact_match(model, src, tgt, bos_id, eos_id, max_len)
    right_rows = [R.exact_match(model, src[r:r + 1], tgt[r:r + 1], bos_id, eos_id, max_len) for r in range(len(sources))]
    outcome = run_student(fn, (model, src.clone(), tgt.clone(), bos_id, eos_id, max_len), forbidden=forbidden)
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    whole = _fraction(outcome.value)
    if whole is None:
        problem = (f"return the fraction of exact matches as a number, got {type(outcome.value).__name__}"
                   + (" (did you forget `return`?)" if outcome.value is None else ""))
        return ("returned", type(outcome.value).__name__), problem, outcome
    rows = []
    for r in range(len(sources)):
        one = run_student(fn, (model, src[r:r + 1].clone(), tgt[r:r + 1].clone(), bos_id, eos_id, max_len),
                          forbidden=forbidden)
        if one.error is not None:
            return ("error", type(one.error).__name__, str(one.error)), None, one
        rows.append(_fraction(one.value))
    summary = ("rows", np.array(whole), np.array([np.nan if x is None else x for x in rows]))
    wrong = [r for r in range(len(sources)) if rows[r] is None or abs(rows[r] - right_rows[r]) > 1e-6]
    if wrong:
        said = []
        for r in wrong[:3]:
            if rows[r] is not None and rows[r] == 1.0:
                said.append(f"row {r} ({what[r]}) counts as an exact match, but it is not")
            elif rows[r] is not None and rows[r] == 0.0:
                said.append(f"row {r} ({what[r]}) does not count, but it is an exact match")
            else:
                said.append(f"row {r} ({what[r]}) alone gives {rows[r]}, not {right_rows[r]:g}")
        return summary, "evaluated one row at a time: " + "; ".join(said), outcome
    if abs(whole - right) > 1e-6:  # a float32 mean is exact to about 1e-7
        return summary, f"the whole batch gives {whole:.6g}, expected {right:.6g} (the fraction of rows that match)", outcome
    return ("ok",), "", outcome


def _observe_modes(fn, hidden, what="after"):
    """Part 3: the mode the answer leaves a model in (one in training mode, then one in eval mode)."""
    R = references()
    scenario = exact_match_scenarios(hidden)[0]
    _, _, _, _, bos_id, eos_id, max_len, _ = scenario
    forbidden = [R.exact_match, R.capstone.exact_match, _plain(R.capstone.predict)]
    results = []
    for mode in (True, False):
        model, src, tgt = _scenario_model(scenario)
        model.train(mode)
        outcome = run_student(fn, (model, src, tgt, bos_id, eos_id, max_len), forbidden=forbidden)
        if outcome.error is not None:
            return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
        after = {m.training for m in model.modules()}
        results.append((model.seen, after))
    (seen, after_train), (_, after_eval) = results
    summary = ("after", tuple(sorted(after_train)), tuple(sorted(after_eval)))
    if after_train != {True}:
        return summary, "a model that was in training mode is left in eval mode (model.training is False afterwards)", outcome
    if after_eval != {False}:
        return summary, "a model that was in eval mode is left in training mode (model.training is True afterwards)", outcome
    return ("ok",), "", outcome


def _per_token_probe(summary):
    """Parts 1 and 2's probe: one row alone scores a fraction strictly between 0 and 1. A sequence is one
    answer (1 or 0), so the score counts something smaller than a sequence: tokens."""
    if summary[0] != "rows":
        return None
    rows = np.asarray(summary[2], dtype=np.float64)
    partial = rows[np.isfinite(rows) & (rows > 1e-9) & (rows < 1 - 1e-9)]
    if partial.size == 0:
        return None
    return Finding("exact_match", "probe:score:per_token", (
        f"a single sequence scored alone gives {partial[0]:.4g}, a fraction: your score counts tokens (token accuracy, "
        "the share of positions predicted right), not sequences. Exact match scores each sequence 1 when every one "
        "of its tokens up to and including <eos> is right, else 0, and returns the fraction of sequences that score 1."))


EXACT_MATCH = Exercise("10.5", "exact_match", points=2, reference=Later(lambda: references().exact_match),
                       reads=("bos_id", "max_len"))  # eos_id only tells where a target ends, which its pads tell too


@EXACT_MATCH.checked_by
@_one_thread
def check_exact_match(exact_match=None, *, points=None, hidden=False):
    """Greedy-decode a batch (model.greedy_decode), count the rows whose every token up to and
    including <eos> is right; the model's mode the same after as before."""
    c = TorchChecker(EXACT_MATCH, points, hidden)
    fn = c.find(exact_match, "exact_match")
    scenarios = exact_match_scenarios(hidden)
    # model.greedy_decode runs in eval mode under no_grad and restores the mode itself: nothing is charged
    # for leaving model.eval() or torch.no_grad() out, only for changing the model's mode
    parts = [(f"which rows count: {scenarios[0][0]}; {scenarios[2][0]}", _observe_rows, [(0, hidden), (2, hidden)],
              _per_token_probe),
             (f"which rows count: {scenarios[1][0]}", _observe_rows, [(1, hidden)], _per_token_probe),
             ("the model's mode unchanged afterwards (a model in training mode, then one in eval mode)",
              _observe_modes, [(hidden, "after")])]
    if fn is not None:
        _check_parts(c, fn, parts, CATALOG["exact_match"])
    return c.result()


# -- Exercise 10.6 ---------------------------------------------------------------------------------------
OTHER_IDS = {"pad": 3, "bos": 4, "eos": 5}  # the "other-ids" model's pad id, and the ids it decodes with


def _ids(model_name):
    """(bos_id, eos_id) a case decodes `model_name` with."""
    return (OTHER_IDS["bos"], OTHER_IDS["eos"]) if model_name == "other-ids" else (BOS, EOS)


def _source(model_name, np_model, sources):
    """The case's source batch for `np_model`, padded with the model's own pad id."""
    seed, lengths = sources
    avoid = (PAD, BOS, EOS, *OTHER_IDS.values()) if model_name == "other-ids" else (PAD, BOS, EOS)
    return padded_tokens(generator(seed), lengths, max(lengths), np_model.config.vocab_size,
                         np_model.config.pad_id, avoid=avoid)


@functools.cache
def decode_models():
    """The NumPy models the decoding checks use (their torch twins hold the same weights). A random model
    rarely says <eos>; a larger <eos> embedding row makes these end some rows, at different steps."""
    def ending(seed, boost, **sizes):
        model = random_model(seed, embedding_scale=0.3, scale=3.0, fan_in=True, **sizes)
        model.embedding[EOS] *= boost
        return model

    likes_specials = random_model(61, embedding_scale=0.3, scale=3.0, fan_in=True)
    likes_specials.embedding[[PAD, BOS]] *= 2.0
    other_ids = random_model(256, embedding_scale=0.3, scale=3.0, fan_in=True, pad_id=OTHER_IDS["pad"], eps=0.05)
    other_ids.embedding[OTHER_IDS["eos"]] *= 1.5  # rows end at steps 2, 4 and 2; 2 is a plain token; eps 0.05 matters
    return {
        "wild": ending(236, 1.5),
        "other-ids": other_ids,
        "two-blocks": ending(337, 2.0, vocab_size=11, d_model=12, n_heads=3, n_layers=2),
        "likes-specials": likes_specials,
        "counted": random_model(53, n_layers=2, embedding_scale=0.6),
    }


def _dates_model():
    R = references()
    model, _ = R.capstone.load_weights(dtype=R.torch.float64)
    return model


def decode_cases():
    return {
        "batch": [
            Case("3 padded sources (lengths 4, 2, 5), a random model: two rows end at different steps, "
                 "one runs to max_len 8", ("wild", (236, [4, 2, 5]), 8)),
            Case("4 sources, two blocks each side, max_len 6: two rows end, two are cut by max_len",
                 ("two-blocks", (337, [2, 6, 4, 1]), 6)),
            Case("one source, max_len 1", ("wild", (3, [5]), 1), hidden=True)],
        "specials": [
            Case("2 sources, a random model that favours <bos> and <pad> (both must be banned)",
                 ("likes-specials", (8, [4, 3]), 6)),
            Case("a model whose pad id is 3 (model.config.pad_id) and RMSNorm eps 0.05 (model.config.eps), decoding "
                 "with <bos> 4 and <eos> 5: 3 padded sources",
                 ("other-ids", (9, [4, 2, 3]), 7))],
        "float32": [
            Case("the model of the first case in float32", ("wild", (236, [4, 2, 5]), 8, "float32"))],
        "dates": [
            Case("the trained capstone model: 4 dates in different formats",
                 ("dates", ["2 Dec 2026", "Wednesday, 2 December 2026", "1999/03/11", "the 1st of march, 2001"], 11))],
    }


def _decode_inputs(model_name, sources, max_len, dtype="float64"):
    """(NumPy model, torch twin, src (B, n) ids, max_len)."""
    R = references()
    if model_name == "dates":
        from .. import dates
        twin = _dates_model()
        src = dates.pad_batch([dates.encode(s) for s in sources])
        return R.tm.to_numpy(twin), twin, src, max_len
    np_model = decode_models()[model_name]
    twin = R.tm.from_numpy(np_model, dtype=getattr(R.torch, dtype)).eval()
    return np_model, twin, _source(model_name, np_model, sources), max_len


def _decoded(fn):
    """Run a greedy_decode_cached answer on one case: its tokens as a NumPy array."""
    def run(model_name, sources, max_len, dtype="float64"):
        R = references()
        _, twin, src, max_len = _decode_inputs(model_name, sources, max_len, dtype)
        return fn(twin, R.torch.from_numpy(src), *_ids(model_name), max_len)
    return run


def _reference_decoded(model_name, sources, max_len, dtype="float64"):
    np_model, _, src, max_len = _decode_inputs(model_name, sources, max_len)
    return decoding.greedy_decode(np_model, src, *_ids(model_name), max_len, use_cache=False)


def _plain(f):
    """The function under a decorator (torch.no_grad() wraps every function in one shared code object)."""
    return getattr(f, "__wrapped__", f)


def _decode_forbidden():
    R = references()
    return [_plain(R.tm.Seq2Seq.greedy_decode), decoding.greedy_decode, decoding.decode_step,
            _plain(R.capstone.predict), R.greedy_decode_cached, R.cached_logits, R.decoder_step]


def count_weight_rows(fn, model_name="counted", sources=(7, [4, 2, 5]), max_len=6):
    """Run a decoder on the torch twin of `model_name` while counting the rows each watched weight
    multiplies. Returns (outcome, counts {label: rows}, B, n, steps generated)."""
    R = references()
    _, twin, src, max_len = _decode_inputs(model_name, sources, max_len)
    weights = {("encoder", 0, "W_q"): twin.encoder[0].self_attn.W_q}
    for i, block in enumerate(twin.decoder):
        weights[("self", i, "W_q")] = block.self_attn.W_q
        weights[("self", i, "W_k")] = block.self_attn.W_k
        weights[("cross", i, "W_k")] = block.cross_attn.W_k
    counter = R.WeightRows(weights, twin.config.d_model)
    with counter:
        outcome = run_student(fn, (twin, R.torch.from_numpy(src), BOS, EOS, max_len), forbidden=_decode_forbidden())
    value = _to_numpy(outcome.value)
    steps = np.shape(value)[-1] if outcome.error is None and np.ndim(value) == 2 else max_len
    return outcome, counter.rows, src.shape[0], src.shape[1], steps


def _observe_cache(fn, what):
    """Parts 5 and 6: (summary, problem, outcome) from the rows the watched weights multiplied."""
    outcome, rows, B, n, steps = count_weight_rows(fn)
    if outcome.error is not None:
        return ("error", type(outcome.error).__name__, str(outcome.error)), None, outcome
    blocks = sorted({i for kind, i, _ in rows if kind != "encoder"})
    self_q = max(rows[("self", i, "W_q")] for i in blocks)
    self_k = max(rows[("self", i, "W_k")] for i in blocks)
    cross_k = max(rows[("cross", i, "W_k")] for i in blocks)
    encoder = rows[("encoder", 0, "W_q")]
    tokens = f"while generating {steps} tokens for {B} sequences"
    if what == "self":
        summary = ("self", self_q > B * (steps + 1), self_k > B * (steps + 1))
        if self_q > B * (steps + 1):
            return summary, (f"a decoder block's self-attention computed queries for {self_q} positions {tokens}: "
                             f"with the cache, each step feeds one new position per sequence ({B * steps} in all)"), outcome
        if self_k > B * (steps + 1):
            return summary, (f"a decoder block's self-attention computed keys for {self_k} positions {tokens} "
                             f"({B * steps} would do): the keys and values of past positions are recomputed at "
                             "every step. Keep them in the cache: each step computes K and V for the new token "
                             "only and appends them."), outcome
        if self_q == 0:
            return summary, "the decoder blocks' self-attention weights were never used", outcome
        return ("ok",), "", outcome
    summary = ("once", encoder > B * n, cross_k > B * n, self_q > B * (steps + 1))  # the last tells the causes apart
    if encoder > B * n:
        return summary, (f"the encoder processed {encoder} source positions {tokens} ({B} sources of {n} positions: "
                         f"{B * n} once would do). Encode once, before the loop."), outcome
    if cross_k > B * n:
        return summary, (f"cross-attention's keys were computed for {cross_k} encoder positions per block {tokens} "
                         f"({B} sources of {n} positions: {B * n} once would do)"), outcome
    return ("ok",), "", outcome


def _decoded_model(k, model_name, sources, max_len, dtype="float64"):
    """Greedy decoding with knobs (encdec.checks.lesson09.greedy_model) on the NumPy twin of the case's model."""
    from .lesson09 import greedy_model
    if model_name == "dates":
        np_model, _, src, max_len = _decode_inputs(model_name, sources, max_len)
    else:  # no torch twin needed: the NumPy model and the source batch alone
        np_model = decode_models()[model_name]
        src = _source(model_name, np_model, sources)
    return greedy_model(k, np_model, src, *_ids(model_name), max_len)


def _decoded_ids(attempt, value):
    return _to_numpy(value)


def _decoded_special(attempt):
    model_name, sources, max_len = attempt.case.args[:3]
    pad = _dates_model().config.pad_id if model_name == "dates" else decode_models()[model_name].config.pad_id
    bos, eos = _ids(model_name)
    return {"bos": bos, "eos": eos, "pad": pad, "max_len": max_len}


def _decode_cached_probes():
    from .lesson09 import GREEDY_CHOICES, GREEDY_RIGHT
    # the rules of the output first (no decoding needed), then single slips only: each variant decodes again
    return Probes(_decoded_model, DecodedRows(_decoded_ids, _decoded_special),
                  Combos("greedy", GREEDY_CHOICES, GREEDY_RIGHT, most=1))


def _error_cause(c, case, error):
    """A shape error's tensors and step (TorchShapeError, or NumPy's ShapeError), as a Finding, or None:
    the always-on error probes (probes.ERROR_PROBES) alone."""
    return find_slip(None, Attempt(c.name, case, error=error))


GREEDY_DECODE_CACHED = Exercise("10.6", "greedy_decode_cached", points=4,
                                reference=Later(lambda: references().greedy_decode_cached),
                                reads=("bos_id", "eos_id", "max_len", "model.config.pad_id", "model.config.eps"))


@GREEDY_DECODE_CACHED.checked_by
@_one_thread
def check_greedy_decode_cached(greedy_decode_cached=None, *, points=None, hidden=False):
    """Batched greedy decoding with a KV cache, in torch: exactly the tokens of greedy decoding
    without a cache (the NumPy reference, same weights); the encoder and cross-attention's keys and
    values computed once; one new position per step through every decoder block."""
    c = TorchChecker(GREEDY_DECODE_CACHED, points, hidden)
    fn = c.find(greedy_decode_cached, "greedy_decode_cached")
    mistakes = CATALOG["greedy_decode_cached"]
    cases = decode_cases()
    common = dict(catalog=wrapped(mistakes, _decoded),
                  forbidden=_decode_forbidden(), postprocess=_to_numpy, probes=_decode_cached_probes())
    student = _decoded(fn) if fn is not None else None
    c.check_cases("a batch: the same tokens as greedy decoding without a cache (float64)", student,
                  _reference_decoded, cases["batch"], **common)
    c.check_cases("<bos> and <pad> are never chosen, whatever their ids", student, _reference_decoded,
                  cases["specials"], **common)
    c.check_cases("a float32 model", student, _reference_decoded, cases["float32"], **common)
    c.check_cases("a trained model", student, _reference_decoded, cases["dates"], **common)
    parts = [("the cache is used: one new position per step through every decoder block (3 sources, 2 blocks, "
              "max_len 6)", _observe_cache, [("self",)]),
             ("the encoder and cross-attention's keys and values computed once, before the first step",
              _observe_cache, [("once",)])]
    if fn is not None and not c.stopped:
        _check_parts(c, fn, parts, mistakes)
    return c.result()


# -- Exercise 10.7 ---------------------------------------------------------------------------------------
DDP_STEP_ORDER = Ordering(
    "10.7", "one data-parallel training step, in order", "ddp_step_order", points=1,
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
        Step("all-reduce: DDP averages every gradient over the processes (started bucket by bucket during "
             "the backward pass, complete when it returns)",
             "Only gradients that exist can be averaged: DDP starts each bucket's all-reduce as soon as the "
             "backward pass has produced its gradients, and clipping and the update must wait for the average."),
        Step("clip the averaged gradients by their global norm, the same on every process",
             "Clipping must see the gradients the update will use, the averaged ones: their norm is the same "
             "on every process, so every process scales by the same factor. Clipped before the average, each "
             "process would scale its own gradients by its own factor, and the update would no longer be "
             "the clipped gradient of the global batch."),
        Step("optimizer step, the same update on every process, so the weights stay identical",
             "The update uses the averaged, clipped gradients; applied to identical weights, it leaves every "
             "process with the same model for the next step."),
    ],
    shown=[4, 2, 0, 6, 1, 5, 3],
)


@DDP_STEP_ORDER.checked_by
def check_ddp_step_order(ddp_step_order=None, *, points=None):
    """All or nothing."""
    return DDP_STEP_ORDER.check(ddp_step_order, points)


# -- Exercise 10.8: the project's report (0 points) -------------------------------------------------------
# The project (§10.16) trains outside grading: the check reads the report, loads the checkpoint the report
# names, decodes RECHECK test examples again with it and compares. It is worth 0 points: the grader receives
# the notebook alone, never the student's checkpoint, and a report cannot prove whose run it describes.
PROJECT_BUDGET = 40_000  # training examples per run, steps x batch size (300 steps of 128 is 38,400)
RECHECK = 100  # test examples decoded again by the check (the first 100 of the task's fixed test order)
PROJECT_TASKS = ("numbers", "dates")
PROJECT_FIELDS = ("task", "steps", "lr", "warmup", "final_loss", "test_exact_match", "checkpoint", "experiment",
                  "finding")
EXAMPLE_RUN = Path(__file__).resolve().parent.parent / "data" / "project_example.npz"


def exact_match_tolerance(claimed, measured, n=RECHECK):
    """How far a claimed exact match may be from the one measured again on n test examples: 0.02 plus three
    standard errors of an n-example sample (the larger of the two the figures imply)."""
    spread = max(claimed * (1 - claimed), measured * (1 - measured), 0.0)
    return 0.02 + 3 * math.sqrt(spread / n)


def _task_module(name):
    from ..capstone.tasks import get
    return get(name)


def default_parameters(task):
    """Parameters of the capstone's default model for `task` (the project's largest allowed model)."""
    from ..capstone import config as capstone_config
    return parameter_total(capstone_config.PRESETS[(task, False)].model_config())


def parameter_total(model_config):
    from ..model import parameter_count
    c = model_config
    return parameter_count(c.vocab_size, c.d_model, c.d_ff, c.n_encoder_layers, c.n_decoder_layers)


def read_run(path):
    """What a checkpoint says of its run: {"path", "config" (a TrainConfig), "steps" (done), "losses" (the
    recorded training losses, or None), "model" (the torch model, eval mode)}. Reads the resumable checkpoint
    of capstone.save_checkpoint (.pt, torch.load with weights_only) and the weights of capstone.export_weights
    (.npz, no pickle). Raises ValueError with a message for the student."""
    import dataclasses

    import torch
    from ..capstone.config import TrainConfig
    from ..torch_model import Seq2Seq as TorchSeq2Seq
    path = Path(path)
    fields = {f.name for f in dataclasses.fields(TrainConfig)}

    def config_of(saved):
        saved = dict(saved)
        unknown = sorted(set(saved) - fields)
        if unknown:
            raise ValueError(f"{path.name} records a configuration with fields TrainConfig does not have: {unknown}")
        if "betas" in saved:
            saved["betas"] = tuple(saved["betas"])
        return TrainConfig(**saved)

    if path.suffix == ".npz":
        from ..capstone.checkpoints import load_weights
        model, meta = load_weights(path)
        config = config_of(meta["train_config"])
        summary = meta.get("summary") or {}
        history = summary.get("history") or {}
        return {"path": path, "config": config, "steps": int(summary.get("steps", config.steps)),
                "losses": history.get("loss"), "model": model.eval()}
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path.name} could not be read as a torch checkpoint ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120] if str(exc) else ''})") from None
    if not isinstance(ckpt, dict) or not {"config", "step", "model"} <= set(ckpt):
        raise ValueError(f"{path.name} is not a checkpoint of capstone.save_checkpoint: it must hold the step, "
                         "the configuration and the model (a bare state_dict says nothing of the run)")
    config = config_of(ckpt["config"])
    model = TorchSeq2Seq(config.model_config())
    model.load_state_dict(ckpt["model"])
    state = ckpt.get("state") or {}
    history = state.get("history") or {} if isinstance(state, dict) else {}
    return {"path": path, "config": config, "steps": int(ckpt["step"]), "losses": history.get("loss"),
            "model": model.float().eval()}


def _is_number(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def _fields_problem(report):
    """'' when every field is there and of its kind, else what is wrong, in the student's words."""
    if not isinstance(report, dict):
        return f"`project_report` should be a dict with the fields {', '.join(PROJECT_FIELDS)}; got {type(report).__name__}"
    missing = [k for k in PROJECT_FIELDS if k not in report]
    if missing:
        return f"fields missing (or still `...`): {', '.join(missing)}"
    problems = []
    if report["task"] not in PROJECT_TASKS:
        problems.append(f"task should be 'numbers' or 'dates', got {report['task']!r}")
    if not (_is_number(report["steps"]) and int(report["steps"]) == report["steps"] and report["steps"] > 0):
        problems.append(f"steps should be a whole number of steps, got {report['steps']!r}")
    if not (_is_number(report["lr"]) and report["lr"] > 0):
        problems.append(f"lr should be the peak learning rate, a positive number, got {report['lr']!r}")
    if not (_is_number(report["warmup"]) and int(report["warmup"]) == report["warmup"] and report["warmup"] >= 0):
        problems.append(f"warmup should be a whole number of steps (0 for none), got {report['warmup']!r}")
    if not (_is_number(report["final_loss"]) and report["final_loss"] >= 0):
        problems.append(f"final_loss should be the training loss of the last step, got {report['final_loss']!r}")
    if not (_is_number(report["test_exact_match"]) and 0 <= report["test_exact_match"] <= 1):
        problems.append("test_exact_match should be a fraction between 0 and 1 (0.93, not 93), got "
                        f"{report['test_exact_match']!r}")
    if not (isinstance(report["checkpoint"], str) and report["checkpoint"].strip()):
        problems.append("checkpoint should be the path of your checkpoint, a string")
    for key in ("experiment", "finding"):
        if not (isinstance(report[key], str) and len(report[key].split()) >= 3):
            problems.append(f"{key} should say in a sentence what you {'changed' if key == 'experiment' else 'found'}")
    return "; ".join(problems)


def review_project(report):
    """The project check's items: [(label, ok, message)], each with its feedback (also for a passing item
    when there is something to say). Never raises."""
    items = []
    problem = _fields_problem(report)
    items.append(("the report: every field, of its kind", not problem, problem))
    if problem:
        rest = "not checked: the report's fields come first"
        return items + [(label, False, rest) for label in _PROJECT_LABELS[1:]]
    path = Path(report["checkpoint"]).expanduser()
    from . import mode
    try:
        if not path.exists():
            where = ("the grader receives your notebook alone, not the files beside it: the items that need "
                     "the checkpoint are checked when you run this cell yourself" if mode.grading() else
                     f"no file at {str(path)!r} (relative paths start in this notebook's folder, "
                     f"{str(Path.cwd())!r}): give the path your training cell printed")
            raise ValueError(where)
        run = read_run(path)
    except Exception as exc:
        message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        items.append(("the checkpoint loads, with its configuration", False, message))
        return items + [(label, False, "not checked: no checkpoint to check it on") for label in _PROJECT_LABELS[2:]]
    config = run["config"]
    items.append(("the checkpoint loads, with its configuration", True,
                  f"{path.name}: task {config.task}, {run['steps']} steps of {config.batch_size}, peak lr {config.lr:g}, "
                  f"warm-up {config.warmup}, d_model {config.d_model}"))
    # the run the report describes
    differ = []
    if config.task != report["task"]:
        differ.append(f"task: the report says {report['task']!r}, the checkpoint {config.task!r}")
    if run["steps"] != report["steps"]:
        differ.append(f"steps: the report says {report['steps']}, the checkpoint was saved after {run['steps']}")
    if not math.isclose(config.lr, report["lr"], rel_tol=1e-6):
        differ.append(f"lr: the report says {report['lr']:g}, the checkpoint's configuration {config.lr:g}")
    if config.warmup != report["warmup"]:
        differ.append(f"warmup: the report says {report['warmup']}, the checkpoint's configuration {config.warmup}")
    losses = run["losses"]
    if losses:
        last = float(losses[-1])
        if not math.isclose(last, report["final_loss"], rel_tol=0.01, abs_tol=5e-5):
            differ.append(f"final_loss: the report says {report['final_loss']:g}, the checkpoint recorded "
                          f"{last:.4g} at its last step")
    note = "" if losses else "the checkpoint records no losses, so final_loss is not compared"
    items.append(("the checkpoint is the run the report describes", not differ, "; ".join(differ) or note))
    # the budget
    examples = run["steps"] * config.batch_size
    allowed = default_parameters(config.task)
    size = parameter_total(config.model_config())
    over = []
    if examples > PROJECT_BUDGET:
        over.append(f"{run['steps']} steps of {config.batch_size} are {examples:,} training examples, more than the "
                    f"budget of {PROJECT_BUDGET:,}")
    if size > allowed:
        over.append(f"the model has {size:,} parameters, more than the default model's {allowed:,}")
    items.append(("within the budget", not over, "; ".join(over) or
                  f"{examples:,} of {PROJECT_BUDGET:,} training examples; {size:,} parameters"))
    # the exact match, measured again
    from ..capstone.evaluation import exact_match
    examples_again = _task_module(config.task).examples("test", n=RECHECK)
    measured = exact_match(run["model"], examples_again, device="cpu", task=config.task)[0]
    claimed = float(report["test_exact_match"])
    tolerance = exact_match_tolerance(claimed, measured)
    ok = abs(claimed - measured) <= tolerance
    items.append(("the exact match it claims, measured again", ok,
                  f"the report claims {claimed:.1%}; decoded again, the checkpoint gets {measured:.1%} of the first "
                  f"{RECHECK} test examples (the two may differ by {100 * tolerance:.1f} percentage points)" +
                  ("" if ok else ": the claim is not what this checkpoint does")))
    return items


_PROJECT_LABELS = ["the report: every field, of its kind", "the checkpoint loads, with its configuration",
                   "the checkpoint is the run the report describes", "within the budget",
                   "the exact match it claims, measured again"]


class _ZeroPointChecker(Checker):
    """A Checker for a check worth nothing: its parts are shown without their (zero) worth."""

    def _part_line(self, p):
        line = super()._part_line(p)
        return line.replace("[0 / 0] ", "") if self.points == 0 else line

    def report(self):
        """The report; at 0 points "All checks pass." only when they do (0 of 0 points says nothing)."""
        text = super().report()
        if self.points == 0 and (self.stopped or not all(p.passed for p in self.parts)):
            text = text.replace("\n  All checks pass.", "")
        return text


class ProjectReport(Quiz):
    """The project's report (a dict), checked for consistency with the checkpoint it names. Worth 0 points
    by default (the grader never has the checkpoint); one part per item of review_project."""

    may_be_free = True
    what_to_write = "your run's figures, written as literals (numbers and strings)"

    def marks(self, answer):
        return review_project(answer)

    def check(self, answer=None, points=None):
        import builtins
        from .core import _caller_namespace
        if answer is None:
            answer = _caller_namespace().get(self.name)
        checker = _ZeroPointChecker(self, points)
        if answer is None:
            from . import mode
            checker.stop(mode.not_defined(self.name, "answer"), "no answer")
            return checker.result()
        if unanswered(answer):
            checker.stop(f"not answered yet: replace each `...` in `{self.name}` with {self.what_to_write}, and "
                         "delete the `raise NotImplementedError()` line under it. Until you have trained, "
                         "show_review(example_report()) shows what this check says of the course's example run.",
                         "not implemented")
            return checker.result()
        if isinstance(answer, dict):
            answer = {key: value for key, value in answer.items() if value is not builtins.Ellipsis}
        for label, ok, message in self.marks(answer):
            checker.part(label, ok, message)
        if isinstance(answer, dict) and _is_example(answer.get("checkpoint")):
            checker.note("this checkpoint is the course's example run (encdec/data/project_example.npz), not one "
                         "of yours: train your own run (§10.16) and report it")
        return checker.result()


def _is_example(path):
    try:
        return isinstance(path, str) and Path(path).expanduser().resolve() == EXAMPLE_RUN.resolve()
    except OSError:
        return False


PROJECT_REPORT = ProjectReport("10.8", "the project's report", "project_report", points=0)


@PROJECT_REPORT.checked_by
def check_project_report(project_report=None, *, points=None):
    """Reads the report, loads its checkpoint, decodes 100 test examples again; 0 points."""
    return PROJECT_REPORT.check(project_report, points)


def example_report():
    """The report of the course's example run (lib/encdec/data/project_example.npz), as the project asks for it."""
    with np.load(EXAMPLE_RUN, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
    return {**meta["summary"]["report"], "checkpoint": str(EXAMPLE_RUN)}


def show_review(report):
    """The check's items for a report, printed; records and grades nothing (for a demonstration)."""
    for label, ok, message in review_project(report):
        print(f"  {'✓' if ok else '✗'} {label}" + (f": {message}" if message else ""))


EXERCISES = [LOAD_NUMPY_PARAMETERS, LR_AT, MAKE_OPTIMIZER, TORCH_TRAIN_STEP, EXACT_MATCH, GREEDY_DECODE_CACHED]
ORDERINGS = [DDP_STEP_ORDER]
QUIZZES = [PROJECT_REPORT]


# -- for the notebook's demonstrations ----------------------------------------------------------------
def cached_logits(model, src, tgt_in):
    """Teacher forcing through a KV cache (the course's own cached step): tgt_in (B, m) fed one column per
    step, the logits of every step stacked, (B, m, V). For comparing with model(src, tgt_in)."""
    return references().cached_logits(model, src, tgt_in)


def yours_or_ours(number, answer):
    """The student's answer to exercise `number` when its visible test passes, else the course's
    reference (with a note), so that a demonstration runs before the exercise is done. Grades nothing."""
    return exercises.yours_or_ours(EXERCISES, number, answer, passed=_PASSED.get(number))


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 10.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(10, after=[*EXERCISES, *ORDERINGS, *QUIZZES])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
