# %% [markdown]
# # Lesson 9 — Decoding
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 9 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, decoding (choosing the next token from the logits and feeding it back in as the decoder's next input), outlined in red and the rest faded](../figures/course_map_09.svg)
#
# *The course map. In red: decoding, which picks the next token from the logits and appends it to the decoder's input for the next step. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# A trained model does not write sentences. At each position it gives a probability for every token
# of the vocabulary, given the source and the tokens before it. Turning those distributions into one
# output sequence is **decoding**, and it is a choice: take the likeliest token each time, draw one at
# random, or search among many candidate sequences for one whose total probability is high. Each step
# of any of these runs the decoder once more, and done naively each step recomputes everything the
# previous steps already computed. The KV cache removes that waste for greedy decoding and sampling
# (§9.5). The course's beam search runs without it: a cache there would have to be reordered
# each time hypotheses are dropped or duplicated.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. write greedy decoding that feeds the decoder its own output, reads the right position's logits,
#    and stops each sequence at its end-of-sequence token;
# 2. sample the next token with a temperature, top-k and top-p (nucleus) filtering, and say what each
#    does to the distribution;
# 3. trace a beam search by hand, write it with length normalisation, say why the normalisation is
#    needed, and say what beam search does and does not guarantee;
# 4. write one decoder step with a KV cache, where self-attention's cache grows one row per step and
#    cross-attention's keys and values are computed once;
# 5. show that cached decoding returns exactly the tokens of uncached decoding (its logits agree to
#    rounding), measure how much faster it is, and say what the cache does not save;
# 6. put the steps of one cached decoding step in order.
#
# **Recap of Lesson 8.** One training step shifts the targets right, runs the model once over all $m$
# positions (teacher forcing, made possible by the causal mask), takes the label-smoothed cross-entropy
# over the real tokens, backpropagates, and lets Adam move every parameter at the warm-up schedule's
# rate. A small model learned to reverse letter sequences, and its cross-attention drew the
# anti-diagonal of the alignment. Trained on true prefixes only, it must now generate from its own.
#
# **How exercises work.** Replace each stub (`raise NotImplementedError()`) with your code, run the
# cell, then run the test cell below it: it compares your function with the course's reference on
# many inputs and says *what* is wrong, often naming the misconception. The models your functions
# receive are the course library's `encdec.Seq2Seq` (and, for beam search, also the small stand-in model
# of §9.4), so a mistake in an earlier lesson never costs you points here.
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
import time

import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
import encdec as ref  # the course's reference implementation, used by the figures
from encdec import Adam, Seq2Seq, log_softmax, rms_norm, softmax
from encdec.toy import BOS, EOS, PAD, ReverseTask

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 9.1 A model to decode
#
# The figures of this lesson need a trained model. This one is Lesson 8's reverser, smaller so that it
# trains in a few seconds: one encoder and one decoder block, $d_{model} = 32$, sequences of 2 to 6
# letters out of 8. We also keep a copy of it from early in training (after 120 steps), when it is
# still unsure: decoding choices matter most when the model hesitates.

# %% [demo]
task = ReverseTask(n_letters=8, min_len=2, max_len=6)
model = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1,
                n_decoder_layers=1, rng=0)
optimizer = Adam(model.parameters())
data = np.random.default_rng(1)
start = time.perf_counter()
for step in range(1, 401):
    src, tgt = task.batch(data, 32)
    ref.train_step(model, optimizer, src, tgt, BOS, label_smoothing=0.1,
                   lr=ref.warmup_schedule(step, d_model=32, warmup_steps=50, factor=0.4))
    if step == 120:
        unsure = Seq2Seq(model.config).load_parameters(model.parameters())
val_src, val_tgt = task.batch(rng=2, size=256)
out = ref.greedy_decode(model, val_src, BOS, EOS, max_len=7)
exact = np.mean([task.decode(o) == task.decode(t) for o, t in zip(out, val_tgt)])
print(f"trained in {time.perf_counter() - start:.1f} s; greedy decoding reverses {exact:.1%} of 256 new sequences")

# %% [markdown]
# ## 9.2 Greedy decoding
#
# The decoder models $P(y_t \mid y_{<t}, x)$. To generate, start from `<bos>` and repeat: run the
# decoder on everything generated so far, take the distribution for the next token, pick a token,
# append it. **Greedy** decoding picks the most probable token every time.
#
# Which logits predict the next token? The decoder input is `<bos>` $y_1 \dots y_t$, $t + 1$ positions,
# and position $j$ predicts the token that follows it, $y_{j+1}$ (that is how it was trained: the
# inputs were the targets shifted right). So the prediction for $y_{t+1}$ sits at the **last** position,
# `logits[:, -1]`. Position 0 always predicts $y_1$, whatever has been generated since.
#
# Four rules make the output well-formed:
#
# * **Encode once.** The source does not change while decoding: `H_enc, src_mask = model.encode(src)`
#   before the loop, then `model.decode(tgt_in, H_enc, src_mask)` at each step.
# * **Ban `<bos>` and `<pad>`.** Neither is ever a real next token: set their logits to $-\infty$
#   before the argmax.
# * **Stop at `<eos>`.** A sequence ends with its first `<eos>`, which is kept in the output. In a batch,
#   a row that has ended gets `pad_id` from then on, and the loop stops once every row has ended, or
#   after `max_len` steps.
# * **Return only what was generated**: not the `<bos>` that started it.
#
# ### Exercise 9.1 — `greedy_decode(model, src, bos_id, eos_id, max_len)`
#
# `src` is one sequence `(n,)` or a batch `(B, n)`; return `(L,)` or `(B, L)`, where $L \le$ `max_len`
# is the length of the longest row. Grow the decoder input by concatenation, one column per step.

# %% [solution] greedy_decode
def greedy_decode(model, src, bos_id, eos_id, max_len):
    """The most probable token at every step, from <bos> until <eos> or max_len tokens.

    Inputs:  model    a Seq2Seq: model.encode(src) -> (H_enc, src_mask);
                      model.decode(tgt_in (B, t), H_enc, src_mask) -> logits (B, t, V)
             src      (n,) or (B, n) source ids, right-padded
             bos_id, eos_id  the ids of <bos> and <eos>; max_len  the most tokens to generate
    Returns: (L,) or (B, L) generated ids, without <bos>; each row ends at its first <eos> (kept)
             and holds model.config.pad_id after it; L <= max_len is the longest row.
    """
    ### BEGIN SOLUTION
    src = np.asarray(src)
    single = src.ndim == 1
    if single:
        src = src[None]  # (1, n)
    pad, B = model.config.pad_id, src.shape[0]
    H_enc, src_mask = model.encode(src)  # once: the source does not change
    tgt_in = np.full((B, 1), bos_id)  # (B, t): the decoder input grows one column per step
    out = np.zeros((B, 0), dtype=np.int64)
    done = np.zeros(B, dtype=bool)
    for _ in range(max_len):
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1].copy()  # (B, V): the last position predicts
        logits[:, [pad, bos_id]] = -np.inf
        token = np.where(done, pad, logits.argmax(axis=-1))  # (B,)
        out = np.concatenate([out, token[:, None]], axis=1)
        done |= token == eos_id
        if done.all():
            break
        tgt_in = np.concatenate([tgt_in, token[:, None]], axis=1)
    return out[0] if single else out
    ### END SOLUTION


# %% [test] 9.1

# %% [markdown]
# The trained reverser, decoded greedily (with the reference), and the half-trained one. Greedy
# decoding commits to its first choice at every step: once the half-trained model writes a wrong
# letter, nothing later can take it back.

# %% [demo]
sources = val_src[:6]
for s, good, shaky, t in zip(sources, ref.greedy_decode(model, sources, BOS, EOS, 7),
                             ref.greedy_decode(unsure, sources, BOS, EOS, 7), val_tgt):
    print(f"{task.decode(s):>7}  trained: {task.decode(good):<7}  after 120 steps: {task.decode(shaky):<7}"
          f"  (right: {task.decode(t)})")

# %% [markdown]
# ## 9.3 Sampling: temperature, top-k, top-p
#
# Greedy decoding always gives the same output. To get varied outputs (several candidate
# translations, a story that is not the blandest one possible) **sample** the next token from the
# model's distribution instead. Three knobs [CONFIG] shape that distribution first:
#
# * **Temperature** $T$: $p = \operatorname{softmax}(z / T)$. $T < 1$ sharpens the distribution
#   towards the argmax, $T > 1$ flattens it towards uniform, $T = 1$ leaves it as trained. As
#   $T \to 0$ all the mass goes to the argmax (shared equally by tied maxima), so $T = 0$ is defined as
#   that limit: the argmax itself, ties going to the lowest id. That is greedy.
# * **Top-k**: keep the tokens whose logit is at least the $k$-th largest ($k$ tokens; more only when
#   several tie with the $k$-th), drop the rest, renormalise.
# * **Top-p**, the *nucleus*: keep the **smallest** set of most probable tokens whose total
#   probability reaches $p$, drop the rest, renormalise. Sort the probabilities in decreasing order;
#   a token is kept when the mass of the tokens ranked above it is still **below** $p$. The token that
#   carries the total over $p$ is therefore kept, and the most probable token is always kept. Unlike
#   top-k, the nucleus is small when the model is sure and large when it is not. When probabilities
#   tie, the reference ranks the lower token id first. And a total that lands exactly on $p$ is at the
#   mercy of rounding: with probabilities 0.7, 0.2, 0.1 and $p = 0.9$ it keeps all three tokens, because
#   the mass ranked above the third comes out a hair below 0.9 (in floating point even 0.7 + 0.2 is
#   0.8999999999999999).
#
# They apply in this order: temperature, then top-k, then top-p on the renormalised top-k
# distribution. Then draw one token per row. With `rng` a NumPy `Generator`, the **inverse CDF** draws
# for a whole batch at once: for $u$ uniform in $[0, 1)$, the token is the number of entries of the
# cumulative distribution that are $\le u$.
#
# $$p = (0.5, 0.3, 0.2), \quad \text{cdf} = (0.5, 0.8, 1.0), \quad u = 0.65 \ \Rightarrow\ \#\{\text{cdf} \le 0.65\} = 1 \ \Rightarrow\ \text{token } 1 .$$
#
# The cumulative sum can end a hair below 1 through rounding. So scale $u$ by its last entry,
# `u = rng.random(...) * cdf[..., -1:]`, as the reference does; then the count can never pass the last
# token.
#
# ### Exercise 9.2 — `sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None)`
#
# Draw every random number from `rng` (`rng = np.random.default_rng(rng)` accepts a seed or a
# Generator), so that the same seed gives the same tokens. The test cannot compare your random
# draws with the reference's; it draws thousands of times and checks that no token outside the
# allowed set ever appears and that the frequencies match the probabilities.

# %% [solution] sample_next_token
def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """Draw one token id per row from softmax(logits / temperature), filtered by top-k, then top-p.

    Inputs:  logits       (..., V) float
             temperature  T >= 0 (0: the argmax, no randomness)
             top_k        keep the tokens whose logit is at least the k-th largest (None: all)
             top_p        keep the smallest set of most probable tokens whose probability reaches p (None: all)
             rng          a numpy Generator (or a seed): every random number comes from it
    Returns: integer ids of shape (...): one token per row of logits.
    """
    ### BEGIN SOLUTION
    rng = np.random.default_rng(rng)
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(z, axis=-1)
    z = z / temperature
    if top_k is not None:
        kth = np.sort(z, axis=-1)[..., -top_k][..., None]  # (..., 1): the k-th largest logit
        z = np.where(z >= kth, z, -np.inf)
    p = softmax(z, axis=-1)  # (..., V)
    if top_p is not None:
        order = np.argsort(-p, axis=-1, kind="stable")  # most probable first
        sorted_p = np.take_along_axis(p, order, axis=-1)
        above = np.cumsum(sorted_p, axis=-1) - sorted_p  # the mass ranked above each token
        keep = np.zeros(p.shape, dtype=bool)
        np.put_along_axis(keep, order, above < top_p, axis=-1)
        p = np.where(keep, p, 0.0)
        p = p / p.sum(axis=-1, keepdims=True)
    cdf = np.cumsum(p, axis=-1)  # (..., V)
    u = rng.random(p.shape[:-1] + (1,)) * cdf[..., -1:]  # (..., 1): below the last entry, even if rounding left it under 1
    return np.minimum(np.sum(cdf <= u, axis=-1), p.shape[-1] - 1)  # the minimum is only a guard
    ### END SOLUTION


# %% [test] 9.2

# %% [markdown]
# What the knobs do to one distribution over eight letters (computed with the reference
# `next_token_distribution`, the distribution `sample_next_token` draws from). Top row: the
# temperature reshapes every probability. Bottom row: top-p cuts the tail, and the red bars are the
# tokens it keeps; each title says how many.

# %% [markdown]
# **Self-check 9.1 — predict, then run.** At $T = 1$ the eight letters have probabilities 0.371, 0.249,
# 0.151, 0.101, … (cumulative 0.371, 0.619, 0.770, …, and 0.990 before the last letter). How many
# letters does top-p keep at $p = 1.0$, and how many at $p = 0.6$?
#
# <details><summary>Answer</summary>
#
# At $p = 1.0$ all 8: the mass ranked above the last letter is 0.990 < 1, so even the least likely
# letter is kept, and $p = 1$ means no filtering. At $p = 0.6$, 2 letters, not 1: the first letter
# alone holds only 0.371 < 0.6, and the second is kept because the mass ranked above it (0.371) is
# still below $p$. The token that carries the total over $p$ belongs to the nucleus. (At $p = 0.37$
# only one letter would be kept; at $p = 0.371$, two.)
#
# </details>

# %% [demo]
letters = task.letters
logits = np.array([2.0, 1.6, 1.1, 0.7, 0.2, -0.3, -0.9, -1.6])
fig, axes = plotting.figure(2, 3, width=3.3, height=2.5)
for ax, T in zip(axes[0], (0.5, 1.0, 2.0)):
    p = ref.next_token_distribution(logits, temperature=T)
    plotting.bars(p, labels=letters, ax=ax, title=f"temperature T = {T}")
    ax.set_ylim(0, 0.8)
for ax, top_p in zip(axes[1], (1.0, 0.9, 0.6)):
    p = ref.next_token_distribution(logits, top_p=top_p)
    plotting.bars(p, labels=letters, ax=ax, highlight=list(np.flatnonzero(p > 0)) if top_p < 1 else None,
                  title=f"top-p, p = {top_p}: {int(np.sum(p > 0))} tokens kept")
    ax.set_ylim(0, 0.8)
plt.show()

# %% [markdown]
# And what they do to whole outputs. The trained reverser samples 200 outputs for one source at each
# setting (a small sampling loop over the reference `decode_step` of §9.5; the first six are
# shown). At low temperature almost every sample is greedy decoding's answer. As the temperature rises
# the samples spread over ever more outputs, and most are wrong: one unlikely letter anywhere spoils a
# sequence. Top-p cuts the unlikely tail at every step. At the same temperature, about half of the
# samples or more are right again (instead of almost none), and they spread over only a handful of
# outputs.

# %% [demo]
def sample_decode(model, src, temperature, top_p, rng, max_len=7):
    """Ancestral sampling: each token drawn from the model given the tokens drawn before it."""
    H_enc, src_mask = model.encode(src)
    cache = ref.KVCache(model, H_enc, src_mask)
    token, out = np.full(src.shape[0], BOS), []
    for _ in range(max_len):
        logits = ref.decode_step(model, token, cache)
        logits[:, [PAD, BOS]] = -np.inf
        token = ref.sample_next_token(logits, temperature, top_p=top_p, rng=rng)
        out.append(token)
    return np.stack(out, axis=1)


rng = np.random.default_rng(0)
i = 0  # the first validation sequence
source = val_src[i : i + 1].repeat(200, axis=0)  # one source, 200 samples in one batch
print(f"source {task.decode(val_src[i])!r}, right answer {task.decode(val_tgt[i])!r}")
for T, top_p in ((0.5, None), (1.0, None), (2.0, None), (2.0, 0.5)):
    samples = [task.decode(s) for s in sample_decode(model, source, T, top_p, rng)]
    right = np.mean([s == task.decode(val_tgt[i]) for s in samples])
    print(f"T = {T}, top_p = {str(top_p):<4}: {right:6.1%} right, {len(set(samples)):3d} different outputs;  "
          + " ".join(samples[:6]))


# %% [markdown]
# ## 9.4 Beam search
#
# Greedy decoding maximises each step, not the sequence: a slightly less likely first token can lead to
# a much likelier whole output. The probability of a sequence is the product of its tokens'
# probabilities, so its log is a sum:
#
# $$\log P(y \mid x) = \sum_{t=1}^{|y|} \log p(y_t \mid y_{<t}, x).$$
#
# **Beam search** keeps the `beam_width` [CONFIG] best partial outputs (*hypotheses*) instead of one. At
# every step it extends each live hypothesis by every allowed token, ranks all these candidates by
# their total log-probability, and keeps the best ones.
#
# Every log-probability is at most 0 (negative unless the model is certain), so the total favours
# **short** outputs: a sequence that stops early has fewer negative terms. To compare finished
# hypotheses of different lengths, divide by a power of the length:
#
# $$\text{score}(y) = \frac{\log P(y \mid x)}{|y|^{\alpha}}, \qquad \alpha \in [0, 1]\ \text{[CONFIG]}.$$
#
# $\alpha = 0$ is the raw total, $\alpha = 1$ the mean log-probability per token. (This is the simplest of
# several conventions; GNMT, for one, divides by $((5+|y|)/6)^{\alpha}$.) Within one step all candidates
# have the same length, so the search itself ranks by the plain total; the normalised score only ranks
# the results.
#
# Small details decide which hypotheses survive, so here are the **rules of the course's beam search**,
# exactly. The reference `beam_search` follows them, and so will yours:
#
# * **What is scored.** A candidate's total log-probability: its parent's total plus the new token's
#   `log_softmax`, taken after `<bos>` and `<pad>` are banned (their logits set to $-\infty$ **before**
#   `log_softmax`, so that the allowed tokens' probabilities sum to 1).
# * **The walk.** All candidates of a step (every live hypothesis extended by every token) are ranked by
#   their totals, best first, from rank 0, and walked in that order until the new beam holds
#   `beam_width` live hypotheses (or the allowed candidates run out).
# * **When a hypothesis finishes.** When its new token is `<eos>`, and only if that candidate's rank is
#   below `beam_width`. An `<eos>` candidate ranked lower is discarded.
# * **Finished hypotheses take no slot.** A finished hypothesis leaves the beam, and the walk goes on
#   until the beam holds `beam_width` live hypotheses again.
# * **When the search stops.** As soon as `beam_width` hypotheses have finished (counted over all
#   steps), or after `max_len` steps, or when no live hypothesis is left.
# * **The length.** $|y|$ counts the generated tokens, `<eos>` included and `<bos>` excluded. It is used
#   only to rank the results.
# * **What is returned.** A list of at most `beam_width` pairs (tokens, normalised score), best first:
#   the finished hypotheses, then, only if fewer than `beam_width` finished, the best live ones.
#
# ### A beam search by hand
#
# A model small enough to follow with pencil and paper. Its vocabulary is `<pad>`, `<bos>`, `<eos>`,
# `a`, `b` (ids 0 to 4), and it ignores the source: the next token's probabilities depend only on the
# tokens generated so far. After the ban, the allowed tokens have exactly these probabilities (a third
# each after any other prefix):
#
# | generated so far | P(a) | P(b) | P(`<eos>`) |
# |---|---|---|---|
# | (nothing) | 0.5 | 0.4 | 0.1 |
# | a | 0.3 | 0.2 | 0.5 |
# | b | 0.9 | 0.05 | 0.05 |
# | a a | 0.1 | 0.3 | 0.6 |
# | b a | 0.3 | 0.2 | 0.5 |
# | b a a | 0.005 | 0.005 | 0.99 |
#
# Take `beam_width` = 2, $\alpha = 1$ and `max_len` = 5. A candidate's total is the log of the product of
# its tokens' probabilities. At each step the candidates are listed best first, with the rank the walk
# gives them; "—" marks candidates the walk never reaches, because the beam is full before them:
#
# | step | beam going in | rank | candidate | probability | total (its log) | what happens |
# |---|---|---|---|---|---|---|
# | 1 | `<bos>` | 0 | a | 0.5 | −0.6931 | joins the beam |
# | | | 1 | b | 0.4 | −0.9163 | joins the beam, which is now full |
# | | | — | `<eos>` | 0.1 | −2.3026 | never reached |
# | 2 | a, b | 0 | b a | 0.4 × 0.9 = 0.36 | −1.0217 | joins the beam |
# | | | 1 | a `<eos>` | 0.5 × 0.5 = 0.25 | −1.3863 | **finishes** (rank 1 < 2) and takes no slot |
# | | | 2 | a a | 0.5 × 0.3 = 0.15 | −1.8971 | joins the beam, which is full again |
# | | | — | a b; b b; b `<eos>` | 0.1; 0.02; 0.02 | −2.3026; −3.9120; −3.9120 | never reached |
# | 3 | b a, a a | 0 | b a `<eos>` | 0.36 × 0.5 = 0.18 | −1.7148 | **finishes** (rank 0 < 2) |
# | | | 1 | b a a | 0.36 × 0.3 = 0.108 | −2.2256 | joins the beam |
# | | | 2 | a a `<eos>` | 0.15 × 0.6 = 0.09 | −2.4079 | **discarded**: an `<eos>` candidate of rank 2, not below 2 |
# | | | 3 | b a b | 0.36 × 0.2 = 0.072 | −2.6311 | joins the beam, which is full |
# | | | — | a a b; a a a | 0.045; 0.015 | −3.1011; −4.1997 | never reached |
#
# Two hypotheses have finished, so the search stops after step 3, although `b a a` and `b a b` are still
# live. The results are ranked by normalised score, the length counting `<eos>`: `b a <eos>` scores
# $-1.7148 / 3 = -0.5716$ and `a <eos>` scores $-1.3863 / 2 = -0.6931$. Beam search returns
# `[(b a <eos>, −0.5716), (a <eos>, −0.6931)]`.
#
# The same search as a tree, drawn from the table above (the model is `WorkedExampleModel` in the
# course's checks; the test of Exercise 9.3 uses it too). One column per step: the orange tokens are the
# hypotheses the beam keeps, boxed ones ended with `<eos>`, light-grey ones are candidates it let go
# (here every candidate is drawn), and the red path is the output it returns. The numbers are total
# log-probabilities.

# %% [demo]
from encdec.checks.lesson09 import WORKED_EXAMPLE, WorkedExampleModel

example = WorkedExampleModel()


def total(path):
    """The total log-probability of a path of tokens: the sum of log P(token | the tokens before it)."""
    return sum(np.log(WORKED_EXAMPLE[path[:i]][token]) for i, token in enumerate(path))


trace = [  # every candidate of the table above, step by step, and what the search did with it
    ("a", "kept"), ("b", "kept"), ("<eos>", "dropped"),
    ("b a", "kept"), ("a <eos>", "finished"), ("a a", "kept"),
    ("a b", "dropped"), ("b b", "dropped"), ("b <eos>", "dropped"),
    ("b a <eos>", "finished"), ("b a a", "kept"), ("a a <eos>", "dropped"),
    ("b a b", "kept"), ("a a b", "dropped"), ("a a a", "dropped"),
]
nodes, node_id = [(0, None, 0, "<bos>", 0.0, "kept")], {(): 0}  # (id, parent id, step, token, total, state)
for text, state in trace:
    path = tuple(text.split())
    node_id[path] = len(nodes)
    nodes.append((node_id[path], node_id[path[:-1]], len(path), path[-1], total(path), state))
returned = [node_id[path] for path in [(), ("b",), ("b", "a"), ("b", "a", "<eos>")]]
plotting.beam_tree(nodes, best=returned, title="the worked example: beam width 2, alpha = 1")
plt.show()

# %% [markdown]
# **Self-check 9.2 — predict, then run.** The next cell runs the reference `beam_search` on this model
# with the settings above, then with $\alpha = 0$, then with `beam_width` = 1, and then greedy decoding.
# Predict each output. Which has the higher probability: greedy decoding's output or beam search's
# `b a <eos>`?
#
# <details><summary>Answer</summary>
#
# Width 2 with $\alpha = 1$ gives the table's result. With $\alpha = 0$ the search is the same but the
# raw totals rank the results, so the short `a <eos>` (−1.3863) comes before `b a <eos>` (−1.7148). With
# width 1 the beam keeps only `a` at step 1; at step 2 `a <eos>` ranks first, finishes, and one finished
# hypothesis is enough to stop: the output is `a <eos>` (−0.6931). Greedy decoding takes `a` (0.5), then
# `<eos>` (0.5), so it returns `a <eos>` too: width 1 is greedy decoding. Its probability, 0.25, is
# *higher* than that of beam search's `b a <eos>`, 0.18. Beam search with $\alpha = 1$ prefers
# `b a <eos>` for its better score per token, not for a higher probability.
#
# </details>

# %% [demo]
example_src = np.array([3, 4])  # any source will do: this model ignores it
for width, alpha in ((2, 1.0), (2, 0.0), (1, 1.0)):
    results = ref.beam_search(example, example_src, BOS, EOS, beam_width=width, max_len=5, alpha=alpha)
    print(f"beam_width={width}, alpha={alpha}: " + ", ".join(f"{example.spell(t)} ({s:.4f})" for t, s in results))
print("greedy decoding:", example.spell(ref.greedy_decode(example, example_src, BOS, EOS, 5, use_cache=False)))

# %% [markdown]
# **Self-check 9.3 — explain why.** When the search stopped after step 3, `b a a` was still in the beam,
# and the table gives `<eos>` a probability of 0.99 after it. What normalised score would `b a a <eos>`
# have had? Why does beam search not return it, and would a beam of width 3 find it?
#
# <details><summary>Answer</summary>
#
# Its probability would be $0.108 \times 0.99 = 0.10692$, a total of $-2.2357$, and over 4 tokens a
# normalised score of $-0.5589$: better than the $-0.5716$ that beam search returns. The search never
# extends `b a a`, because it stops as soon as `beam_width` hypotheses have finished, however their
# scores compare with the live ones. A width of 3 does no better: the bare `<eos>` finishes at step 1
# (rank 2, below 3), `a <eos>` at step 2, and at step 3 `b a <eos>` and `a a <eos>` finish too: four
# finished hypotheses, so the search stops, and ranked by normalised score it returns `b a <eos>`,
# `a <eos>` and `a a <eos>`.
#
# </details>

# %% [markdown]
# **What beam search guarantees, and what it does not.** Beam search is a heuristic, not an exact
# search. It keeps only `beam_width` hypotheses, and it stops as soon as `beam_width` of them have
# finished, even when a live hypothesis could still end with a better normalised score, as `b a a <eos>`
# would have. What it does guarantee is modest: its results are ranked by their exact normalised
# scores, finished ones first, and with `beam_width` = 1 it returns greedy decoding's output. It does
# not guarantee the most probable output, nor the best-scoring one, nor even one as good as greedy
# decoding's: greedy's path can be pushed out of the beam, and the search can stop before a better
# hypothesis finishes. A wider beam therefore usually finds a better output, but not always, and not
# always a better one than greedy decoding's.
#
# ### Exercise 9.3 — `beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0)`
#
# One source sequence `(n,)`. Follow the rules of the course's beam search, the same as in the worked
# example:
#
# * **What is scored.** A candidate's total log-probability: its parent's total plus the new token's
#   `log_softmax`, taken after `<bos>` and `<pad>` are banned (their logits set to $-\infty$ **before**
#   `log_softmax`, so that the allowed tokens' probabilities sum to 1).
# * **The walk.** All candidates of a step (every live hypothesis extended by every token) are ranked by
#   their totals, best first, from rank 0, and walked in that order until the new beam holds
#   `beam_width` live hypotheses (or the allowed candidates run out).
# * **When a hypothesis finishes.** When its new token is `<eos>`, and only if that candidate's rank is
#   below `beam_width`. An `<eos>` candidate ranked lower is discarded.
# * **Finished hypotheses take no slot.** A finished hypothesis leaves the beam, and the walk goes on
#   until the beam holds `beam_width` live hypotheses again.
# * **When the search stops.** As soon as `beam_width` hypotheses have finished (counted over all
#   steps), or after `max_len` steps, or when no live hypothesis is left.
# * **The length.** $|y|$ counts the generated tokens, `<eos>` included and `<bos>` excluded. It is used
#   only to rank the results.
# * **What is returned.** A list of at most `beam_width` pairs (tokens, normalised score), best first:
#   the finished hypotheses, then, only if fewer than `beam_width` finished, the best live ones.
#
# Run the decoder on all live hypotheses at once: stack them into a `(k, t)` decoder input; the encoder
# output `(1, n, d)` broadcasts against it. The test starts with the worked example: on
# `WorkedExampleModel()`, with `beam_width` = 2, your function must return `b a <eos>` (−0.5716), then
# `a <eos>` (−0.6931).

# %% [solution] beam_search
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    """Length-normalised beam search for one source sequence.

    Inputs:  model; src (n,) source ids; bos_id, eos_id; beam_width (k >= 1) and max_len [CONFIG];
             alpha the length-normalisation exponent [CONFIG]
    Returns: a list of at most beam_width pairs (tokens (L,), score), best first, where
             score = sum of the tokens' log-probabilities / L^alpha (L counts <eos>): the finished
             hypotheses (ending in <eos>), then unfinished ones if fewer than beam_width finished.
    """
    ### BEGIN SOLUTION
    banned = [model.config.pad_id, bos_id]
    H_enc, src_mask = model.encode(np.asarray(src)[None])  # (1, n, d_model): once
    live = [((), 0.0)]  # (tokens, total log-probability)
    finished = []
    for _ in range(max_len):
        tgt_in = np.array([(bos_id,) + toks for toks, _ in live])  # (k, t)
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1].copy()  # (k, V)
        logits[:, banned] = -np.inf
        total = np.array([s for _, s in live])[:, None] + log_softmax(logits)  # (k, V)
        new_live = []
        for rank, flat in enumerate(np.argsort(-total, axis=None, kind="stable")):
            b, tok = divmod(int(flat), total.shape[1])
            if not np.isfinite(total[b, tok]):
                break
            hyp = (live[b][0] + (tok,), float(total[b, tok]))
            if tok == eos_id:
                if rank < beam_width:
                    finished.append(hyp)
            else:
                new_live.append(hyp)
            if len(new_live) == beam_width:
                break
        live = new_live
        if len(finished) >= beam_width or not live:
            break

    def score(hyp):
        return hyp[1] / len(hyp[0]) ** alpha

    best = sorted(finished, key=score, reverse=True)[:beam_width]
    best += sorted(live, key=score, reverse=True)[: beam_width - len(best)]
    return [(np.array(toks), score((toks, s))) for toks, s in best]
    ### END SOLUTION


# %% [test] 9.3

# %% [markdown]
# Now a real model: the half-trained reverser, with a beam of width 3, over the 256 validation
# sequences. Beam search helps on balance, but not everywhere: it fixes some of greedy decoding's
# errors and breaks some of its right answers. The tree is drawn for a short source where greedy
# decoding goes wrong and beam search gets it right, as in the worked example, though here only the
# best dropped candidate of each step is drawn. Greedy decoding follows the best token of every step;
# the beam also keeps the runners-up alive, and here the length normalisation lets a longer hypothesis
# beat a shorter one that finished earlier with a better total (with $\alpha = 0$ the search would return
# the shorter, wrong one). The search below is the reference algorithm with a record of every step; it
# checks that it returns what `ref.beam_search` returns.

# %% [demo]
def traced_beam_search(model, src, beam_width, max_len, alpha=1.0, show_dropped=2):
    """ref.beam_search's algorithm, also returning the tree: (results, nodes, best node ids)."""
    H_enc, src_mask = model.encode(src[None])
    nodes = [(0, None, 0, "<bos>", 0.0, "kept")]
    live, finished = [((), 0.0, 0)], []  # (tokens, total, node id)
    for step in range(1, max_len + 1):
        tgt_in = np.array([(BOS,) + toks for toks, _, _ in live])
        logits = model.decode(tgt_in, H_enc, src_mask)[:, -1].copy()
        logits[:, [PAD, BOS]] = -np.inf
        total = np.array([s for _, s, _ in live])[:, None] + log_softmax(logits)
        new_live, dropped = [], 0
        for rank, flat in enumerate(np.argsort(-total, axis=None, kind="stable")):
            b, tok = divmod(int(flat), total.shape[1])
            hyp = (live[b][0] + (tok,), float(total[b, tok]), len(nodes))
            if tok == EOS and rank < beam_width:
                finished.append(hyp)
                state = "finished"
            elif tok != EOS and len(new_live) < beam_width:
                new_live.append(hyp)
                state = "kept"
            else:
                state = "dropped"
                dropped += 1
            if state != "dropped" or dropped <= show_dropped:
                nodes.append((len(nodes), live[b][2], step, task.vocab[tok], hyp[1], state))
            if len(new_live) == beam_width and dropped >= show_dropped:
                break
        live = new_live
        if len(finished) >= beam_width or not live:
            break
    ranked = sorted(finished, key=lambda h: h[1] / len(h[0]) ** alpha, reverse=True)[:beam_width]
    ranked += sorted(live, key=lambda h: h[1] / len(h[0]) ** alpha, reverse=True)[: beam_width - len(ranked)]
    parent = {n[0]: n[1] for n in nodes}
    path, node = [], ranked[0][2]
    while node is not None:
        path.append(node)
        node = parent[node]
    return ranked, nodes, path


greedy = ref.greedy_decode(unsure, val_src, BOS, EOS, 7)
beams = [ref.beam_search(unsure, s, BOS, EOS, beam_width=3, max_len=7)[0][0] for s in val_src]
right = [task.decode(t) for t in val_tgt]
g_ok = np.array([task.decode(g) == r for g, r in zip(greedy, right)])
b_ok = np.array([task.decode(b) == r for b, r in zip(beams, right)])
print(f"the half-trained model reverses {g_ok.mean():.1%} of 256 sequences with greedy decoding, "
      f"{b_ok.mean():.1%} with beam search of width 3")
print(f"beam search fixes {np.sum(b_ok & ~g_ok)} of greedy decoding's errors and breaks {np.sum(g_ok & ~b_ok)} "
      "of its right answers")


def raw_total_wins(i):
    """True if with alpha = 0 (raw totals) beam search returns a wrong output for source i."""
    return task.decode(ref.beam_search(unsure, val_src[i], BOS, EOS, 3, 7, alpha=0.0)[0][0]) != right[i]


# a short source that beam search gets right, greedy decoding wrong, and alpha = 0 wrong too
i = next(i for i in range(len(val_src)) if b_ok[i] and not g_ok[i] and np.sum(val_src[i] != PAD) <= 4
         and raw_total_wins(i))
source = val_src[i]
ranked, nodes, path = traced_beam_search(unsure, source, beam_width=3, max_len=7, show_dropped=1)
reference = ref.beam_search(unsure, source, BOS, EOS, beam_width=3, max_len=7)
assert [list(t) for t, _, _ in ranked] == [list(t) for t, _ in reference]
plotting.beam_tree(nodes, best=path, title=f"beam search, width 3: {task.decode(source)!r} -> "
                   f"{task.decode(reference[0][0])!r} (greedy: {task.decode(ref.greedy_decode(unsure, source, BOS, EOS, 7))!r})")
plt.show()
for toks, score in reference:
    print(f"{task.decode(toks):<8} length {len(toks)}, normalised score {score:.3f}")
print("with alpha = 0 the first would be", repr(task.decode(ref.beam_search(unsure, source, BOS, EOS, 3, 7, alpha=0.0)[0][0])))

# %% [markdown]
# ## 9.5 The KV cache
#
# Look at what greedy decoding recomputes. At step $t$ it runs the decoder over all $t$ positions of
# `<bos>` $y_1 \dots y_{t-1}$, and keeps only the last position's logits. Yet nothing about the earlier
# positions has changed since the previous step:
#
# * **Self-attention.** Because of the causal mask, position $j$ never looks at anything after it, so
#   its hidden states, and the keys and values $K_j, V_j$ every block computes from them, are the same
#   at every later step. Compute them once, when position $j$ is fed, and keep them. At each step only
#   the **new** token goes through the blocks: its query attends over the cached keys and values plus
#   its own. The cache grows by **one row per step** (no mask is needed: it holds only the past).
# * **Cross-attention.** Its keys and values come from the encoder output $H_{\text{enc}}$, which does
#   not change at all while decoding. Compute $K = H_{\text{enc}} W_k$ and $V = H_{\text{enc}} W_v$
#   **once**, before the first step, for every decoder block.
#
# ![The KV cache over four decoding steps: cross-attention's keys and values, computed once from H_enc, on the left; at each step one new token's key and value rows, in red, are appended to the self-attention cache, which grows by one row per step, and the new token's single query meets all t cached keys plus the n cross keys](../figures/kv_cache.svg)
#
# *The KV cache over four steps (`KVCache`, `decode_step`). Each step feeds one token and appends its
# key and value rows (red); the blue cross-attention keys and values are computed once per sentence.*
#
# Uncached, generating $L$ tokens pushes $1 + 2 + \dots + L = L(L+1)/2 \approx L^2/2$ positions through
# the decoder's projections, feed-forward networks and output head; cached, $L$. The cache does not make
# attention free: at step $t$ the new query still attends over all $t$ cached keys (the figure's
# "1 query × $t$ keys"). Self-attention therefore still costs about $L^2/2$ query–key products over the
# run, against about $L^3/3$ without the cache, which recomputes every earlier row too. Cross-attention's
# keys and values are projected once instead of once per step, though each step still scores its one
# query against all $n$ of them. And the cache takes memory that grows with $t$: $2t$ rows of $d_{model}$
# numbers per block and per sequence. The cache is [STATE]: the running program computes it from the
# source and the tokens generated so far, and it lives for one decoding run. Here it is, given (it is
# the course library's `KVCache`, line for line):

# %%
class KVCache:
    """[STATE] of one decoding run. For every decoder block i:

    self_k[i], self_v[i]    (..., h, t, d_k) keys and values of the t tokens fed so far (None before
                            the first); one row more per step
    cross_k[i], cross_v[i]  (..., h, n, d_k) keys and values of the encoder output, computed once, here
    src_mask                (..., 1, 1, n) the source padding mask, for cross-attention
    length                  t, the number of tokens fed so far: the position of the next one
    """

    def __init__(self, model, H_enc, src_mask):
        self.src_mask = src_mask
        self.self_k = [None] * len(model.decoder)
        self.self_v = [None] * len(model.decoder)
        self.cross_k, self.cross_v = [], []
        for block in model.decoder:
            K, V = block.cross_attn.project_kv(H_enc)  # (..., h, n, d_k) each, once per decoding run
            self.cross_k.append(K)
            self.cross_v.append(V)
        self.length = 0

    def append(self, i, K_new, V_new):
        """Add one row (..., h, 1, d_k) to block i's self-attention cache; return all of it."""
        if self.self_k[i] is None:
            self.self_k[i], self.self_v[i] = K_new, V_new
        else:
            self.self_k[i] = np.concatenate([self.self_k[i], K_new], axis=-2)
            self.self_v[i] = np.concatenate([self.self_v[i], V_new], axis=-2)
        return self.self_k[i], self.self_v[i]


# %% [markdown]
# **Self-check 9.4 — explain why.** The cache keeps every earlier position's keys and values, but never
# its queries, nor its hidden states. Why is that enough to give the same logits as running the decoder
# over the whole prefix?
#
# <details><summary>Answer</summary>
#
# A query is used once: at the step its position is fed, to attend over the keys and values so far.
# Because of the causal mask, later steps never change an earlier position's output, so its query is
# never needed again. Later queries need the earlier keys and values, and those are exactly what the
# cache stores. Nor are the earlier hidden states needed: the next block reads them only through its
# own keys and values, which are cached per block. The same holds for cross-attention: its query is new
# at every step, while its keys and values depend only on $H_{\text{enc}}$.
#
# </details>

# %% [markdown]
# One cached step feeds the newest token through the decoder. Every `MultiHeadAttention` of the course
# library splits its work in two, so that keys and values can be computed apart from queries:
#
# * `K, V = attn.project_kv(x)`: `x (..., T, d_model)` to keys and values split into heads,
#   `(..., h, T, d_k)` each;
# * `out, weights = attn.attend(query_input, K, V, mask=None)`: the queries of `query_input
#   (..., m, d_model)` attend over the given `K, V`; `out` is `(..., m, d_model)`, after $W_o$.
#
# and `model.embed(tokens, offset)` embeds `tokens (..., T)` at positions `offset, ..., offset + T - 1`.
# The step, for tokens of shape `(...)` (one per sequence) fed at position $t$ = `cache.length`:
#
# 1. `x = model.embed(tokens[..., None], offset=t)`: shape `(..., 1, d_model)`;
# 2. in every decoder block `i`, the three pre-norm sublayers of Lesson 5, each added to `x`:
#    self-attention (normalise with `norm1_gamma`, project to one new row of K, V, append it to the
#    cache, attend over all cached rows), cross-attention (normalise with `norm2_gamma`, attend over
#    `cache.cross_k[i], cache.cross_v[i]` with `cache.src_mask`), the feed-forward network (`norm3_gamma`);
#    every RMSNorm uses the model's constant, `rms_norm(x, gamma, model.config.eps)`, as the model does;
# 3. one more token is cached: `cache.length += 1`;
# 4. the final RMSNorm (`model.decoder_norm_gamma`, `model.config.eps`) and the tied head `@ model.embedding.T`;
#    return the logits of the one new position, shape `(..., V)`.
#
# ### Exercise 9.4 — `decode_step(model, tokens, cache)`
#
# The test feeds a few tokens one step at a time and compares the logits of every step with the full
# decoder's, and checks that the self-attention cache holds one more row after each step.

# %% [solution] decode_step
def decode_step(model, tokens, cache):
    """Feed one new token per sequence through the decoder, with the KV cache.

    Inputs:  model   a Seq2Seq
             tokens  (...) one token id per sequence, fed at position t = cache.length
             cache   a KVCache for this decoding run [STATE]: updated in place (one more row in each
                     block's self-attention cache, length + 1)
    Returns: logits (..., V) for the token that follows.
    """
    ### BEGIN SOLUTION
    eps = model.config.eps  # the model's RMSNorm constant, the same in every norm
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)  # (..., 1, d_model)
    for i, block in enumerate(model.decoder):
        h = rms_norm(x, block.norm1_gamma, eps)
        K, V = cache.append(i, *block.self_attn.project_kv(h))  # (..., h, t + 1, d_k): the past and this token
        x = x + block.self_attn.attend(h, K, V)[0]  # no mask: the cache holds only the past
        h = rms_norm(x, block.norm2_gamma, eps)
        x = x + block.cross_attn.attend(h, cache.cross_k[i], cache.cross_v[i], cache.src_mask)[0]
        x = x + block.ffn(rms_norm(x, block.norm3_gamma, eps))
    cache.length += 1
    h = rms_norm(x, model.decoder_norm_gamma, eps)
    return (h @ model.embedding.T)[..., 0, :]  # (..., V)
    ### END SOLUTION


# %% [test] 9.4

# %% [markdown]
# ### Exercise 9.5 — `cached_greedy_decode(model, src, bos_id, eos_id, max_len)`
#
# Greedy decoding again, with the same rules and the same output as Exercise 9.1, but through the cache:
# encode once, make one `KVCache` before the loop (that computes cross-attention's keys and values),
# and at every step feed **only the newest token** to `decode_step`: `<bos>` first, then each token
# just chosen. The test checks that the tokens equal greedy decoding's and that the decoder never runs
# over the whole prefix; if cross-attention's keys and values are recomputed at every step, it says so
# in a hint (correct, only slower) and takes no points for it.
#
# (While this exercise is checked, the reference `decode_step` and `KVCache` replace yours, so a mistake
# in Exercise 9.4 is never charged twice.)

# %% [solution] cached_greedy_decode
def cached_greedy_decode(model, src, bos_id, eos_id, max_len):
    """Greedy decoding with a KV cache: exactly greedy_decode's tokens, one new token per step.

    Inputs:  model; src (n,) or (B, n) source ids; bos_id, eos_id; max_len the most tokens to generate
    Returns: (L,) or (B, L) generated ids, as greedy_decode returns them.
    """
    ### BEGIN SOLUTION
    src = np.asarray(src)
    single = src.ndim == 1
    if single:
        src = src[None]
    pad, B = model.config.pad_id, src.shape[0]
    H_enc, src_mask = model.encode(src)
    cache = KVCache(model, H_enc, src_mask)  # cross-attention K, V: computed here, once
    token = np.full(B, bos_id)
    out = np.zeros((B, 0), dtype=np.int64)
    done = np.zeros(B, dtype=bool)
    for _ in range(max_len):
        logits = decode_step(model, token, cache).copy()  # (B, V): only the newest token is fed
        logits[:, [pad, bos_id]] = -np.inf
        token = np.where(done, pad, logits.argmax(axis=-1))
        out = np.concatenate([out, token[:, None]], axis=1)
        done |= token == eos_id
        if done.all():
            break
    return out[0] if single else out
    ### END SOLUTION


# %% [test] 9.5

# %% [markdown]
# Cached and uncached decoding return **identical** tokens, not merely similar ones. The logits are not
# bit-for-bit equal: the cached step multiplies matrices of other shapes (one row of scores instead of
# a $t \times t$ matrix), so its sums round differently, by about $10^{-15}$ to $10^{-14}$ here. An
# argmax could only change if two logits were that close to a tie. Checked here on the trained reverser
# and on a random model, over hundreds of sequences (with the reference implementation). For the
# logits, the same prefixes go through the decoder both ways: uncached, the whole prefix at every step,
# as greedy decoding without the cache does; cached, one token per step.

# %% [demo]
wide = Seq2Seq(vocab_size=32, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, rng=1)
wide_src = np.random.default_rng(3).integers(3, 32, size=(64, 12))
for name, m, s in (("trained reverser", model, val_src), ("random model, 2 + 2 blocks", wide, wide_src)):
    cached = ref.greedy_decode(m, s, BOS, EOS, max_len=12, use_cache=True)
    plain = ref.greedy_decode(m, s, BOS, EOS, max_len=12, use_cache=False)
    fed = np.concatenate([np.full((len(s), 1), BOS), ref.greedy_decode(m, s, BOS, -1, 11)], axis=1)  # (B, 12), no pads
    H_enc, src_mask = m.encode(s)
    uncached_logits = np.stack([m.decode(fed[:, : t + 1], H_enc, src_mask)[:, -1] for t in range(12)], axis=1)
    cache = ref.KVCache(m, H_enc, src_mask)
    cached_logits = np.stack([ref.decode_step(m, fed[:, t], cache) for t in range(12)], axis=1)
    print(f"{name}: {len(s)} sequences, identical tokens: {np.array_equal(cached, plain)}; logits bit for bit "
          f"equal: {np.array_equal(cached_logits, uncached_logits)}, largest difference "
          f"{np.abs(cached_logits - uncached_logits).max():.1e}")

# %% [markdown]
# And the time it saves, measured. The random model above generates $L$ tokens for 4 sources, with and
# without the cache. To make every run generate exactly $L$ tokens we pass `eos_id=-1`, an id no token
# has, so no run stops early. `make bench` reports the same measurement for the machine it runs on.

# %% [markdown]
# **Self-check 9.5 — predict, then run.** At $L = 64$ the uncached run feeds $64 \cdot 65 / 2 = 2080$
# positions through the decoder and the cached one 64, a ratio of 32.5. Predict the measured speed-up:
# about 32×, more, or less?
#
# <details><summary>Answer</summary>
#
# Far less: between about 9× and 14× in the runs made for this lesson (it varies from run to run, and
# your machine will differ). Both versions pay
# the same fixed cost per step: the Python loop, the argmax, and the overhead of many calls on small
# matrices. And the cached step still attends over all $t$ cached keys (and this simple cache copies
# itself at every append). The speed-up keeps growing with $L$, but it stays well below the ratio of
# positions, $(L+1)/2$.
#
# </details>

# %% [demo]
def best_time(fn, repeats=2):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


lengths = [8, 16, 32, 64]
batch = wide_src[:4]
t_plain = [best_time(lambda: ref.greedy_decode(wide, batch, BOS, -1, L, use_cache=False)) for L in lengths]
t_cached = [best_time(lambda: ref.greedy_decode(wide, batch, BOS, -1, L, use_cache=True)) for L in lengths]
fig, (left, right) = plotting.figure(1, 2, width=4.3)
plotting.curves({"without cache": (lengths, t_plain), "with KV cache": (lengths, t_cached)}, ax=left,
                xlabel="generated tokens L", ylabel="seconds", title="greedy decoding time",
                colors=[plotting.COLORS["target"], plotting.COLORS["highlight"]])
speedup = np.array(t_plain) / np.array(t_cached)
plotting.curves({"speed-up": (lengths, speedup)}, ax=right, xlabel="generated tokens L",
                ylabel="time without / time with cache", title="KV-cache speed-up",
                colors=[plotting.COLORS["highlight"]])
plotting.threshold(right, 1.0)
plt.show()
print("speed-up at L = " + ", ".join(f"{L}: {s:.1f}x" for L, s in zip(lengths, speedup)))

# %% [markdown]
# Without the cache the time grows like $L^2$: step $t$ reruns all $t$ positions. With it, the time grows
# about like $L$ at these lengths, though not forever. Each cached step still attends over all $t$ cached
# keys (and this simple cache copies itself at every append), so for long outputs the cached time also
# grows faster than $L$, only far more slowly. The speed-up grows with the length, but stays well below
# the ratio of positions, $(L+1)/2$: both versions pay the same fixed cost per step (Python, the argmax,
# the calls on small matrices).

# %% [markdown]
# ## 9.6 One cached decoding step, in order
#
# ### Exercise 9.6 — order the steps
#
# Here are the steps of one decoding step with a KV cache, for a decoder of one block, shuffled. Put
# them in the order they happen.
#
# 1. feed-forward network, plus the residual
# 2. normalise it, project it to one new row of keys and values, and append that row to the self-attention cache
# 3. choose the next token (argmax or a sample) and stop if it is EOS
# 4. cross-attention: the query attends over the encoder's keys and values, computed once before the first step, plus the residual
# 5. embed the newest token at position t, the number of tokens already cached
# 6. final RMSNorm and the tied output head: logits for the next token
# 7. self-attention: the new token's query attends over all cached keys and values, plus the residual
#
# Practise with the widget (it gives instant feedback and grades nothing), then write your answer as a
# list of the step numbers above, in order, in the answer cell: for example `[5, ...]`.

# %% [demo]
from encdec.checks.lesson09 import CACHED_STEP_ORDER

CACHED_STEP_ORDER.widget()

# %% [solution] cached_step_order
cached_step_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
cached_step_order = [5, 2, 7, 4, 1, 6, 3]
### END SOLUTION

# %% [test] 9.6

# %% [markdown]
# ## Summary
#
# * Decoding turns next-token distributions into a sequence. Each step reads the **last** position's
#   logits (position $j$ predicts token $j + 1$), bans `<bos>` and `<pad>`, and a sequence ends at its
#   first `<eos>`, which it keeps; finished rows of a batch are padded.
# * Greedy decoding takes the argmax: fast, deterministic, and unable to undo an early mistake.
# * Sampling draws from $\operatorname{softmax}(z / T)$, restricted to the top $k$ tokens and then to
#   the nucleus: the smallest set of most probable tokens whose probability reaches $p$.
# * Beam search keeps the `beam_width` best hypotheses by total log-probability and ranks finished
#   ones by $\log P / |y|^{\alpha}$, because raw totals favour short outputs. A finished hypothesis
#   takes no slot, and the search stops once `beam_width` have finished. It is a heuristic: it can miss
#   a better hypothesis that was still live, and it can return a worse output than greedy decoding.
# * With a KV cache each step feeds one token: self-attention's keys and values grow by one row per
#   step, cross-attention's are computed once from $H_{\text{enc}}$. The tokens are identical (the
#   logits agree to rounding), and the decoder processes $L$ positions instead of about $L^2/2$.
#   Attention still reads every cached key, so a step's cost grows by one key per step.
#
# **Next — Lesson 10, Capstone.** The same model in PyTorch, piece by piece, checked against this
# NumPy reference; then trained on a GPU when one is present (on the CPU otherwise) on a task with real
# alignment, with a parity report across NumPy, CPU and GPU and the attention maps of the trained model.
