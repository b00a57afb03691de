# %% [markdown]
# # Lesson 10 — Capstone: training, evaluating and decoding in PyTorch
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 10 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the training loop (the loss, the backward pass, the optimizer and its learning-rate schedule), decoding (the next token fed back in as the decoder's next input) and the device it runs on, outlined in red and the rest faded](../figures/course_map_10.svg)
#
# *The course map. In red: what this lesson writes in PyTorch around the model: the loss and the backward
# pass of a training step, the optimizer and its learning-rate schedule, decoding with the next token fed
# back in, and the device everything runs on (a GPU when there is one). The model itself is the one you
# built in Lessons 1–6, translated to PyTorch for you. The [figure key](../FIGURE_KEY.md) explains the
# shapes.*
#
# Nine lessons built an encoder–decoder transformer in NumPy, one piece at a time, and checked every
# piece. NumPy is the right place to understand the model: every number is in plain sight. It is the
# wrong place to train one: it has no GPU and no automatic gradients, so every backward pass is written
# by hand and every product runs on the CPU. The course's PyTorch model is the same model, translated
# line for line, and this lesson starts by reading it.
# Then you write, in PyTorch, what a real training run needs beyond the model: the learning-rate
# schedule, the optimizer with weight decay on the right parameters, the training step with gradient
# clipping, an exact-match evaluation, and batched greedy decoding with a KV cache. Each is checked
# against the course's NumPy reference on the same weights. Then the full model trains on a real task,
# on a GPU when there is one; you read what it learned from its cross-attention, and check that three
# implementations (NumPy, torch on the CPU, torch on the GPU) compute the same function, up to rounding.
# A second task follows, English number words to German ones with the subword tokens of Lesson 6; then
# what each piece of the model is worth, measured; and last a project of your own: you train the model
# under a budget, make the choices, and report what you found.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. read the course's PyTorch model as a translation of the NumPy one, and move weights from NumPy to
#    PyTorch by name, in place, keeping the module's dtype and device (without losing a bit in float64);
# 2. write a learning-rate schedule with a linear warm-up and a cosine decay;
# 3. build AdamW with decoupled weight decay, and choose which parameters it decays;
# 4. write one PyTorch training step with teacher forcing, a loss over the real tokens and gradient
#    clipping, and check it against the NumPy backward pass;
# 5. measure a model by exact match, in evaluation mode, and say why exact match is stricter than token
#    accuracy;
# 6. write batched greedy decoding with a KV cache in PyTorch that returns exactly the tokens of
#    decoding without one, and measure what the cache saves;
# 7. train the full model on a task with real alignment structure, read its cross-attention, compare
#    greedy decoding with beam search, and read a parity report;
# 8. put the steps of one data-parallel (DDP) training step in order.
# 9. read the cross-attention of a translation model with subword tokens, where the two languages put
#    their words in different orders;
# 10. read an ablation ladder: what a piece of the model is worth on one task, against the spread of
#    the seeds;
# 11. train a model end to end under a compute budget, with your own loop, checkpoints and an experiment
#    of your own, and report it in a form a check can hold against the checkpoint.
#
# **Recap of Lesson 9.** Decoding turns the model's next-token distributions into a sequence: greedy
# decoding takes the argmax, sampling draws from a tempered and truncated distribution, and beam
# search keeps the `beam_width` best hypotheses by total log-probability and ranks the finished ones by
# length-normalised log-probability. The KV cache feeds one new token per step and computes
# cross-attention's keys and values once: identical tokens, and $L$ decoder positions instead of
# $L(L+1)/2$ (attention still reads every cached key, one more at each step).
#
# **How exercises work.** As before: replace each stub (`raise NotImplementedError()`) with your code,
# run the cell, then the test cell below it. The tests run your code on tiny models on the CPU, in
# float64 (plus a float32 case where the dtype matters), and compare it with the course's NumPy
# reference on the same weights; when it differs, they name the likely misconception. Grading trains
# nothing beyond two steps of a tiny model: the training run and the figures are demonstrations,
# skipped when notebooks are graded. The demonstrations use your functions once their tests pass, and
# the course's own until then.
#
# Tags: **[LEARNED]** set by the optimiser and saved with the model; **[CONFIG]** chosen before the run, the
# same for every input; **[STATE]** computed by the program from the inputs, or from the training so far.
# The [figure key](../FIGURE_KEY.md) gives the rule with examples, and what every colour and shape means.

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny matrices run fastest on one thread
from encdec.env import check_environment

check_environment()
import inspect
import math
import time

import numpy as np
import matplotlib.pyplot as plt
import torch
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
# A PyTorch **tensor** is much like a NumPy array, but it also knows its device (CPU or GPU) and can
# record the operations applied to it, so that `loss.backward()` computes every gradient
# automatically (**autograd**). Most NumPy code carries over with small changes of name:
#
# | NumPy | PyTorch |
# |---|---|
# | `x @ W`, `x.reshape(...)`, `x.sum(axis=-1, keepdims=True)` | `x @ W`, `x.reshape(...)`, `x.sum(dim=-1, keepdim=True)` |
# | `np.swapaxes(x, -2, -3)` | `x.transpose(-2, -3)` |
# | `softmax(x, axis=-1)` (yours, Lesson 1) | `x.softmax(dim=-1)` or `torch.softmax(x, dim=-1)` |
# | `np.concatenate([a, b], axis=-2)` | `torch.cat([a, b], dim=-2)` |
# | float64 by default | float32 by default: `torch.float64` must be asked for |
#
# A model is an `nn.Module`. Its [LEARNED] arrays are `nn.Parameter`s, tensors that the module lists in
# `named_parameters()` and an optimizer updates; its computation is the `forward` method, which runs
# when the module is called, `module(x)`.
#
# You have written multi-head attention (Lessons 2 and 4) and the decoder block (Lesson 5) in NumPy; the
# course's PyTorch model, `encdec.torch_model`, is the same code on tensors, and this lesson does not
# ask you to write them again. Read it instead. It stores every parameter **exactly as the NumPy model
# does**: the same names (`decoder.0.cross_attn.W_q`) and the same shapes, each matrix used as `x @ W`.
# That is not PyTorch's habit: `nn.Linear(d_in, d_out)` stores its weight as `(d_out, d_in)` and
# computes `x @ W.T + b`. Keeping the NumPy layout means weights move between the two implementations by
# name, with no transposes to forget.
#
# | NumPy (`encdec`) | PyTorch (`encdec.torch_model`) |
# |---|---|
# | `MultiHeadAttention.__call__(query_input, key_value_input=None, mask=None)` | `MultiHeadAttention.forward(...)`: fused projections (`x @ torch.cat([W_q, W_k, W_v], dim=1)` in self-attention), and PyTorch's fused `F.scaled_dot_product_attention` unless the weights are asked for |
# | splitting and merging heads, `(..., T, d_model)` ↔ `(..., h, T, d_k)` | `split_heads(x, n_heads)`, `merge_heads(x)` |
# | `rms_norm(x, gamma)` | an `autograd.Function` with Lesson 7's closed-form backward |
# | `FeedForward`: `W1, b1, W2, b2` | `FeedForward`, the same four parameters (`F.linear` adds the bias inside the matrix product) |
# | `EncoderBlock`, `DecoderBlock`, `Seq2Seq` | the same names, the same sublayers in the same order |
# | `model.encode(src)`, `model.decode(tgt_in, H_enc, src_mask)` | the same methods, on tensors |
# | `model.embed(tokens, offset=0)` | `model.embed(tokens)`: positions `0 ... T-1` only |
# | `greedy_decode(model, src, ...)` | `model.greedy_decode(src, bos_id, eos_id, max_len)`, without a cache |
# | `model.parameters()`: a dict, name → array | `model.named_parameters()`: the same names and shapes |
#
# The decoder block, for instance, reads as Lesson 5 wrote it: three pre-norm sublayers, each added to
# $x$ (`_dropout` applies the model's dropout rate, `config.dropout` [CONFIG], in training mode only).

# %% [demo]
print(inspect.getsource(torch_model.DecoderBlock.forward))
twin = torch_model.Seq2Seq(ref.ModelConfig(vocab_size=13, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=1,
                                           n_decoder_layers=1))
print([(name, tuple(p.shape)) for name, p in twin.named_parameters()][:7], "...")

# %% [markdown]
# ## 10.2 Moving the weights
#
# With the same names and shapes on both sides, moving a trained NumPy model to PyTorch is a loop over
# names. Three details make it safe, and in float64 lossless:
#
# * **In place.** Copy each array into the parameter that already exists, `p.copy_(...)`. Replacing a
#   parameter by a new tensor would leave anything that holds the old one (an optimizer made earlier, a
#   data-parallel wrapper) training the old one.
# * **Without autograd.** An in-place change of a parameter would be recorded as part of the model's
#   computation, and torch refuses it: copy under `with torch.no_grad():`.
# * **Keeping the module's dtype and device.** `torch.from_numpy(value)` is float64 and on the CPU;
#   `copy_` converts it to the parameter's own dtype and device (float64 to float64 is exact: no bit is
#   lost; into a float32 model each value is rounded to float32). And check first: the two sets of
#   names must be equal and each pair of shapes too, or raise a `ValueError` that names the difference.
#   A silent mismatch leaves random weights in a "trained" model.
#
# ### Exercise 10.1 — `load_numpy_parameters(module, params)`

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


# %% [test] 10.1

# %% [markdown]
# A NumPy model with random weights moves to the torch model through your function, and both compute the
# logits of the same batch: in float64 they agree to about $10^{-15}$. The difference is rounding: the
# two libraries add their sums in other orders, and compute functions such as exp and tanh with their
# own code.

# %% [demo]
from encdec.checks.lesson10 import yours_or_ours

load = yours_or_ours("10.1", globals().get("load_numpy_parameters"))
np_model = ref.Seq2Seq(vocab_size=dates.VOCAB_SIZE, d_model=32, n_heads=4, d_ff=64, rng=0)
twin = load(torch_model.Seq2Seq(np_model.config).double(), np_model.parameters())
src, tgt = dates.encode_pairs(["2 Dec 2026", "december 2nd, 2026"], ["2026-12-02", "2026-12-02"])
tgt_in = ref.shift_right(tgt, dates.BOS)
with torch.no_grad():
    torch_logits = twin(torch.from_numpy(src), torch.from_numpy(tgt_in)).numpy()
print(f"logits {torch_logits.shape}; max |NumPy - torch| = {np.max(np.abs(np_model(src, tgt_in) - torch_logits)):.1e}")

# %% [markdown]
# ## 10.3 The learning rate: warm up, then a cosine decay
#
# Lesson 8 warmed the learning rate up and then let it decay like $1/\sqrt{\text{step}}$, for ever. When
# the length of the run is known in advance, as it is here, a **cosine** decay is the usual choice: after
# a linear warm-up to the peak, the rate follows half a cosine wave down to a floor `min_lr`, reached
# exactly at the last step. It falls slowly at first, while the model still learns fast, fastest half
# way, and slowly again at the end, where small steps let the weights settle. With $w$ warm-up steps, $T$
# steps in all, and steps counted from 1:
#
# $$\text{lr}(s) = \text{peak} \cdot \frac{s}{w} \quad (s \le w), \qquad
# \text{lr}(s) = \text{min\_lr} + (\text{peak} - \text{min\_lr}) \cdot \frac{1 + \cos(\pi p)}{2},\quad
# p = \min\!\Big(\frac{s - w}{T - w},\ 1\Big) \quad (s > w).$$
#
# The warm-up reaches the peak exactly at step $w$; the decay starts there ($p = 0$, $\cos 0 = 1$) and
# ends at `min_lr` at step $T$ ($p = 1$, $\cos \pi = -1$); a step after $T$ keeps `min_lr`. The
# capstone uses a peak of $2 \cdot 10^{-3}$, 100 warm-up steps, 800 steps and
# $\text{min\_lr} = 4 \cdot 10^{-5}$ [CONFIG].
#
# ### Exercise 10.2 — `lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0)`

# %% [solution] lr_at
def lr_at(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    """The learning rate of one step: linear warm-up, then a cosine decay to min_lr.

    Inputs:  step (int, counting from 1); peak_lr, warmup_steps, total_steps, min_lr [CONFIG]
    Returns: the rate for this step, a float: peak_lr * step / warmup_steps up to warmup_steps, then
             min_lr + (peak_lr - min_lr) * (1 + cos(pi * p)) / 2 with
             p = min((step - warmup_steps) / (total_steps - warmup_steps), 1).
    """
    ### BEGIN SOLUTION
    if step <= warmup_steps:
        return peak_lr * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return min_lr + (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress)) / 2
    ### END SOLUTION


# %% [test] 10.2

# %% [markdown]
# The capstone's schedule, and Lesson 8's 2017 schedule scaled to the same peak for comparison (dashed):
# the cosine reaches its floor at step 800; the $1/\sqrt{\text{step}}$ decay would still be at about a
# third of its peak.

# %% [demo]
schedule = yours_or_ours("10.2", globals().get("lr_at"))
config = capstone.DEFAULT
steps = np.arange(1, config.steps + 1)
cosine = [schedule(s, config.lr, config.warmup, config.steps, config.lr * config.min_lr_ratio) for s in steps]
inverse_sqrt = [ref.warmup_schedule(s, config.d_model, config.warmup) for s in steps]
scale = config.lr / max(inverse_sqrt)
plotting.curves({"warm-up + cosine (the capstone)": (steps, cosine),
                 "reference: warm-up + 1/sqrt(step) (Lesson 8), same peak": (steps, np.array(inverse_sqrt) * scale)},
                xlabel="step", ylabel="learning rate", title="the capstone's learning-rate schedule")
plt.show()
print(f"step 800: cosine {cosine[-1]:.1e}, 1/sqrt(step) {inverse_sqrt[-1] * scale:.1e} (peak {config.lr:.0e})")

# %% [markdown]
# ## 10.4 The optimizer: AdamW, and what to decay
#
# **Weight decay** pulls every weight a little towards 0 at each step, so that a weight stays large only
# while the loss keeps asking for it. Added to the loss as an L2 penalty
# $\frac{\lambda}{2}\lVert\theta\rVert^2$, it becomes a term $\lambda\theta$ in the gradient; in Adam
# that term is then divided by $\sqrt{\hat v}$ like the rest of the gradient, so the pull depends on
# each weight's gradient history. **AdamW** (Loshchilov and Hutter, 2019) *decouples* it: the weights
# shrink directly, and Adam's step of Lesson 8 uses the gradient alone:
#
# $$\theta \leftarrow \theta - \text{lr}\cdot\lambda\,\theta, \qquad
# \theta \leftarrow \theta - \text{lr}\cdot\frac{\hat m}{\sqrt{\hat v} + \varepsilon}.$$
#
# `torch.optim.AdamW` does exactly this (and `encdec.optim.AdamW` does it in NumPy; the two agree to
# $10^{-10}$ in float64, and the tests use the NumPy one as the reference). The decay rate $\lambda$
# (`weight_decay`) is [CONFIG]; Adam's moments $m$, $v$ and its step count $t$ are [STATE]: the optimizer
# computes them from the gradients so far, they last the whole run, and the capstone's checkpoint saves
# them with the weights, so that a resumed run continues where it stopped.
#
# Not every parameter should be decayed. Decay is meant for the weight **matrices** (the projections,
# the FFN matrices, and the embedding, which is also the output head). An RMSNorm gain's neutral value is
# 1, not 0: pulling it towards 0 shrinks the sublayer's input for no reason. Biases are a few numbers
# each and are left alone too. The capstone (`encdec.capstone.build_optimizer`) decays exactly the
# parameters with two or more dimensions. An optimizer takes such choices as **parameter groups**: a
# list of dicts, each with its own `"params"` and its own settings,
#
# ```python
# torch.optim.AdamW([{"params": decayed, "weight_decay": weight_decay},
#                    {"params": the_rest, "weight_decay": 0.0}], lr=lr, betas=betas)
# ```
#
# and keeps them in `optimizer.param_groups`, where the training step will set each group's `"lr"`.

# %% [markdown]
# **Self-check 10.1 — predict, then run.** A matrix and an RMSNorm gain, both full of 3.0, take one
# AdamW step (lr 0.1, weight decay 0.5 on the matrix only) with a gradient of exactly zero. What does each
# become? And with `torch.optim.Adam(weight_decay=0.5)`, the L2 version?
#
# <details><summary>Answer</summary>
#
# With AdamW the matrix becomes $3 \cdot (1 - 0.1 \cdot 0.5) = 2.85$ and the gain stays 3.0: Adam's own
# step is $\hat m / (\sqrt{\hat v} + \varepsilon) = 0 / (0 + \varepsilon) = 0$, so only the decay acts, and
# only where it is asked for. With Adam's L2 term the gradient becomes $\lambda\theta = 1.5$, which Adam
# normalises like any gradient: at this first step the matrix moves by a full lr, to 2.9, whatever the
# value of $\lambda > 0$.
#
# </details>

# %% [demo]
def one_step(optimizer_class, **kwargs):
    W, gamma = torch.full((2, 2), 3.0, requires_grad=True), torch.full((2,), 3.0, requires_grad=True)
    optimizer = optimizer_class([{"params": [W], "weight_decay": 0.5}, {"params": [gamma], "weight_decay": 0.0}],
                                lr=0.1, **kwargs)
    W.grad, gamma.grad = torch.zeros_like(W), torch.zeros_like(gamma)
    optimizer.step()
    return W[0, 0].item(), gamma[0].item()


print("AdamW:          matrix %.4f, gain %.4f" % one_step(torch.optim.AdamW))
print("Adam with L2:   matrix %.4f, gain %.4f" % one_step(torch.optim.Adam))

# %% [markdown]
# ### Exercise 10.3 — `make_optimizer(model, lr, weight_decay, betas)`
#
# Return a `torch.optim.AdamW` over **every** parameter of the model, in two groups: the parameters with
# `p.ndim >= 2` with `weight_decay`, the others with 0. Pass on `lr` and `betas`; keep AdamW's default
# `eps` ($10^{-8}$).

# %% [solution] make_optimizer
def make_optimizer(model, lr, weight_decay, betas):
    """AdamW with weight decay on the matrices only.

    Inputs:  model   an nn.Module (the course's torch Seq2Seq)
             lr, weight_decay, betas (beta1, beta2)  [CONFIG]
    Returns: a torch.optim.AdamW with two parameter groups: every parameter with p.ndim >= 2 (weight
             matrices, the embedding) with weight_decay; every other one (gains, biases) with 0.
    """
    ### BEGIN SOLUTION
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)
    ### END SOLUTION


# %% [test] 10.3

# %% [markdown]
# ## 10.5 One training step in PyTorch
#
# Lesson 8's training step, with autograd in place of Lesson 7's backward pass, and two additions a real
# run needs: this step's learning rate, and gradient clipping.
#
# 1. **The rate.** An optimizer reads its rate from each parameter group: set `group["lr"] = lr` in
#    **every** group of `optimizer.param_groups` (here two, from Exercise 10.3).
# 2. **Teacher forcing.** The decoder input is the targets shifted right, `<bos>` first (Lessons 6, 8); one
#    forward pass over all positions gives the logits `(B, m, V)`.
# 3. **The loss** is the cross-entropy averaged over the **real** target tokens: pads do not count
#    (`F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=pad_id)`).
# 4. **`optimizer.zero_grad()`, then `loss.backward()`**: torch *adds* each backward pass's gradients
#    [STATE] to what `.grad` holds, so the old ones must go first.
# 5. **Clipping.** A rare batch can produce a gradient far larger than usual, and one huge step can undo
#    hours of training. Clipping by the **global norm** rescales all gradients together when their joint
#    length exceeds `max_norm` [CONFIG]:
#
#    $$\lVert g \rVert = \sqrt{\textstyle\sum_{\text{all parameters}} \sum g^2}, \qquad
#    g \leftarrow g \cdot \min\!\Big(1, \frac{\text{max\_norm}}{\lVert g \rVert}\Big).$$
#
#    `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` does it in place, between `backward`
#    and `step`, and returns $\lVert g \rVert$ *before* clipping: the number worth logging, since a spike
#    in it is often the first sign of trouble.
# 6. **`optimizer.step()`** updates the parameters.

# %% [markdown]
# **Self-check 10.2 — predict, then run.** Below, the same batch goes through `loss.backward()` twice
# without `zero_grad()` in between. How does the `.grad` of a parameter compare with its `.grad` after one
# backward pass?
#
# <details><summary>Answer</summary>
#
# It is exactly twice as large: each backward pass *adds* its gradient to `.grad`. In a training loop
# without `zero_grad()`, step $k$ would use the sum of the gradients of all $k$ batches so far.
#
# </details>

# %% [demo]
small = torch_model.Seq2Seq(ref.ModelConfig(vocab_size=dates.VOCAB_SIZE, d_model=16, n_heads=2, d_ff=32,
                                            n_encoder_layers=1, n_decoder_layers=1), seed=0).double()
pairs = dates.encode_pairs(["2 Dec 2026", "december 2nd, 2026"], ["2026-12-02", "2026-12-02"])
src_t, tgt_t = (torch.from_numpy(a) for a in pairs)
tgt_in_t = torch.from_numpy(ref.shift_right(pairs[1], dates.BOS))


def batch_loss(model):
    logits = model(src_t, tgt_in_t)
    return F.cross_entropy(logits.flatten(0, 1), tgt_t.flatten(), ignore_index=dates.PAD)


W = small.decoder[0].self_attn.W_q
batch_loss(small).backward()
once = W.grad.clone()
batch_loss(small).backward()  # no zero_grad() in between
print(f"after two backward passes, .grad / (.grad after one) = {(W.grad / once).unique().tolist()}")
small.zero_grad()

# %% [markdown]
# **Self-check 10.3 — predict, then run.** The gradient of that batch has a global norm of about 3.
# After `clip_grad_norm_(small.parameters(), max_norm=1.0)`, what is its global norm, and what is the
# cosine between the gradient before and after clipping (all parameters flattened into one vector)?
#
# <details><summary>Answer</summary>
#
# The norm is 1 (to within torch's guard against dividing by zero: it divides by the norm plus
# $10^{-6}$) and the cosine is 1: clipping multiplies every gradient by the same positive number, so the
# direction of the step is unchanged and only its length is capped. This is why clipping by the global
# norm is preferred to clipping each entry at a threshold, which would change the direction.
#
# </details>

# %% [demo]
batch_loss(small).backward()
before = torch.cat([p.grad.flatten() for p in small.parameters()])
returned = torch.nn.utils.clip_grad_norm_(small.parameters(), max_norm=1.0)
after = torch.cat([p.grad.flatten() for p in small.parameters()])
print(f"norm before {before.norm():.4f} (clip_grad_norm_ returned {returned:.4f}), after {after.norm():.7f}; "
      f"cosine {F.cosine_similarity(before, after, dim=0):.12f}")
small.zero_grad()

# %% [markdown]
# ### Exercise 10.4 — `torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm)`
#
# `src (B, n)` and `tgt (B, m)` are integer tensors; the targets end with `<eos>` and then pads
# (`model.config.pad_id`). Return `(loss, grad_norm)` as two Python floats (`.item()`): the loss before the
# update and the global gradient norm before clipping. The test makes two steps on the torch twin of a
# NumPy model, once with plain SGD and once with AdamW, and compares the losses, the norms and every
# weight's change with NumPy's, whose gradients come from Lesson 7's backward pass.

# %% [solution] torch_train_step
def torch_train_step(model, optimizer, src, tgt, bos_id, lr, max_norm):
    """One teacher-forced training step with gradient clipping.

    Inputs:  model      a torch Seq2Seq: model(src, tgt_in) -> logits (B, m, V); model.config.pad_id
             optimizer  a torch optimizer over model.parameters(), in one or more parameter groups
             src (B, n), tgt (B, m)  integer tensors, right-padded; bos_id the id of <bos>
             lr         this step's learning rate, for every group; max_norm the clipping threshold
    Returns: (loss, grad_norm), floats: the mean cross-entropy over the non-pad target tokens before the
             update, and the global norm of all gradients before clipping.
    """
    ### BEGIN SOLUTION
    for group in optimizer.param_groups:
        group["lr"] = lr
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)  # (B, m)
    logits = model(src, tgt_in)  # (B, m, V)
    loss = F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=model.config.pad_id)
    optimizer.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item(), grad_norm.item()
    ### END SOLUTION


# %% [test] 10.4

# %% [markdown]
# Your three functions are a training loop. `encdec.capstone.train` is the same loop (plus checkpoints,
# evaluation and data parallelism): for every step it sets the scheduled rate in every group of an AdamW
# made as in Exercise 10.3, zeroes the gradients, backpropagates, clips to a norm of 1 and steps. Below,
# your loop trains the capstone's model, from its initial weights, on the capstone's first 10 batches;
# §10.7 runs the capstone's own loop from the same start and compares the losses.

# %% [demo]
step_fn = yours_or_ours("10.4", globals().get("torch_train_step"))
schedule = yours_or_ours("10.2", globals().get("lr_at"))
optimizer_fn = yours_or_ours("10.3", globals().get("make_optimizer"))
config = capstone.DEFAULT
mine = capstone.build_model(config)  # the capstone's initial weights (seeded)
optimizer = optimizer_fn(mine, config.lr, config.weight_decay, config.betas)
batches = dates.TrainingBatches(config.seed)  # the capstone's batches: step k's batch is rebuilt from k
my_losses = {}
for step in range(1, 11):
    b_src, b_tgt = (torch.from_numpy(a) for a in batches.batch(step, config.batch_size))
    lr = schedule(step, config.lr, config.warmup, config.steps, config.lr * config.min_lr_ratio)
    my_losses[step] = step_fn(mine, optimizer, b_src, b_tgt, dates.BOS, lr, config.grad_clip)[0]
print(f"your loop: loss {my_losses[1]:.4f} at step 1, {my_losses[10]:.4f} at step 10")

# %% [markdown]
# ## 10.6 The task: dates, in many formats, to ISO
#
# The capstone's task has the structure that makes cross-attention worth having: to write
# `2026-12-02` the decoder must find the year, then the month, then the day in the source, and they
# sit in different places in different formats. A month may be a name, an abbreviation or a number;
# a day may be an ordinal (`2nd`); some sources start with a weekday the output never uses. Numeric
# dates that start with the day are **day-first**, as in most of the world: `02/12/2026` is the 2nd of
# December. The two year-first formats (`2026/12/02`, `20261202`) are year, month, day.
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
# **On a GPU** the cell below trains the whole run: on an NVIDIA H200, 800 steps took 17 s of training
# (145,000 tokens per second over that whole run, its first steps included) and reached 99.85% exact
# match on the test dates. So large a GPU is mostly waiting here: batches of 128 short dates are small
# work, and Python and the launch of every kernel take much of each step's time. In steady state, as
# `make bench` measures it, the H200 trains this model only about 5.5 times as fast as one CPU thread of
# the same machine (162,000 against 29,600 tokens per second). **On a CPU** the cell trains the first
# 10 steps (a few seconds), enough to compare with your loop; then it loads the same run after 200 steps
# (`encdec/data/capstone_dates_200.npz`: its weights and its losses, made by `tools/capstone_200.py`
# with this very call, on one CPU thread, in about 25 s) and the weights of a complete run made by
# `make capstone` (`encdec/data/capstone_dates.npz`, under 1 MB each), so the figures below always show
# a fully trained model. Both keep the model after 200 steps too: a half-trained model, for the
# comparisons. The cell also prints the losses of the first steps next to those of your loop in §10.5:
# the same start and the same batches give the same losses, to float32 rounding (on a GPU the kernels
# differ, so the last digits may too).

# %% [demo]
import dataclasses
import tempfile

config = dataclasses.replace(capstone.DEFAULT, eval_every=0)  # no validation while training: §10.8 evaluates
out = tempfile.mkdtemp(prefix="lesson10-")  # the checkpoint goes here, not into the course folder
start = time.perf_counter()
if DEVICE == "cuda":
    half, state = capstone.train(config, out, DEVICE, stop_at=200, progress=False)
    history = state["history"]
    print(f"200 steps in {time.perf_counter() - start:.0f} s on {capstone.device_name(DEVICE)}: "
          f"loss {history['loss'][0]:.2f} -> {history['loss'][-1]:.3f}")
else:  # the first 10 steps here, then the same run after 200 steps, shipped (tools/capstone_200.py)
    _, state = capstone.train(config, out, DEVICE, stop_at=10, progress=False)
    half, meta = capstone.load_weights(capstone.PRETRAINED.parent / "capstone_dates_200.npz")
    history = meta["summary"]["history"]
    here = dict(zip(state["history"]["step"], state["history"]["loss"]))
    shipped = dict(zip(history["step"], history["loss"]))
    print(f"10 steps in {time.perf_counter() - start:.0f} s on {capstone.device_name(DEVICE)}: losses at steps 1 and 10 "
          f"{here[1]:.4f}, {here[10]:.4f}; the shipped run of 200 steps: {shipped[1]:.4f}, {shipped[10]:.4f}, "
          f"and {shipped[200]:.3f} at step 200")
half = half.cpu().eval()
logged = dict(zip(history["step"], history["loss"]))
if "my_losses" in globals():  # the loop of §10.5, from the same start on the same batches
    print(f"losses at steps 1 and 10: this run {logged[1]:.4f}, {logged[10]:.4f}; "
          f"your loop of §10.5 {my_losses[1]:.4f}, {my_losses[10]:.4f}")
if DEVICE == "cuda":  # continue the same run from its checkpoint to the end
    model, state = capstone.train(config, out, DEVICE, resume=True, progress=False)
    model = model.cpu().eval()
    history = state["history"]
    print(f"all {config.steps} steps in {state['train_time_s']:.0f} s of training")
else:
    model, meta = capstone.load_weights()  # the complete default run, made by `make capstone`
    print(f"loaded the shipped weights: {meta['summary']['steps']} steps on {meta['summary']['device']}, "
          f"test exact match {meta['summary']['test_exact_match']:.2%}")

# %% [demo]
fig, ax = plotting.figure(width=5.5)
plotting.curves({"training loss": (history["step"], history["loss"])}, ax=ax, logy=True,
                title=f"training loss, {'all' if DEVICE == 'cuda' else 'the first 200'} steps on {DEVICE}")
plt.show()

# %% [markdown]
# ## 10.8 Exact match
#
# A date is one answer. The model's prediction counts only if **every** token of the target, up to and
# including `<eos>`, is right: `2026-12-02<eos>`, not `2026-12-0<eos>` (a prefix), not `2026-12-022<eos>`
# (one token too many), not `2026-12-02` followed by more digits and no `<eos>` within `max_len`. What
# follows the target's `<eos>` (its pads) is not compared. **Exact match** is the fraction of sequences
# that count.
#
# Evaluation also has a protocol of its own. `model.eval()` switches every module of the model to
# evaluation mode: the course's models apply dropout (at the rate `config.dropout` [CONFIG]) in training
# mode only. `torch.no_grad()` stops autograd from recording a graph that nothing will use. And
# evaluation happens in the middle of training, so it must hand the model back in the mode it found it.
# `model.greedy_decode` does all three itself: it runs in eval mode under `torch.no_grad()` and gives the
# model back in the mode it found it. So `exact_match` need not call them; what it must not do is change
# the model's mode: a `model.eval()` of its own with no `model.train(was_training)` after it would leave a
# model that was training in eval mode.

# %% [markdown]
# ### Exercise 10.5 — `exact_match(model, src, tgt, bos_id, eos_id, max_len)`
#
# Decode with the model's own greedy decoding, `model.greedy_decode(src, bos_id, eos_id, max_len)`: it
# returns `(B, L)` ids without `<bos>`, each row ending at its first `<eos>` and padded with
# `model.config.pad_id` after it. `L` may be shorter or longer than the targets' width `m`. The test gives
# you models whose decoder follows a script, so that every kind of near miss above occurs, with other
# `<bos>` and `<eos>` ids in one batch; it also checks the mode the model is left in.

# %% [solution] exact_match
def exact_match(model, src, tgt, bos_id, eos_id, max_len):
    """The fraction of sequences whose greedy output is exactly the target.

    Inputs:  model  a torch Seq2Seq with model.greedy_decode(src, bos_id, eos_id, max_len) -> (B, L) ids
             src (B, n), tgt (B, m)  integer tensors; each target row ends in <eos>, then pads
             bos_id, eos_id; max_len the most tokens to generate
    Returns: a Python float in [0, 1] (not a 0-d tensor: .item() of one), the fraction of rows whose
             prediction matches every target token up to and including <eos>. The model's mode
             (model.training) is the same afterwards as before (model.greedy_decode runs it in eval mode
             under torch.no_grad() and restores its mode).
    """
    ### BEGIN SOLUTION
    was_training = model.training
    model.eval()
    with torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)  # (B, L)
    model.train(was_training)
    pad = model.config.pad_id
    width = max(pred.shape[1], tgt.shape[1])
    pred = F.pad(pred, (0, width - pred.shape[1]), value=pad)  # (B, width): pads after <eos> either way
    tgt = F.pad(tgt, (0, width - tgt.shape[1]), value=pad)
    return (pred == tgt).all(dim=1).double().mean().item()
    ### END SOLUTION


# %% [test] 10.5

# %% [markdown]
# **Self-check 10.4 — predict, then run.** After 200 steps the model predicts about 95% of the tokens of
# the first 500 test dates right when it reads the true prefix (teacher forcing). Is its exact match on
# the same dates about the same, a little lower, or much lower?
#
# <details><summary>Answer</summary>
#
# Much lower: between 55% and 60% (a run on a GPU gives slightly different figures). Each date has 11
# tokens to get right, and one wrong token spoils the whole date; if the errors were spread independently,
# $0.95^{11} \approx 0.57$ of the dates would come out right. Generation can also add errors of its own:
# after a first slip the model reads its own output, not the true prefix (Lesson 8's exposure bias).
# Token accuracy flatters a sequence model; exact match is what a user of a date parser sees.
#
# </details>

# %% [demo]
evaluate = yours_or_ours("10.5", globals().get("exact_match"))
test_src, test_tgt = (torch.from_numpy(a) for a in dates.encode_pairs([s for s, _, _ in test_set[:500]],
                                                                       [t for _, t, _ in test_set[:500]]))
test_tgt_in = torch.from_numpy(ref.shift_right(test_tgt.numpy(), dates.BOS))
for name, m in (("after 200 steps", half), ("fully trained", model)):
    with torch.no_grad():
        right = (m(test_src, test_tgt_in).argmax(dim=-1) == test_tgt) & (test_tgt != dates.PAD)
    tokens = right.sum().item() / (test_tgt != dates.PAD).sum().item()
    exact = evaluate(m, test_src, test_tgt, dates.BOS, dates.EOS, dates.TARGET_LEN)
    print(f"{name:>16}: token accuracy (teacher-forced) {tokens:.2%}, exact match (greedy) {exact:.2%}")

# %% [markdown]
# ## 10.9 Greedy decoding with a KV cache, in PyTorch
#
# `model.greedy_decode` runs the decoder over the whole prefix at every step, as Lesson 9's first greedy
# decoder did. Lesson 9's cache works on the torch model too, and on a batch: encode once, compute every
# decoder block's cross-attention keys and values once, and feed only the newest token at each step,
# appending its keys and values to each block's self-attention cache ([STATE], kept for one decoding
# run).
#
# The torch model has no `project_kv` and `attend` methods, so the pieces are given here, for tensors:
# the heads split and merged as in the torch model, RMSNorm, attention of all heads at once, and the
# embedding of one new token at its position (the model's own `model.embed(tokens)` puts the first token
# of `tokens` at position 0, which is right only at the first step).

# %%
from encdec.torch_model import merge_heads, split_heads  # (..., T, d_model) <-> (..., h, T, d_k)


def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm over the last axis, for tensors (Lesson 2). Inputs: x (..., d); gamma (d,). Returns (..., d)."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def attend(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V for every head (Lesson 1).

    Inputs:  Q (..., h, m, d_k); K, V (..., h, n, d_k); mask additive, broadcastable to (..., h, m, n)
    Returns: (..., h, m, d_k)
    """
    scores = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    return scores.softmax(dim=-1) @ V


def embed_at(model, tokens, position):
    """One token per sequence embedded at one position, as model.embed embeds that position.

    Inputs:  tokens (B,) ids; position t (int). Returns: (B, 1, d_model).
    """
    d = model.config.d_model
    x = F.embedding(tokens[:, None], model.embedding) * math.sqrt(d)  # (B, 1, d)
    pe = torch.from_numpy(ref.sinusoidal_positions(position + 1, d)[position])
    return x + pe.to(device=x.device, dtype=x.dtype)


# %% [markdown]
# One step, for the newest tokens `token (B,)` at position $t$, through every decoder block `b` of
# `model.decoder` (the parameters are those of Lesson 5's block, under the names of the table in §10.1):
#
# 1. `x = embed_at(model, token, t)`, shape `(B, 1, d_model)`;
# 2. self-attention: `a = rms_norm(x, b.norm1_gamma, eps)`; the new row of keys and values,
#    `split_heads(a @ b.self_attn.W_k, h)` and the same with `W_v`, each `(B, h, 1, d_k)`, appended to the
#    block's cache with `torch.cat(..., dim=-2)`; the query `split_heads(a @ b.self_attn.W_q, h)` attends
#    over the whole cache (no mask: it holds only the past and the token itself);
#    `x = x + merge_heads(...) @ b.self_attn.W_o`;
# 3. cross-attention: `a = rms_norm(x, b.norm2_gamma, eps)`; its query attends over the block's keys and values
#    of the encoder output, computed once before the first step, with the source mask;
#    `x = x + merge_heads(...) @ b.cross_attn.W_o`;
# 4. `x = x + b.ffn(rms_norm(x, b.norm3_gamma, eps))`;
#
# and after the last block, the logits of the new position,
# `rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T`, shape `(B, 1, V)`; every RMSNorm uses
# the model's constant, `eps = model.config.eps` [CONFIG]. The
# rules of Lesson 9's greedy decoding hold: `<bos>` and `<pad>` are banned, a row ends at its first `<eos>`
# (kept) and gets `pad_id` from then on, and the loop stops when every row has ended, or after `max_len`
# steps.

# %% [markdown]
# **Self-check 10.5 — explain why.** The cache keeps every past position's keys and values, but never its
# query. Why is a query never needed again?
#
# <details><summary>Answer</summary>
#
# A query is used by its own position only, to read the keys and values of the positions it may see. At
# step $t$ the new token's query attends over the keys and values of positions $0 \dots t$; at every later
# step it is the *later* token's query that attends, over the same stored keys and values plus its own.
# Because of the causal mask no position's output ever changes once it has been computed, so an old query
# would only recompute an output that is already known. Keys and values are read by every later query,
# which is why they, and only they, are worth keeping.
#
# </details>

# %% [markdown]
# ### Exercise 10.6 — `greedy_decode_cached(model, src, bos_id, eos_id, max_len)`
#
# Batched greedy decoding with a KV cache on the course's torch model, under `torch.no_grad()`. It must
# return exactly the tokens that decoding without a cache returns. The test compares your tokens with the
# NumPy reference's on the same weights (float64 and float32), and counts, while your function runs, the
# positions that go through the encoder and through each decoder block's attention: the encoder once, the
# encoder output's keys once per block, and **one new position per sequence per step** in self-attention.

# %% [solution] greedy_decode_cached
def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
    """Greedy decoding with a KV cache: only the newest token goes through the decoder at each step.

    Inputs:  model  a torch Seq2Seq (encdec.torch_model), in eval mode
             src    (B, n) source ids, right-padded (an integer tensor)
             bos_id, eos_id; max_len the most tokens to generate
    Returns: (B, L) generated ids (an integer tensor), without <bos>; each row ends at its first <eos>
             (kept) and holds model.config.pad_id after it; L <= max_len is the longest row. The same
             tokens as model.greedy_decode(src, bos_id, eos_id, max_len).
    """
    ### BEGIN SOLUTION
    pad, h, eps, B = model.config.pad_id, model.config.n_heads, model.config.eps, src.shape[0]
    with torch.no_grad():
        H_enc, src_mask = model.encode(src)  # once: (B, n, d_model), (B, 1, 1, n)
        cross = [(split_heads(H_enc @ b.cross_attn.W_k, h), split_heads(H_enc @ b.cross_attn.W_v, h))
                 for b in model.decoder]  # once per block: (B, h, n, d_k) each
        cache = [None] * len(model.decoder)  # per block: (K, V), each (B, h, t, d_k)
        token = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        out = []
        for t in range(max_len):
            x = embed_at(model, token, t)  # (B, 1, d_model): only the newest token
            for i, b in enumerate(model.decoder):
                a = rms_norm(x, b.norm1_gamma, eps)
                K, V = split_heads(a @ b.self_attn.W_k, h), split_heads(a @ b.self_attn.W_v, h)  # (B, h, 1, d_k)
                if cache[i] is not None:
                    K, V = torch.cat([cache[i][0], K], dim=-2), torch.cat([cache[i][1], V], dim=-2)
                cache[i] = (K, V)  # (B, h, t + 1, d_k)
                x = x + merge_heads(attend(split_heads(a @ b.self_attn.W_q, h), K, V)) @ b.self_attn.W_o
                a = rms_norm(x, b.norm2_gamma, eps)
                x = x + merge_heads(attend(split_heads(a @ b.cross_attn.W_q, h), *cross[i], src_mask)) @ b.cross_attn.W_o
                x = x + b.ffn(rms_norm(x, b.norm3_gamma, eps))
            logits = (rms_norm(x, model.decoder_norm_gamma, eps) @ model.embedding.T)[:, 0]  # (B, V)
            logits[:, [pad, bos_id]] = float("-inf")
            token = torch.where(done, pad, logits.argmax(dim=-1))  # (B,)
            out.append(token)
            done = done | (token == eos_id)
            if bool(done.all()):
                break
        return torch.stack(out, dim=1)
    ### END SOLUTION


# %% [test] 10.6

# %% [markdown]
# **Self-check 10.6 — predict, then run.** In float64, are the logits that the cache computes for each
# position *exactly* equal to the ones the full decoder computes for the same prefix? And can cached and
# uncached greedy decoding ever return different tokens?
#
# <details><summary>Answer</summary>
#
# Not exactly: they agree to about $10^{-14}$, and only some of them bit for bit. The cache computes the
# same sums, but with matrices of other shapes (one row instead of $t$), and the library may add their
# terms in another order; floating-point addition is not associative, so the last bits can differ. The
# tokens can differ only where the two best allowed tokens' logits are closer than that, a near tie that a
# trained model practically never produces: on these 500 test dates the smallest such gap is larger than
# 0.1, so cached and uncached decoding choose the same tokens.
#
# </details>

# %% [demo]
from encdec.checks.lesson10 import cached_logits

model64 = torch_model.Seq2Seq(model.config).double()
model64.load_state_dict(model.state_dict())
some_src, some_tgt_in = test_src, test_tgt_in  # the first 500 test dates
with torch.no_grad():
    full = model64(some_src, some_tgt_in)  # (500, 11, V): every prefix at once, without a cache
cached = cached_logits(model64, some_src, some_tgt_in)  # fed one token at a time through the cache
allowed = full.clone()
allowed[..., [dates.PAD, dates.BOS]] = -torch.inf  # greedy decoding never chooses these
gap = allowed.topk(2, dim=-1).values.diff(dim=-1).abs().min().item()
print(f"max |cached - full| = {(cached - full).abs().max().item():.1e}; "
      f"{(cached == full).double().mean().item():.0%} of the logits are bit-for-bit equal; "
      f"smallest gap between the two best allowed tokens: {gap:.2f}")

# %% [markdown]
# And the time the cache saves, measured with your decoder (or the course's, until yours passes its
# test), on the trained model in float32. A date is short (11 tokens), and the saving is smaller than
# for long outputs, where it keeps growing: the uncached decoder's work grows like $L^2$. To make every
# run generate exactly $L$ tokens, the second measurement passes `eos_id=-1`, an id no token has.

# %% [demo]
decode = yours_or_ours("10.6", globals().get("greedy_decode_cached"))


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


plain, t_plain = timed(lambda: model.greedy_decode(test_src, dates.BOS, dates.EOS, dates.TARGET_LEN))
fast, t_fast = timed(lambda: decode(model, test_src, dates.BOS, dates.EOS, dates.TARGET_LEN))
print(f"500 test dates: identical tokens {torch.equal(plain, fast)}; without cache {t_plain:.2f} s, "
      f"with {t_fast:.2f} s ({t_plain / t_fast:.1f}x)")
few = test_src[:32]
_, t_plain = timed(lambda: model.greedy_decode(few, dates.BOS, -1, 64))
_, t_fast = timed(lambda: decode(model, few, dates.BOS, -1, 64))
print(f"32 sources, 64 tokens each: without cache {t_plain:.2f} s, with {t_fast:.2f} s ({t_plain / t_fast:.1f}x)")

# %% [markdown]
# ## 10.10 What the model reads: cross-attention
#
# The decoder block returns its cross-attention weights; the course's model collects them with
# `model.decode(tgt_in, H_enc, src_mask, return_attention=True)`, one `(B, h, m, n)` array per decoder
# block. Below, the last block's weights averaged over its 4 heads, for one date written in four
# formats. Row $t$ is the decoder position that **predicts** output character $t$ (its label); the
# columns are the source characters.
#
# Read the rows in groups. The row that writes the year's last digit puts more than 0.9 of its weight
# on the `6`, wherever the format puts it: at the end of `Wednesday, 2 December 2026`, at the start of
# `20261202`. The row before it, which writes the `2` of `26`, looks at the year's `2`s, and in two of
# the formats spreads its weight over both of them. The century (`20` or `19`) needs less looking, and
# its rows spread their attention. The day rows look at `2`, `02` or `2nd`; the month rows mostly at
# `12` when the month is a number, and over the letters of the word when it is spelled out: no single
# character says "12". No row points at the weekday: its letters get only diffuse attention, most of it
# from rows that have no single character to copy (the `0` in front of a one-digit day, the month
# written as a word, the dashes). This is the alignment of Lesson 4, learned from nothing but examples.
# (The weights quoted are those of the shipped model; a model trained on a GPU differs in the details.)

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
# ## 10.11 Greedy decoding and beam search on hard inputs
#
# The trained model gets about 99.9% of the test dates right (the shipped weights: 1,997 of 2,000).
# Where does it fail? Its rare errors swap the last two digits of the year: `Wednesday, 31 December
# 2003` written `2030-12-31`, `the 20th of september, 1969` written `1996-09-20`. They are six times as
# frequent when the day repeats those two digits, as in `Wednesday, 12 September 2012` written
# `2021-09-12`: below, 14 errors in 1,512 such inputs, against 3 in the 2,000 test dates. The inputs
# below are every such date with a day from 1 to 28 (so the years 2001 to 2028), in February, September
# and December, and in all 18 formats: 84 dates, 1,512 inputs. They probe a weak spot, not
# generalisation: 79 of the 84 are training dates, and the 800 training steps drew 75 of them, each in
# one to seven of the 18 formats. Greedy decoding (with the KV cache of §10.9, which returns the same
# tokens as without it, faster) runs against a beam search of width 4 (the NumPy reference of Lesson 9, on
# the same weights).
#
# Beam search looks further ahead than greedy decoding, and usually returns an output at least as
# likely, though without a guarantee: it can prune greedy's own path. It cannot make the model prefer
# the right answer. Where the fully trained model is wrong, it prefers the wrong date (a whole-sequence
# probability between 0.54 and 0.88), and the beam returns that same answer; the right date is usually
# its **second** hypothesis. The half-trained model is unsure at many steps, and the search corrects a
# few of its errors, not most.

# %% [demo]
import datetime as dt

hard = [(dates.render(dt.date(y, m, y % 100), f), dt.date(y, m, y % 100).isoformat())
        for y in range(1950, 2050) if 1 <= y % 100 <= 28 for m in (2, 9, 12) for f in dates.FORMAT_NAMES]


def beams(np_model, source, width=4):
    """Beam search (Lesson 9's NumPy reference) for one source: [(text, normalised score)], best first."""
    found = ref.beam_search(np_model, np.array(dates.encode(source)), dates.BOS, dates.EOS, width, max_len=11)
    return [(dates.decode(tokens), score) for tokens, score in found]


def greedy_texts(m, sources):
    """Greedy outputs through the cached decoder of §10.9 (`decode`), 500 sources at a time."""
    texts = []
    for i in range(0, len(sources), 500):
        src = torch.from_numpy(dates.pad_batch([dates.encode(s) for s in sources[i:i + 500]]))
        texts += [dates.decode(row) for row in decode(m, src, dates.BOS, dates.EOS, dates.TARGET_LEN).numpy()]
    return texts


for name, m in (("after 200 steps", half), ("fully trained", model)):
    greedy = greedy_texts(m, [s for s, _ in hard])
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
# ## 10.12 Parity: three implementations, one function
#
# The same trained weights, evaluated three ways: NumPy in float64, torch on the CPU, torch on a GPU.
# `parity.parity_report` (the module `encdec.capstone.parity`, on its own) computes the figures below (and `make capstone` writes them into
# `runs/capstone/report.json`). Before reading them, think about what to expect.

# %% [markdown]
# **Self-check 10.7 — explain why.** A CPU and a GPU both follow the IEEE 754 standard for float32, in
# which every single addition and multiplication is correctly rounded. Why, then, do the same weights
# give logits that differ in the fifth decimal on the two? And why can the greedy outputs still be
# expected to be identical?
#
# <details><summary>Answer</summary>
#
# The standard fixes how each operation rounds, not which operations a program performs, nor in what
# order. A GPU's matrix product splits each sum into blocks added in parallel, often with fused
# multiply–adds, and its exp, tanh and rsqrt are other code than the CPU's. Each ordering rounds
# differently, by up to float32's unit roundoff ($2^{-24} \approx 6 \cdot 10^{-8}$) of each value, and
# through four blocks and logits as large as 14 this adds up to about $10^{-5}$: $1.5 \cdot 10^{-5}$ on an
# NVIDIA H200, about as much as float32 differs from float64 on one CPU ($1.4 \cdot 10^{-5}$ with the
# shipped weights). An argmax changes only where the two best logits are that close; along the shipped
# model's 2,000 greedy outputs they are never closer than 0.06, so every token comes out the same.
#
# </details>

# %% [markdown]
# * **NumPy float64 against torch float64 on the CPU.** The weights move losslessly (float32 to
#   float64 is exact), and the two implementations differ only in rounding (the order of their sums,
#   and the last bit of functions such as exp and tanh): the logits agree to about $10^{-14}$ on 64 test
#   dates, far inside the tolerance of $10^{-9}$, and greedy decoding returns identical outputs.
# * **torch float32 on the CPU against torch float32 on CUDA**, with TF32 disabled: TF32 would round
#   the inputs of every float32 GPU matrix product to 10 stored mantissa bits (11 significant, against
#   float32's 24), a rounding about 8,000 times coarser. Different kernels sum in different orders, and
#   compute exp, tanh and rsqrt in their own ways, so the logits differ by float32 rounding: about
#   $10^{-5}$ ($1.5 \cdot 10^{-5}$ over 256 test dates on an NVIDIA H200). The greedy outputs on all 2,000
#   test dates are expected to be identical, and were on the H200. Without a GPU the report says so and
#   skips this figure.
# * **bf16 autocast** (`make gpu-check CAPSTONE_ARGS=--bf16`) runs the matrix products in bfloat16,
#   which keeps 8 significant bits (7 stored). Differences of a few tenths in logits that span about
#   $-6$ to $14$ are expected (0.20 on the H200; the report's tolerance is 0.5), and a near tie can flip a
#   greedy output (1 of 2,000 test dates there). It is reported on its own, with its own tolerance, and
#   never mixed into the figures above.

# %% [demo]
from encdec.capstone import parity

report = parity.parity_report(model, test_set)
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
# ## 10.13 Scaling out: data parallelism
#
# One GPU trains this model in seconds. Larger models and datasets are trained on many GPUs at once,
# and the simplest way to use them is **data parallelism**: every process holds a full copy of the
# model and trains on its own share of each batch. PyTorch's `DistributedDataParallel` (DDP) keeps the
# copies identical: it copies rank 0's weights to every process when it wraps the model, and averages
# the gradients over the processes (an **all-reduce**) before every update. The capstone script runs
# under PyTorch's launcher unchanged:
#
# ```bash
# torchrun --standalone --nproc_per_node=4 -m encdec.capstone              # 4 GPUs, NCCL
# torchrun --standalone --nproc_per_node=2 -m encdec.capstone --device cpu # 2 CPU processes, gloo
# ```
#
# Each process rebuilds the step's global batch from the step number and takes its slice of the rows.
# Its loss is its share of the sum over the global batch's target tokens, scaled by the number of
# processes, so that DDP's average of the gradients is the gradient of the global mean loss: the same
# global batch gives the same weights whatever the number of processes, up to rounding. After the
# all-reduce every process holds the same averaged gradients, so clipping them by their global norm
# scales them by the same factor everywhere. The course's tests run two processes with the gloo backend
# in float64 and check that their weights after four steps equal one process's to $10^{-10}$ (they
# differ by about $6 \cdot 10^{-17}$, not 0: the all-reduce adds the two halves' gradients in another
# order than one process's sum over the whole batch).
#
# ### Exercise 10.7 — order the steps
#
# Here are the steps of one data-parallel training step, as every process runs them, shuffled. Put them
# in order.
#
# 1. all-reduce: DDP averages every gradient over the processes (started bucket by bucket during the backward pass, complete when it returns)
# 2. forward pass and loss on the slice, scaled so that the average over processes is the global mean
# 3. every process builds the step's global batch from the step number
# 4. optimizer step, the same update on every process, so the weights stay identical
# 5. each process keeps its own slice of the batch's rows
# 6. clip the averaged gradients by their global norm, the same on every process
# 7. backward pass: each process's gradients of its own loss
#
# Practise with the widget (it gives instant feedback and grades nothing), then write your answer as a
# list of the step numbers above, in order, in the answer cell: for example `[3, ...]`.

# %% [demo]
from encdec.checks.lesson10 import DDP_STEP_ORDER

DDP_STEP_ORDER.widget()

# %% [solution] ddp_step_order
ddp_step_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
ddp_step_order = [3, 5, 2, 7, 1, 6, 4]
### END SOLUTION

# %% [test] 10.7

# %% [markdown]
# ## 10.14 A second task: number words, from English to German
#
# The dates task tests alignment, but its output copies characters of its input. Translation has words,
# and words that change order. `encdec.number_words` makes a small translation task: every number from
# 0 to 9,999, written in English words and in German words, both by the library `num2words`:
#
# ```text
# "four hundred and thirty two"  ->  "vierhundertzweiunddreißig"
# "seventy one"                  ->  "einundsiebzig"
# ```
#
# German says the units before the tens: 432 is *vier-hundert-zwei-und-dreißig*, four hundred
# two-and-thirty. To write *zwei* the decoder has to read *two*, the **last** English word, and only then
# *thirty*. The numbers are split, not the sentences: 1,000 test numbers, 500 validation numbers and
# 8,500 for training, so no test number is seen in training in either language. The tokens are the
# subwords of Lesson 6 (§6.10): one BPE vocabulary of 128 symbols for both languages, so the tied
# embedding serves the English source, the German target and the head.
#
# The model is the capstone's default (2 + 2 blocks, $d_{model} = 64$, 4 heads, $d_{ff} = 256$: 239,616
# parameters [LEARNED] with $V = 128$), trained for 600 steps of 128 numbers with 60 warm-up steps
# [CONFIG]. `make capstone TASK=numbers` trains it and writes its report (about a minute on one CPU thread
# at light load; the course's `docs/capstone.md`, "The numbers task", gives the measured runs); the dates
# stay the default task of `make capstone`. The course ships the weights of that run, and the cell below
# prints the figures its report recorded on the 1,000 test numbers: exact match, and chrF and BLEU from
# `sacrebleu`. chrF scores the character n-grams a prediction shares with the right answer, so a German
# number one morpheme off still earns most of it. BLEU is computed on characters here: a German number is
# one word, and word-level BLEU of one-word sentences has no word pairs to count.
#
# By range, that run's report gives 100% on the numbers from 100 to 999 and from 1,000 to 9,999, and 11 of
# the 15 test numbers below 100 (73.3%). The numbers below 100 are the irregular ones (*elf*, *zwölf*,
# *siebzehn*, *dreißig*), and each of those 15 is seen in training only inside longer numbers
# (*dreihundertelf* for 311). The cell decodes those 15 again and prints the errors.

# %% [demo]
from encdec import number_words
from encdec.capstone import translation

numbers_model, numbers_meta = capstone.load_weights(task="numbers")  # the shipped run (encdec/data/capstone_numbers.npz)
summary = numbers_meta["summary"]
print(f"the shipped numbers model ({summary['steps']} steps, {summary['device']}), on the {number_words.N_TEST:,} "
      f"test numbers: exact match {summary['test_exact_match']:.2%}, chrF {summary['test_chrf']:.2f}, "
      f"BLEU on characters {summary['test_bleu']:.2f}")
below_100 = [n for n in number_words.split_numbers()["test"] if n < 100]
predicted = capstone.predict(numbers_model, [number_words.english(n) for n in below_100], task="numbers")
right = [p == number_words.german(n) for p, n in zip(predicted, below_100)]
print(f"the {len(below_100)} test numbers below 100: {sum(right)} right ({np.mean(right):.1%}); the errors:")
for ok, p, n in zip(right, predicted, below_100):
    if not ok:
        print(f"  {number_words.english(n)!r:>16} -> {p!r}, not {number_words.german(n)!r}")

# %% [markdown]
# The maps below are the decoder's cross-attention while the shipped model translates 432, in its last
# block, one map per head (`translation.cross_attention(432)`, drawn with `plotting.head_grid`). A row is
# the decoder position that **writes** the German subword on its left (its query reads the subword
# before); the columns are the English source subwords. The German starts with `▁`, the word-start mark
# of §6.10, as a token of its own: the vocabulary joins `vi` and `er` into `vier` before any merge could
# join `▁` to `vi`, and it has no symbol `▁vier`.

# %% [markdown]
# **Self-check 10.8 — predict, then run.** Which English subword will the row that writes `zwei` read
# most? And the row that writes `drei`?
#
# <details><summary>Answer</summary>
#
# The row that writes `zwei` reads `▁two`, the last source subword: heads 0, 1 and 3 put 1.00, 0.89 and
# 1.00 of their weight there (head 2 reads `▁hundred`). The row that writes `drei` goes back to `▁thi`
# (heads 0 and 2, with 1.00 and 0.97). The maps cross: the decoder reads the source out of its order,
# units before tens, as German writes them. In between, every head of the row that writes `und` reads
# `rty`, the end of *thirty*: the model writes *und* once it has seen that a tens word is coming.
#
# </details>

# %% [demo]
found = translation.cross_attention(432)
last = found["weights"][-1]  # (heads, target subwords, source subwords): the last decoder block
print(f"{found['source']!r} -> {found['translation']!r} (num2words: {found['expected']!r})")
for i, token in enumerate(found["target_tokens"]):
    read = [f"{found['source_tokens'][int(np.argmax(row))]} {row.max():.2f}" for row in last[:, i]]
    print(f"  writes {token!r:>10}: head by head, the subword read most  " + " | ".join(read))
plotting.head_grid(last, rows=found["target_tokens"], cols=found["source_tokens"], kind="cross",
                   title=f"432 -> {found['translation']}: the last block's cross-attention by head "
                         "(rows: the subword written)")
plt.show()

# %% [markdown]
# **Translate your own number.** Type a number from 0 to 9,999, or English number words
# ("seventy-one"), and press Enter. The cell prints the model's German (and `num2words`' for a number)
# and draws the last block's cross-attention, averaged over its heads. A number outside 0 to 9,999 is
# refused (it is outside the task); words outside it, such as "twelve thousand", get the model's guess
# about a number it never saw.

# %% [demo]
import ipywidgets as widgets


def show_translation(number="57"):
    try:
        found = translation.cross_attention(int(number) if number.strip().isdigit() else number)
    except ValueError as exc:  # a number outside 0..9,999, or a character the vocabulary lacks
        print(exc)
        return
    expected = f"  (num2words: {found['expected']!r})" if found["expected"] else ""
    print(f"{found['source']!r} -> {found['translation']!r}{expected}")
    n, m = len(found["source_tokens"]), len(found["target_tokens"])
    fig, ax = plotting.figure(width=1.6 + 0.55 * n, height=1.4 + 0.4 * m)
    plotting.heatmap(found["weights"][-1].mean(axis=0), found["target_tokens"], found["source_tokens"], kind="cross",
                     ax=ax, row_label="writes", col_label="English subword", title="last block, mean of the heads")
    plt.show()


widgets.interact(show_translation, number=widgets.Text(value="57", description="number", continuous_update=False));

# %% [markdown]
# ## 10.15 What each piece is worth: the ablation ladder
#
# Lessons 1–8 built every piece of the model and said what it is for. An **ablation** tests such a claim:
# train the model without the piece, everything else unchanged, and compare. `make ablations` trains the
# full model and nine variants on the reversal task of Lessons 6–9 (10 letters, lengths 3 to 12), each
# with three seeds, 300 steps of 64 sequences, and writes `encdec/data/ablations.json`; the cells below
# load that file and train nothing. The measured runs are described in the course's `docs/capstone.md`,
# "The ablation ladder". Exact match (greedy decoding, every letter of the reversed sequence right) and
# the held-out cross-entropy are measured on the same 500 held-out sequences for every run, after its
# last step: the table gives the mean over the three seeds and the lowest and highest seed.

# %% [demo]
from encdec.plotting.ablations import ablation_curves, ablation_table

print(ablation_table())
ablation_curves()
plt.show()

# %% [markdown]
# Read the table row by row, against the full model, and against the spread of the seeds: a difference
# smaller than the distance between two seeds of the same row is not a finding.
#
# * **No positions** (2.5%) and **no residuals** (0.0%) fail outright. Without positions the encoder
#   cannot tell the source's order apart, and reversing is nothing but order. Without residual paths the
#   signal goes through every sublayer in turn, and the model does not learn the task within this budget.
# * **No $1/\sqrt{d_k}$** learns, more slowly: 80.3%, every seed far below the full model. The scores are
#   $\sqrt{d_k} = 4$ times larger here ($d_k = 64 / 4 = 16$), and a softmax of large scores saturates,
#   with small gradients (Lesson 1).
# * **No norm** (99.3%) and **post-norm** (98.9%) match the full model here. This says that the norms are
#   not what this small, shallow task needs at 2 + 2 blocks, not that norms are useless: the depth
#   measurements of Lesson 5 (§5.6) show where they matter, through 24 blocks, where the place of the
#   norm decides whether the first block's input still reaches the top.
# * **No warm-up** (98.3%) is within the seed spread of the full model: at this learning rate and depth
#   the warm-up neither helps nor hurts measurably.
# * **No label smoothing** has by far the lowest held-out loss (0.0257 against 0.1156) and no better an
#   exact match (97.3%, seeds from 96.6% to 98.2%). The loss is lower because smoothing forbids full
#   confidence, not because the model is better: Self-check 10.9.
# * **One head** (98.5%) and **no cross-attention** (the decoder-only row, 98.5%) match the full model.
#   Reversal needs one lookup per target position, which one head can do; and a decoder-only model reads
#   the source too, with causal self-attention over source and target together (4 blocks, and fewer
#   parameters). On this task the encoder–decoder split is a choice, not a necessity; the row does not
#   say how the two compare on long inputs, or in translation.
#
# One task, one size, 300 steps, three seeds: every row says what this piece is worth *here*.

# %% [markdown]
# **Self-check 10.9 — explain why.** Without label smoothing the held-out cross-entropy is 0.0257; with
# it, 0.1156, while the two exact matches overlap. Why can a model trained with label smoothing not get
# its held-out loss much lower, even when it gets every sequence right?
#
# <details><summary>Answer</summary>
#
# Label smoothing (Lesson 8) trains towards a target that puts $1 - \varepsilon + \varepsilon / V$ on the
# right token and $\varepsilon / V$ on each other one. With $\varepsilon = 0.1$ and the reversal task's
# $V = 13$, the best the model can do on its training loss is to predict exactly that, 0.908 for the right
# token. The held-out loss is the plain cross-entropy against the right token alone, so even a model that
# is always right pays about $-\ln 0.908 = 0.097$ per token. Without smoothing nothing stops it from
# putting nearly all the probability on the right token, and the loss falls towards 0. A lower loss here
# measures confidence, not correctness.
#
# </details>

# %% [demo]
from encdec.ablation_runs import DEFAULT as LADDER_RUN

eps, V = 0.1, LADDER_RUN.task().vocab_size
print(f"label smoothing {eps} over V = {V}: the right token's target {1 - eps + eps / V:.3f}; "
      f"a model that predicts it pays -ln({1 - eps + eps / V:.3f}) = {-np.log(1 - eps + eps / V):.3f} nats per token")

# %% [markdown]
# ## 10.16 Your project: train the numbers task yourself
#
# Everything so far trained with settings someone chose. Now you choose. Train the numbers task of §10.14
# (or, if you prefer, the dates) from scratch with **your** training loop: your `torch_train_step`
# (Exercise 10.4), your `lr_at` (10.2) and your `make_optimizer` (10.3). Where one of yours does not
# pass its test yet, the course's stands in, as in §10.5.
#
# **The budget.** At most 40,000 training examples per run (steps × batch size: 300 steps of 128, or 600
# of 64), with a model no larger than the default one (239,616 parameters for the numbers task, 235,904
# for the dates). Within it the default model can learn the numbers task: the shipped run of §10.14 was
# above 99% on the validation numbers after 200 steps of 128.
#
# **Your choices**, all [CONFIG]: the steps and the batch size; the peak learning rate and the warm-up;
# how often to save a checkpoint; the size of the model ($d_{model}$, $d_{ff}$, the number of blocks and
# heads), no larger than the default.
#
# **Checkpoints.** The loop below saves a checkpoint every `checkpoint_every` steps and after the last one,
# with `capstone.save_checkpoint` (`torch.save` underneath: the weights, the optimizer's state, the step,
# the configuration and the losses so far), into `project_runs/` in this notebook's folder. Run it again
# after an interruption and it resumes where the last checkpoint stopped (`capstone.load_checkpoint`,
# which refuses a checkpoint of another configuration: give each new run a new name).
#
# **One experiment of your own.** Change one thing and train again: another peak learning rate, no
# warm-up, a smaller model, the same examples in fewer and larger batches. One run per setting is all the
# budget allows: as §10.15 showed, two settings that differ by less than two seeds of the same setting
# tell you nothing, so say what your comparison can and cannot show.
#
# **The report.** Write your figures into `project_report` (Exercise 10.8) as literals, numbers and
# strings, not variables: the training cells do not run when the notebook is graded. `task`, `steps`,
# `lr` (the peak), `warmup`, `final_loss` (the training loss of the last step), `test_exact_match` (on the
# whole test set, as the training cell prints it, a fraction such as 0.93), `checkpoint` (its path, as
# printed), `experiment` (what you changed) and `finding` (what happened, with the figures of both runs).
#
# **What is graded, and what is not.** Nothing of the project earns points, and nothing is retrained to
# check it. Exercise 10.8 is a check worth **0 points**: it reads your report, loads the checkpoint it
# names, decodes the first 100 test examples again with it (under 2 s on a CPU) and checks that report and
# checkpoint agree: the same task, steps, peak learning rate and warm-up, the final loss the checkpoint
# recorded, steps × batch size within the budget and a model no larger than the default, and the exact
# match you claim within 0.02 plus three standard errors of a 100-example sample of the one it measures.
# Its feedback is for you: the training cells never run when the notebook is graded (they are
# demonstrations, and they train only once you set `TRAIN = True`), and the grader receives the notebook
# alone, not your checkpoint, so there the check can say only that. How high your figures are, and how
# you word your finding, are not checked; your instructor may read them.
#
# Before you train, here is the check on the course's example run (`encdec/data/project_example.npz`,
# made by the loop below with the course's functions): a smaller model ($d_{model} = 32$, $d_{ff} = 128$)
# and, as its experiment, another peak learning rate.

# %% [demo]
from encdec.checks.lesson10 import example_report, show_review

example = example_report()
print("\n".join(f"  {key}: {value!r}" for key, value in example.items()))
show_review(example)

# %% [demo]
# The project's training loop. It uses your functions of Exercises 10.2-10.4 (the course's where yours do
# not pass their tests yet) and saves a resumable checkpoint into project_runs/ in this notebook's folder.
import dataclasses
from pathlib import Path

from encdec.capstone.tasks import get as task_module


def train_run(config, name, checkpoint_every=100):
    """Train `config` (a capstone.TrainConfig) from scratch, or resume it from project_runs/<name>.pt.

    Returns the run's figures, as the report asks for them, and the time it trained.
    """
    step_fn = yours_or_ours("10.4", globals().get("torch_train_step"))
    schedule = yours_or_ours("10.2", globals().get("lr_at"))
    optimizer_fn = yours_or_ours("10.3", globals().get("make_optimizer"))
    task = task_module(config.task)
    path = Path("project_runs") / f"{name}.pt"
    path.parent.mkdir(exist_ok=True)
    model = capstone.build_model(config)  # initialised from config.seed
    optimizer = optimizer_fn(model, config.lr, config.weight_decay, config.betas)
    done, history = 0, {"step": [], "loss": []}
    if path.exists():  # resume: the weights, the optimizer's state and the losses so far
        done, state = capstone.load_checkpoint(path, model, optimizer, config, "cpu")
        history = state["history"]
    batches = task.TrainingBatches(config.seed)  # step k's batch is rebuilt from k alone
    start = time.perf_counter()
    for step in range(done + 1, config.steps + 1):
        src, tgt = (torch.from_numpy(a) for a in batches.batch(step, config.batch_size))
        lr = schedule(step, config.lr, config.warmup, config.steps, config.lr * config.min_lr_ratio)
        loss, _ = step_fn(model, optimizer, src, tgt, task.BOS, lr, config.grad_clip)
        history["step"].append(step)
        history["loss"].append(loss)
        if step % checkpoint_every == 0 or step == config.steps:
            capstone.save_checkpoint(path, model, optimizer, step, config, {"history": history})
    seconds = time.perf_counter() - start
    exact = capstone.exact_match(model.eval(), task.examples("test"), device="cpu", task=config.task)[0]
    return {"task": config.task, "steps": config.steps, "lr": config.lr, "warmup": config.warmup,
            "final_loss": round(history["loss"][-1], 4), "test_exact_match": round(exact, 4),
            "checkpoint": str(path), "seconds": round(seconds, 1)}

# %% [demo]
# Your choices. Set TRAIN = True and run this cell to train both runs.
TRAIN = False
BUDGET = 40_000  # training examples per run: steps x batch size
config = dataclasses.replace(capstone.NUMBERS, steps=300, batch_size=128, lr=2e-3, warmup=30)  # your run
experiment = dataclasses.replace(config, warmup=0)  # your experiment: one change
for name, c in (("run", config), ("experiment", experiment)):
    size = sum(p.numel() for p in capstone.build_model(c).parameters())
    print(f"{name}: {c.steps} steps of {c.batch_size} = {c.steps * c.batch_size:,} examples (budget {BUDGET:,}), "
          f"{size:,} parameters, peak lr {c.lr:g}, warm-up {c.warmup}")
if TRAIN:
    for name, c in (("run-1", config), ("run-2", experiment)):
        print(name, train_run(c, name))
else:
    print("TRAIN is False: nothing was trained. Set TRAIN = True and run this cell again.")

# %% [markdown]
# ### Exercise 10.8 — `project_report`
#
# Your run's figures, and your experiment, as literals (see "The report" above). Run the test cell: it
# checks the report against your checkpoint (0 points; what it checks is listed under "What is graded,
# and what is not").

# %% [solution] project_report
project_report = {"task": ..., "steps": ..., "lr": ..., "warmup": ..., "final_loss": ..., "test_exact_match": ...,
                  "checkpoint": ..., "experiment": ..., "finding": ...}  # your answer: your run's figures, as literals
### BEGIN SOLUTION
from encdec.checks.lesson10 import example_report

project_report = example_report()  # the course's example run (a student reports a run of their own)
### END SOLUTION

# %% [test] 10.8

# %% [markdown]
# ## Summary
#
# * The course's PyTorch model keeps the NumPy model's parameters, names and shapes (`x @ W`, not
#   `nn.Linear`'s `x @ W.T`), so weights move between the two by name, in place, with `p.copy_` under
#   `torch.no_grad()`, losslessly in float64.
# * A warm-up and a cosine decay set the learning rate of every step: linear to the peak, then half a
#   cosine wave down to `min_lr` at the last step.
# * AdamW decays the weights directly, apart from Adam's normalised gradient step; parameter groups
#   decay the matrices (the embedding too) and leave the gains and biases alone.
# * A torch training step sets the rate in every group, teacher-forces, averages the loss over the real
#   tokens, zeroes the gradients, backpropagates, clips the global gradient norm (its direction
#   unchanged) and steps; autograd's gradients equal Lesson 7's backward pass to rounding.
# * Exact match counts a sequence only when every token up to and including `<eos>` is right: a far
#   stricter measure than token accuracy. Evaluate in eval mode under `torch.no_grad()`, and give the
#   model back in the mode it came in.
# * With a KV cache, batched torch decoding feeds one token per step, computes cross-attention's keys and
#   values once, and returns the same tokens as decoding without it, faster by a factor that grows with
#   the length of the output.
# * Trained on dates in 18 formats, the model reaches about 99.9% exact match on dates it never saw,
#   and its cross-attention finds the year, the month and the day wherever each format puts them. Its
#   rare errors swap the last two digits of the year. Beam search looks further than greedy decoding;
#   it cannot correct a model that prefers a wrong answer.
# * NumPy and torch agree to about $10^{-14}$ in float64; the CPU and the GPU agree to float32 rounding
#   (about $10^{-5}$) with identical outputs; bf16 has its own, looser tolerance.
# * Data parallelism trains one model on many processes: the same global batch, a slice per process,
#   gradients averaged by an all-reduce and clipped alike: the same update on every process, and the
#   weights one process would reach on the same batches, up to rounding.
# * Translating number words from English to German with subword tokens, the same model reaches 99.6%
#   exact match on numbers it never saw; its cross-attention reads the source out of order where German
#   puts the units before the tens, and its errors are among the irregular numbers below 100.
# * An ablation ladder removes one piece at a time and compares against the spread of the seeds: on the
#   reversal task, positions, residuals and the $1/\sqrt{d_k}$ scale matter; the other pieces stay within
#   the spread at this size, which says what they are worth here, not everywhere.
# * Your project trains a model under a budget and reports it; the report is checked against the
#   checkpoint (0 points), never by retraining.
#
# **Where to go next.** `make capstone` trains the model from the command line and writes the report;
# `make bench` compares it with `torch.nn.Transformer` (in its steady-state measurement on an H200, the
# capstone's model trained at 162,000 tokens per second, `nn.Transformer` at 156,000; the 145,000 of
# §10.7 come from a separate, whole run, its first steps included); the appendices collect the
# [formulas (A)](../APPENDIX_A_formulas.md), the
# [architectures that grew from this one (B)](../APPENDIX_B_architectures.md) and the
# [acronyms (C)](../APPENDIX_C_acronyms.md). From here: larger tasks (translation of whole sentences, with
# vocabularies of tens of thousands of subwords), mixed precision at scale, and models with billions of
# parameters, built from the very blocks you wrote.
