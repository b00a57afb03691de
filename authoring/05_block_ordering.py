# %% [markdown]
# # Lesson 5 — Block ordering
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 5 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the whole decoder block with its three sublayers in order, each with its own norm gain, outlined in red and the rest faded](../figures/course_map_05.svg)
#
# *The course map. In red: one decoder block, its three sublayers and their norm gains, repeated $N_{\text{dec}}$ times. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# You now have every part of a decoder block: masked self-attention (Lesson 3), cross-attention
# (Lesson 4), the feed-forward network and RMSNorm (Lesson 2). This lesson puts them together in the
# standard order, the one of the 2017 transformer, T5 and BART, and measures what changes when the
# order, the mask or the place of the norm is different.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. list, in order, what a token meets inside one decoder block, and say what each step's place buys;
# 2. write the pre-norm `DecoderBlock.__call__`: self-attention, cross-attention, feed-forward, each
#    with its own norm and a residual;
# 3. write the post-norm variant of 2017 and say what moved;
# 4. count, from the shapes of its arrays, the parameters that cross-attention adds to a block;
# 5. measure what changes with cross-attention first, without the causal mask, and with the norm after
#    the residual add.
#
# **How exercises work.** As before: replace each `raise NotImplementedError()` with your code, run
# the cell, then run the test cell below it; the test names the likely misconception and ends with your
# score. As in Lesson 1, return new arrays and leave the arrays passed to your functions unchanged
# (`x = x + ...`, not `x += ...`).
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
import encdec as ref  # the course's reference implementation, used by the figures

# From earlier lessons, the course's own versions (so a slip there costs nothing here):
from encdec import MultiHeadAttention, FeedForward, rms_norm, create_causal_mask, padding_mask

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Recap of Lesson 4
#
# Cross-attention takes its queries from the decoder and its keys and values from the encoder output
# $H_{\text{enc}}$. Its weights are $m \times n$, one distribution over the source per target position;
# it uses the source padding mask and no causal mask. Keys and values depend only on $H_{\text{enc}}$,
# so they are computed once per source sentence and reused at every decoding step.

# %% [markdown]
# ## 5.1 What a token meets in one decoder block
#
# Follow one target position through one decoder block. It arrives as a vector in the **residual
# stream**, the running state that every sublayer reads from and adds to. Three sublayers,
# cross-attention to the encoder (Lesson 4), the position-wise feed-forward network (Lesson 2) and
# masked causal self-attention (Lesson 3), each read a normalised copy of the stream and add their
# result back. Then the stream leaves for the next block.
#
# ### Exercise 5.1 — order the steps
#
# The five things a token meets in one decoder block of the standard transformer, the block this course
# builds, shuffled. Put them in order.
#
# 1. cross-attention: queries from the decoder, keys and values from the encoder output, plus residual add
# 2. the result passes on to the next decoder block
# 3. the decoder hidden states arrive from the previous block (or from the embeddings, in block 1)
# 4. position-wise feed-forward network, plus residual add
# 5. masked causal self-attention over the decoder positions, plus residual add
#
# Practise with the widget (instant feedback, no grade), then write your answer as a list of the step
# numbers above, in order, in the answer cell.

# %% [demo]
from encdec.checks.lesson05 import BLOCK_ORDER

BLOCK_ORDER.widget()

# %% [solution] block_order
block_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
block_order = [3, 5, 1, 4, 2]
### END SOLUTION

# %% [test] 5.1

# %% [markdown]
# ## 5.2 Why this order, and what it buys
#
# With $X$ the block's input (`(..., m, d_model)`), the pre-norm decoder block computes
#
# $$\begin{aligned}
# H_1 &= X + \operatorname{SelfAttn}\big(\operatorname{RMSNorm}_1(X);\ M_{\text{causal}}\big) && \text{read what has been written}\\
# H_2 &= H_1 + \operatorname{CrossAttn}\big(\operatorname{RMSNorm}_2(H_1),\ H_{\text{enc}};\ M_{\text{pad}}\big) && \text{read the source}\\
# H_3 &= H_2 + \operatorname{FFN}\big(\operatorname{RMSNorm}_3(H_2)\big) && \text{think, position by position}
# \end{aligned}$$
#
# and returns $H_3$, plus the cross-attention weights for plotting. The diagram draws the same block:
# the residual stream runs up the left, and each sublayer branches off it through its own RMSNorm and
# adds its result back at a ⊕.
#
# ![One pre-norm decoder block: the input x runs up a residual stream; masked causal self-attention, cross-attention reading H_enc, and the feed-forward network branch off it in that order, each reading an RMSNorm of the stream (gains norm1_gamma, norm2_gamma, norm3_gamma) and adding its result back; the block returns the stream and the cross-attention weights](../figures/decoder_block.svg)
#
# *One decoder block, as `DecoderBlock.__call__` computes it. Solid chips are [LEARNED] arrays, dashed chips the [CONFIG] masking rules; the arrows carry [STATE] arrays, with their shapes.*
#
# * **Self-attention comes first.** In block 1 the state of position $t$ is the embedding of the token
#   it reads, plus its position: it knows nothing of the words around it. Causal self-attention mixes in
#   the target written so far, so the position knows *what has been written before it* when it asks the
#   source.
# * **Cross-attention comes second**, because its query should be that informed state: "having written
#   *Le chat*, which source words matter now?" Put it first, and in block 1 every query is built from
#   one token (and its position) alone: without positions, the two occurrences of "the" in a sentence
#   ask the source exactly the same question. §5.4 measures it.
# * **The feed-forward network comes last.** It works on each position separately and cannot move
#   information between positions; in the standard block it processes what both attentions gathered,
#   from the target and from the source.
# * **Every sublayer is wrapped the same way**:
#   $x \leftarrow x + \operatorname{Sublayer}(\operatorname{RMSNorm}(x))$. Each has its own norm gain,
#   `norm1_gamma`, `norm2_gamma`, `norm3_gamma` [LEARNED]. The residual path $x \to x$ is never
#   normalised, so every block can pass its input through unchanged: a clean identity path from the
#   top of the stack to the bottom.
# * **$H_{\text{enc}}$ is used as it is.** The encoder normalised it once, at its end; every decoder block
#   reads the same $H_{\text{enc}}$ [STATE]. `norm2_gamma` normalises the decoder side only, the input of
#   the queries.
#
# **The standard order, not the only one.** Self-attention, then cross-attention, then feed-forward is
# the order of the 2017 transformer; T5, BART and Whisper kept it, and this course builds it. What it
# guarantees is the point above: already in the first block, cross-attention asks the source with a
# state that knows the target written so far. It is not the only order that trains. Press, Smith and
# Levy (2020, "Improving Transformer Models by Reordering their Sublayers") reordered the self-attention
# and feed-forward sublayers of language models (decoder-only, so without cross-attention) and found
# that many orders train, and that some beat the usual interleaving in language modelling. Their best
# pattern, the "sandwich" (more self-attention at the bottom, more feed-forward at the top), brought no
# gain when they tried it on machine translation: the best order depends on the task. §5.4 measures
# what moving cross-attention first changes, and where.
#
# The mask arrays [STATE] arrive as arguments, built for each batch by [CONFIG] rules:
# `self_attn_mask`, the causal mask plus target padding, broadcastable to `(..., h, m, m)`;
# `cross_attn_mask`, the source padding mask `(..., 1, 1, n)`.

# %% [markdown]
# ## 5.3 The pre-norm decoder block
#
# ### Exercise 5.2 — `DecoderBlock.__call__`
#
# Write the three sublayers of the block, in order, as in the equations above. The sublayers are
# objects you call: `self.self_attn(query_input, key_value_input=None, mask=None)` and
# `self.cross_attn(...)` return `(output, weights)`; `self.ffn(x)` returns the output. `rms_norm(x, gamma)`
# is imported in the first cell. The test copies random weights and three different random norm gains
# into your block, so that mixing up the norms shows.

# %% [solution] DecoderBlock
class DecoderBlock:
    """Pre-norm decoder block: masked self-attention, cross-attention, feed-forward, each with a residual.

    Attributes: self_attn, cross_attn (MultiHeadAttention) and ffn (FeedForward), whose weights are
    [LEARNED]; norm1_gamma, norm2_gamma, norm3_gamma (d_model,) [LEARNED], one RMSNorm gain per sublayer.
    """

    def __init__(self, d_model, n_heads, d_ff, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model = d_model
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.ffn = FeedForward(d_model, d_ff, rng)
        self.norm1_gamma = np.ones(d_model)
        self.norm2_gamma = np.ones(d_model)
        self.norm3_gamma = np.ones(d_model)

    def __call__(self, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
        """One decoder block, pre-norm.

        Inputs:  x               (..., m, d_model) decoder states
                 encoder_output  (..., n, d_model) H_enc, used as it is
                 self_attn_mask  causal (plus target padding), broadcastable to (..., h, m, m)
                 cross_attn_mask source padding, broadcastable to (..., h, m, n)
        Returns: (output (..., m, d_model), cross_weights (..., h, m, n)).
        """
        ### BEGIN SOLUTION
        out, _ = self.self_attn(rms_norm(x, self.norm1_gamma), mask=self_attn_mask)
        x = x + out  # H_1
        out, cross_weights = self.cross_attn(rms_norm(x, self.norm2_gamma), encoder_output, mask=cross_attn_mask)
        x = x + out  # H_2
        x = x + self.ffn(rms_norm(x, self.norm3_gamma))  # H_3
        return x, cross_weights
        ### END SOLUTION


# %% [test] 5.2

# %% [markdown]
# ## 5.4 Experiment: cross-attention first
#
# Take the target "the cat saw the dog", in which "the" appears twice, and one decoder block with
# random weights. The inputs are the token embeddings alone, without positions, to isolate the effect
# of the order. Left: the standard block. Right: the same weights with cross-attention moved before
# self-attention. The heatmaps show head 0's cross-attention weights, one row per target word, and the
# cell prints how far apart the two rows for "the" (rows 0 and 3) are, over all heads.

# %% [markdown]
# **Self-check 5.1 — predict, then run.** In the swapped order, will the largest difference between the
# rows of "the (0)" and "the (3)" be exactly 0, tiny (about 0.001), or clearly non-zero? And in the
# standard order?
#
# <details><summary>Answer</summary>
#
# In the swapped order it is exactly 0.000: the two input rows are identical, there are no positions, and
# cross-attention treats each query row on its own, so both rows ask the same question and get the same
# answer. In the standard order it is clearly non-zero (0.407 for this block): self-attention has mixed
# "cat" and "saw" into row 3 but only "the" into row 0, so the two queries differ.
#
# </details>

# %% [demo]
d, h = 32, 4
block = ref.DecoderBlock(d, h, 64, rng=0)
r = np.random.default_rng(0)
words = ["the", "cat", "saw", "the", "dog"]
vocab = {w: r.normal(size=d) for w in dict.fromkeys(words)}
x_words = np.stack([vocab[w] for w in words])  # (5, d): embeddings only
H_enc_demo = r.normal(size=(6, d))  # a 6-token source
causal = ref.create_causal_mask(len(words))


def block_cross_first(block, x, H_enc, self_attn_mask):
    """The swapped order, with the block's own weights: cross-attention, then self-attention, then the FFN."""
    out, w = block.cross_attn(ref.rms_norm(x, block.norm2_gamma), H_enc)
    x = x + out
    out, _ = block.self_attn(ref.rms_norm(x, block.norm1_gamma), mask=self_attn_mask)
    x = x + out
    return x + block.ffn(ref.rms_norm(x, block.norm3_gamma)), w


y_standard, w_standard = block(x_words, H_enc_demo, causal)
y_swapped, w_swapped = block_cross_first(block, x_words, H_enc_demo, causal)
rows = [f"{w} ({i})" for i, w in enumerate(words)]
cols = [f"src {j}" for j in range(6)]
fig, (left, right) = plotting.figure(1, 2, width=4.8, height=3.2)
plotting.heatmap(w_standard[0], rows, cols, kind="cross", ax=left, annotate=True, title="self, then cross (standard)")
plotting.heatmap(w_swapped[0], rows, cols, kind="cross", ax=right, annotate=True, title="cross, then self (swapped)",
                 row_label="")
plt.show()
print("largest difference between the rows of 'the (0)' and 'the (3)', over all heads:")
print(f"  standard order: {np.abs(w_standard[:, 0] - w_standard[:, 3]).max():.3f}   "
      f"swapped order: {np.abs(w_swapped[:, 0] - w_swapped[:, 3]).max():.3f}")
print(f"the block's outputs differ by up to {np.abs(y_standard - y_swapped).max():.2f} between the two orders")

# %% [markdown]
# In the swapped order the two rows for "the" are identical, to the last bit: cross-attention sees each
# token alone, so both ask the source the same question and get the same answer. In the standard order
# self-attention has already told row 3 that "the", "cat" and "saw" came before it (without positions
# it cannot tell in which order), and its question differs. By how much depends on the random weights;
# that it differs does not. (With position encodings the two rows would differ in the swapped order too,
# often by as much as here, but only because of *where* each token sits: they would still know nothing
# of the words around them.)

# %% [markdown]
# **Self-check 5.2 — explain why.** Stack six blocks, all in the swapped order (cross → self → FFN). In
# which blocks do the two "the" rows still ask the source identical questions? What does that say about
# how much the order matters in a deep decoder?
#
# <details><summary>Answer</summary>
#
# Only in block 1. From block 2 on, the stream has passed through the self-attention of the block
# below: the stack runs C, then S F C five times, then S F, so every cross-attention after the first
# reads states that already carry the target context. The standard order matters most for the first
# block's cross-attention, which is one reason why other orders still train. The cell below measures
# block 2.
#
# </details>

# %% [demo]
block2 = ref.DecoderBlock(d, h, 64, rng=1)
y1, _ = block_cross_first(block, x_words, H_enc_demo, causal)
_, w2 = block_cross_first(block2, y1, H_enc_demo, causal)
print("two blocks, both in the swapped order: largest difference between the rows of 'the (0)' and 'the (3)'")
print(f"  block 1: {np.abs(w_swapped[:, 0] - w_swapped[:, 3]).max():.3f}   block 2: {np.abs(w2[:, 0] - w2[:, 3]).max():.3f}")

# %% [markdown]
# So in a stack the swap changes the first block's cross-attention: block 2's already reads states
# that know the words before them. A model built the other way can still learn. Trained on the reversal
# task of Lessons 6–8 (the PyTorch twin of Lesson 6 with two decoder blocks, 1500 training steps, two
# random starts per order), both orders reversed between 97% and 100% of held-out sequences exactly:
# two starts each are too few to rank them. What the standard order buys is that even the first
# cross-attention asks with a query that knows the target written so far.

# %% [markdown]
# ## 5.5 Experiment: the missing mask
#
# The causal mask is what makes training honest: position $t$ is trained to predict the next target
# token, which is the decoder's input at position $t + 1$ (Lesson 6), so it must not see any position
# after $t$. The test: change the last target word ("dog" becomes "cat") and measure how far each
# position's output moves, with the causal mask and without it. Red marks any earlier position whose
# output moved.

# %% [markdown]
# **Self-check 5.3 — predict, then run.** Only the last word changes. With the causal mask, which of the
# five output rows move? Without it, which move, and will rows 0 and 3 (both "the") move by the same
# amount?
#
# <details><summary>Answer</summary>
#
# With the mask only row 4, the edited position, moves; rows 0 to 3 change by exactly 0, because none
# of them may look at position 4. Without the mask all five move (here by 1.111, 0.733, 0.941, 1.111
# and 4.373), and rows 0 and 3 move by exactly the same amount: without a mask and without positions
# they have the same input and read the same keys, so attention cannot tell them apart.
#
# </details>

# %% [demo]
x_edited = x_words.copy()
x_edited[-1] = vocab["cat"]
fig, axes = plotting.figure(1, 2, width=4.2, height=2.8)
for ax, mask, name in ((axes[0], causal, "with the causal mask"), (axes[1], None, "without it")):
    moved = np.abs(block(x_words, H_enc_demo, mask)[0] - block(x_edited, H_enc_demo, mask)[0]).max(axis=-1)
    plotting.bars(moved, labels=rows, ax=ax, highlight=[i for i in range(4) if moved[i] > 1e-12],
                  ylabel="largest change of the output", title=name)
    ax.set_xlabel("position (the last one was edited)")
    print(f"{name:21s}: " + "  ".join(f"{v:.3f}" for v in moved))
plt.show()

# %% [markdown]
# With the mask, only the last position moves. Without it, every position moves, because each one reads
# the future: during training the model could copy the answer instead of learning to predict it, and
# at generation time, when there is no future to read, it would fail.

# %% [markdown]
# ## 5.6 Post-norm: the 2017 arrangement
#
# The original transformer (2017) had the same three sublayers in the same order, with the norm on the
# other side of the residual add:
#
# $$x \leftarrow \operatorname{Norm}\big(x + \operatorname{Sublayer}(x)\big) \qquad\text{(post-norm)}
# \qquad\text{vs.}\qquad x \leftarrow x + \operatorname{Sublayer}\big(\operatorname{Norm}(x)\big) \qquad\text{(pre-norm)}.$$
#
# In post-norm the sublayers read the raw stream and the stream itself is normalised after every
# sublayer: every path from a block's input to its output goes through a norm. In pre-norm nothing on
# the stream normalises it; that is why a pre-norm stack ends with one final RMSNorm (Lesson 6). The 2017 model used LayerNorm; here both variants use RMSNorm,
# so the only difference is where the norm sits.
#
# ![One sublayer F in two arrangements. Left, pre-norm: F reads an RMSNorm of the stream x and its output is added back to x, so the stream is never normalised and an identity path runs from input to output. Right, post-norm: F reads x directly and the sum x + F(x) is normalised, so the norm sits on the stream and every path passes through it](../figures/pre_norm_vs_post_norm.svg)
#
# *One sublayer, two places for the norm. Red: what differs, the identity path of pre-norm and the norm that post-norm puts on the stream.*
#
# ### Exercise 5.3 — `decoder_block_post_norm(block, x, encoder_output, ...)`
#
# Write the post-norm block as a function of a `DecoderBlock`'s weights: the same `self_attn`,
# `cross_attn`, `ffn` and the gains `norm1_gamma`, `norm2_gamma`, `norm3_gamma`, each norm now after its
# sublayer's residual add.

# %% [solution] decoder_block_post_norm
def decoder_block_post_norm(block, x, encoder_output, self_attn_mask=None, cross_attn_mask=None):
    """The post-norm decoder block (2017) with the weights of `block`: x = Norm(x + Sublayer(x)).

    Inputs:  block a DecoderBlock; x (..., m, d_model); encoder_output (..., n, d_model);
             self_attn_mask broadcastable to (..., h, m, m); cross_attn_mask to (..., h, m, n).
    Returns: (output (..., m, d_model), cross_weights (..., h, m, n)).
    """
    ### BEGIN SOLUTION
    out, _ = block.self_attn(x, mask=self_attn_mask)
    x = rms_norm(x + out, block.norm1_gamma)
    out, cross_weights = block.cross_attn(x, encoder_output, mask=cross_attn_mask)
    x = rms_norm(x + out, block.norm2_gamma)
    x = rms_norm(x + block.ffn(x), block.norm3_gamma)
    return x, cross_weights
    ### END SOLUTION


# %% [test] 5.3

# %% [markdown]
# ### What the place of the norm changes, measured
#
# Take an untrained model of the kind Lesson 6 assembles (`ref.Seq2Seq`: a shared embedding, an encoder
# stack and a decoder stack), here with 24 decoder blocks. Its embeddings, its encoder's output
# $H_{\text{enc}}$ and its masks only serve to give the blocks realistic inputs. Send the same decoder
# input through its 24 blocks twice: as pre-norm blocks, and as post-norm blocks with the same weights.
# Ten random models: one thin line each, the median of the ten thick.
#
# * **Left: the size of the stream**, its root-mean-square (RMS), after each block.
# * **Right: how much the top still depends on the bottom.** Nudge the input of block 1 by a millionth
#   of its size, in 8 random directions, and measure the *relative* change of each block's output,
#   divided by the relative change of the input. A value of 1 (dotted) means the nudge is still as large,
#   relative to the stream, as when it went in.

# %% [markdown]
# **Self-check 5.4 — predict, then run.** Sketch both panels before you run. After 24 blocks, will the
# RMS of the stream be about 1, about 6 or about 24, in post-norm and in pre-norm? On the right, will
# each family of lines stay level, rise or fall with depth?
#
# <details><summary>Answer</summary>
#
# Post-norm's stream stays at 1.00: every sublayer ends with a norm whose gains are still 1.
# Pre-norm's grows steadily, to about 6 (between 5 and 8 in these ten models), far less than 24: what
# the blocks add points in different directions, so roughly their squares add up, not their sizes. On
# the right, the pre-norm lines stay level, of order one, because block 1's input remains a term of
# every later state; the post-norm lines fall steadily, close to a straight line on the log scale,
# because every norm rescales the whole sum.
#
# </details>

# %% [demo]
n_blocks, seeds = 24, range(10)
blocks = np.arange(1, n_blocks + 1)
names = ("pre-norm", "post-norm")
size = {name: [] for name in names}       # RMS of the stream after each block, one row per random model
influence = {name: [] for name in names}  # relative change out / relative change in, one row per random model
for seed in seeds:
    # An untrained model of Lesson 6's kind with 24 decoder blocks: its embeddings, its encoder's H_enc, its masks.
    model = ref.Seq2Seq(vocab_size=13, d_model=d, n_heads=h, d_ff=64, n_encoder_layers=2,
                        n_decoder_layers=n_blocks, rng=seed)
    r = np.random.default_rng(seed)
    src, tgt_in = r.integers(3, 13, size=(4, 7)), r.integers(3, 13, size=(4, 6))  # 4 sentences, no padding
    tgt_in[:, 0] = 1  # <bos>
    H_enc_s, src_mask = model.encode(src)
    self_mask = model.decoder_mask(tgt_in)
    x0 = model.embed(tgt_in)  # the input of block 1, (4, 6, d)
    nudges = r.normal(size=(8,) + x0.shape)  # 8 random directions, each one millionth of x0's size
    nudges *= 1e-6 * np.sqrt(np.sum(x0 ** 2) / np.sum(nudges ** 2, axis=(1, 2, 3), keepdims=True))
    for name in names:
        a, b, sizes, infl = x0, x0 + nudges, [], []
        for blk in model.decoder:
            if name == "pre-norm":
                a, b = blk(a, H_enc_s, self_mask, src_mask)[0], blk(b, H_enc_s, self_mask, src_mask)[0]
            else:
                a = ref.decoder_block_post_norm(blk, a, H_enc_s, self_mask, src_mask)[0]
                b = ref.decoder_block_post_norm(blk, b, H_enc_s, self_mask, src_mask)[0]
            sizes.append(np.sqrt(np.mean(a ** 2)))
            change = np.sqrt(np.sum((b - a) ** 2, axis=(1, 2, 3)) / np.sum(a ** 2))  # relative change out
            infl.append(np.mean(change) / 1e-6)  # divided by the relative change in
        size[name].append(sizes)
        influence[name].append(infl)
size = {name: np.array(v) for name, v in size.items()}            # (10 models, 24 blocks)
influence = {name: np.array(v) for name, v in influence.items()}  # (10 models, 24 blocks)
fig, (left, right) = plotting.figure(1, 2, width=4.4, height=3.0)
for name, color in zip(names, plotting.shades(2)):
    for ax, values in ((left, size[name]), (right, influence[name])):
        ax.plot(blocks, values.T, color=color, linewidth=0.6, alpha=0.5)  # one thin line per random model
        ax.plot(blocks, np.median(values, axis=0), color=color, linewidth=2.2, label=f"{name} (median)")
left.set(xlabel="block", ylabel="RMS of the stream", title="activation size through depth")
right.set(xlabel="block", ylabel="relative change out / in", yscale="log", title="how much the bottom still matters")
plotting.threshold(right, 1.0)
for ax in (left, right):
    ax.legend(frameon=False, fontsize=8)
plt.show()
print(f"after {n_blocks} blocks, {len(seeds)} random models (median, lowest to highest):")
for name in names:
    s, f = size[name][:, -1], influence[name][:, -1]
    print(f"  {name:9s}  stream RMS {np.median(s):.2f} ({s.min():.2f} to {s.max():.2f});  "
          f"influence of block 1's input {np.median(f):.3f} ({f.min():.3f} to {f.max():.3f})")
ratio = influence["pre-norm"][:, -1] / influence["post-norm"][:, -1]
print(f"  pre-norm / post-norm influence, model by model: {ratio.min():.0f} to {ratio.max():.0f} (median {np.median(ratio):.0f})")
below = influence["post-norm"].max(axis=0) < influence["pre-norm"].min(axis=0)  # (24,): per block
since = next((b for b in blocks if below[b - 1:].all()), None)
print(f"  every post-norm line below every pre-norm line from block {since} on")

# %% [markdown]
# * **Size.** In pre-norm every block *adds* to the stream and nothing rescales it: here it grows with
#   depth in every model, to between 5 and 8 after 24 blocks. In post-norm the stream is renormalised
#   after every sublayer and stays at 1 (the gains are still 1).
# * **Influence.** It is measured *relative* to the stream because the final norm discards the overall
#   size: in absolute terms, pre-norm's grown stream would look several times more sensitive for that
#   reason alone. In pre-norm, block 1's input is still a term of every later state (the identity path),
#   and its influence stays of order one: between 0.43 and 1.11 at block 24 in these ten models. In
#   post-norm every norm rescales the whole sum, and the influence fades steadily with depth, to between
#   0.001 and 0.03 at block 24: in each of these models at least 20 times less than in pre-norm, and
#   typically more than a hundred times less; from block 9 on, every post-norm line lies below every
#   pre-norm line. One reason the fade is so steady here: the rows of an untrained encoder's
#   $H_{\text{enc}}$ are much alike, so each cross-attention adds nearly the same vector whatever the
#   query, and the norm after it shrinks everything that came from below.
# * **The gradient** runs the same chain of derivatives backwards. Measured with autograd on the
#   PyTorch twin of Lesson 6, outside this notebook (100 random models of this kind, seeds 0 to 99, each
#   on its toy batch as above, with random letters as targets and the cross-entropy of the tied head as
#   the loss), the norm of the gradient that reaches block 1's input, divided by the norm of the
#   gradient at the normalised top, was between 0.27 and 1.07 in pre-norm and between 0.0004 and 0.11
#   in post-norm.
#
# These are untrained models; the measurement says nothing about how training will go. It is in line
# with what is known: deep post-norm stacks are hard to train. The 2017 model (6 blocks per stack) used
# a learning-rate warm-up (Lesson 8). Later work has linked the difficulty to gradients that shrink
# towards the bottom of a post-norm stack (Wang et al., 2019; Takase et al., 2023), to large gradients
# near the output at initialisation, which the warm-up tames (Xiong et al., 2020), and to each post-norm
# block depending heavily on its own sublayers (Liu et al., 2020). Pre-norm trains deep stacks with less
# tuning and became the usual choice (GPT-2, T5 and most later models), though post-norm can do as well
# or better in shallow stacks.

# %% [markdown]
# **Measured in training: residuals and norms.** The measurements above are about untrained models. The
# course's ablation ladder (Lesson 10, §10.15; `make ablations` trains it, and the results are shipped with
# the course, so this cell only reads them) trains the whole model of Lessons 6–9 on their reversal task,
# 300 steps, three seeds per row, with one piece removed at a time.
# Three of its rows are about this lesson's arrangement:
#
# * **no residuals** (every sublayer's output replaces the stream instead of being added to it): every seed
#   stays at 0 exact match, with the highest held-out loss of the ladder. Without the identity path the
#   signal must pass through every sublayer in turn, and this model does not learn the task in 300 steps.
# * **no norm** (no RMSNorm at all, the residual sums left as they are) and **post-norm** (the 2017
#   arrangement of §5.6) match the pre-norm model. This shows that the norm, and its place, are not what
#   this small, shallow task needs at 2 + 2 blocks; it does not show that norms are useless. The
#   measurements of §5.6 show where they matter: through 24 blocks, where the place of the norm decides
#   whether block 1's input still reaches the top.

# %% [demo]
from encdec.plotting.ablations import ablation_curves, table_rows

shipped = {r["name"]: r for r in table_rows()}  # encdec/data/ablations.json, written by `make ablations`
for name in ("full model", "no residuals", "no norm", "post-norm"):
    r = shipped[name]
    print(f"{name:>12}: exact match {r['exact_match']:.1%} (seeds {r['exact_match_min']:.1%} to "
          f"{r['exact_match_max']:.1%}), held-out loss {r['final_loss']:.3f}")
ablation_curves(rows=["full model", "no residuals", "no norm", "post-norm"])
plt.show()

# %% [markdown]
# ## 5.7 What cross-attention costs
#
# A decoder block is an encoder block (self-attention and feed-forward, each with a norm) plus one more
# sublayer. Cross-attention has its own complete set of projections $W_q, W_k, W_v, W_o$ [LEARNED]: it
# shares nothing with the block's self-attention, because it asks a different question of different
# inputs. Its norm gain `norm2_gamma` [LEARNED] comes with it.
#
# ### Exercise 5.4 — `cross_attention_params(d_model)`
#
# Return the number of [LEARNED] numbers the cross-attention sublayer adds to a decoder block of width
# `d_model`, as a formula. (Count from the attributes of the course's classes: the attention projections
# are used as `x @ W`, with no bias.) The test compares your formula with the parameters of real
# blocks.

# %% [solution] cross_attention_params
def cross_attention_params(d_model):
    """Number of [LEARNED] numbers in the cross-attention sublayer of a decoder block.

    Inputs:  d_model, the model width [CONFIG].
    Returns: an int: W_q, W_k, W_v, W_o and the sublayer's norm gain, together.
    """
    ### BEGIN SOLUTION
    return 4 * d_model * d_model + d_model
    ### END SOLUTION


# %% [test] 5.4

# %% [markdown]
# Where does a block's budget go? The cell below counts the parameters of a real `DecoderBlock` the
# size of the original base transformer ($d_{\text{model}} = 512$, 8 heads, $d_{ff} = 2048$), sublayer
# by sublayer, with the cross-attention sublayer drawn in red.

# %% [markdown]
# **Self-check 5.5 — predict, then run.** What share of this block's parameters is the cross-attention
# sublayer? If the block had 16 heads instead of 8, what would change?
#
# <details><summary>Answer</summary>
#
# A quarter: 1,049,088 of 4,198,400 (25%). With $d_{ff} = 4d$, each attention sublayer holds about
# $4d^2$ numbers and the feed-forward network about $8d^2$, so cross-attention is 4 parts of 16. With 16
# heads nothing changes: the heads split $d_{\text{model}}$ into narrower slices rather than add
# projections, so $W_q, W_k, W_v, W_o$ keep their shapes.
#
# </details>

# %% [demo]
big = ref.DecoderBlock(512, 8, 2048, rng=0)
groups = {"self-attention\n+ norm1": ("self_attn.", "norm1_gamma"),
          "cross-attention\n+ norm2": ("cross_attn.", "norm2_gamma"),
          "feed-forward\n+ norm3": ("ffn.", "norm3_gamma")}
counts = [sum(p.size for name, p in big.parameters().items() if name.startswith(prefixes))
          for prefixes in groups.values()]
fig, ax = plotting.figure(width=5.0, height=3.0)
plotting.bars(np.array(counts) / 1e6, labels=list(groups), ax=ax, highlight=1, ylabel="parameters (millions)",
              title=f"one decoder block, d_model = 512: {sum(counts):,} parameters")
plt.show()
for label, count in zip(groups, counts):
    print(f"{label.replace(chr(10), ' '):28s} {count:>10,}  ({count / sum(counts):.0%})")
print(f"4 d^2 + d = {4 * 512 ** 2 + 512:,}")
sixteen = ref.DecoderBlock(512, 16, 2048, rng=0)
print("with 16 heads instead of 8, the same counts:",
      all(p.shape == sixteen.parameters()[name].shape for name, p in big.parameters().items()))

# %% [markdown]
# ## Summary
#
# * A token meets, in one decoder block: the incoming states, masked causal self-attention, cross-attention
#   to the encoder, the feed-forward network, each adding to the residual stream, and then the next block.
# * Self-attention comes first so that cross-attention asks the source with a state that knows the
#   target written so far. With cross-attention first, equal tokens ask equal questions in the first
#   block (without positions); from block 2 on, the queries carry context either way. The order is the
#   2017 convention that T5 and BART kept; other orders also train.
# * Pre-norm, $x + \operatorname{Sublayer}(\operatorname{Norm}(x))$, with one norm per sublayer, keeps an
#   identity path through the stack, and its stream grows. Post-norm,
#   $\operatorname{Norm}(x + \operatorname{Sublayer}(x))$, keeps the stream at unit size. In ten untrained
#   24-block models, the relative influence of block 1's input on the top was 22 to 519 times smaller in
#   post-norm than in pre-norm.
# * Without the causal mask, changing a later target token changes earlier outputs: the model could
#   read the answer.
# * Cross-attention adds $4d^2 + d$ parameters per decoder block, whatever the number of heads.
#
# **Next — Lesson 6, Assembling the encoder–decoder.** Embeddings shared by source, target and
# output head, positions, $N$ encoder and $N$ decoder blocks, the final norms, and the whole
# encoder–decoder forward pass, checked against its PyTorch twin.
