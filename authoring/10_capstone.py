# %% [markdown]
# # Lesson 10 — Capstone: the model in PyTorch, trained on a GPU
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 10 of 10*
#
# Nine lessons built an encoder–decoder transformer in NumPy, one piece at a time, and checked every
# piece. NumPy is the right place to understand the model: every number is in plain sight. It is the
# wrong place to train one: no GPU, no automatic gradients, one core doing the work. This lesson moves
# the same model to PyTorch, piece by piece, and checks each piece against your NumPy reference to the
# last digits of float64. Then it trains the full model on a real task, on a GPU when there is one,
# reads what it learned from its cross-attention, and proves that three implementations (NumPy, torch
# on the CPU, torch on the GPU) compute the same function.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. write multi-head attention and the pre-norm decoder block as PyTorch modules whose parameters
#    have the NumPy model's names and shapes, and check them against the NumPy reference;
# 2. move weights from NumPy to PyTorch without losing a bit, in place, keeping dtype and device;
# 3. write one PyTorch training step, and show that autograd's gradients are Lesson 7's backward pass;
# 4. train the full model on a task with real alignment structure (dates in many formats to ISO
#    dates), and read the day, month and year alignment in its cross-attention;
# 5. compare greedy decoding with beam search on hard inputs, and say what a wider search cannot fix;
# 6. read a parity report: NumPy against torch in float64, the CPU against the GPU in float32;
# 7. put the steps of one data-parallel (DDP) training step in order.
#
# **Recap of Lesson 9.** Decoding turns the model's next-token distributions into a sequence: greedy
# decoding takes the argmax, sampling draws from a tempered and truncated distribution, and beam
# search keeps the `beam_width` best hypotheses, ranked by length-normalised log-probability. The KV
# cache feeds one new token per step and computes cross-attention's keys and values once: identical
# tokens, about $L$ instead of $L^2/2$ decoder positions.
#
# **How exercises work.** As before: replace each stub (`raise NotImplementedError()`) with your code,
# run the cell, then the test cell below it. The tests run your torch code in float64 on the CPU and
# compare it with the course's NumPy reference on the same weights, and name the likely misconception
# when it differs. Grading trains nothing: the training and the figures are demonstrations, skipped
# when notebooks are graded.
#
# Tags: **[LEARNED]** changed by training, **[CONFIG]** chosen before training, **[STATE]** computed
# while the model runs. Figures follow the course's [figure key](../FIGURE_KEY.md).

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny matrices run fastest on one thread
from encdec.env import check_environment

check_environment()
import math
import time

import numpy as np
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F

import encdec as ref  # the course's NumPy reference implementation
from encdec import capstone, dates, plotting
from encdec import torch_model

torch.set_num_threads(1)  # the course's models are small: one thread is as fast, and never oversubscribed
np.set_printoptions(precision=4, suppress=True)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
print(f"torch {torch.__version__}; this lesson trains on {capstone.device_name(DEVICE)}")

# %% [markdown]
# ## 10.1 From NumPy to PyTorch
#
# A PyTorch **tensor** is a NumPy array that also knows its device (CPU or GPU) and can record the
# operations applied to it, so that `loss.backward()` computes every gradient automatically
# (**autograd**). Most NumPy code carries over with small changes of name:
#
# | NumPy | PyTorch |
# |---|---|
# | `x @ W`, `x.reshape(...)`, `x.sum(axis=-1, keepdims=True)` | `x @ W`, `x.reshape(...)`, `x.sum(dim=-1, keepdim=True)` |
# | `np.swapaxes(x, -2, -3)` | `x.transpose(-2, -3)` |
# | `softmax(x, axis=-1)` (yours, Lesson 1) | `x.softmax(dim=-1)` or `torch.softmax(x, dim=-1)` |
# | float64 by default | float32 by default: `torch.float64` must be asked for |
#
# A model is an `nn.Module`. Its [LEARNED] arrays are `nn.Parameter`s, tensors that the module lists in
# `named_parameters()` and an optimizer updates; its computation is the `forward` method, which runs
# when the module is called, `module(x)`.
#
# The course's PyTorch model stores every parameter **exactly as the NumPy model does**: the same
# names (`decoder.0.cross_attn.W_q`) and the same shapes, each matrix used as `x @ W`. That is not
# PyTorch's habit: `nn.Linear(d_in, d_out)` stores its weight as `(d_out, d_in)` and computes
# `x @ W.T + b`. Keeping the NumPy layout means weights move between the two implementations by name,
# with no transposes to forget. The two cells below are given: the RMSNorm and the feed-forward network
# of Lesson 2, for tensors.

# %%
def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm over the last axis, for tensors: x / sqrt(mean(x^2) + eps) * gamma (Lesson 2).

    Inputs: x (..., d); gamma (d,) [LEARNED]. Returns: (..., d).
    """
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


class TorchFeedForward(nn.Module):
    """GELU(x W1 + b1) W2 + b2 with the NumPy FeedForward's parameters: W1 (d_model, d_ff), b1 (d_ff,),
    W2 (d_ff, d_model), b2 (d_model,) [LEARNED]."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.W1 = nn.Parameter(torch.randn(d_model, d_ff) / math.sqrt(d_model))
        self.b1 = nn.Parameter(torch.zeros(d_ff))
        self.W2 = nn.Parameter(torch.randn(d_ff, d_model) / math.sqrt(d_ff))
        self.b2 = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        """(..., T, d_model) -> (..., T, d_model)."""
        return F.gelu(x @ self.W1 + self.b1, approximate="tanh") @ self.W2 + self.b2


ffn = TorchFeedForward(4, 6)
print([(name, tuple(p.shape)) for name, p in ffn.named_parameters()])

# %% [markdown]
# ## 10.2 Multi-head attention in PyTorch
#
# The computation of Lessons 1, 2 and 4, now on tensors. For queries from `query_input (..., m, d_model)`
# and keys and values from `key_value_input (..., n, d_model)` (or from `query_input` itself, for
# self-attention):
#
# $$Q = x_q W_Q,\quad K = x_{kv} W_K,\quad V = x_{kv} W_V \quad\text{split into } h \text{ heads } (\dots, h, T, d_k),$$
#
# $$\text{weights} = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}} + \text{mask}\Big),\qquad
# \text{output} = \operatorname{merge}(\text{weights}\; V)\, W_O .$$
#
# Splitting the heads is a reshape **and** a transpose: `(..., T, d_model)` to `(..., T, h, d_k)` to
# `(..., h, T, d_k)`. On tensors, `K.transpose(-1, -2)` swaps the last two axes (`K.T` would reverse
# them all). The mask is additive and broadcasts to `(..., h, m, n)`, as in NumPy.
#
# ### Exercise 10.1 — `TorchMultiHeadAttention.forward(query_input, key_value_input=None, mask=None)` (3 points)
#
# The constructor is given: the four matrices are `nn.Parameter`s of shape `(d_model, d_model)`, used as
# `x @ W`. Return `(output, weights)`, the weights of shape `(..., h, m, n)`. You may write your own
# small split and merge helpers inside `forward`; do not call the course's torch model.

# %% [solution] multi_head_attention
class TorchMultiHeadAttention(nn.Module):
    """Multi-head attention with the NumPy layout: W_q, W_k, W_v, W_o (d_model, d_model) [LEARNED]."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_q = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.W_k = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.W_v = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))
        self.W_o = nn.Parameter(torch.randn(d_model, d_model) / math.sqrt(d_model))

    def forward(self, query_input, key_value_input=None, mask=None):
        """Self-attention (key_value_input None) or cross-attention.

        Inputs:  query_input (..., m, d_model); key_value_input (..., n, d_model) or None;
                 mask additive, broadcastable to (..., h, m, n)
        Returns: (output (..., m, d_model), weights (..., h, m, n)).
        """
        ### BEGIN SOLUTION
        kv = query_input if key_value_input is None else key_value_input

        def split(x):  # (..., T, d_model) -> (..., h, T, d_k)
            return x.reshape(*x.shape[:-1], self.n_heads, self.d_k).transpose(-2, -3)

        Q, K, V = split(query_input @ self.W_q), split(kv @ self.W_k), split(kv @ self.W_v)
        scores = Q @ K.transpose(-1, -2) / math.sqrt(self.d_k)  # (..., h, m, n)
        if mask is not None:
            scores = scores + mask
        weights = scores.softmax(dim=-1)
        heads = (weights @ V).transpose(-2, -3)  # (..., m, h, d_k)
        return heads.reshape(*heads.shape[:-2], self.d_model) @ self.W_o, weights
        ### END SOLUTION


# %% [test] test_multi_head_attention points=3
# Tests for Exercise 10.1 (3 points). Run this cell after your answer.
from encdec.checks.lesson10 import check_multi_head_attention

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_multi_head_attention(points=3, hidden=hidden)

# %% [markdown]
# ## 10.3 The decoder block in PyTorch
#
# Lesson 5's pre-norm decoder block: three sublayers, each reading a normalised copy of $x$ and adding
# its result back to $x$.
#
# $$x \leftarrow x + \operatorname{SelfAttn}(\operatorname{RMSNorm}_1(x),\ \text{causal mask}),$$
# $$x \leftarrow x + \operatorname{CrossAttn}(\operatorname{RMSNorm}_2(x),\ H_{\text{enc}},\ \text{source mask}),$$
# $$x \leftarrow x + \operatorname{FFN}(\operatorname{RMSNorm}_3(x)).$$
#
# ### Exercise 10.2 — `TorchDecoderBlock.forward(x, encoder_output, self_attn_mask=None, cross_attn_mask=None)` (3 points)
#
# The constructor is given; use its sublayers (your `TorchMultiHeadAttention`, the given
# `TorchFeedForward`) and the given `rms_norm` with `norm1_gamma`, `norm2_gamma`, `norm3_gamma`. Return
# `(output, cross_weights)`: the block's output and the cross-attention weights `(..., h, m, n)`.
# While this is checked, the reference attention replaces yours, so a mistake in Exercise 10.1 is not
# charged twice.

# %% [solution] decoder_block
class TorchDecoderBlock(nn.Module):
    """Pre-norm decoder block: self-attention -> cross-attention -> FFN, each with its residual."""

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.self_attn = TorchMultiHeadAttention(d_model, n_heads)
        self.cross_attn = TorchMultiHeadAttention(d_model, n_heads)
        self.ffn = TorchFeedForward(d_model, d_ff)
        self.norm1_gamma = nn.Parameter(torch.ones(d_model))
        self.norm2_gamma = nn.Parameter(torch.ones(d_model))
        self.norm3_gamma = nn.Parameter(torch.ones(d_model))

    def forward(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        """x (..., m, d_model) decoder states; encoder_output (..., n, d_model); additive masks,
        self_attn_mask broadcastable to (..., h, m, m), cross_attn_mask to (..., h, m, n).

        Returns: (output (..., m, d_model), cross_weights (..., h, m, n)).
        """
        ### BEGIN SOLUTION
        x = x + self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)[0]
        out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
        x = x + out
        return x + self.ffn(rms_norm(x, self.norm3_gamma)), cross_weights
        ### END SOLUTION


# %% [test] test_decoder_block points=3
# Tests for Exercise 10.2 (3 points).
from encdec.checks.lesson10 import check_decoder_block

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_decoder_block(points=3, hidden=hidden)

# %% [markdown]
# ## 10.4 Moving the weights
#
# With the same names and shapes on both sides, moving a trained NumPy model to PyTorch is a loop over
# names. Three details make it lossless and safe:
#
# * **In place.** Copy each array into the parameter that already exists, `p.copy_(...)`. Replacing a
#   parameter by a new tensor would leave anything that holds the old one (an optimizer made earlier, a
#   data-parallel wrapper) training the old one.
# * **Without autograd.** An in-place change of a parameter would be recorded as part of the model's
#   computation, and torch refuses it: copy under `with torch.no_grad():`.
# * **Keeping the module's dtype and device.** `torch.from_numpy(value)` is float64 and on the CPU;
#   `copy_` converts it to the parameter's own dtype and device (float64 to float64 is exact: no bit is
#   lost). And check first: the two sets of names must be equal and each pair of shapes too, or raise a
#   `ValueError` that names the difference. A silent mismatch leaves random weights in a "trained" model.
#
# ### Exercise 10.3 — `load_numpy_parameters(module, params)` (2 points)

# %% [solution] load_numpy_parameters
def load_numpy_parameters(module, params):
    """Copy NumPy arrays into a torch module's parameters by name, in place.

    Inputs:  module  an nn.Module whose named_parameters() have the NumPy model's names
             params  dict name -> NumPy array (e.g. a NumPy Seq2Seq's parameters())
    Returns: module, its parameters now holding the arrays' values (in the module's own dtype and
             device). Raises ValueError when the names differ or a shape differs.
    """
    ### BEGIN SOLUTION
    own = dict(module.named_parameters())
    missing, extra = sorted(set(own) - set(params)), sorted(set(params) - set(own))
    if missing or extra:
        raise ValueError(f"parameter names differ: missing {missing}, unexpected {extra}")
    with torch.no_grad():
        for name, p in own.items():
            value = np.asarray(params[name])
            if tuple(p.shape) != value.shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {value.shape}")
            p.copy_(torch.from_numpy(value))
    return module
    ### END SOLUTION


# %% [test] test_load_numpy_parameters points=2
# Tests for Exercise 10.3 (2 points).
from encdec.checks.lesson10 import check_load_numpy_parameters

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_load_numpy_parameters(points=2, hidden=hidden)

# %% [markdown]
# The course's complete PyTorch model, `encdec.torch_model.Seq2Seq`, is built from the same pieces as
# yours (its attention uses PyTorch's fused `scaled_dot_product_attention` when the weights are not
# asked for). Here a NumPy model with random weights moves to it through your function, and both
# compute the logits of the same batch: in float64 they agree to about $10^{-14}$, the rounding of a
# different order of summation.

# %% [demo]
np_model = ref.Seq2Seq(vocab_size=dates.VOCAB_SIZE, d_model=32, n_heads=4, d_ff=64, rng=0)
twin = load_numpy_parameters(torch_model.Seq2Seq(np_model.config).double(), np_model.parameters())
src, tgt = dates.encode_pairs(["2 Dec 2026", "december 2nd, 2026"], ["2026-12-02", "2026-12-02"])
tgt_in = ref.shift_right(tgt, dates.BOS)
with torch.no_grad():
    torch_logits = twin(torch.from_numpy(src), torch.from_numpy(tgt_in)).numpy()
print(f"logits {torch_logits.shape}; max |NumPy - torch| = {np.max(np.abs(np_model(src, tgt_in) - torch_logits)):.1e}")

# %% [markdown]
# ## 10.5 One training step in PyTorch
#
# Lesson 8's training step, with autograd in place of Lesson 7's backward pass:
#
# 1. the decoder input is the targets shifted right, `<bos>` first (teacher forcing);
# 2. one forward pass over all positions gives the logits `(B, m, V)`;
# 3. the loss is the cross-entropy averaged over the **real** target tokens: pads do not count
#    (`F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad_id)`);
# 4. `optimizer.zero_grad()`, because torch **adds** each backward pass's gradients to `.grad`;
# 5. `loss.backward()` fills every parameter's `.grad`; `optimizer.step()` updates the parameters.
#
# ### Exercise 10.4 — `torch_train_step(model, optimizer, src, tgt, bos_id)` (3 points)
#
# `src (B, n)` and `tgt (B, m)` are integer tensors; the targets end with `<eos>` and then pads
# (`model.config.pad_id`). Return the loss as a Python float (`loss.item()`). The test makes two steps
# with plain SGD on the torch twin of a NumPy model and compares the losses and the updated weights
# with NumPy's, whose gradients come from your Lesson 7 backward pass.

# %% [solution] torch_train_step
def torch_train_step(model, optimizer, src, tgt, bos_id):
    """One teacher-forced training step.

    Inputs:  model      a torch Seq2Seq: model(src, tgt_in) -> logits (B, m, V); model.config.pad_id
             optimizer  a torch optimizer over model.parameters()
             src (B, n), tgt (B, m)  integer tensors, right-padded; bos_id the id of <bos>
    Returns: the loss before the update, a float: the mean cross-entropy over non-pad target tokens.
    """
    ### BEGIN SOLUTION
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)  # (B, m)
    logits = model(src, tgt_in)  # (B, m, V)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
    ### END SOLUTION


# %% [test] test_torch_train_step points=3
# Tests for Exercise 10.4 (3 points).
from encdec.checks.lesson10 import check_torch_train_step

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_torch_train_step(points=3, hidden=hidden)

# %% [markdown]
# ## 10.6 The task: dates, in many formats, to ISO
#
# The capstone's task has the structure that makes cross-attention worth having: to write
# `2026-12-02` the decoder must find the year, then the month, then the day in the source, and they
# sit in different places in different formats. A month may be a name, an abbreviation or a number;
# a day may be an ordinal (`2nd`); some sources start with a weekday the output never uses. Numeric
# dates are **day-first**, as in most of the world: `02/12/2026` is the 2nd of December.
#
# Everything is generated in code with a fixed seed (`encdec.dates`): 18 formats, characters as tokens
# (a vocabulary of 70: `<pad>`, `<bos>`, `<eos>`, digits, letters, punctuation), sources of 8 to 28
# characters, targets of 10 plus `<eos>`. Every date from 1950 to 2049 belongs to exactly one split:
# 2,000 test dates, 1,000 validation dates, the rest for training. No test date is ever seen in
# training, in any format.

# %% [demo]
test_set = dates.examples("test")
for source, target, fmt in test_set[:8]:
    print(f"{source:>30}  ->  {target}   ({fmt})")
splits = dates.split_dates()
print({name: len(split) for name, split in splits.items()}, "dates;", len(dates.FORMAT_NAMES), "formats")

# %% [markdown]
# ## 10.7 Training
#
# `encdec.capstone` trains the course's PyTorch model: 2 encoder and 2 decoder blocks, $d_{model} = 64$,
# 4 heads, $d_{ff} = 256$ (235,904 parameters [LEARNED]), batches of 128 drawn afresh at every step
# from the training dates, AdamW with a warm-up of 100 steps and a cosine decay from $2 \cdot 10^{-3}$,
# 800 steps [CONFIG]. It is the same script as `make capstone`; here it runs in the notebook.
#
# **On a GPU** the cell below trains the whole run (well under a minute on a modern GPU). **On a CPU**
# it trains the first 200 steps (under a minute) and then loads the weights of a complete run made by
# `make capstone` and shipped with the course (`encdec/data/capstone_dates.npz`, under 1 MB), so the
# figures below always show a fully trained model. Both keep the model after 200 steps too: a
# half-trained model, for the decoding comparison.

# %% [demo]
import tempfile

config = capstone.DEFAULT
out = tempfile.mkdtemp(prefix="lesson10-")  # the checkpoint goes here, not into the course folder
start = time.perf_counter()
half, state = capstone.train(config, out, DEVICE, stop_at=200, progress=False)
print(f"200 steps in {time.perf_counter() - start:.0f} s on {capstone.device_name(DEVICE)}: "
      f"loss {state['history']['loss'][0]:.2f} -> {state['history']['loss'][-1]:.3f}")
half = half.cpu().eval()
if DEVICE == "cuda":  # continue the same run from its checkpoint to the end
    model, state = capstone.train(config, out, DEVICE, resume=True, progress=False)
    model = model.cpu().eval()
    print(f"all {config.steps} steps in {state['train_time_s']:.0f} s of training")
else:
    model, meta = capstone.load_weights()  # the complete default run, made by `make capstone`
    print(f"loaded the shipped weights: {meta['summary']['steps']} steps on {meta['summary']['device']}, "
          f"test exact match {meta['summary']['test_exact_match']:.2%}")
history = state["history"]

# %% [demo]
fig, ax = plotting.figure(width=5.5)
plotting.curves({"training loss": (history["step"], history["loss"])}, ax=ax, logy=True,
                title=f"training loss, {'all' if DEVICE == 'cuda' else 'the first 200'} steps on {DEVICE}")
plt.show()
for name, m in (("after 200 steps", half), ("fully trained", model)):
    accuracy, by_format, _ = capstone.exact_match(m, test_set, "cpu")
    worst = min(by_format, key=by_format.get)
    print(f"{name:>16}: test exact match {accuracy:.2%} (hardest format: {worst}, {by_format[worst]:.1%})")

# %% [markdown]
# ## 10.8 What the model reads: cross-attention
#
# The decoder block returns its cross-attention weights; the course's model collects them with
# `model.decode(tgt_in, H_enc, src_mask, return_attention=True)`, one `(B, h, m, n)` array per decoder
# block. Below, the last block's weights averaged over its 4 heads, for one date written in four
# formats. Row $t$ is the decoder position that **predicts** output character $t$ (its label); the
# columns are the source characters.
#
# Read the rows in groups. The rows that write the year's last two digits look at those digits,
# wherever the format puts them: at the end of `Wednesday, 2 December 2026`, at the start of
# `20261202`. The century (`20` or `19`) needs less looking, and its rows spread their attention. The
# day rows look at `2`, `02` or `2nd`; the month rows at `12` when the month is a number, and over the
# letters of the word when it is spelled out: no single character says "12". The weekday is hardly
# read at all. This is the alignment of Lesson 4, learned from nothing but examples.

# %% [demo]
def cross_attention_maps(model, source, block=-1):
    """(predicted text, weights (m, n) of one decoder block, averaged over heads) for one source."""
    src = torch.from_numpy(dates.pad_batch([dates.encode(source)]))
    predicted = capstone.predict(model, [source], "cpu")[0]
    tgt = torch.from_numpy(dates.pad_batch([dates.encode(predicted, eos=True)]))
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        _, cross = model.decode(torch.from_numpy(ref.shift_right(tgt.numpy(), dates.BOS)), H_enc, src_mask,
                                return_attention=True)
    return predicted, cross[block][0].mean(dim=0).numpy()


sources = ["Wednesday, 2 December 2026", "02/12/2026", "december 2nd, 2026", "20261202"]
fig, axes = plotting.figure(1, 4, width=4.6, height=4.2)
for ax, source in zip(axes, sources):
    predicted, weights = cross_attention_maps(model, source)
    plotting.heatmap(weights, rows=list(predicted) + ["<eos>"], cols=list(source), kind="cross", ax=ax,
                     title=f"{source!r}", row_label="predicts", col_label="source character")
plt.show()

# %% [markdown]
# ## 10.9 Greedy decoding and beam search on hard inputs
#
# The trained model gets about 99.9% of the test dates right. Where does it fail? Its rare errors mix
# up the digits of the year and of the day, as in `Wednesday, 12 September 2012` written `2021-09-12`;
# the hardest inputs are dates whose day repeats the last two digits of the year. Below, every such
# date in three months and all 18 formats (1,512 inputs): greedy decoding (the course's torch model)
# against a beam search of width 4 (the NumPy reference of Lesson 9, on the same weights).
#
# Beam search finds sequences of **higher probability** than greedy decoding. It cannot make the model
# prefer the right answer. Where the fully trained model is wrong, it is confidently wrong, and the
# beam returns the same answer; the right date is usually its **second** hypothesis. The half-trained
# model is unsure at many steps, and the search corrects some of its errors, not most.

# %% [demo]
import datetime as dt

hard = [(dates.render(dt.date(y, m, y % 100), f), dt.date(y, m, y % 100).isoformat())
        for y in range(1950, 2050) if 1 <= y % 100 <= 28 for m in (2, 9, 12) for f in dates.FORMAT_NAMES]


def beams(np_model, source, width=4):
    """Beam search (Lesson 9's NumPy reference) for one source: [(text, normalised score)], best first."""
    found = ref.beam_search(np_model, np.array(dates.encode(source)), dates.BOS, dates.EOS, width, max_len=11)
    return [(dates.decode(tokens), score) for tokens, score in found]


for name, m in (("after 200 steps", half), ("fully trained", model)):
    greedy = capstone.predict(m, [s for s, _ in hard], "cpu")
    wrong = [(s, t) for g, (s, t) in zip(greedy, hard) if g != t]
    np_m = torch_model.to_numpy(m)  # the same weights, in the NumPy model
    sample = wrong[:60]  # beam search runs one source at a time, in NumPy: a sample of the errors
    searched = [beams(np_m, s) for s, _ in sample]
    fixed = sum(b[0][0] == t for b, (_, t) in zip(searched, sample))
    second = sum(len(b) > 1 and b[1][0] == t for b, (_, t) in zip(searched, sample))
    print(f"{name}: greedy decoding is wrong on {len(wrong)} of {len(hard)} hard inputs. On {len(sample)} of "
          f"those, beam search gets {fixed} right, and has the right date second in {second} more.")
print("the fully trained model's errors, with its three best hypotheses (normalised log-probability):")
for (source, target), found in list(zip(sample, searched))[:4]:
    print(f"  {source!r:32} right: {target}; beams: " + ", ".join(f"{t} ({s:.3f})" for t, s in found[:3]))

# %% [markdown]
# ## 10.10 Parity: three implementations, one function
#
# The same trained weights, evaluated three ways. `capstone.parity_report` computes (and
# `make capstone` writes into `runs/capstone/report.json`):
#
# * **NumPy float64 against torch float64 on the CPU.** The weights move losslessly (float32 to
#   float64 is exact), and the two implementations differ only in the order of their sums: the logits
#   agree to rounding, far inside the tolerance of $10^{-9}$, and greedy decoding returns identical
#   outputs.
# * **torch float32 on the CPU against torch float32 on CUDA**, with TF32 disabled (TF32 would round
#   the inputs of every GPU matrix product to 10 bits of mantissa). Different kernels sum in different
#   orders, so the logits differ by float32 rounding, about $10^{-5}$; the greedy outputs on all 2,000
#   test dates must be identical. Without a GPU the report says so and skips this figure.
# * **bf16 autocast** (`make gpu-check CAPSTONE_ARGS=--bf16`) runs the matrix products in bfloat16, 8
#   bits of mantissa: differences of $10^{-2}$ to $10^{-1}$ in the logits are expected. It is reported
#   on its own, with its own tolerance, and never mixed into the figures above.

# %% [demo]
report = capstone.parity_report(model, test_set)
npt = report["numpy_float64_vs_torch_float64_cpu"]
print(f"NumPy float64 vs torch float64 (CPU): max |delta logits| = {npt['max_abs_diff_logits']:.1e} "
      f"(tolerance {npt['tolerance']:.0e}) on {npt['examples']} test dates; greedy identical: {npt['greedy_identical']}")
gpu = report["cpu_float32_vs_cuda_float32"]
if gpu["available"]:
    print(f"torch float32, CPU vs {gpu['device_name']}: max |delta logits| = {gpu['max_abs_diff_logits']:.1e}; "
          f"greedy identical on {gpu['examples']} test dates: {gpu['greedy_identical']}")
else:
    print("CPU vs CUDA:", gpu["note"])

# %% [markdown]
# ## 10.11 Scaling out: data parallelism
#
# One GPU trains this model in seconds. Larger models and datasets are trained on many GPUs at once,
# and the simplest way to use them is **data parallelism**: every process holds a full copy of the
# model and trains on its own share of each batch. PyTorch's `DistributedDataParallel` (DDP) keeps the
# copies identical by averaging the gradients over the processes (an **all-reduce**) before every
# update. The capstone script runs under PyTorch's launcher unchanged:
#
# ```bash
# torchrun --standalone --nproc_per_node=4 -m encdec.capstone              # 4 GPUs, NCCL
# torchrun --standalone --nproc_per_node=2 -m encdec.capstone --device cpu # 2 CPU processes, gloo
# ```
#
# Each process rebuilds the step's global batch from the step number and takes its slice of the rows.
# Its loss is its share of the sum over the global batch's target tokens, scaled by the number of
# processes, so that DDP's average of the gradients is exactly the gradient of the global mean loss:
# the same global batch gives the same weights whatever the number of processes. The course's tests
# run two processes with the gloo backend and check that their weights after four steps equal one
# process's to $10^{-10}$.
#
# ### Exercise 10.5 — order the steps (1 point)
#
# Here are the steps of one data-parallel training step, as every process runs them, shuffled. Put them
# in order.
#
# 1. all-reduce: DDP averages every gradient over the processes
# 2. forward pass and loss on the slice, scaled so that the average over processes is the global mean
# 3. every process builds the step's global batch from the step number
# 4. optimizer step, the same update on every process, so the weights stay identical
# 5. each process keeps its own slice of the batch's rows
# 6. backward pass: each process's gradients of its own loss
#
# Practise with the widget (it gives instant feedback and grades nothing), then write your answer as a
# list of the step numbers above, in order, in the answer cell: for example `[3, ...]`.

# %% [demo]
from encdec.checks.lesson10 import DDP_STEP_ORDER

DDP_STEP_ORDER.widget()

# %% [solution] ddp_step_order
### BEGIN SOLUTION
ddp_step_order = [3, 5, 2, 6, 1, 4]
### END SOLUTION

# %% [test] test_ddp_step_order points=1
# Tests for Exercise 10.5 (1 point).
from encdec.checks.lesson10 import check_ddp_step_order

check_ddp_step_order(points=1)

# %% [markdown]
# ## Summary
#
# * The course's PyTorch model keeps the NumPy model's parameters, names and shapes (`x @ W`, not
#   `nn.Linear`'s `x @ W.T`), so weights move between the two by name, in place, with `p.copy_` under
#   `torch.no_grad()`, losslessly in float64.
# * Multi-head attention and the decoder block carry over line for line; the differences are names
#   (`dim`, `keepdim`, `transpose`) and the default dtype (float32 in torch).
# * A torch training step is zero the gradients, forward, loss over the real tokens, backward, step;
#   autograd's gradients are exactly Lesson 7's backward pass.
# * Trained on dates in 18 formats, the model reaches about 99.9% exact match on dates it never saw,
#   and its cross-attention finds the year, the month and the day wherever each format puts them.
# * Beam search finds likelier outputs; it cannot correct a model that is confidently wrong.
# * NumPy and torch agree to about $10^{-14}$ in float64; the CPU and the GPU agree to float32 rounding
#   with identical outputs; bf16 has its own, looser tolerance.
# * Data parallelism trains one model on many processes: the same global batch, a slice per process,
#   gradients averaged by an all-reduce, identical updates everywhere.
#
# **Where to go next.** `make capstone` trains the model from the command line and writes the report;
# `make bench` compares it with `torch.nn.Transformer`; the appendices collect the formulas (A), the
# architectures that grew from this one (B) and the acronyms (C). From here: larger tasks (translation
# with subword tokens), the KV cache in the torch model, mixed precision at scale, and models with
# billions of parameters, built from the very blocks you wrote.
