# %% [markdown]
# # Lesson 9 — Decoding
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 9 of 10*
#
# A trained model does not write sentences. At each position it gives a probability for every token
# of the vocabulary, given the source and the tokens before it. Turning those distributions into one
# output sequence is **decoding**, and it is a choice: take the likeliest token each time, draw one at
# random, or search for the sequence whose total probability is highest. Each step of any of these
# runs the decoder once more, and done naively each step recomputes everything the previous steps
# already computed. The KV cache removes that waste.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. write greedy decoding that feeds the decoder its own output, reads the right position's logits,
#    and stops each sequence at its end-of-sequence token;
# 2. sample the next token with a temperature, top-k and top-p (nucleus) filtering, and say what each
#    does to the distribution;
# 3. write beam search with length normalisation, and say why the normalisation is needed;
# 4. write one decoder step with a KV cache, where self-attention's cache grows one row per step and
#    cross-attention's keys and values are computed once;
# 5. show that cached decoding returns exactly the tokens of uncached decoding, and measure how much
#    faster it is;
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
# receive are the course library's `encdec.Seq2Seq`, so a mistake in an earlier lesson never costs you
# points here.
#
# Tags: **[LEARNED]** changed by training, **[CONFIG]** chosen before training (or before decoding),
# **[STATE]** computed while the model runs. Figures follow the course's [figure key](../FIGURE_KEY.md).

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
# ### Exercise 9.1 — `greedy_decode(model, src, bos_id, eos_id, max_len)` (3 points)
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


# %% [test] test_greedy_decode points=3
# Tests for Exercise 9.1 (3 points). Run this cell after your answer.
from encdec.checks.lesson09 import check_greedy_decode

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_greedy_decode(points=3, hidden=hidden)

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
#   towards the argmax, $T > 1$ flattens it towards uniform, $T = 1$ leaves it as trained. $T = 0$ is
#   the limit: all the mass on the argmax, that is, greedy.
# * **Top-k**: keep only the $k$ most probable tokens (the $k$-th largest logit included), drop the
#   rest, renormalise.
# * **Top-p**, the *nucleus*: keep the **smallest** set of most probable tokens whose total
#   probability reaches $p$, drop the rest, renormalise. Sort the probabilities in decreasing order;
#   a token is kept when the mass of the tokens ranked above it is still **below** $p$. The token that
#   carries the total over $p$ is therefore kept, and the most probable token is always kept. Unlike
#   top-k, the nucleus is small when the model is sure and large when it is not.
#
# They apply in this order: temperature, then top-k, then top-p on the renormalised top-k
# distribution. Then draw one token per row. With `rng` a NumPy `Generator`, the **inverse CDF** draws
# for a whole batch at once: for $u$ uniform in $[0, 1)$, the token is the number of entries of the
# cumulative distribution that are $\le u$.
#
# $$p = (0.5, 0.3, 0.2), \quad \text{cdf} = (0.5, 0.8, 1.0), \quad u = 0.65 \ \Rightarrow\ \#\{\text{cdf} \le 0.65\} = 1 \ \Rightarrow\ \text{token } 1 .$$
#
# ### Exercise 9.2 — `sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, rng=None)` (3 points)
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
             top_k        keep the k most probable tokens (None: all)
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
    u = rng.random(p.shape[:-1] + (1,))  # (..., 1)
    return np.minimum(np.sum(cdf <= u, axis=-1), p.shape[-1] - 1)
    ### END SOLUTION


# %% [test] test_sample_next_token points=3
# Tests for Exercise 9.2 (3 points).
from encdec.checks.lesson09 import check_sample_next_token

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_sample_next_token(points=3, hidden=hidden)

# %% [markdown]
# What the knobs do to one distribution over eight letters (computed with the reference
# `next_token_distribution`, the distribution `sample_next_token` draws from). Top row: the
# temperature reshapes every probability. Bottom row: top-p cuts the tail, and the red bars are the
# tokens it keeps; at $p = 0.6$ only two letters are left.

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
# setting (a small sampling loop over the reference `decode_step` of section 9.5; the first six are
# shown). At low temperature almost every sample is greedy decoding's answer. As the temperature rises
# the samples spread over ever more outputs, and most are wrong: one unlikely letter anywhere spoils a
# sequence. Top-p cuts the unlikely tail at every step, and at the same temperature most samples are
# right again.

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
# **Beam search** keeps the `beam_width` best partial outputs (hypotheses) instead of one. At every step:
#
# 1. extend every live hypothesis by every allowed token (`<bos>` and `<pad>` banned, as in greedy:
#    set their logits to $-\infty$ **before** `log_softmax`); a candidate's score is its total
#    log-probability, the parent's total plus the token's log-probability;
# 2. walk the candidates from best to worst: one that ends in `<eos>` is **finished** (it is kept if it
#    is among the `beam_width` best candidates of this step), any other joins the new beam, until the
#    new beam holds `beam_width` hypotheses;
# 3. stop once `beam_width` hypotheses have finished, or after `max_len` steps.
#
# Every log-probability is negative, so the total favours **short** outputs: a sequence that stops early
# has fewer negative terms. To compare finished hypotheses of different lengths, divide by a power
# of the length (counting the `<eos>`):
#
# $$\text{score}(y) = \frac{\log P(y \mid x)}{|y|^{\alpha}}, \qquad \alpha \in [0, 1]\ \text{[CONFIG]}.$$
#
# $\alpha = 0$ is the raw total, $\alpha = 1$ the mean log-probability per token. Within one step all
# candidates have the same length, so the search itself ranks by the plain total; the normalised score
# only ranks the results. Return the `beam_width` best by normalised score, best first: the finished
# hypotheses, and when fewer than `beam_width` finished, the best unfinished ones after them. With
# `beam_width = 1` beam search is greedy decoding.
#
# ### Exercise 9.3 — `beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0)` (3 points)
#
# One source sequence `(n,)`. Run the decoder on all live hypotheses at once: stack them into a
# `(k, t)` decoder input; the encoder output `(1, n, d)` broadcasts against it.

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


# %% [test] test_beam_search points=3
# Tests for Exercise 9.3 (3 points).
from encdec.checks.lesson09 import check_beam_search

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_beam_search(points=3, hidden=hidden)

# %% [markdown]
# A beam search of width 3 by the half-trained reverser, drawn step by step, for a source where greedy
# decoding goes wrong. Each column is a step; the orange tokens are the hypotheses the beam keeps, the
# boxed ones ended with `<eos>`, the grey ones are the best of the candidates it let go, and the red
# path is the output it returns. The numbers are total log-probabilities. Greedy decoding follows the
# best token of every step; the beam also keeps the runners-up alive, and the length normalisation lets
# a longer hypothesis beat a shorter one that finished earlier with a better total. (The search below is
# the reference algorithm with a record of every step; it checks that it returns what `ref.beam_search`
# returns.)

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
print(f"the half-trained model reverses {np.mean([task.decode(g) == r for g, r in zip(greedy, right)]):.1%} "
      f"of 256 sequences with greedy decoding, {np.mean([task.decode(b) == r for b, r in zip(beams, right)]):.1%} "
      "with beam search of width 3")
i = next((i for i in range(len(val_src)) if task.decode(beams[i]) == right[i] != task.decode(greedy[i])
          and np.sum(val_src[i] != PAD) <= 4), 0)  # a short source that beam search gets right and greedy wrong
source = val_src[i]
ranked, nodes, path = traced_beam_search(unsure, source, beam_width=3, max_len=7, show_dropped=1)
reference = ref.beam_search(unsure, source, BOS, EOS, beam_width=3, max_len=7)
assert [list(t) for t, _, _ in ranked] == [list(t) for t, _ in reference]
plotting.beam_tree(nodes, best=path, title=f"beam search, width 3: {task.decode(source)!r} -> "
                   f"{task.decode(reference[0][0])!r} (greedy: {task.decode(ref.greedy_decode(unsure, source, BOS, EOS, 7))!r})")
plt.show()
for toks, score in reference:
    print(f"{task.decode(toks):<8} length {len(toks)}, normalised score {score:.3f}")

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
#   not change at all while decoding. Compute $K = H_{\text{enc}} W_K$ and $V = H_{\text{enc}} W_V$
#   **once**, before the first step, for every decoder block.
#
# Uncached, generating $L$ tokens pushes $1 + 2 + \dots + L \approx L^2/2$ positions through the decoder;
# cached, $L$. The cache is [STATE]: it lives for one decoding run and is thrown away. Here it is, given
# (it is the course library's `KVCache`, line for line):

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
# One cached step feeds the newest token through the decoder. Every `MultiHeadAttention` of the course
# library splits its work in two, so that keys and values can be computed apart from queries:
#
# * `K, V = attn.project_kv(x)`: `x (..., T, d_model)` to keys and values split into heads,
#   `(..., h, T, d_k)` each;
# * `out, weights = attn.attend(query_input, K, V, mask=None)`: the queries of `query_input
#   (..., m, d_model)` attend over the given `K, V`; `out` is `(..., m, d_model)`, after $W_O$.
#
# and `model.embed(tokens, offset)` embeds `tokens (..., T)` at positions `offset, ..., offset + T - 1`.
# The step, for tokens of shape `(...)` (one per sequence) fed at position $t$ = `cache.length`:
#
# 1. `x = model.embed(tokens[..., None], offset=t)`: shape `(..., 1, d_model)`;
# 2. in every decoder block `i`, the three pre-norm sublayers of Lesson 5, each added to `x`:
#    self-attention (normalise with `norm1_gamma`, project to one new row of K, V, append it to the
#    cache, attend over all cached rows), cross-attention (normalise with `norm2_gamma`, attend over
#    `cache.cross_k[i], cache.cross_v[i]` with `cache.src_mask`), the feed-forward network (`norm3_gamma`);
# 3. one more token is cached: `cache.length += 1`;
# 4. the final RMSNorm (`model.decoder_norm_gamma`, `model.config.eps`) and the tied head `@ model.embedding.T`;
#    return the logits of the one new position, shape `(..., V)`.
#
# ### Exercise 9.4 — `decode_step(model, tokens, cache)` (3 points)
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
    x = model.embed(np.asarray(tokens)[..., None], offset=cache.length)  # (..., 1, d_model)
    for i, block in enumerate(model.decoder):
        h = rms_norm(x, block.norm1_gamma)
        K, V = cache.append(i, *block.self_attn.project_kv(h))  # (..., h, t + 1, d_k): the past and this token
        x = x + block.self_attn.attend(h, K, V)[0]  # no mask: the cache holds only the past
        h = rms_norm(x, block.norm2_gamma)
        x = x + block.cross_attn.attend(h, cache.cross_k[i], cache.cross_v[i], cache.src_mask)[0]
        x = x + block.ffn(rms_norm(x, block.norm3_gamma))
    cache.length += 1
    h = rms_norm(x, model.decoder_norm_gamma, model.config.eps)
    return (h @ model.embedding.T)[..., 0, :]  # (..., V)
    ### END SOLUTION


# %% [test] test_decode_step points=3
# Tests for Exercise 9.4 (3 points).
from encdec.checks.lesson09 import check_decode_step

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_decode_step(points=3, hidden=hidden)

# %% [markdown]
# ### Exercise 9.5 — `cached_greedy_decode(model, src, bos_id, eos_id, max_len)` (2 points)
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


# %% [test] test_cached_greedy_decode points=2
# Tests for Exercise 9.5 (2 points).
from encdec.checks.lesson09 import check_cached_greedy_decode

hidden = False
### BEGIN HIDDEN TESTS
hidden = True
### END HIDDEN TESTS
check_cached_greedy_decode(points=2, hidden=hidden)

# %% [markdown]
# Cached and uncached decoding return **identical** tokens, not merely similar ones: the cache changes
# where numbers are computed, not which. Checked here on the trained reverser and on a random model,
# over hundreds of sequences (with the reference implementation):

# %% [demo]
wide = Seq2Seq(vocab_size=32, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, rng=1)
wide_src = np.random.default_rng(3).integers(3, 32, size=(64, 12))
for name, m, s in (("trained reverser", model, val_src), ("random model, 2 + 2 blocks", wide, wide_src)):
    cached = ref.greedy_decode(m, s, BOS, EOS, max_len=12, use_cache=True)
    plain = ref.greedy_decode(m, s, BOS, EOS, max_len=12, use_cache=False)
    print(f"{name}: {len(s)} sequences, identical tokens: {np.array_equal(cached, plain)}")

# %% [markdown]
# And the time it saves, measured. The random model above generates $L$ tokens for 4 sources, with and
# without the cache. To make every run generate exactly $L$ tokens we pass `eos_id=-1`, an id no token
# has, so no run stops early. Without the cache the time grows like $L^2$ (and faster, since each
# attention row also grows); with it, about like $L$. The speed-up grows with the length. `make bench`
# reports the same measurement for the machine it runs on.

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
# ## 9.6 One cached decoding step, in order
#
# ### Exercise 9.6 — order the steps (1 point)
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
### BEGIN SOLUTION
cached_step_order = [5, 2, 7, 4, 1, 6, 3]
### END SOLUTION

# %% [test] test_cached_step_order points=1
# Tests for Exercise 9.6 (1 point).
from encdec.checks.lesson09 import check_cached_step_order

check_cached_step_order(points=1)

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
#   ones by $\log P / |y|^{\alpha}$, because raw totals favour short outputs.
# * With a KV cache each step feeds one token: self-attention's keys and values grow by one row per
#   step, cross-attention's are computed once from $H_{\text{enc}}$. The tokens are identical, and the
#   cost of $L$ tokens drops from about $L^2$ to about $L$ decoder positions.
#
# **Next — Lesson 10, Capstone.** The same model in PyTorch, piece by piece, checked against this
# NumPy reference; then trained on a GPU when one is present (on the CPU otherwise) on a task with real
# alignment, with a parity report across NumPy, CPU and GPU and the attention maps of the trained model.
