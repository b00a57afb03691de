# %% [markdown]
# # Lesson 3 — The decoder stack: causal self-attention revisited
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 3 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the decoder's causal self-attention, the rule of its target mask, and the tied output head with the embedding matrix E it shares, outlined in red and the rest faded](../figures/course_map_03.svg)
#
# *The course map. In red: the decoder's masked self-attention, its target-mask rule, and the tied output head with the embedding E it reuses. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# The encoder reads; the decoder writes. It produces the output one token at a time, and each
# new token may depend only on the tokens written before it. One mask enforces that rule, and this
# lesson is about that mask: how to build it, where it goes, how it combines with padding, and how
# to *test* that it works. We finish at the other end of the decoder, where its last states become
# scores over the vocabulary.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. build the causal mask and explain why it lets a model train on all positions at once without cheating;
# 2. combine the causal mask with the target's padding mask;
# 3. write one head of masked self-attention, with the mask added to the scores before the softmax;
# 4. test the causal property by experiment: editing a future token leaves earlier outputs unchanged;
# 5. say how an encoder–decoder's decoder differs from a decoder-only model;
# 6. compute logits with the tied output head, and tag every quantity [LEARNED], [CONFIG] or [STATE].
#
# **Recap of Lesson 2.** The encoder reads the source with *bidirectional* self-attention: no causal
# mask, only a padding mask of shape $(B, 1, 1, n)$ that gives every pad key a weight of exactly 0.
# Each pre-norm block computes $x + \operatorname{MHA}(\operatorname{RMSNorm}(x))$, then
# $x + \operatorname{FFN}(\operatorname{RMSNorm}(x))$, and the stack ends in the memory $H_{\text{enc}}$
# [STATE], one vector per source token, computed once per sentence. The course's own versions of
# your Lesson 1 and 2 functions (`softmax`, `padding_mask`, ...) are imported below, so a slip there
# costs nothing here.
#
# Tags: **[LEARNED]** set by the optimiser and saved with the model; **[CONFIG]** chosen before the run, the
# same for every input; **[STATE]** computed by the program from the inputs, or from the training so far.
# The [figure key](../FIGURE_KEY.md) gives the rule with examples, and what every colour and shape means.

# %% [setup] setup
# Run this cell first. It checks your environment and loads what the lesson needs.
from encdec.env import check_environment

check_environment()
import numpy as np
import matplotlib.pyplot as plt
from encdec import plotting
from encdec import softmax, padding_mask  # the course's versions of Lessons 1 and 2's exercises
import encdec as ref  # the course's reference implementation, used by the figures

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 3.1 The decoder's job
#
# The decoder models the output $y = (y_1, \dots, y_m)$ one token at a time, each conditioned on
# everything before it and on the source $x$:
#
# $$P(y \mid x) = \prod_{t=1}^{m} P\big(y_t \mid y_{<t},\, x\big).$$
#
# Every decoder position therefore combines two streams of information:
#
# * **what it has written so far**, $y_{<t}$, read with *causal* self-attention (this lesson);
# * **the source**, read in full through the memory $H_{\text{enc}}$ with cross-attention (Lesson 4).
#
# At generation time the future does not exist yet, so nothing can leak from it. At **training** time it
# does exist: the whole target sentence is known, and we want to compute all $m$ positions in one pass
# (Lesson 8). Position $t$ (counting from 0, as the code does) is fed `<bos>`, $y_1, \dots, y_t$ and
# must predict $y_{t+1}$. If its self-attention could look one step ahead, it would find the answer
# sitting there and learn to copy it: perfect training loss, useless model. The **causal mask** forbids
# exactly that. With it, the one training pass computes the same logits at every position as a pass over
# that position's prefix alone would (up to rounding). Training reads the true prefix and generation
# reads the model's own output, a difference Lesson 8 returns to. (Can generation then do without the
# mask? Self-check 3.4, at the end of §3.5, asks you.)

# %% [markdown]
# ## 3.2 The causal mask
#
# Row $i$ of the scores is query $i$; column $j$ is key $j$. Query $i$ may look at keys
# $j \le i$, itself included, and nothing later:
#
# $$M^{\text{causal}}_{ij} = \begin{cases} 0, & j \le i \\ -\infty, & j > i \end{cases} \qquad
# M^{\text{causal}} = \begin{pmatrix} 0 & -\infty & -\infty & -\infty \\ 0 & 0 & -\infty & -\infty \\ 0 & 0 & 0 & -\infty \\ 0 & 0 & 0 & 0 \end{pmatrix} \;(m = 4).$$
#
# Everything strictly above the diagonal is hidden; the diagonal is not (a position may read its
# own input token). The *rule* is [CONFIG]: fixed by the architecture, the same for every input, with
# no parameters. The $(m, m)$ *array* that `create_causal_mask(m)` builds from it for an input of
# length $m$ is [STATE]: the program computes it for the input at hand.
#
# ### Exercise 3.1 — `create_causal_mask(seq_len)`
#
# `np.triu(A, k=1)` keeps the part of `A` strictly above the diagonal; `np.where(hidden, -np.inf, 0.0)`
# turns booleans into an additive mask. Avoid multiplying by `-np.inf`: `0 * -inf` is `nan`.

# %% [solution] create_causal_mask
def create_causal_mask(seq_len):
    """Mask out subsequent positions.

    Inputs:  seq_len — the number of positions m.
    Returns: (m, m) float mask: 0.0 on and below the diagonal, -inf above it (query i sees keys j <= i).
    """
    ### BEGIN SOLUTION
    future = np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)  # True where j > i
    return np.where(future, -np.inf, 0.0)
    ### END SOLUTION


# %% [test] 3.1

# %% [markdown]
# ## 3.3 Two masks at once: causal and padding
#
# Targets come in padded batches too. With the pads at the end, as here, the causal mask already
# hides them from every real token, since a pad always comes after the tokens that could read it.
# Only the pads' own rows can see pads, and the loss ignores those rows. The decoder adds the
# target's padding mask anyway, so that "no query reads a pad" holds in every row, and for pads
# anywhere in a sequence (left padding, packed batches).
#
# Additive masks combine by **adding**: $0 + 0 = 0$ stays visible, and anything plus $-\infty$ is
# $-\infty$, so a key is hidden as soon as either mask hides it. Broadcasting lines up the shapes:
#
# $$\underbrace{M^{\text{causal}}}_{(m,\ m)} + \underbrace{M^{\text{pad}}}_{(B,\ 1,\ 1,\ m)} = \underbrace{M^{\text{dec}}}_{(B,\ 1,\ m,\ m)},$$
#
# which broadcasts in turn over the heads of the scores `(B, h, m, m)`. Products, `np.maximum` and
# booleans all get this wrong in their own way; the test names each of them.
#
# ### Exercise 3.2 — `decoder_mask(tgt_in, pad_id)`
#
# Use your `create_causal_mask` and the course's `padding_mask` (Lesson 2's exercise, imported in the
# setup cell).

# %% [solution] decoder_mask
def decoder_mask(tgt_in, pad_id):
    """The decoder self-attention mask: causal plus target padding.

    Inputs:  tgt_in (..., m) integer ids of the decoder's input; pad_id the padding id.
    Returns: (..., 1, m, m) float mask: -inf where j > i or where key j is a pad, 0.0 elsewhere.
    """
    ### BEGIN SOLUTION
    tgt_in = np.asarray(tgt_in)
    return create_causal_mask(tgt_in.shape[-1]) + padding_mask(tgt_in, pad_id)
    ### END SOLUTION


# %% [test] 3.2

# %% [markdown]
# **Self-check 3.1 — explain why.** Can a row of the decoder mask be entirely $-\infty$, so that a
# query sees no key at all? If so, when, and what does the course's `softmax` give for that row?
#
# <details><summary>Answer</summary>
#
# Row $i$ always sees key 0 (since $0 \le i$) unless token 0 is itself a pad, so with `<bos>` first
# no row is ever fully hidden. A sequence that starts with a pad (an all-pad filler row in a batch,
# or left padding) does hide whole rows: `decoder_mask(np.array([0, 0, 0]), 0)` hides all three. The
# course's `softmax` returns zeros for such a row, so that query's attention output is the zero
# vector. A plain stable softmax, like Lesson 1's solution, returns `nan` there instead, because
# $-\infty - (-\infty)$ is `nan`.
#
# </details>

# %% [markdown]
# Here is what each mask leaves visible for the target `<bos> le chat dort <pad> <pad>` when every
# score is equal: the weights spread evenly over the visible keys. Orange heatmaps are decoder
# self-attention; hatched cells are masked. Left, the causal mask alone; right, causal + padding,
# the mask of Exercise 3.2.

# %% [markdown]
# **Self-check 3.2 — predict, then run.** In the right panel, what will row 4, the first `<pad>` as
# a query, look like: does it see its own column? And which rows differ between the two panels?
#
# <details><summary>Answer</summary>
#
# Row 4 is `[0.25, 0.25, 0.25, 0.25, 0, 0]`, and row 5 the same: their own keys are pads, so the
# padding mask hides even their diagonal cells, which the causal mask alone always leaves visible.
# Only rows 4 and 5 differ between the panels. Rows 0–3 (`1`; `.5 .5`; `1/3` three times; `.25` four
# times) are identical, because pads at the end already lie in every real token's future.
#
# </details>

# %% [demo]
labels = ["<bos>", "le", "chat", "dort", "<pad>", "<pad>"]
tgt_in = np.array([1, 7, 8, 9, 0, 0])  # pad_id = 0
equal_scores = np.zeros((6, 6))
fig, (left, right) = plotting.figure(1, 2, width=4.4, height=3.6)
plotting.heatmap(ref.softmax(equal_scores + ref.create_causal_mask(6)), labels, labels, kind="decoder",
                 ax=left, title="causal mask only", annotate=True)
both = ref.create_causal_mask(6) + ref.padding_mask(tgt_in, 0)[0, 0]  # (6, 6)
plotting.heatmap(ref.softmax(equal_scores + both), labels, labels, kind="decoder", ax=right,
                 title="causal + padding", annotate=True)
plt.show()

# %% [markdown]
# With the causal mask alone (left), the pad columns are read only by the pads' own rows; with both
# masks (right), no row reads them. Rows 0–3 are the same in both panels: for the real tokens the
# causal mask had already hidden the pads. The pads' own rows still attend to the real tokens before
# them; the loss ignores their outputs.

# %% [markdown]
# ## 3.4 Masked self-attention, one head
#
# The decoder's first sublayer is ordinary multi-head self-attention (Lesson 2) with the mask
# above. One head of it, with $d_k$ the width of the queries and keys:
#
# $$Q = X W_q,\quad K = X W_k,\quad V = X W_v, \qquad \operatorname{head}(X) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M^{\text{causal}}\Big)\, V.$$
#
# **Where the mask goes matters.** It must be added to the scores *before* the softmax. Then
# $e^{-\infty} = 0$ gives every future key exactly zero weight, and the softmax shares the whole
# weight among the visible keys, so each row still sums to 1. Two tempting alternatives are wrong:
#
# * *zeroing the future weights after the softmax*: the softmax has already given some weight to the
#   future keys; deleting it leaves rows that sum to less than 1;
# * *adding the mask after the softmax*: the hidden weights become $-\infty$, and the output fills
#   with `nan` and $\pm\infty$ (only the last row, which hides nothing, stays finite).
#
# Scaling and masking, on the other hand, can come in either order: $-\infty / \sqrt{d_k}$ is still
# $-\infty$ and $0 / \sqrt{d_k}$ is still 0.
#
# ### Exercise 3.3 — `causal_self_attention(x, W_q, W_k, W_v)`
#
# Write the steps out yourself: project, score, scale, mask, softmax, weight the values. Do not call
# `scaled_dot_product_attention` here (the test refuses it); do use the course's `softmax` (imported
# in the setup cell) and your `create_causal_mask`. Return the weights too.

# %% [solution] causal_self_attention
def causal_self_attention(x, W_q, W_k, W_v):
    """One head of causal (masked) self-attention.

    Inputs:  x   (..., m, d_model) decoder states
             W_q (d_model, d_k), W_k (d_model, d_k), W_v (d_model, d_v) [LEARNED]
    Returns: (output (..., m, d_v), weights (..., m, m)); weights[..., i, j] = 0 for every j > i.
    """
    ### BEGIN SOLUTION
    Q, K, V = x @ W_q, x @ W_k, x @ W_v  # (..., m, d_k), (..., m, d_k), (..., m, d_v)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (..., m, m)
    scores = scores + create_causal_mask(x.shape[-2])  # before the softmax
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
    ### END SOLUTION


# %% [test] 3.3

# %% [markdown]
# ## 3.5 The causal property, by experiment
#
# A mask is a claim: *position $i$'s output does not depend on any input after $i$*. Claims get
# tested. Take a whole encoder–decoder (the course's reference model, random weights), feed it a
# source and a target, then **change one target token** (position 4) and measure how far the logits
# at each position move. Left, the model as it is; right, the same model with its causal mask
# removed (the padding mask alone).

# %% [markdown]
# **Self-check 3.3 — predict, then run.** With the causal mask, after token 4 is edited, which
# positions' logits will move: only position 4, positions 4–6, or all seven? And is the change at
# positions 0–3 tiny, or exactly zero?
#
# <details><summary>Answer</summary>
#
# Positions 4, 5 and 6 move (by at most 2.86, 0.24 and 0.18): position 4 reads the new token as its
# own input, and the later positions read it through self-attention. Positions 0–3 are exactly
# unchanged, and the cell prints `True` for "bit for bit": their weights on positions $\ge 4$ are
# exactly 0, so token 4 never enters their sums. Without the mask all seven move, position 4 most.
#
# </details>

# %% [demo]
model = ref.Seq2Seq(vocab_size=20, d_model=16, n_heads=4, d_ff=32, n_encoder_layers=2, n_decoder_layers=2, rng=0)
src = np.array([5, 9, 12, 7, 3])
tgt_in = np.array([1, 6, 11, 4, 14, 8, 10])
edited = tgt_in.copy()
edited[4] = 17


def moved(m):
    """Largest change of each position's logits when target token 4 changes."""
    return np.abs(m(src, edited) - m(src, tgt_in)).max(axis=-1)


with_mask = moved(model)
print("positions 0-3 unchanged, bit for bit:", np.array_equal(model(src, edited)[:4], model(src, tgt_in)[:4]))
model.decoder_mask = lambda t: ref.padding_mask(t, 0)  # the same model, causal mask removed
without_mask = moved(model)
print("largest change per position, with the causal mask:", with_mask.round(2))
print("largest change per position, causal mask removed: ", without_mask.round(2))
fig, axes = plotting.figure(1, 2, width=4.4, height=3.0)
for ax, change, title in zip(axes, (with_mask, without_mask), ("with the causal mask", "causal mask removed")):
    plotting.bars(change, labels=[f"t={t}" for t in range(7)], ax=ax, role="target", highlight=4,
                  ylabel="largest change in the logits", title=f"{title}: edit token 4 (red)")
plt.show()

# %% [markdown]
# * Left, with the causal mask: positions 0–3 do not move *at all*; the difference is exactly
#   zero, not merely small, because their weights on positions $\ge 4$ are exactly zero. Position 4
#   and later move.
# * Right, the same model with its causal mask removed: every position moves. Positions 0–3 now
#   depend on token 4: position 3 reads the very token it is trained to predict, and positions 0–2
#   read one they have not reached. That is the leak that would ruin training.

# %% [markdown]
# **Self-check 3.4 — explain why.** At generation time the future tokens do not exist yet. Could a
# decoder that re-runs its whole prefix at every step, with no cache, drop the causal mask then?
#
# <details><summary>Answer</summary>
#
# No, not with two or more layers. Without the mask, the earlier positions of the prefix read the
# later ones in the first layer, so the keys and values they hand to the second layer change, and
# the newest position's logits differ from what training computed. In this section's model, with
# the same source and target, they differ by 0.09 to 0.17 for prefixes of 2 to 7 tokens. Only the
# newest query needs no mask, since nothing comes after it. With a cache of the earlier positions'
# keys and values (Lesson 9), there is nothing left to hide.
#
# </details>

# %% [markdown]
# ## 3.6 The decoder block, and how it differs from a decoder-only model
#
# A decoder block has **three** pre-norm residual sublayers, where the encoder block had two:
#
# $$\begin{aligned}
# H_1 &= H + \operatorname{SelfAttn}_{\text{causal}}\big(\operatorname{RMSNorm}(H)\big) && \text{read what has been written}\\
# H_2 &= H_1 + \operatorname{CrossAttn}\big(\operatorname{RMSNorm}(H_1),\ H_{\text{enc}}\big) && \text{consult the source}\\
# H_3 &= H_2 + \operatorname{FFN}\big(\operatorname{RMSNorm}(H_2)\big) && \text{transform each position}
# \end{aligned}$$
#
# ![One pre-norm decoder block drawn bottom to top: the input x runs up a residual stream, and three sublayers branch off it in order, each reading an RMSNorm of the stream and adding its result back: masked causal self-attention, cross-attention whose keys and values come from the encoder output H_enc, and the feed-forward network](../figures/decoder_block.svg)
#
# *One decoder block, the three equations above with $H$ written `x` as in the library. Dashed chips name the masking rules [CONFIG]; the mask arrays built from them for a batch, with the shapes shown, are [STATE].*
#
# The first sublayer is this lesson's causal self-attention, unchanged. The second is the only
# place the source enters the decoder, and the only sublayer with a second input, $H_{\text{enc}}$,
# the same memory for every block and every step; Lesson 4 derives it, Lesson 5 assembles the block.
# It brings its own $W_q, W_k, W_v, W_o$ and its own norm, so the decoder owns two full sets of
# attention projections.
#
# Put a decoder-only model (GPT-style) next to this decoder and the difference is exactly that sublayer:
#
# ![Left: a decoder-only model reads the prompt and its own output as one causal stream, each block with two sublayers, causal self-attention and feed-forward. Right: an encoder–decoder reads the source bidirectionally in the encoder, and each decoder block has three sublayers, causal self-attention, cross-attention reading the encoder output H_enc (in red, the only difference), and feed-forward](../figures/decoder_only_vs_encoder_decoder.svg)
#
# *A decoder-only model (left) beside an encoder–decoder (right). In red, the one sublayer the encoder–decoder's decoder adds: cross-attention reading $H_{\text{enc}}$.*
#
# | | decoder-only model | decoder of an encoder–decoder |
# |---|---|---|
# | self-attention | causal | causal, the same mechanism |
# | how it sees the input | as earlier tokens of one causal stream (a prompt) | through the encoder's memory $H_{\text{enc}}$, read in full |
# | how the input itself is read | causally, left to right | bidirectionally, by the encoder |
# | sublayers per block | 2: self-attention, FFN | 3: self-attention, cross-attention, FFN |
# | extra parameters per block | none | cross-attention's own $W_q, W_k, W_v, W_o$ and one norm (Lesson 5 counts them) |
# | output head | final norm, then logits over the vocabulary | the same |
#
# Everything after the last block is inherited unchanged: a final RMSNorm and the output head.

# %% [markdown]
# ## 3.7 The output head, tied to the embedding
#
# The decoder's last states, after the final RMSNorm, are vectors $h_t \in \mathbb{R}^{d_{\text{model}}}$.
# To predict the next token, each is scored against every token of the vocabulary. The course reuses
# the **embedding matrix** $E \in \mathbb{R}^{V \times d_{\text{model}}}$ [LEARNED], whose row $v$ is
# token $v$'s vector, as the output layer:
#
# $$z_t = h_t\, E^\top \in \mathbb{R}^{V}, \qquad z_{t,v} = h_t \cdot E_v .$$
#
# The logit of token $v$ is the dot product of the state with $v$'s own embedding: *how much does
# this state look like token $v$?* The logits are [STATE]; a softmax turns them into the predicted
# probabilities $\hat p_t$ (in the loss, Lesson 7, and in decoding, Lesson 9). Using $E$ both to read
# tokens in and to score them out is called **weight tying** (the original Transformer of 2017, BART
# and the first T5 release do it; T5 v1.1 and mT5 give the output head its own matrix): it saves a
# whole $V \times d_{\text{model}}$ matrix, and every gradient on the output side also trains the
# input embedding.
#
# ### Exercise 3.4 — `output_logits(h, E)`

# %% [solution] output_logits
def output_logits(h, E):
    """The tied output head.

    Inputs:  h (..., m, d_model) final decoder states (after the final RMSNorm)
             E (V, d_model) the shared embedding matrix [LEARNED]
    Returns: logits (..., m, V): logits[..., t, v] = h[..., t, :] . E[v]
    """
    ### BEGIN SOLUTION
    return h @ E.T
    ### END SOLUTION


# %% [test] 3.4

# %% [markdown]
# **One shared embedding, or two?** The source and the target could each have their own
# embedding matrix, and the output head a third. Whether they share is a [CONFIG] choice. The
# original Transformer, BART, the first T5 release and this course share one matrix for all three,
# over one vocabulary that covers both languages (a subword vocabulary makes that easy). T5 v1.1
# and mT5 share one matrix between the encoder and decoder inputs but untie the head. Separate
# input matrices are for vocabularies that genuinely have nothing in common.
#
# ![One embedding matrix E, one row per token of the vocabulary, used three times: its rows for the source tokens and for the target tokens are looked up and scaled by the square root of d_model, and the tied output head scores each decoder state against every row, logits = h E transposed](../figures/shared_embedding.svg)
#
# *One matrix $E$ [LEARNED], used three times: rows looked up for the source (blue) and the target (orange), each scaled by $\sqrt{d_{\text{model}}}$, and all $V$ rows scored by the tied head.*
#
# For a translation-sized model the choice is worth tens of millions of parameters:

# %% [demo]
V, d, d_ff, N = 32000, 512, 2048, 6
rest = ref.parameter_count(V, d, d_ff, N) - V * d  # everything but the embedding
designs = {"one: source, target and head share E (2017 Transformer, BART, T5 v1.0, this course)": 1,
           "two: source and target share one, the head has its own (T5 v1.1, mT5)": 2,
           "two: separate source and target embeddings, head tied to the target": 2,
           "three: source, target and head all separate": 3}
print(f"V = {V}, d_model = {d}, d_ff = {d_ff}, {N} + {N} blocks; each V x d matrix has {V * d / 1e6:.1f} M numbers\n")
for name, k in designs.items():
    total = rest + k * V * d
    print(f"{name:84s} {total / 1e6:6.1f} M parameters, {k * V * d / total:4.0%} of them in V x d matrices")

# %% [markdown]
# ## 3.8 The steps of masked self-attention, in order
#
# ### Exercise 3.5 — order the steps
#
# Here are the steps of one masked multi-head self-attention sublayer, from the decoder states to the
# sublayer's output, shuffled. Scaling the scores and adding the causal mask are one step: as you saw
# in §3.4, their order does not matter. Put the steps in the order they happen.
#
# 1. softmax along the key axis
# 2. project the merged vector with W_o
# 3. split the queries, keys and values into heads of width d_k
# 4. merge the heads back into one vector of width d_model per position
# 5. project the decoder states into queries, keys and values (x @ W_q, x @ W_k, x @ W_v)
# 6. score every query against every key, in each head: Q @ K.T
# 7. take the weighted sum of the values, in each head
# 8. scale the scores by 1/sqrt(d_k) and add the causal mask
#
# Practise with the widget (instant feedback, no grade), then write your answer as a list of the
# step numbers above, in order: for example `masked_attention_order = [5, ...]`.

# %% [demo]
from encdec.checks.lesson03 import MASKED_ATTENTION_ORDER

MASKED_ATTENTION_ORDER.widget()

# %% [solution] masked_attention_order
masked_attention_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
masked_attention_order = [5, 3, 6, 8, 1, 7, 4, 2]
### END SOLUTION

# %% [test] 3.5

# %% [markdown]
# ## 3.9 Learned, configured, or computed?
#
# Every quantity in a model is one of three kinds, and mixing them up causes real bugs (saving
# activations as if they were weights, tuning a weight by hand, expecting a mask to be learned):
#
# | tag | who sets it | examples |
# |---|---|---|
# | **[LEARNED]** | the optimiser, step by step, to lower the loss; it is saved with the model | weight matrices, biases, norm gains, the embedding |
# | **[CONFIG]** | a person, before the run (training or decoding): a number, a choice, or a rule or formula. It never depends on the input or on the training so far, so it is the same for every input, and the optimiser never changes it | widths, numbers of heads and blocks, the pad id, $\varepsilon$, the masking *rules*, sharing or not, the learning rate you set (a constant, or a schedule: its peak, warm-up and decay), the sinusoidal position *formula* |
# | **[STATE]** | the running program, from the inputs (even only from their length) or from the training so far; this includes what a [CONFIG] rule gives for the case at hand | hidden states, the mask *arrays* and the position *rows* built for an input, attention weights, $H_{\text{enc}}$, logits, probabilities, gradients, the learning rate a schedule gives at the current step |
#
# To tag a quantity, ask who sets its value. [STATE] has a lifetime, but the lifetime is not what
# makes it [STATE]: most of it lives for one forward pass (hidden states, attention weights, logits),
# $H_{\text{enc}}$ for one decoding run, and Adam's moments (Lesson 8) for a whole training run,
# checkpointed with the weights so that training can resume. All of it is computed by the program.
#
# ### Exercise 3.6 — tag each quantity
#
# Tag each quantity below as LEARNED, CONFIG or STATE.
#
# 1. the self-attention projections `W_q, W_k, W_v, W_o` of a decoder block
# 2. the number of decoder blocks `N_dec`
# 3. the attention weights of a decoder block, for one input
# 4. the embedding matrix `E`, shared by the source, the target and the output head
# 5. the logits `h @ E.T` for one input
# 6. the rule that position `i` may only look at positions `j <= i` (the causal-mask policy)
# 7. the RMSNorm gains `norm1_gamma`, `norm2_gamma`, `norm3_gamma`
# 8. the encoder output `H_enc` for one source sentence
# 9. the widths `d_model` and `d_ff` and the number of heads `h`
# 10. the cross-attention projections of a decoder block
# 11. the decoder hidden states `H_dec` after each block
# 12. whether the source, the target and the output head share one embedding matrix
# 13. the predicted next-token probabilities `softmax(h @ E.T)`
# 14. the feed-forward weights `W1, b1, W2, b2`
# 15. the learning rate and RMSNorm's `eps`
# 16. the mask array that `decoder_mask(tgt_in, pad_id)` builds for one batch of targets
#
# The widget gives instant feedback (no grade). Then write your answer as a dict from item number to
# tag, using the three names defined in the next cell: `quantity_tags = {1: LEARNED, 2: ..., ..., 16: ...}`.
# Each item earns an equal share of the points, and the test explains every wrong tag.

# %% [demo]
from encdec.checks.lesson03 import TAG_QUIZ

TAG_QUIZ.widget()

# %%
LEARNED, CONFIG, STATE = "LEARNED", "CONFIG", "STATE"

# %% [solution] quantity_tags
quantity_tags = {1: ..., 2: ..., 3: ..., 4: ..., 5: ..., 6: ..., 7: ..., 8: ...,  # your answer: a tag for each item
                 9: ..., 10: ..., 11: ..., 12: ..., 13: ..., 14: ..., 15: ..., 16: ...}
### BEGIN SOLUTION
quantity_tags = {1: LEARNED, 2: CONFIG, 3: STATE, 4: LEARNED, 5: STATE, 6: CONFIG, 7: LEARNED, 8: STATE,
                 9: CONFIG, 10: LEARNED, 11: STATE, 12: CONFIG, 13: STATE, 14: LEARNED, 15: CONFIG, 16: STATE}
### END SOLUTION

# %% [test] 3.6

# %% [markdown]
# ## Summary
#
# * The decoder models $P(y_t \mid y_{<t}, x)$. The **causal mask**, $0$ on and below the diagonal
#   and $-\infty$ above, lets all positions train in one pass without any position seeing its answer:
#   each position gets the logits a pass over its prefix alone would give.
# * Masks are additive and combine by adding: causal $(m, m)$ + target padding $(B, 1, 1, m)$ =
#   $(B, 1, m, m)$. With the pads at the end the causal mask already hides them from the real tokens;
#   the padding mask makes "no query reads a pad" hold in every row.
# * The mask goes on the scores **before** the softmax; scaling and masking commute, zeroing or
#   masking after the softmax does not work.
# * The causal property is testable: editing token $t$ leaves every output before $t$ unchanged,
#   bit for bit.
# * A decoder block is a decoder-only block plus one sublayer, cross-attention, between the causal
#   self-attention and the FFN.
# * The **tied head** scores each state against every embedding row, $z = hE^\top$; sharing one $E$
#   between source, target and head is a [CONFIG] choice that saves $V\,d_{\text{model}}$ numbers per
#   matrix shared.
# * To tag a quantity, ask who sets it, and from what: the optimiser ([LEARNED]); a person before the
#   run, be it a number, a choice or a rule ([CONFIG]); or the program, from the inputs or the training
#   so far ([STATE]). A masking rule is [CONFIG]; the mask array built from it for a batch is [STATE].
#
# **Next — Lesson 4, Cross-attention.** The one new operation: queries from the decoder, keys and
# values from the encoder's memory, and an $m \times n$ attention-weight matrix that says how much of
# each source token each target position reads.
