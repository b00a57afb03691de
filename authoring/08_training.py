# %% [markdown]
# # Lesson 8 — Training
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 8 of 10*
#
# Lesson 7 gave us the gradient of the loss for every [LEARNED] number of the model. Training is
# the loop that turns those gradients into a model that works: a loss worth lowering, an optimiser
# that moves each parameter a sensible distance, a learning rate that starts gently, and a training
# step that teaches every target position at once. At the end of this lesson a small model learns
# the reversal task inside this notebook, in well under a minute.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. add label smoothing to the padding-aware cross-entropy, and say what it does to the target
#    distribution, the gradient and the lowest loss the model can reach;
# 2. write one Adam step with bias correction, and say what each of its two running averages is for;
# 3. write the warm-up learning-rate schedule of 2017 and explain why training starts slowly;
# 4. write one teacher-forced training step, and explain why one forward pass trains all $m$
#    target positions;
# 5. read the loss, accuracy and cross-attention of a model trained on the reversal task;
# 6. explain exposure bias: why a model trained with teacher forcing stumbles on its own output;
# 7. put the steps of one training step in order.
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
# Tags: **[LEARNED]** changed by training, **[CONFIG]** chosen before training, **[STATE]**
# computed while the model runs or trains. Figures follow the course's [figure key](../FIGURE_KEY.md).

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
# One **training step** takes one batch and changes every [LEARNED] parameter $\theta$ a little in the
# direction that lowers the loss on it:
#
# 1. build the decoder's inputs by shifting the targets right (Lesson 6: teacher forcing);
# 2. run the model once: logits $z \in \mathbb{R}^{B \times m \times V}$ for every target position;
# 3. compare them with the targets: one number, the loss $L$;
# 4. backpropagate (Lesson 7): $\partial L / \partial \theta$ for every parameter;
# 5. let the optimiser move every parameter, by an amount the learning-rate schedule sets for this step.
#
# Steps 3 and 5 are new. Sections 8.3–8.5 build them; section 8.6 puts the step together.

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
# The decoder is trained to predict $y_t$ from $y_{<t}$ and the source. One could train it the way it
# will later generate: feed `<bos>`, predict $y_1$; feed `<bos>` $y_1$, predict $y_2$; and so on, $m$
# forward passes for $m$ predictions. That is not needed. Feed the whole shifted target
# `<bos>` $y_1 \dots y_{m-1}$ once. Because of the **causal mask** (Lesson 3), position $t$ attends only
# to positions $\le t$, which hold `<bos>` $y_1 \dots y_{t-1}$: exactly the prefix it would have seen in
# the $t$-th separate pass. So the logits at position $t$ of the one pass *are* the logits of the
# $t$-th prefix pass, and one forward and one backward pass train all $m$ positions together.
#
# This is **teacher forcing**: at every position the decoder reads the *true* previous tokens, never
# its own guesses. The demonstration below checks the claim on an untrained model: one pass over all
# positions, against $m$ passes over growing prefixes.

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
# The logits agree to rounding. The cost of teacher forcing is elsewhere, and section 8.8 measures it:
# a model that has only ever read true prefixes must, when it generates, read its own.
#
# ## 8.3 The loss: padding-aware, with label smoothing
#
# Lesson 7's loss is the mean cross-entropy over the $N$ real target positions:
#
# $$L = \frac{1}{N} \sum_{i:\ t_i \ne \text{pad}} -\log \hat p_{i,t_i}, \qquad \hat p_i = \operatorname{softmax}(z_i).$$
#
# Its one-hot target asks for $\hat p_{t} = 1$, which softmax reaches only as the logit of the right
# token runs off to infinity. Nothing stops a model from chasing that: its logits keep growing, it
# becomes overconfident, and the gradient on an example it already gets right never fades.
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
# 2017 transformer and by us. The training curves of section 8.7 level off exactly there.
#
# The batch loss stays a mean over the $N$ non-pad positions, with gradient $(\hat p_i - q_i)/N$ there
# and 0 at the pads. This course spreads $\varepsilon$ over all $V$ tokens, the right one included,
# as PyTorch's `cross_entropy(label_smoothing=ε)` does.

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
# ### Exercise 8.1 — `sequence_cross_entropy(logits, targets, pad_id=None, label_smoothing=0.0)` (3 points)
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


# %% [test] test_sequence_cross_entropy points=3
# Tests for Exercise 8.1 (3 points). Run this cell after your answer.
from encdec.checks.lesson08 import check_sequence_cross_entropy

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_sequence_cross_entropy(points=3, hidden=hidden)

# %% [markdown]
# ## 8.4 The optimiser: Adam
#
# Plain gradient descent moves every parameter by $-\text{lr} \cdot g$. Its step is proportional to
# the gradient, whose scale varies by orders of magnitude between parameters (an embedding row of a
# rare token, a norm gain, a projection matrix) and over training. **Adam** gives every parameter a
# step of about the same size, $\text{lr}$, and smooths its direction over recent steps. It keeps two
# running averages per parameter, both [STATE] of the optimiser:
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
# The step number $t$ counts from 1. Keep the *uncorrected* $m_t, v_t$ as the new state: the
# correction belongs to this step's update only.
#
# ### Exercise 8.2 — `adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9)` (3 points)
#
# Return new arrays; do not change the inputs in place.

# %% [solution] adam_update
def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """One Adam step for one parameter array.

    Inputs:  param, grad, m, v  arrays of one shape S: the parameter [LEARNED], its gradient, and
                                the running averages of the gradient and its square [STATE]
             t                  the number of this step, counting from 1
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


# %% [test] test_adam_update points=3
# Tests for Exercise 8.2 (3 points).
from encdec.checks.lesson08 import check_adam_update

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_adam_update(points=3, hidden=hidden)

# %% [markdown]
# What bias correction buys, measured. One parameter receives the same gradient $g = 1$ at every
# step, so every step *should* be exactly $\text{lr}$ long. With the correction it is, from the first
# step on; without it the steps start at 0.7 lr, overshoot to 1.5 lr around step 10 (the averages
# fill up at different speeds) and settle only after about 200 steps. The gradient's scale does not
# matter: multiply $g$ by 1000 and the curves are the same.

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
# ## 8.5 The learning rate: warm up, then decay
#
# At the start of training the parameters are random, the attention patterns meaningless, and Adam's
# $\hat v$ is estimated from a handful of gradients. Full-size steps now can throw the model into a
# region it never recovers from (the 2017 post-norm transformer often diverged without warm-up). So the
# learning rate [CONFIG, changing with the step] **warms up**, growing linearly for `warmup_steps`
# steps, and then **decays** like $1/\sqrt{\text{step}}$ as the model settles:
#
# $$\text{lr}(\text{step}) = \text{factor} \cdot d_{model}^{-0.5} \cdot \min\!\big(\text{step}^{-0.5},\ \text{step} \cdot \text{warmup}^{-1.5}\big).$$
#
# The two branches meet at $\text{step} = \text{warmup}$, where
# $\text{step} \cdot \text{warmup}^{-1.5} = \text{warmup}^{-0.5} = \text{step}^{-0.5}$: that is the peak.
# The factor $d_{model}^{-0.5}$ gives wider models smaller steps. Steps count from 1. The 2017 setting
# is $d_{model} = 512$, warm-up 4000 steps, factor 1: a peak of about $7 \times 10^{-4}$.
#
# ### Exercise 8.3 — `warmup_schedule(step, d_model, warmup_steps, factor=1.0)` (2 points)

# %% [solution] warmup_schedule
def warmup_schedule(step, d_model, warmup_steps, factor=1.0):
    """The 2017 learning-rate schedule: linear warm-up, then decay as 1/sqrt(step).

    Inputs:  step (int, from 1); d_model, warmup_steps (int) and factor (float) [CONFIG].
    Returns: the learning rate for this step (float):
             factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5).
    """
    ### BEGIN SOLUTION
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)
    ### END SOLUTION


# %% [test] test_warmup_schedule points=2
# Tests for Exercise 8.3 (2 points).
from encdec.checks.lesson08 import check_warmup_schedule

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_warmup_schedule(points=2, hidden=hidden)

# %% [markdown]
# The schedule for three settings (computed with the reference). Doubling the warm-up halves the slope
# of the ramp and moves the peak later and lower; halving $d_{model}$ raises the whole curve by
# $\sqrt 2$. Our small model in section 8.7 uses $d_{model} = 32$, 50 warm-up steps and factor 0.3.

# %% [demo]
steps = np.arange(1, 20001)
settings = [(512, 4000), (512, 8000), (256, 4000)]
ax = plotting.curves({f"d_model = {d}, warmup = {w}": (steps, [ref.warmup_schedule(s, d, w) for s in steps])
                      for d, w in settings}, xlabel="step", ylabel="learning rate",
                     title="warm-up, then 1/sqrt(step) decay")
plt.show()

# %% [markdown]
# ## 8.6 One training step
#
# Now the whole step, for a batch `src (B, n)`, `targets (B, m)`. The course library gives you the
# forward pass that keeps what backpropagation needs, and the backward pass of Lesson 7:
#
# * `logits, cache = forward_with_cache(model, src, tgt_in)`: the same logits as `model(src, tgt_in)`,
#   shape `(B, m, V)`, plus a cache of activations [STATE];
# * `grads = backward(model, dlogits, cache)`: a dict of gradients with the names and shapes of
#   `model.parameters()`;
# * `optimizer.step(grads, lr=lr)`: an `Adam` over `model.parameters()`; it runs `adam_update` on every
#   parameter and writes the new values into the model, in place. `lr=None` keeps the optimiser's own rate.
#
# Your step builds the decoder inputs with `shift_right`, runs the forward pass **once**, takes the
# loss with your `sequence_cross_entropy` (with `model.config.pad_id` and the label smoothing asked
# for), backpropagates, updates, and returns the loss and the **token accuracy** of this batch
# before the update: the fraction of non-pad target positions where the largest logit is the target.
#
# ### Exercise 8.4 — `train_step(model, optimizer, src, targets, bos_id, label_smoothing=0.0, lr=None)` (3 points)
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


# %% [test] test_train_step points=3
# Tests for Exercise 8.4 (3 points).
from encdec.checks.lesson08 import check_train_step

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_train_step(points=3, hidden=hidden)

# %% [markdown]
# ### Exercise 8.5 — order the steps of one training step (1 point)
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
### BEGIN SOLUTION
training_step_order = [5, 3, 7, 1, 4, 6, 2]
### END SOLUTION

# %% [test] test_training_step_order points=1
# Tests for Exercise 8.5 (1 point).
from encdec.checks.lesson08 import check_training_step_order

check_training_step_order(points=1)

# %% [markdown]
# ## 8.7 Training the reverser
#
# Everything together, on the reference implementation (it is what your functions now match). The
# model is small [CONFIG]: $d_{model} = 32$, 4 heads, $d_{ff} = 64$, two encoder and two decoder
# blocks, about 42 000 [LEARNED] numbers. It trains for 600 steps on batches of 32 fresh random
# sequences, with label smoothing 0.1 and the warm-up schedule of 8.5 (50 warm-up steps, factor 0.3).
# Every 25 steps it is evaluated on 256 held-out sequences it never trains on: teacher-forced loss
# and token accuracy, and every 50 steps the share of sequences it reverses exactly when it
# generates on its own (greedy decoding, the subject of Lesson 9). It takes 10–30 s, depending on the machine.

# %% [demo]
task = ReverseTask(n_letters=10, min_len=3, max_len=8)
model = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                n_decoder_layers=2, rng=0)
optimizer = Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
val_src, val_tgt = task.batch(rng=2, size=256)
data = np.random.default_rng(1)
history = {"step": [], "loss": [], "acc": [], "val_step": [], "val_loss": [], "val_acc": [],
           "exact_step": [], "exact": []}
checkpoint = None  # the parameters after 150 steps, kept for section 8.8
start = time.perf_counter()
for step in range(1, 601):
    src, tgt = task.batch(data, 32)
    lr = ref.warmup_schedule(step, d_model=32, warmup_steps=50, factor=0.3)
    loss, acc = ref.train_step(model, optimizer, src, tgt, BOS, label_smoothing=0.1, lr=lr)
    history["step"].append(step)
    history["loss"].append(loss)
    history["acc"].append(acc)
    if step % 25 == 0:
        logits = model(val_src, ref.shift_right(val_tgt, BOS))
        history["val_step"].append(step)
        history["val_loss"].append(ref.softmax_cross_entropy(logits, val_tgt, PAD, 0.1)[0])
        history["val_acc"].append(ref.token_accuracy(logits, val_tgt, PAD))
    if step % 50 == 0:
        out = ref.greedy_decode(model, val_src, BOS, EOS, max_len=val_tgt.shape[1])
        history["exact_step"].append(step)
        history["exact"].append(np.mean([task.decode(o) == task.decode(t) for o, t in zip(out, val_tgt)]))
    if step == 150:
        checkpoint = {name: p.copy() for name, p in model.parameters().items()}
print(f"{model.num_parameters()} parameters, 600 steps in {time.perf_counter() - start:.1f} s; "
      f"validation: token accuracy {history['val_acc'][-1]:.3f}, exact reversals {history['exact'][-1]:.3f}")

# %% [markdown]
# Left: the loss. It falls fast once the warm-up is over and levels off at the floor label smoothing
# sets, $H(q) \approx 0.54$ (dotted), not at 0. Training (circles) and validation (squares) agree: the
# batches are fresh every step, so there is nothing to memorise. Right: token accuracy under teacher
# forcing, and the share of sequences reversed exactly when the model generates on its own. The second
# lags behind the first: one wrong token spoils a whole sequence, and more on that in 8.8.

# %% [demo]
smooth = np.convolve(history["loss"], np.ones(10) / 10, mode="valid")
floor = -np.sum(q * np.log(q))  # the entropy of the smoothed target, from section 8.3
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
# What did it learn? Reversal needs target position $t$ to read source position $n - 1 - t$, and
# nothing told the model so. Its cross-attention found it alone: in the last decoder block (averaged
# over its heads) every target row puts its weight on the mirrored source column, an anti-diagonal.
# The hatched column is the source padding, never attended.

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
# ## 8.8 Exposure bias
#
# Teacher forcing trains the decoder on true prefixes only. When it generates, it reads its own output,
# and after its first mistake it is reading a prefix unlike any it was trained on. Errors then breed
# errors: this is **exposure bias**. Take the model as it was after 150 steps (token accuracy about
# 0.85) and measure, position by position on the validation set, how often it is right in two ways:
# teacher-forced, reading the true prefix, and free-running, reading what it generated itself.
# Teacher-forced accuracy is roughly flat; free-running accuracy falls with the position, because every
# earlier slip is carried forward.

# %% [demo]
early = Seq2Seq(model.config).load_parameters(checkpoint)
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
# The fully trained model hardly shows the gap, because it almost never slips. Real tasks are never
# learned that perfectly, and there exposure bias is one reason generation goes worse than the training
# loss suggests.
# Remedies feed the model its own predictions during training (scheduled sampling) or train on whole
# generated sequences; the simplest defence, used in Lesson 9, is to search for a better output than
# the first guess at each step.
#
# ## Summary
#
# * One training step: shift the targets right, run the model once, take the loss, backpropagate,
#   let the optimiser move every parameter at this step's learning rate.
# * Thanks to the causal mask, one teacher-forced pass computes the predictions of all $m$ prefixes:
#   every target position is trained at once.
# * Label smoothing trains towards $q = (1 - \varepsilon) y + \varepsilon / V$: gradient $\hat p - q$,
#   averaged over the $N$ real tokens; the loss levels off at $H(q)$, not 0.
# * Adam moves each parameter by about lr in the direction of its averaged gradient,
#   $\hat m / (\sqrt{\hat v} + \varepsilon)$; bias correction makes the first steps the right length.
# * The learning rate warms up linearly and decays as $1/\sqrt{\text{step}}$, scaled by $d_{model}^{-0.5}$.
# * A model trained on true prefixes generates from its own: exposure bias lets early errors compound.
#
# **Next — Lesson 9, Decoding.** The trained model gives a distribution over the next token; turning
# it into a sequence is a choice. Greedy decoding, sampling with temperature, top-k and top-p, beam
# search with length normalisation, and the KV cache that makes every generated token cost one step,
# not a whole forward pass.
