# %% [markdown]
# # Lesson 8 — Training
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 8 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, training (the loss at the logits, the backward pass that sends a gradient to every learned array, and the optimiser with its learning-rate schedule), outlined in red together with the shifted-right target input and the dropout rate, and the rest faded](../figures/course_map_08.svg)
#
# *The course map. In red: the loss at the top, the gradients flowing back along every arrow to every [LEARNED] chip, the optimiser (Adam and its schedule), the dropout rate used in training, and the shifted-right target input that teacher forcing feeds the decoder. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# Lesson 7 gave us the gradient of the loss for every [LEARNED] number of the model. Training is
# the loop that turns those gradients into a model that works: a loss worth lowering, an optimiser
# that moves each parameter a sensible distance, a learning rate that starts gently, a training
# step that teaches every target position at once, dropout, and a quick check to run before any long
# training run. At the end of this lesson a small model learns the reversal task inside this
# notebook, in well under a minute.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. add label smoothing to the padding-aware cross-entropy, and say what it does to the target
#    distribution, the gradient and the lowest loss the model can reach;
# 2. write one Adam step with bias correction, and say what each of its two running averages is for;
# 3. write the warm-up learning-rate schedule of 2017 and say what the warm-up is for;
# 4. write one teacher-forced training step, and explain why one forward pass trains all $m$
#    target positions;
# 5. put the steps of one training step in order;
# 6. write inverted dropout, and say why it is on in training and off in evaluation and decoding;
# 7. check a training set-up by overfitting one small batch first, and say what that check cannot prove;
# 8. read the loss, accuracy and cross-attention of a model trained on the reversal task;
# 9. explain exposure bias: why a model trained with teacher forcing stumbles on its own output.
#
# **Recap of Lesson 7.** A backward pass maps the gradient of an output to the gradients of its
# inputs and parameters, shape for shape. For the softmax cross-entropy the gradient is
# $\partial \ell / \partial z = \hat p - y$, averaged over the $N$ real (non-pad) target positions and
# zero at the pads. The backward passes of the softmax, attention and RMSNorm, chained through the
# whole model, give a gradient for every entry of `model.parameters()`, checked against finite
# differences and against PyTorch's autograd.
#
# **How exercises work.** Replace each stub (`raise NotImplementedError()`) with your code, run the
# cell, then run the test cell below it: it compares your function with the course's reference on
# many inputs and says *what* is wrong, often naming the misconception. The model, its forward pass
# and its backward pass come from the course library `encdec`, so a mistake in an earlier lesson
# never costs you points here.
#
# Tags: **[LEARNED]** set by the optimiser and saved with the model; **[CONFIG]** chosen before the run, the
# same for every input; **[STATE]** computed by the program from the inputs, or from the training so far.
# The [figure key](../FIGURE_KEY.md) gives the rule with examples, and what every colour and shape means.
# This lesson meets [STATE] with three lifetimes: activations live for one forward pass, gradients and
# dropout masks for one training step, and the optimiser's running averages and step count for the
# whole training run.

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny matrices run fastest on one thread
from encdec.env import check_environment

check_environment()
import time

import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
import encdec as ref  # the course's reference implementation, used by the figures
from encdec import Adam, Seq2Seq, shift_right
from encdec.training import backward, forward_with_cache
from encdec.toy import BOS, EOS, PAD, ReverseTask

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 8.1 What one training step does
#
# The task is Lesson 6's: reverse a sequence of letters. A batch holds $B$ source sequences, padded on
# the right to a common length $n$, and their targets, each ending in `<eos>` and padded to length $m$.
# One **training step** takes one batch and changes every [LEARNED] parameter $\theta$ a little, against
# the gradient of the loss on it (as smoothed and rescaled by the optimiser):
#
# 1. build the decoder's inputs by shifting the targets right (Lesson 6: teacher forcing);
# 2. run the model once: logits $z \in \mathbb{R}^{B \times m \times V}$ for every target position;
# 3. compare them with the targets: one number, the loss $L$;
# 4. backpropagate (Lesson 7): $\partial L / \partial \theta$ for every parameter;
# 5. let the optimiser move every parameter, by an amount the learning-rate schedule sets for this step.
#
# Steps 3 and 5 are new. §8.3–§8.5 build them; §8.6 puts the step together and draws it.

# %%
task = ReverseTask(n_letters=10, min_len=3, max_len=8)
src, targets = task.batch(rng=0, size=3)  # src (3, 8), targets (3, 9)
def ids(row):
    return " ".join(f"{i:2d}" for i in row)


print(f"{'source':>8}  ->  {'target':<8}   {'decoder input tgt_in (ids)':<27}   targets (ids)")
for s, t, t_in in zip(src, targets, ref.shift_right(targets, BOS)):
    print(f"{task.decode(s):>8}  ->  {task.decode(t):<8}   {ids(t_in):<27}   {ids(t)}")

# %% [markdown]
# ## 8.2 Teacher forcing: all $m$ positions in one pass
#
# The decoder is trained to predict $y_{t+1}$ from `<bos>`, $y_1, \dots, y_t$ and the source, at
# positions $t = 0, \dots, m - 1$ (counting from 0, as the code does). One could run it one prefix at a
# time, the way it will later generate, but reading the true tokens: feed `<bos>`, predict $y_1$; feed
# `<bos>` $y_1$, predict $y_2$; and so on, $m$ forward passes for $m$ predictions. That is not needed.
# Feed the whole shifted target `<bos>` $y_1 \dots y_{m-1}$ once. Because of the **causal mask**
# (Lesson 3), position $t$ attends only to positions $\le t$, which hold `<bos>` $y_1 \dots y_t$:
# exactly the prefix the $(t+1)$-th separate pass sees. So the logits at position $t$ of the one pass
# *are* the last logits of the $(t+1)$-th prefix pass, and one forward and one backward pass train all
# $m$ positions together.
#
# This is **teacher forcing**: at every position the decoder reads the *true* previous tokens, never
# its own guesses. The demonstration below checks the claim on an untrained model: one pass over all
# positions, against $m$ passes over growing prefixes.

# %% [markdown]
# **Self-check 8.1 — predict, then run.** The next cell computes the logits once over all 9 positions,
# then again with 9 separate passes over growing prefixes. Predict the largest difference between the
# two sets of logits: about $10^{-1}$, $10^{-6}$ or $10^{-15}$? And which way is faster?
#
# <details><summary>Answer</summary>
#
# About $10^{-15}$: rounding only (the cell prints about 1e-15). Because of the causal mask, position
# $t$ of the single pass sees exactly the prefix the $(t+1)$-th separate pass sees, and every other layer
# (RMSNorm, the feed-forward network, the head) works position by position, so the two compute the same
# numbers, summed in a slightly different order. The one pass is several times faster: it does the work
# of the 9 passes in one batch of matrix products (the times depend on the machine).
#
# </details>

# %% [demo]
model = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                n_decoder_layers=2, rng=0)
tgt_in = ref.shift_right(targets, BOS)  # (3, 9)
start = time.perf_counter()
one_pass = model(src, tgt_in)  # (3, 9, V): every position at once
t_one = time.perf_counter() - start
start = time.perf_counter()
prefix_passes = np.stack([model(src, tgt_in[:, : t + 1])[:, -1] for t in range(tgt_in.shape[1])], axis=1)
t_many = time.perf_counter() - start
print(f"largest difference between the two: {np.max(np.abs(one_pass - prefix_passes)):.1e}")
print(f"one pass: {1000 * t_one:.1f} ms;  {tgt_in.shape[1]} prefix passes: {1000 * t_many:.1f} ms")

# %% [markdown]
# The logits agree to rounding. The cost of teacher forcing is elsewhere, and §8.10 measures it:
# a model that has only ever read true prefixes must, when it generates, read its own.
#
# ## 8.3 The loss: padding-aware, with label smoothing
#
# Lesson 7's loss is the mean cross-entropy over the $N$ real target positions:
#
# $$L = \frac{1}{N} \sum_{i:\ t_i \ne \text{pad}} -\log \hat p_{i,t_i}, \qquad \hat p_i = \operatorname{softmax}(z_i).$$
#
# Its one-hot target asks for $\hat p_{t} = 1$, which softmax reaches only as the logit of the right
# token runs off to infinity. Nothing stops a model from chasing that: its logits keep growing and it
# becomes overconfident: the gradient on an example it already gets right shrinks but never reaches
# zero, so the push towards ever larger logits never stops.
# **Label smoothing** [CONFIG] replaces the one-hot $y$ by a target distribution $q$ that keeps a
# little mass $\varepsilon$ spread evenly over all $V$ tokens:
#
# $$q = (1 - \varepsilon)\, y + \frac{\varepsilon}{V}, \qquad \ell_i = -\sum_{v=1}^{V} q_v \log \hat p_{i,v}, \qquad \frac{\partial \ell_i}{\partial z_i} = \hat p_i - q .$$
#
# The right token's target is $1 - \varepsilon + \varepsilon / V$, every other token's $\varepsilon / V$;
# $q$ sums to 1. The gradient keeps Lesson 7's form with $q$ in place of $y$, and it is zero exactly
# when $\hat p = q$: the model is asked for confidence $1 - \varepsilon + \varepsilon/V$, no more. The
# loss can therefore never reach 0. Its floor is the entropy of $q$,
# $H(q) = -\sum_v q_v \log q_v$: about 0.54 for $V = 13$ and $\varepsilon = 0.1$, the value used by the
# 2017 transformer and by us. The training curves of §8.9 level off just above it (about 0.55
# after 600 steps).
#
# The batch loss stays a mean over the $N$ non-pad positions, with gradient $(\hat p_i - q_i)/N$ there
# and 0 at the pads. This course spreads $\varepsilon$ over all $V$ tokens, the right one included, as
# PyTorch's `cross_entropy(label_smoothing=ε)` does, and as Szegedy et al. (2016) did, whose smoothing the
# 2017 paper used: even `<pad>` and `<bos>`, which are never targets, get $\varepsilon/V$. Other libraries
# use other conventions (fairseq: $1-\varepsilon$ for the right token and $\varepsilon/(V-1)$ for the
# others), which move the floor a little.

# %% [demo]
V, eps = task.vocab_size, 0.1
y = np.eye(V)[3]  # the target is the letter a, id 3
q = (1 - eps) * y + eps / V
fig, (left, right) = plotting.figure(1, 2, width=4.2, height=2.8)
plotting.bars(y, labels=task.vocab, ax=left, highlight=3, title=r"one-hot target $y$ ($\varepsilon = 0$)")
plotting.bars(q, labels=task.vocab, ax=right, highlight=3,
              title=rf"smoothed target $q$ ($\varepsilon = {eps}$), $H(q) = {-np.sum(q * np.log(q)):.3f}$")
for ax in (left, right):
    ax.tick_params(axis="x", labelrotation=90)
    ax.set_ylim(0, 1.05)
right.text(0.98, 0.6, f"target token: 1 - ε + ε/V = {q[3]:.3f}\nevery other token: ε/V = {q[0]:.4f}",
           transform=right.transAxes, ha="right", fontsize=8)
plt.show()

# %% [markdown]
# ### Exercise 8.1 — `sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0)`
#
# Lesson 7's loss with one change: the target distribution $q$ instead of $y$, in the loss and in the
# gradient. Compute $\log \hat p$ stably ($z - \max z - \log \sum e^{z - \max z}$). A batch with no
# real target at all has $N = 0$: return `(0.0, zeros)`.

# %% [solution] sequence_cross_entropy
def sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0):
    """Mean label-smoothed cross-entropy over the non-pad positions, and its gradient.

    Inputs:  logits          (..., m, V) float
             targets         (..., m) integer ids
             pad_id          positions whose target is pad_id are ignored (None: none are)
             label_smoothing eps in [0, 1): q = (1 - eps) * one_hot(target) + eps / V
    Returns: (loss: float, dlogits (..., m, V)): loss = mean over the N non-pad positions of
             -sum_v q_v log p_hat_v; dlogits = (p_hat - q) / N there and 0 at the pads.
             With N = 0: (0.0, zeros).
    """
    ### BEGIN SOLUTION
    z = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    V = z.shape[-1]
    keep = np.ones(targets.shape, dtype=bool) if pad_id is None else targets != pad_id  # (..., m)
    N = int(keep.sum())
    if N == 0:
        return 0.0, np.zeros_like(z)
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., m, V)
    y = np.eye(V)[np.where(keep, targets, 0)]  # one-hot (..., m, V); pad rows are masked below
    q = (1.0 - label_smoothing) * y + label_smoothing / V
    loss = float(-(q * log_p).sum(axis=-1)[keep].sum() / N)
    dlogits = (np.exp(log_p) - q) * keep[..., None] / N
    return loss, dlogits
    ### END SOLUTION


# %% [test] 8.1

# %% [markdown]
# **Measured: without label smoothing.** The course's ablation ladder (Lesson 10, §10.15; `make ablations`
# trains it, and the results are shipped with the course, so this cell only reads them) trains the whole
# model of Lessons 6–9 on their reversal task, 300 steps, three seeds per row, with one piece removed at a
# time. (The ladder trains the PyTorch twin of Lesson 6
# with $\varepsilon = 0.1$, spread over all $V$ tokens as here.) Every recorded loss is the plain
# cross-entropy, whatever the training loss. Without smoothing the held-out loss ends far lower, and the
# exact match is no better (the seeds overlap). The lower loss measures confidence, not correctness:
# smoothing forbids full confidence, so a smoothed model pays about $-\ln(1 - \varepsilon + \varepsilon/V)$
# per token even where it is right (Lesson 10, Self-check 10.9).

# %% [demo]
from encdec.plotting.ablations import ablation_curves, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "no label smoothing"):
    r = shipped[name]
    print(f"{name:>18}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
ablation_curves(rows=["full model", "no label smoothing"])
plt.show()

# %% [markdown]
# ## 8.4 The optimiser: Adam
#
# Plain gradient descent moves every parameter by $-\text{lr} \cdot g$. Its step is proportional to
# the gradient, whose scale varies by orders of magnitude between parameters (an embedding row of a
# rare token, a norm gain, a projection matrix) and over training. **Adam** gives every parameter a
# step of at most about $\text{lr}$, whatever the scale of its gradient (close to lr when the gradient
# is steady, less when it keeps changing sign), and smooths its direction over recent steps. It keeps
# two running averages per parameter, both [STATE] of the optimiser. Unlike activations, they are not
# thrown away after a step: they live for the whole training run, and a checkpoint saves them, with
# the step count $t$, next to the weights, so that training can resume exactly where it stopped:
#
# $$m_t = \beta_1 m_{t-1} + (1 - \beta_1)\, g_t, \qquad v_t = \beta_2 v_{t-1} + (1 - \beta_2)\, g_t^2 .$$
#
# $m$ averages the gradient (its direction, like momentum); $v$ averages its square (its typical
# size). Both start at 0, so in the first steps they are too small: after one step
# $m_1 = (1 - \beta_1) g_1$, a tenth of the gradient. Dividing by $1 - \beta^t$ undoes that
# **bias**, exactly for a constant gradient, and fades as $\beta^t \to 0$:
#
# $$\hat m_t = \frac{m_t}{1 - \beta_1^t}, \qquad \hat v_t = \frac{v_t}{1 - \beta_2^t}, \qquad \theta_t = \theta_{t-1} - \text{lr} \cdot \frac{\hat m_t}{\sqrt{\hat v_t} + \varepsilon} .$$
#
# $\hat m / \sqrt{\hat v}$ is a gradient divided by its own typical size: about $\pm 1$ when the
# gradient is steady, smaller when it keeps changing sign. The hyper-parameters are [CONFIG]:
# $\beta_1 = 0.9$, $\beta_2 = 0.98$ and $\varepsilon = 10^{-9}$ in the 2017 transformer and here.
# The step number $t$ [STATE, kept by the optimiser] counts from 1. Keep the *uncorrected* $m_t, v_t$
# as the new state: the correction belongs to this step's update only.
#
# ### Exercise 8.2 — `adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9)`
#
# Return new arrays; do not change the inputs in place.

# %% [solution] adam_update
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """One Adam step for one parameter array.

    Inputs:  param, grad, m, v  arrays of one shape S: the parameter [LEARNED], its gradient [STATE],
                                and the running averages of the gradient and its square [STATE]
             t                  the number of this step, counting from 1 [STATE]
             lr, beta1, beta2, eps  [CONFIG]
    Returns: (new_param, new_m, new_v), each of shape S; the inputs are left unchanged.
    """
    ### BEGIN SOLUTION
    m = beta1 * m + (1.0 - beta1) * grad
    v = beta2 * v + (1.0 - beta2) * grad * grad
    m_hat = m / (1.0 - beta1**t)
    v_hat = v / (1.0 - beta2**t)
    return param - lr * m_hat / (np.sqrt(v_hat) + eps), m, v
    ### END SOLUTION


# %% [test] 8.2

# %% [markdown]
# What bias correction buys, measured. One parameter receives the same gradient $g = 1$ at every
# step, so every step *should* be exactly $\text{lr}$ long. The next cell takes 300 Adam steps twice,
# with and without the correction, and plots each step's length.

# %% [markdown]
# **Self-check 8.2 — predict, then run.** With $\text{lr} = 1$ and $g = 1$ at every step, how long is
# Adam's very first step with bias correction, and how long without it? Does the answer change for
# $g = 1000$? (Bonus: for $g = 10^{-9}$?)
#
# <details><summary>Answer</summary>
#
# With the correction, $\hat m_1 = g$ and $\hat v_1 = g^2$, so the step is
# $\text{lr} \cdot g / (|g| + \varepsilon) = \text{lr}$, whatever the scale of $g$. Without it,
# $m_1 / \sqrt{v_1} = (1 - \beta_1) g / \sqrt{(1 - \beta_2) g^2} = 0.1 / \sqrt{0.02} \approx 0.71$ lr.
# $g = 1000$ gives exactly the same curves, because only $g / |g|$ matters. Bonus: at $g = 10^{-9} = \varepsilon$
# the denominator doubles and the first step halves, to 0.5 lr: the scale stops mattering only while
# $|g| \gg \varepsilon$.
#
# </details>

# %% [demo]
steps = np.arange(1, 301)
with_correction, without = [], []
m = v = m0 = v0 = 0.0
for t in steps:
    new, m, v = ref.adam_update(0.0, 1.0, m, v, t, lr=1.0)
    with_correction.append(-new)
    m0, v0 = 0.9 * m0 + 0.1, 0.98 * v0 + 0.02
    without.append(m0 / (np.sqrt(v0) + 1e-9))
ax = plotting.curves({"with bias correction": (steps, with_correction),
                      "without bias correction": (steps, without)},
                     xlabel="step t", ylabel="step length / lr", title="Adam's step for a constant gradient",
                     colors=[plotting.COLORS["target"], plotting.COLORS["highlight"]])
plotting.threshold(ax, 1.0)
plt.show()

# %% [markdown]
# With the correction every step is $\text{lr}$ long, from the first on. Without it the steps start at
# 0.71 lr, overshoot to 1.55 lr around step 14 (the two averages fill up at different speeds) and come
# within 1% of lr only after about 200 steps. The gradient's scale does not matter as long as it is much
# larger than $\varepsilon = 10^{-9}$: multiply $g$ by 1000 and the curves are the same (at
# $g = 10^{-9}$ every step would be halved).
#
# ## 8.5 The learning rate: warm up, then decay
#
# At the start of training the parameters are random, the attention patterns meaningless, and Adam's
# $\hat v$ is estimated from a handful of gradients. Full-size steps now can throw the model into a
# region it recovers from slowly, or never. Warm-up is older than the transformer: He et al. (2016)
# trained their 110-layer ResNet at a tenth of the rate until the training error fell below 80%, and
# Goyal et al. (2017) introduced a gradual warm-up for large-batch training. The 2017 transformer built
# it into its schedule, and later studies found that post-norm models train badly or diverge without it
# (Xiong et al. 2020; Liu et al. 2020). Pre-norm models like ours are less sensitive. In three runs of
# §8.9's set-up (three model and data seeds, made outside this notebook), this small reverser reversed
# 96–100% of the validation sequences exactly at step 600 with the warm-up, and about as many, 95–99%,
# when it started at the peak rate and decayed from the first step; with the rate held at its peak it
# ended lower in every run, at 88–95%, and rose and fell from one evaluation to the next. We keep the
# 2017 schedule because it is the standard recipe, and because larger and deeper models do need it. So
# the learning rate follows a **schedule** [CONFIG], fixed before the run and the same whatever the
# data, read at the current step number. It **warms up**, growing linearly for `warmup_steps` steps, and
# then **decays** like $1/\sqrt{\text{step}}$ as the model settles:
#
# $$\text{lr}(\text{step}) = \text{factor} \cdot d_{model}^{-0.5} \cdot \min\!\big(\text{step}^{-0.5},\ \text{step} \cdot \text{warmup}^{-1.5}\big).$$
#
# The two branches meet at $\text{step} = \text{warmup}$, where
# $\text{step} \cdot \text{warmup}^{-1.5} = \text{warmup}^{-0.5} = \text{step}^{-0.5}$: that is the peak.
# The factor $d_{model}^{-0.5}$ gives wider models smaller steps. Steps count from 1. The 2017 setting
# is $d_{model} = 512$, warm-up 4000 steps, factor 1: a peak of about $7 \times 10^{-4}$.
#
# ### Exercise 8.3 — `warmup_schedule(step, d_model, warmup_steps, factor=1.0)`

# %% [solution] warmup_schedule
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    """The 2017 learning-rate schedule: linear warm-up, then decay as 1/sqrt(step).

    Inputs:  step (int, from 1: the optimiser's step count [STATE]); d_model, warmup_steps (int)
             and factor (float) [CONFIG].
    Returns: the learning rate for this step (float):
             factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).
    """
    ### BEGIN SOLUTION
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)
    ### END SOLUTION


# %% [test] 8.3

# %% [markdown]
# The next cell draws the schedule for three settings (computed with the reference). Our small model
# in §8.9 uses $d_{model} = 32$, 50 warm-up steps and factor 0.3.

# %% [markdown]
# **Self-check 8.3 — predict, then run.** Compared with warm-up 4000 (at $d_{model} = 512$), where is
# the peak for warm-up 8000, how high is it, and how steep is its ramp? Work it out from the formula
# before you look.
#
# <details><summary>Answer</summary>
#
# The ramp is $d_{model}^{-0.5} \cdot \text{warmup}^{-1.5} \cdot \text{step}$, so doubling the warm-up
# divides its slope by $2^{1.5} = 2\sqrt 2 \approx 2.8$, not by 2 (from $1.75 \times 10^{-7}$ to
# $6.18 \times 10^{-8}$ per step). The peak, $d_{model}^{-0.5} \cdot \text{warmup}^{-0.5}$, moves to
# step 8000 and drops by $\sqrt 2$ (from $6.99 \times 10^{-4}$ to $4.94 \times 10^{-4}$). After step
# 8000 the two curves coincide, because the decay branch $\text{step}^{-0.5}$ does not depend on the
# warm-up.
#
# </details>

# %% [demo]
steps = np.arange(1, 20001, 10)  # every 10th step draws the same curves
settings = [(512, 4000), (512, 8000), (256, 4000)]
ax = plotting.curves({f"d_model = {d}, warmup = {w}": (steps, [ref.warmup_schedule(s, d, w) for s in steps])
                      for d, w in settings}, xlabel="step", ylabel="learning rate",
                     title="warm-up, then 1/sqrt(step) decay")
plt.show()

# %% [markdown]
# Doubling the warm-up divides the slope of the ramp by $2\sqrt 2$ (the slope is proportional to
# $\text{warmup}^{-1.5}$), moves the peak to twice the step and lowers it by $\sqrt 2$; from there on
# the two curves are one. Halving $d_{model}$ raises the whole curve by $\sqrt 2$.

# %% [markdown]
# **Measured: without warm-up.** The ladder's row without warm-up starts the cosine decay at its peak
# ($3 \cdot 10^{-3}$) from step 1; the full model warms up over 30 steps. Without warm-up it is ahead at first
# (at step 50 every one of its seeds has a lower held-out loss than every seed of the full model, whose first
# steps run at a lower rate), and it ends within the spread of the full model's seeds. What the row shows: at
# this size, depth and learning rate, the warm-up makes no measurable difference to the end of the run on
# this task. What it does not show: that warm-up is unnecessary; its case is made for post-norm models and
# for larger, deeper ones (the studies cited above).

# %% [demo]
from encdec.plotting.ablations import ablation_curves, load_results, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "no warm-up"):
    r = shipped[name]
    print(f"{name:>10}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
runs = {r["name"]: r["runs"] for r in load_results()["rows"]}
for name in ("full model", "no warm-up"):
    print(f"{name:>10}: held-out loss at step {runs[name][0]['eval_step'][0]}, seed by seed: "
          + ", ".join(f"{run['eval_loss'][0]:.3f}" for run in runs[name]))
ablation_curves(rows=["full model", "no warm-up"])
plt.show()

# %% [markdown]
# ## 8.6 One training step
#
# Now the whole step, for a batch `src (B, n)`, `targets (B, m)`. The diagram draws it with the
# library's names.
#
# ![One training step: a batch of sources and targets; the targets shifted right behind bos make the decoder's input; one forward pass gives the logits of every position; the loss averages the cross-entropy over the real target tokens and gives dlogits; the backward pass gives one gradient per parameter; the gradients may be clipped by their global norm; Adam, whose moments m and v and step count t persist from step to step, updates the parameters in place with the learning rate of the warm-up schedule, and the next step starts from the new values](../figures/training_step.svg)
#
# *One training step, as the library runs it: rounded boxes compute, dashed chips are [CONFIG], the solid chip is [LEARNED], the arrows carry [STATE]; the dashed arrow back is the next step reading the new parameters.*
#
# One box goes beyond this lesson's step: `clip_grad_norm` is optional and our step does not clip
# (Lesson 10's PyTorch loop does). The loss box is your `sequence_cross_entropy` of Exercise 8.1 (the
# library's `softmax_cross_entropy` with its `label_smoothing` argument computes the same); it writes
# the gradient as $(\hat p - q)/N$, with $q$ the label-smoothed target of §8.3. The dropout rate on the
# forward pass is the subject of §8.7. The course library gives you the forward pass that keeps what
# backpropagation needs, and the backward pass of Lesson 7:
#
# * `logits, cache = forward_with_cache(model, src, tgt_in)`: the same logits as `model(src, tgt_in)`,
#   shape `(B, m, V)`, plus a cache of activations [STATE];
# * `grads = backward(model, dlogits, cache)`: a dict of gradients with the names and shapes of
#   `model.parameters()`;
# * `optimizer.step(grads, lr=lr)`: an `Adam` over `model.parameters()`; it counts the step $t$, runs
#   `adam_update` on every parameter with its own $m$ and $v$, and writes the new values into the
#   model, in place. `lr=None` keeps the optimiser's own rate.
#
# Your step builds the decoder inputs with `shift_right`, runs the forward pass **once**, takes the
# loss with your `sequence_cross_entropy` (with `model.config.pad_id` and the label smoothing asked
# for), backpropagates, updates, and returns the loss and the **token accuracy** of this batch
# before the update: the fraction of non-pad target positions where the largest logit is the target.
#
# ### Exercise 8.4 — `train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None)`
#
# (While this exercise is checked, the reference loss replaces your `sequence_cross_entropy`, so a
# mistake in Exercise 8.1 is never charged twice.)

# %% [solution] train_step
def train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    """One teacher-forced training step on a batch: every target position in one pass.

    Inputs:  model      a Seq2Seq; its [LEARNED] parameters are updated in place
             optimizer  an Adam over model.parameters(): optimizer.step(grads, lr=lr)
             src        (B, n) source ids, right-padded
             targets    (B, m) target ids: each row ends in EOS, then pads
             bos_id     the id of <bos>; label_smoothing eps; lr this step's rate (None: the optimizer's)
    Returns: (loss, accuracy): floats, both for this batch before the update; the accuracy is the
             fraction of non-pad target positions whose largest logit is the target.
    """
    ### BEGIN SOLUTION
    pad_id = model.config.pad_id
    tgt_in = shift_right(targets, bos_id)  # (B, m): BOS, y1, ..., y_{m-1}
    logits, cache = forward_with_cache(model, src, tgt_in)  # (B, m, V): all m positions at once
    loss, dlogits = sequence_cross_entropy(logits, targets, pad_id, label_smoothing)
    grads = backward(model, dlogits, cache)  # name -> gradient, like model.parameters()
    optimizer.step(grads, lr=lr)
    real = targets != pad_id
    accuracy = float(np.sum((logits.argmax(axis=-1) == targets) & real) / max(np.sum(real), 1))
    return loss, accuracy
    ### END SOLUTION


# %% [test] 8.4

# %% [markdown]
# ### Exercise 8.5 — order the steps of one training step
#
# Here are the steps of one training step, shuffled. Put them in the order they happen.
#
# 1. cross-entropy of the logits against the targets, ignoring pads, with smoothed labels
# 2. move every parameter by −lr · m̂ / (√v̂ + ε), with this step's rate lr from the warm-up schedule
# 3. shift the targets right, prepending BOS: the decoder's inputs
# 4. backpropagate: the gradient of the loss for every parameter
# 5. draw a batch of (source, target) pairs, padded to a common length
# 6. update Adam's running averages m and v with the new gradient
# 7. run the model once over all m target positions, under the causal mask: the logits
#
# Practise with the widget (it gives instant feedback and grades nothing), then write your answer as a
# list of the step numbers above, in order, in the answer cell: for example `[5, ...]`.

# %% [demo]
from encdec.checks.lesson08 import TRAINING_STEP_ORDER

TRAINING_STEP_ORDER.widget()

# %% [solution] training_step_order
training_step_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
training_step_order = [5, 3, 7, 1, 4, 6, 2]
### END SOLUTION

# %% [test] 8.5

# %% [markdown]
# ## 8.7 Dropout
#
# A model with tens of thousands of [LEARNED] numbers can memorise the examples it trains on instead
# of learning the rule behind them. **Dropout** (Srivastava et al. 2014) makes that harder: in every
# training step each entry of an activation is set to 0 with probability $r$, the **dropout rate**
# [CONFIG], independently of all the others, and the entries that survive are scaled up by
# $1/(1 - r)$. Every step therefore trains a different random sub-network, and no unit can count on any
# particular other unit being there. The whole network, used at evaluation, behaves roughly like an
# average of all those sub-networks.
#
# The course uses **inverted dropout**: draw one uniform number $u_i \in [0, 1)$ per entry and keep the
# entries with $u_i \ge r$,
#
# $$\operatorname{drop}(x)_i = \frac{x_i\,[u_i \ge r]}{1 - r}, \qquad \mathbb{E}\big[\operatorname{drop}(x)_i\big] = (1 - r) \cdot \frac{x_i}{1 - r} + r \cdot 0 = x_i .$$
#
# The rescale keeps the expectation: on average the next layer sees activations of the same size in
# training as without dropout. So at evaluation dropout is simply switched off, $\operatorname{drop}(x) = x$, and
# nothing else has to change. It must be off there: evaluation and decoding want the model's one
# deterministic prediction, not the prediction of one random sub-network. (The original 2014 dropout
# did not rescale in training and multiplied by $1 - r$ at test time instead; the inverted form puts all
# the work into training.) The mask $[u \ge r]$ is [STATE]: drawn fresh at every step from a random
# generator, it lives for one training step, because the backward pass sends each gradient through the
# same mask with the same $1/(1 - r)$ (`forward_with_cache` keeps the masks in its cache).
#
# **Where.** The 2017 transformer drops the output of each sublayer before it is added to the residual
# stream, and the sums of the embeddings and the positions, at rate $r = 0.1$ in the base model.
# Dropping the attention weights after the softmax is not in the paper: it came with later default
# settings of its reference code (tensor2tensor's `transformer_base_v2` sets it to 0.1), and most
# implementations since do it, PyTorch's `nn.Transformer` among them. The course's model does all
# three, with one rate, `ModelConfig.dropout` (default 0):
#
# $$x \leftarrow x + \operatorname{drop}\big(\operatorname{Sublayer}(\operatorname{RMSNorm}(x))\big), \qquad \operatorname{drop}\big(\sqrt{d}\,E[\text{token}] + PE\big), \qquad \operatorname{drop}\big(\operatorname{softmax}(QK^\top/\sqrt{d_k} + M)\big)\,V .$$
#
# **Modes.** As in PyTorch, a new `Seq2Seq` is in training mode: dropout runs at the configured rate.
# `model.eval()` switches it off and `model.train()` back on. The decoders of Lesson 9 (`greedy_decode`,
# `beam_search`) always run the model in eval mode. Everything else that evaluates a model should be
# wrapped in `model.eval()` … `model.train()`, as §8.9 does.
#
# **Why our runs use rate 0.** The reverser trains on fresh random sequences at every step, about 19 000
# of them in §8.9, so there is little to memorise, and the validation curve will show no gap to
# close. What dropout costs is real even here: noisier steps and slower progress within a budget of
# 600 steps (§8.8 shows it on one batch). Dropout pays off for larger models that see the same
# fixed dataset many times; Lesson 10's capstone script takes a `--dropout` rate.
#
# ### Exercise 8.6 — `dropout(x, rate, rng, training=True)`
#
# Write inverted dropout, seeded so it can be checked. The convention, exactly:
#
# * if `training` is False or `rate` is 0, return `x` unchanged and draw nothing from `rng` (a draw
#   would move the generator on and change every later mask);
# * otherwise draw `u = rng.random(x.shape)` once, keep the entries where `u >= rate`, and return
#   `x * keep / (1 - rate)`.
#
# The checker calls your function and the library's with generators of the same seed, and compares both
# the outputs and how many numbers each drew. One other convention is just as exact and is accepted too:
# `keep = u < 1 - rate`, from the same single draw, keeps each entry with the same probability $1 - r$
# (the checker notices it and says so in a note).

# %% [solution] dropout
def dropout(x, rate, rng, training=True):
    """Inverted dropout: zero each entry with probability `rate`, scale the survivors by 1 / (1 - rate).

    Inputs:  x         array of any shape, float
             rate      the dropout rate [CONFIG], in [0, 1)
             rng       a numpy Generator: the mask comes from u = rng.random(x.shape), drawn once
             training  False in eval mode
    Returns: an array shaped like x: x * (u >= rate) / (1 - rate) in training mode; x itself, with
             nothing drawn from rng, when training is False or rate is 0.
    """
    ### BEGIN SOLUTION
    if not training or rate == 0:
        return x
    u = rng.random(x.shape)  # one uniform number per entry
    keep = u >= rate  # each entry kept with probability 1 - rate
    return x * keep / (1.0 - rate)
    ### END SOLUTION


# %% [test] 8.6

# %% [markdown]
# Dropout measured, with the library's `encdec.dropout` (the function your answer matches): first on a
# large array of ones, then inside the model. The model gets rate 0.1 and the same weights as the
# untrained model of §8.2 (same seed), and runs twice on the same batch in each mode.

# %% [markdown]
# **Self-check 8.4 — predict, then run.** The next cell applies dropout with rate 0.5 to 100 000 ones.
# Predict the share of zeros in the output, the value of every entry that is not zero, and the mean of
# the output. Then: do two calls of the model in training mode give the same logits? And in eval mode?
#
# <details><summary>Answer</summary>
#
# About half the entries are 0, every kept one is exactly $1/(1 - 0.5) = 2$, and the mean is close to 1:
# the rescale keeps the expectation, $0.5 \cdot 2 + 0.5 \cdot 0 = 1$ (the cell prints 0.501, [2.] and
# 0.998: sampling noise). In training mode each call draws new masks from the model's generator,
# so the two calls differ; in eval mode nothing is drawn, the two calls agree exactly, and they also
# agree exactly with the same weights built without dropout.
#
# </details>

# %% [demo]
dropped = ref.dropout(np.ones((1000, 100)), 0.5, np.random.default_rng(0))
print(f"share of zeros {np.mean(dropped == 0):.3f}; values kept: {np.unique(dropped[dropped != 0])}; "
      f"mean {dropped.mean():.3f} (the mean of x is 1)")
with_dropout = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                       n_decoder_layers=2, dropout=0.1, rng=0)  # §8.2's weights, rate 0.1
first, second = with_dropout(src, tgt_in), with_dropout(src, tgt_in)  # training mode, the default
print(f"training mode: two calls differ by up to {np.max(np.abs(first - second)):.2f}")
with_dropout.eval()
first, second = with_dropout(src, tgt_in), with_dropout(src, tgt_in)
print(f"eval mode: two calls differ by {np.max(np.abs(first - second))}, and from the model without "
      f"dropout by {np.max(np.abs(first - model(src, tgt_in)))}")

# %% [markdown]
# ## 8.8 Overfit one batch first
#
# A training run with a bug rarely crashes. The loss falls more slowly than it should, or stops too
# high, and the bug looks like a bad learning rate. So before any long run, check the whole set-up (data,
# model, loss, gradient, optimiser) in a few seconds: take **one** small batch, keep it fixed, and train
# on it alone, with label smoothing and dropout off (each keeps the loss above 0 on purpose). A model with
# 42 000 numbers can memorise 8 pairs, so the loss must go to nearly 0 within a hundred steps or so. If
# it does not, something is broken, and a longer run will not fix it.
#
# The next cell does it four times, each time on the same 8 pairs, at a constant rate 0.003, from the
# same initial weights (100 steps for the two correct set-ups; 40 are enough to see where each bug goes):
#
# 1. the set-up as it should be;
# 2. with a broken gradient: the loss's gradient with its sign flipped, $y - \hat p$ instead of
#    $\hat p - y$ (a mistake from Lesson 7's catalogue);
# 3. with a decoder that reads the targets themselves instead of the targets shifted right (Exercise
#    8.4's catalogued mistake);
# 4. as it should be, but with dropout 0.1.

# %% [markdown]
# **Self-check 8.5 — explain why.** Run 3 has a serious bug: the decoder is fed the tokens it must
# predict. Before you run the next cell, explain whether the overfit check can catch that bug, and what
# the loss curve of run 3 will look like next to run 1.
#
# <details><summary>Answer</summary>
#
# It cannot. At position $t$ the decoder reads $y_{t+1}$, the very token it must predict, so it can copy
# its input instead of learning to reverse the source. Its loss is low from the start: 0.94 before any
# update, against 3.56 for the correct set-up, because an untrained tied model already tends to echo its
# input (Lesson 6, §6.5) and here the input is the answer; before the 40th update it is 0.011, where the
# correct run is still at 0.18. (`train_step` returns the loss computed before its update.) The check
# only tells you that the loss *can* be lowered; a bug that leaks the answer into
# the input makes that easier, not harder. A causal mask that let positions see the future would do the
# same. The model of run 3 is useless when it generates: with no true tokens to copy, it reverses none
# of its own 8 training pairs.
#
# </details>

# %% [demo]
one_src, one_tgt = task.batch(rng=3, size=8)  # ONE small batch, fixed


def train_step_sign_flipped(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    """A bug to catch: the loss's gradient with its sign flipped, y - p_hat instead of p_hat - y."""
    logits, cache = forward_with_cache(model, src, ref.shift_right(targets, bos_id))
    loss, dlogits = ref.softmax_cross_entropy(logits, targets, PAD, label_smoothing)
    optimizer.step(backward(model, -dlogits, cache), lr=lr)
    return loss, None


def train_step_unshifted(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None):
    """A bug the check cannot catch: the decoder reads the targets themselves, not shifted right."""
    logits, cache = forward_with_cache(model, src, targets)
    loss, dlogits = ref.softmax_cross_entropy(logits, targets, PAD, label_smoothing)
    optimizer.step(backward(model, dlogits, cache), lr=lr)
    return loss, None


def overfit_one_batch(step_fn=ref.train_step, dropout=0.0, steps=100, lr=3e-3):
    """Train a fresh model on (one_src, one_tgt) alone, without label smoothing; return it (in eval
    mode) and its losses."""
    model = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                    n_decoder_layers=2, dropout=dropout, rng=0)
    optimizer = Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
    losses = [step_fn(model, optimizer, one_src, one_tgt, BOS, label_smoothing=0.0, lr=lr)[0] for _ in range(steps)]
    return model.eval(), np.array(losses)


start = time.perf_counter()
runs = {"1. as it should be": overfit_one_batch(),
        "2. gradient sign flipped (bug)": overfit_one_batch(train_step_sign_flipped, steps=40),
        "3. decoder reads unshifted targets (bug)": overfit_one_batch(train_step_unshifted, steps=40),
        "4. as it should be, dropout 0.1": overfit_one_batch(dropout=0.1)}
print(f"4 runs in {time.perf_counter() - start:.1f} s. Loss before updates 1, 10, 40 and 100 "
      "(train_step returns the loss before its update):")
for name, (_, losses) in runs.items():
    print(f"  {name:<42}" + "".join(f"{losses[k - 1]:9.4f}" for k in (1, 10, 40, 100) if k <= len(losses)))
fitted, leaky = runs["1. as it should be"][0], runs["3. decoder reads unshifted targets (bug)"][0]
new_src, new_tgt = task.batch(rng=4, size=256)  # 256 other pairs (none of them among the 8)


def accuracy(model, src, tgt):
    return ref.token_accuracy(model(src, ref.shift_right(tgt, BOS)), tgt, PAD)


print(f"run 1's model, token accuracy: {accuracy(fitted, one_src, one_tgt):.3f} on its 8 pairs, "
      f"{accuracy(fitted, new_src, new_tgt):.3f} on 256 new ones")
generated = ref.greedy_decode(leaky, one_src, BOS, EOS, max_len=one_tgt.shape[1])
print(f"run 3's model, generating: {sum(task.decode(g) == task.decode(t) for g, t in zip(generated, one_tgt))} "
      f"of its 8 training pairs reversed")
curve = {name: (np.arange(1, len(losses) + 1), losses) for name, (_, losses) in runs.items()}
fig, (left, right) = plotting.figure(1, 2, width=4.6)
plotting.curves({name: curve[name] for name in ("1. as it should be", "2. gradient sign flipped (bug)")},
                ax=left, logy=True, title="the check catches a broken gradient",
                colors=[plotting.COLORS["target"], plotting.COLORS["highlight"]])
plotting.curves({"1. as it should be (reference)": curve["1. as it should be"],
                 "3. decoder reads unshifted targets (bug)": curve["3. decoder reads unshifted targets (bug)"],
                 "4. as it should be, dropout 0.1": curve["4. as it should be, dropout 0.1"]},
                ax=right, logy=True, title="what the check cannot see, and dropout",
                colors=[plotting.COLORS["highlight"], plotting.COLORS["target"]])
plt.show()

# %% [markdown]
# Left: the set-up as it should be drives the loss from 3.6 to below 0.01 in 100 steps; the broken
# gradient drives it *up*, past 14 within 40 steps. That is the check working: a bug in the data, the loss, the gradient
# or the optimiser shows up as a loss that does not go to 0, in seconds instead of after an hour. Right,
# in red, what the check cannot see: the decoder that reads its own targets starts low and fits the
# batch sooner, and then generates nothing right. With dropout (orange) the same correct set-up stays
# far above 0 (0.24 before the 100th update): every step trains another random sub-network, which is why
# the check runs with dropout off, and it shows, on a small scale, what dropout costs a short run.
#
# What the check proves, and what it does not. Passing it means the pieces are connected and the
# gradient points the right way. It does **not** mean the model generalises: run 1's model has memorised
# its 8 pairs (token accuracy 1.000 on them) and gets fewer than one token in five right (0.18) on 256
# new pairs.
# And it cannot see any bug that *helps* the model fit, such as a leak of the answer into the input.
# Those need other checks: the causal-mask test of Lesson 3, a look at generated outputs, and a
# validation set the model never trains on, which is where the next section starts.

# %% [markdown]
# ## 8.9 Training the reverser
#
# Everything together, on the reference implementation (it is what your functions now match). The
# model is small [CONFIG]: $d_{model} = 32$, 4 heads, $d_{ff} = 64$, two encoder and two decoder
# blocks, about 42 000 [LEARNED] numbers, dropout 0. It trains for 600 steps on batches of 32 fresh
# random sequences, with label smoothing 0.1 and the warm-up schedule of §8.5 (50 warm-up steps, factor
# 0.3). Every 50 steps it is evaluated, in eval mode, on 256 **held-out** validation sequences:
# teacher-forced loss and token accuracy, and the share of sequences it reverses exactly when it
# generates on its own (greedy decoding, the subject of Lesson 9). Held out has to be made true:
# there are only 1 000 sequences of three letters, so fresh random batches would soon repeat most of the
# short validation sequences. `training_batch` redraws every pair whose source is in the validation set,
# so the model never trains on one. The run takes 10–30 s, depending on the machine.

# %% [demo]
task = ReverseTask(n_letters=10, min_len=3, max_len=8)
model = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                n_decoder_layers=2, rng=0)
optimizer = Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
val_src, val_tgt = task.batch(rng=2, size=256)
held_out = {tuple(s) for s in val_src}  # the validation sources: never trained on
redrawn = 0


def training_batch(rng, size):
    """`size` random pairs, none of whose sources is a validation source (those are redrawn)."""
    global redrawn
    src, tgt = task.batch(rng, size)
    for i in range(size):
        while tuple(src[i]) in held_out:
            redrawn += 1
            s, t = task.batch(rng, 1)
            src[i], tgt[i] = s[0], t[0]
    return src, tgt


data = np.random.default_rng(1)
model.eval()  # the untrained model's validation loss, for Self-check 8.6 (dropout is 0: no draw)
untrained_logits = model(val_src, ref.shift_right(val_tgt, BOS))
untrained_loss = ref.softmax_cross_entropy(untrained_logits, val_tgt, PAD, 0.1)[0]
model.train()
history = {"step": [], "loss": [], "acc": [], "val_step": [], "val_loss": [], "val_acc": [],
           "exact_step": [], "exact": []}
checkpoint = None  # the [LEARNED] parameters after 150 steps, for §8.10: enough to evaluate,
                   # not to resume training (that also needs Adam's m, v and t)
start = time.perf_counter()
for step in range(1, 601):
    src, tgt = training_batch(data, 32)
    lr = ref.warmup_schedule(step, d_model=32, warmup_steps=50, factor=0.3)
    loss, acc = ref.train_step(model, optimizer, src, tgt, BOS, label_smoothing=0.1, lr=lr)
    history["step"].append(step)
    history["loss"].append(loss)
    history["acc"].append(acc)
    if step % 50 == 0:
        model.eval()  # no dropout while evaluating (a no-op at rate 0, and the right habit)
        logits = model(val_src, ref.shift_right(val_tgt, BOS))
        model.train()
        history["val_step"].append(step)
        history["val_loss"].append(ref.softmax_cross_entropy(logits, val_tgt, PAD, 0.1)[0])
        history["val_acc"].append(ref.token_accuracy(logits, val_tgt, PAD))
        out = ref.greedy_decode(model, val_src, BOS, EOS, max_len=val_tgt.shape[1])  # always in eval mode
        history["exact_step"].append(step)
        history["exact"].append(np.mean([task.decode(o) == task.decode(t) for o, t in zip(out, val_tgt)]))
    if step == 150:
        checkpoint = {name: p.copy() for name, p in model.parameters().items()}
model.eval()  # from here on the model is only evaluated
print(f"{model.num_parameters()} parameters, 600 steps in {time.perf_counter() - start:.1f} s "
      f"({redrawn} training pairs redrawn because their source was a validation source); validation: "
      f"token accuracy {history['val_acc'][-1]:.3f}, exact reversals {history['exact'][-1]:.3f}")
print(f"training loss: first step {history['loss'][0]:.2f}, mean of the first 10 steps "
      f"{np.mean(history['loss'][:10]):.2f}; untrained model: validation loss {untrained_loss:.2f}, its logits' "
      f"standard deviation {untrained_logits[val_tgt != PAD].std():.2f}; validation loss at step 600 "
      f"{history['val_loss'][-1]:.3f}")

# %% [markdown]
# **Self-check 8.6 — predict, then run.** The next cell plots the training loss, averaged over 10 steps.
# The vocabulary has $V = 13$ tokens. (a) Does the curve start near $\ln 13 \approx 2.56$, or above it?
# (b) Where does it level off: at 0, or somewhere else, and where exactly?
#
# <details><summary>Answer</summary>
#
# (a) Above: the curve starts at 3.28 (the mean of the first 10 steps' losses), and the very first
# step's loss is 3.86. $\ln V$ is the loss of *equal* logits. The untrained tied head gives logits with
# a standard deviation of 1.37, and confident random guesses cost more than uniform ones (the untrained
# model's validation loss is 3.76). (b) Just above $H(q) \approx 0.537$, not at 0: with label smoothing
# the best possible $\hat p$ is $q$ itself, whose cross-entropy with $q$ is $H(q)$. After 600 steps the
# validation loss is 0.544. (The cell above prints each of these numbers.)
#
# </details>

# %% [demo]
smooth = np.convolve(history["loss"], np.ones(10) / 10, mode="valid")
floor = -np.sum(q * np.log(q))  # the entropy of the smoothed target, from §8.3
fig, (left, right) = plotting.figure(1, 2, width=4.6)
plotting.curves({"training loss (mean of 10 steps)": (np.arange(10, 601), smooth, "train"),
                 "validation loss": (history["val_step"], history["val_loss"], "validation")},
                ax=left, xlabel="step", ylabel="loss", title="label-smoothed cross-entropy",
                colors=[plotting.COLORS["target"], plotting.COLORS["highlight"]])
plotting.threshold(left, floor, label=f"floor H(q) = {floor:.2f}")
left.legend(frameon=False, fontsize=8)
plotting.curves({"token accuracy, validation (teacher-forced)": (history["val_step"], history["val_acc"], "validation"),
                 "exact reversals, validation (generated)": (history["exact_step"], history["exact"], "validation")},
                ax=right, xlabel="step", ylabel="fraction", title="accuracy")
right.set_ylim(0, 1.02)
plt.show()

# %% [markdown]
# Left: the loss. It drops fastest in the first few dozen steps, still during the warm-up (the model
# learns which tokens occur at all), keeps falling steadily for the next 200 steps while it learns to
# align, and levels off just above the floor label smoothing sets, $H(q) \approx 0.54$ (dotted), not at
# 0. Training (circles) and validation (squares) agree: the batches are fresh every step and the
# validation sequences are never among them, so the validation curve measures sequences the model has
# never seen, and there is no gap for memorising to open. Right: token accuracy under teacher forcing,
# and the share of sequences reversed exactly when the model generates on its own. The second lags
# behind the first: one wrong token spoils a whole sequence (more on that in §8.10). It also shows that
# training is not smooth: the rate is still about 0.002 at step 600, and an occasional bad step costs
# accuracy before the next ones repair it (with these seeds the exact reversals drop from 97% at step
# 400 to 86% at step 450, and are back at 100% at step 500).
#
# What did it learn? Reversal needs target position $t$ (counting from 0) to read source position
# $n_b - 1 - t$, with $n_b$ the number of letters in that source (pads excluded), and nothing told the
# model so. Its cross-attention found it alone: in the last decoder block (averaged
# over its heads) almost every letter row puts most of its weight on the mirrored source column, an
# anti-diagonal. On the 256 validation sequences, 96% of the letter rows have their largest weight
# there, 0.77 of their weight on average; the first decoder block puts only 0.35 there. The `<eos>` row,
# which has no mirrored letter, looks at the first source token, the last one the reversal copies. The
# hatched column is the source padding, never attended.

# %% [demo]
for s, g in zip(val_src[:5], ref.greedy_decode(model, val_src[:5], BOS, EOS, max_len=9)):
    print(f"{task.decode(s):>8}  ->  {task.decode(g)}")
i = next(i for i in range(len(val_src)) if 4 <= np.sum(val_src[i] != PAD) <= 6)  # a source with padding
src_one, tgt_one = val_src[i : i + 1], val_tgt[i : i + 1]
H_enc, src_mask = model.encode(src_one)
_, cross = model.decode(ref.shift_right(tgt_one, BOS), H_enc, src_mask, return_attention=True)
n, m = int(np.sum(src_one != PAD)), int(np.sum(tgt_one != PAD))
weights = cross[-1][0].mean(axis=0)[:m, : n + 1]  # (m, n + 1): one pad column shown
plotting.heatmap(weights, rows=[task.vocab[i] for i in tgt_one[0, :m]], cols=[task.vocab[i] for i in src_one[0, : n + 1]],
                 kind="cross", title="cross-attention, last decoder block", row_label="target (predicting)",
                 col_label="source")
plt.show()

# %% [markdown]
# ## 8.10 Exposure bias
#
# Teacher forcing trains the decoder on true prefixes only. When it generates, it reads its own output,
# and after its first mistake it is reading a prefix unlike any it was trained on. Errors then breed
# errors: this is **exposure bias**. Take the model as it was after 150 steps (token accuracy about
# 0.80 with these seeds) and measure, position by position on the validation set, how often it is right
# in two ways: teacher-forced, reading the true prefix, and free-running, reading what it generated
# itself.

# %% [markdown]
# **Self-check 8.7 — explain why.** Why must the two curves of the next figure start at exactly the same
# value at position 0? More generally, at a position where the model's own generated prefix happens to be
# entirely correct, how do its free-running and teacher-forced predictions compare? What does that tell
# you about where the whole gap between the curves comes from?
#
# <details><summary>Answer</summary>
#
# At position 0 both read only `<bos>` (and the same source), so the logits are identical. Whenever the
# generated prefix equals the true prefix, the decoder's input is identical, so the prediction is too
# (§8.2: a position sees only its prefix). So the entire gap comes from positions whose generated
# prefix already contains a slip, and the share of those grows with $t$. With these seeds: both curves
# start at 0.93; given a correct prefix the free-running accuracy equals the teacher-forced accuracy at
# every position; after a slip it is 0.35 to 0.51 from position 2 on.
#
# </details>

# %% [demo]
early = Seq2Seq(model.config).load_parameters(checkpoint).eval()
real = val_tgt != PAD
forced = early(val_src, ref.shift_right(val_tgt, BOS)).argmax(axis=-1) == val_tgt
free = ref.greedy_decode(early, val_src, BOS, EOS, max_len=val_tgt.shape[1])
free = np.pad(free, ((0, 0), (0, val_tgt.shape[1] - free.shape[1])), constant_values=PAD) == val_tgt
positions = np.arange(val_tgt.shape[1])
ax = plotting.curves({"teacher-forced: reads the true prefix": (positions, (forced & real).sum(0) / real.sum(0)),
                      "free-running: reads its own output": (positions, (free & real).sum(0) / real.sum(0))},
                     xlabel="target position t", ylabel="accuracy at position t",
                     title="the model after 150 steps, on 256 validation sequences",
                     colors=[plotting.COLORS["target"], plotting.COLORS["highlight"]])
ax.set_ylim(0, 1.02)
plt.show()

# %% [markdown]
# Teacher-forced accuracy shows no downward trend (it wobbles between about 0.75 and 0.93); free-running
# accuracy falls with the position. The two agree wherever the generated prefix is still right (then the
# decoder reads exactly the same input), so the whole gap comes from positions whose own prefix already
# holds a slip, and the share of those grows with $t$ (7% of the sequences at position 1, more than half
# from position 4 on). After a slip the model is right about half the time at best (0.35 to 0.51 from
# position 2 on).
#
# With these seeds the fully trained model reverses more than 99% of the validation sequences exactly
# and hardly shows the gap, because it rarely slips. (Other seeds end between 87% and 100% at step
# 600: the rate is still about 0.002 there, and training has occasional spikes.) Real tasks are rarely
# learned that perfectly, and there exposure bias is one reason generation goes worse than the training
# loss suggests. Remedies feed the model its own predictions during training (scheduled sampling) or
# train on whole generated sequences. Lesson 9's beam search does not remove exposure bias, but by
# keeping several candidate prefixes it can recover from an early slip that greedy decoding would be
# stuck with.
#
# ## Summary
#
# * One training step: shift the targets right, run the model once, take the loss, backpropagate,
#   let the optimiser move every parameter at this step's learning rate.
# * Thanks to the causal mask, one teacher-forced pass computes the predictions of all $m$ prefixes:
#   every target position is trained at once.
# * Label smoothing trains towards $q = (1 - \varepsilon) y + \varepsilon / V$: gradient $\hat p - q$,
#   averaged over the $N$ real tokens; the loss can only approach $H(q)$, not 0.
# * Adam moves each parameter against its averaged gradient, by
#   $\text{lr} \cdot \hat m / (\sqrt{\hat v} + \varepsilon)$: at most about lr, whatever the gradient's
#   scale; bias correction makes the first steps the right length. Its $m$, $v$ and $t$ are [STATE] that
#   lives for the whole training run.
# * The learning rate warms up linearly and decays as $1/\sqrt{\text{step}}$, scaled by $d_{model}^{-0.5}$:
#   a [CONFIG] schedule read at the current step.
# * Inverted dropout zeroes each entry with probability $r$ and scales the rest by $1/(1 - r)$, which keeps
#   the expectation; it runs in training mode only, never in evaluation or decoding.
# * Overfit one small batch first, with label smoothing and dropout off: if the loss does not go to
#   nearly 0, the set-up is broken. Passing proves neither generalisation nor the absence of a leak.
# * Held-out means never trained on: with a small task it has to be enforced.
# * A model trained on true prefixes generates from its own: exposure bias lets early errors compound.
#
# **Next — Lesson 9, Decoding.** The trained model gives a distribution over the next token; turning
# it into a sequence is a choice. Greedy decoding, sampling with temperature, top-k and top-p, beam
# search with length normalisation, and the KV cache that makes every generated token cost one step,
# not a whole forward pass.
