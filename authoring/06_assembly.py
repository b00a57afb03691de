# %% [markdown]
# # Lesson 6 — Assembling the encoder–decoder
#
# *Encoder–Decoder Transformers, from NumPy to GPU · Lesson 6 of 10*
#
# ![The course map: the whole encoder–decoder transformer drawn bottom to top, with this lesson's part, the assembled model (the embedding matrix shared by source, target and output head, the positions, the encoder and decoder stacks, their final norms and the tied head), outlined in red and the rest faded](../figures/course_map_06.svg)
#
# *The course map. In red: everything that turns token ids into logits, which this lesson assembles: the shared embedding $E$ and the positions, both stacks with their final norms, $H_{\text{enc}}$, and the tied head. Faded: the loss, decoding and training, which Lessons 7–10 add. The [figure key](../FIGURE_KEY.md) explains the shapes.*
#
# You have every part: attention, the encoder block, the decoder block with its cross-attention.
# Today they become one model that reads a sequence of token ids and returns, for every target
# position, a score for every word of the vocabulary.
#
# **Learning goals.** By the end of this lesson you can
#
# 1. build the decoder's inputs from the targets by shifting them right (teacher forcing);
# 2. embed tokens with the shared embedding matrix, scaled by $\sqrt{d_{model}}$, plus positions;
# 3. write the encoder and the decoder passes that turn token ids into logits through a tied head;
# 4. count every learned number of the model with a formula, and check it against the model;
# 5. say where each [LEARNED], [CONFIG] and [STATE] quantity lives, and check the NumPy model
#    against its PyTorch twin;
# 6. put the steps of the forward pass in order.
# 7. say why a model reads subword tokens rather than characters or whole words, what a subword
#    vocabulary changes in the model, and write one merge step of byte-pair encoding.
#
# **Recap of Lesson 5.** A decoder block is three pre-norm sublayers, each added back to the residual
# stream: masked causal self-attention, then cross-attention to the encoder output $H_{\text{enc}}$,
# then the feed-forward network. The course uses this standard order (a token first reads what has been
# written, then consults the source, then transforms), so that already in the first block
# cross-attention asks with a state that knows the target context. The cross-attention sublayer is
# what the decoder block adds to a decoder-only block: $4d^2 + d$ more parameters. The post-norm
# variant of 2017 puts the norm after each residual sum instead of before each sublayer.
#
# **How exercises work.** Replace each stub (`raise NotImplementedError()`) with your code, run the
# cell, then run the test cell below it: it compares your function with the course's reference on
# many inputs and says *what* is wrong. The building blocks of Lessons 1–5 come from the course
# library `encdec` in this lesson, so a mistake in an earlier lesson never costs you points here.
# As in Lesson 1, return new arrays and leave the arrays passed to your functions unchanged.
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
from encdec import (DecoderBlock, EncoderBlock, ModelConfig, Seq2Seq, create_causal_mask,
                    padding_mask, rms_norm, sinusoidal_positions)
from encdec.toy import BOS, EOS, PAD, ReverseTask

np.set_printoptions(precision=4, suppress=True)

# %% [markdown]
# ## 6.1 The whole model, and the task it will learn
#
# An encoder–decoder model maps a source sequence of $n$ token ids to a target sequence of $m$ ids.
# The course map at the top of this lesson draws the whole of it, bottom to top, with the shape of
# every array that flows between the parts. On the left, the source `src` is embedded and passes
# through the encoder stack and its final norm, giving $H_{\text{enc}}$ [STATE], computed once per
# source. On the right, the targets shifted right, `tgt_in`, are embedded with the same $E$ and pass
# through the decoder stack, whose every block reads $H_{\text{enc}}$; a final norm and the tied head
# give the logits, shape `(B, m, V)`. In words:
#
# * **Embed**: a token id becomes a row of the embedding matrix $E \in \mathbb{R}^{V \times d}$
#   [LEARNED], scaled by $\sqrt{d}$, plus the sinusoidal position row of Lesson 1 (its formula is
#   [CONFIG]; the rows computed from it for the input's length are [STATE]).
# * **Encoder**: $N$ encoder blocks (Lesson 2) and a final RMSNorm turn the source into $H_{\text{enc}}$.
# * **Decoder**: $N$ decoder blocks (Lesson 5), each reading $H_{\text{enc}}$ through cross-attention,
#   and a final RMSNorm.
# * **Head**: the same $E$, transposed, turns each decoder state into $V$ logits, one score per word.
#
# The toy task of Lessons 6–9 needs real alignment: **reverse a sequence of letters**. Target
# position $t$ (counting from 0) must read source position $n_b - 1 - t$, where $n_b$ is the number of
# letters in that source, pads excluded, so a trained model's cross-attention will draw an
# anti-diagonal (Lesson 8). The vocabulary has 13 ids: `<pad>` 0, `<bos>` 1, `<eos>` 2, then the
# letters a–j. Sources are right-padded; each target ends in `<eos>`.

# %%
task = ReverseTask(n_letters=10, min_len=3, max_len=8)
src, tgt = task.batch(rng=0, size=3)  # src (3, 8), tgt (3, 9): right-padded ids
for s, t in zip(src, tgt):
    print(f"{task.decode(s):>9}  ->  {task.decode(t):<9}   src ids {s}   target ids {t}")

# %% [markdown]
# ## 6.2 Teacher forcing: the decoder reads the targets, shifted right
#
# The decoder predicts the target one position at a time: at position $t$ it has seen the tokens
# before $t$ and must score the token at $t$. During training we do not feed it its own guesses; we
# feed it the **true** previous tokens. This is *teacher forcing*. The decoder's input at position $t$
# is the target at position $t-1$, and position 0, which has nothing before it, reads `<bos>`:
#
# | position $t$ | 0 | 1 | 2 | 3 | 4 | 5 |
# |---|---|---|---|---|---|---|
# | decoder input `tgt_in` | `<bos>` | b | e | f | a | c |
# | target (to predict) | b | e | f | a | c | `<eos>` |
#
# So `tgt_in` is the target sequence **shifted right by one**: `<bos>` in front, the last token
# dropped, the length unchanged. Write the targets $y_1, \dots, y_m$, so that position $t$ holds
# $y_{t+1}$. With the causal mask of Lesson 3, position $t$ sees `tgt_in[:t+1]` = `<bos>`,
# $y_1, \dots, y_t$ and predicts $y_{t+1}$: exactly the targets *before* the one it predicts. All $m$
# positions are therefore trained at once, from one forward pass (Lesson 8).
#
# ### Exercise 6.1 — `shift_right(targets, bos_id)`
#
# Work on the last axis, so the same code serves one sequence `(m,)` and a batch `(B, m)`. Keep the
# ids integers: they index the rows of $E$.

# %% [solution] shift_right
def shift_right(targets, bos_id):
    """Teacher-forcing inputs: BOS first, the last target dropped.

    Inputs:  targets (..., m) integer ids, e.g. [y1, y2, EOS, PAD].
             bos_id  the id of <bos>.
    Returns: (..., m) integer ids [BOS, y1, y2, EOS]: position t holds the target of position t - 1.
    """
    ### BEGIN SOLUTION
    targets = np.asarray(targets)
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)  # (..., 1)
    return np.concatenate([bos, targets[..., :-1]], axis=-1)
    ### END SOLUTION


# %% [test] 6.1

# %% [markdown]
# The toy batch, as the decoder will read it (computed with the reference `shift_right`).

# %% [markdown]
# **Self-check 6.1 — predict, then run.** Look at the target ids printed above. Will `<eos>` (id 2)
# appear in `tgt_in`? In which rows, and what is the model asked to predict at the position that reads
# it?
#
# <details><summary>Answer</summary>
#
# Yes, in rows 1 and 2 (counting from 0), the targets shorter than the longest one. There `<eos>` is the input at a
# position whose target is `<pad>`, which the loss ignores (Lesson 7). Row 0 fills all 9 positions, so
# its `<eos>` is the last target and is the token that shifting drops. Shifting drops the last
# *position*, not the `<eos>`.
#
# </details>

# %%
tgt_in = ref.shift_right(tgt, BOS)
print("targets\n", tgt, "\ntgt_in = shift_right(targets)\n", tgt_in)

# %% [markdown]
# ## 6.3 One embedding matrix for three jobs
#
# The model has a single embedding matrix $E \in \mathbb{R}^{V \times d}$ [LEARNED], row $v$ for
# token $v$. It does three jobs: it embeds the **source** tokens, it embeds the **target** tokens, and,
# transposed, it is the **output head** that scores every word: $z = h\,E^\top$. Sharing one
# vocabulary and one matrix for all three jobs is the choice of the original Transformer, of BART and
# of the original T5 (v1.0) [CONFIG]. T5 v1.1, and the models built on it such as mT5 and Flan-T5,
# keep one embedding shared by source and target but give the output head its own matrix. Tying the
# head to the embedding saves $V d$ parameters and means a word is read and written with the same
# vector.
#
# A token at position $t$ enters the model as
#
# $$x_t = \sqrt{d}\;E[\text{token}_t] + PE_t .$$
#
# Why the factor $\sqrt{d}$? $E$ is initialised with entries of variance $1/d$, so that a row has norm
# about 1 and the tied head $h E^\top$ starts with logits of unit scale (a normalised $h$ has norm about
# $\sqrt{d}$). But the position encodings are sines and cosines with entries of mean square $1/2$
# (root-mean-square 0.71): next to them the entries of an unscaled row (root-mean-square $1/\sqrt{d}$,
# 0.125 for $d = 64$) would be about $\sqrt{d/2}$ times smaller, and the model would see mostly
# *where* a token is and hardly *which* token it is. Multiplying the row, and only the row, by
# $\sqrt{d}$ gives its entries unit variance, the same order as the positions.
#
# ### Exercise 6.2 — `embed(model, tokens)`
#
# The model exercises of this lesson are functions that take the model as their first argument, like
# methods. They read the model's arrays: `model.embedding` is $E$ of shape `(V, d_model)` and
# `model.config.d_model` is $d$. NumPy indexing `E[tokens]` looks up rows for any shape of `tokens`.
# Positions count from 0 along the last axis of `tokens`, whatever the token there.

# %% [solution] embed
def embed(model, tokens):
    """Token ids -> input vectors: sqrt(d_model) * E[tokens] + PE.

    Inputs:  model  a Seq2Seq: model.embedding E (V, d_model) [LEARNED], model.config.d_model [CONFIG].
             tokens (..., T) integer ids.
    Returns: (..., T, d_model); position t gets PE[t] from sinusoidal_positions(T, d_model).
    """
    ### BEGIN SOLUTION
    d = model.config.d_model
    T = tokens.shape[-1]
    return model.embedding[tokens] * np.sqrt(d) + sinusoidal_positions(T, d)  # (..., T, d)
    ### END SOLUTION


# %% [test] 6.2

# %% [markdown]
# The figure measures the argument above for $d = 64$: the entries of unscaled rows of $E$ (light), of
# the same rows times $\sqrt{d}$ (red), and of the position encodings of 200 positions (grey). Each
# label gives the sample's standard deviation.

# %% [markdown]
# **Self-check 6.2 — predict, then run.** Predict the three standard deviations in the legend: the
# entries of $E$'s rows, of $\sqrt{d}\,E$'s rows, and of the position encodings. The text gave the
# positions' root-mean-square, 0.71; will their standard deviation be the same?
#
# <details><summary>Answer</summary>
#
# 0.12 (that is $1/\sqrt{64} = 0.125$), 1.00, and 0.63 for the positions. Their entries have mean square
# exactly 1/2 (root-mean-square 0.71), but their mean is not 0: the slow cosine columns stay near 1 over
# the first 200 positions, so the standard deviation is smaller than the root-mean-square. The scaled
# rows are on the positions' scale; the unscaled ones are about 5 to 6 times smaller.
#
# </details>

# %% [demo]
d = 64
E = np.random.default_rng(0).normal(0.0, 1.0 / np.sqrt(d), size=(1000, d))  # initialised like Seq2Seq.embedding
pe = ref.sinusoidal_positions(200, d)
samples = {f"E rows (std {E.std():.2f})": E, f"sqrt(d) * E rows (std {(E * np.sqrt(d)).std():.2f})": E * np.sqrt(d),
           f"PE entries (std {pe.std():.2f})": pe}
colors = [plotting.shades(2)[0], plotting.COLORS["highlight"], plotting.COLORS["reference"]]
fig, ax = plotting.figure(width=6.0, height=3.2)
plotting.histograms(samples, ax=ax, colors=colors, xlabel="entry value", title="what the model adds up, for d = 64")
plt.show()

# %% [markdown]
# Only the scaled rows are on the positions' scale: without the factor $\sqrt{d}$ the token's identity
# would be a small ripple on top of its position.

# %% [markdown]
# ## 6.4 The encoder pass
#
# The encoder reads the whole source at once; nothing in it is causal. With $M_{\text{src}}$ the source
# padding mask of Lesson 2 (so that no token attends to a pad),
#
# $$H^{(0)} = \operatorname{embed}(\text{src}),\qquad H^{(\ell)} = \operatorname{EncoderBlock}_\ell\big(H^{(\ell-1)}, M_{\text{src}}\big)\ \ (\ell = 1..N),\qquad H_{\text{enc}} = \operatorname{RMSNorm}\big(H^{(N)};\ \gamma_{\text{enc}}\big).$$
#
# Each block reads the previous block's output, and each block already contains its residual
# connections: the loop is just `x = block(x, mask=src_mask)`. Why a **final** norm? In a pre-norm
# block every sublayer reads a normalised copy of the residual stream, but the stream itself is never
# normalised; it grows from block to block. The final RMSNorm, with its own gain
# $\gamma_{\text{enc}}$ [LEARNED], hands the decoder a memory of a fixed scale.
#
# $H_{\text{enc}}$ is [STATE]: computed once per source, then read by every decoder block (and, in
# Lesson 9, by every decoding step). The decoder's cross-attention also needs the source padding mask,
# so the encoder returns both.
#
# ### Exercise 6.3 — `encode(model, src)`
#
# Use your `embed` and the pieces imported from `encdec` in the first cell: `padding_mask(tokens,
# pad_id)` returns the additive mask of shape `(..., 1, 1, n)`, and `rms_norm(x, gamma, eps)`
# normalises the last axis. The model provides `model.encoder` (a list of `EncoderBlock`s, called as
# `block(x, mask=...)`), `model.encoder_norm_gamma` (d,), `model.config.pad_id` and `model.config.eps`.
# (While this is checked, the test uses the reference `embed`, so a mistake in Exercise 6.2 is not charged
# again.)

# %% [solution] encode
def encode(model, src):
    """The encoder pass: embed, N encoder blocks with the source padding mask, final RMSNorm.

    Inputs:  model a Seq2Seq; src (..., n) integer ids, padded with model.config.pad_id.
    Returns: (H_enc (..., n, d_model), src_mask (..., 1, 1, n)), the mask additive: -inf at pads.
    """
    ### BEGIN SOLUTION
    src_mask = padding_mask(src, model.config.pad_id)  # (..., 1, 1, n)
    x = embed(model, src)  # (..., n, d)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask
    ### END SOLUTION


# %% [test] 6.3

# %% [markdown]
# ## 6.5 The decoder pass and the tied head
#
# The decoder embeds `tgt_in` with the same $E$, runs its $N$ blocks, normalises, and multiplies by
# $E^\top$:
#
# $$Y^{(0)} = \operatorname{embed}(\texttt{tgt\_in}),\qquad Y^{(\ell)} = \operatorname{DecoderBlock}_\ell\big(Y^{(\ell-1)}, H_{\text{enc}}, M_{\text{self}}, M_{\text{src}}\big),\qquad z = \operatorname{RMSNorm}\big(Y^{(N)};\ \gamma_{\text{dec}}\big)\,E^\top \in \mathbb{R}^{m \times V}.$$
#
# Two masks, two jobs:
#
# * $M_{\text{self}}$, for the decoder's self-attention, is the causal mask **plus** the target padding
#   mask, as in Lesson 3: position $t$ sees positions $\le t$ that are not pads. Its shape
#   `(..., 1, m, m)` broadcasts over the heads.
# * $M_{\text{src}}$, for cross-attention, is the source padding mask the encoder returned: the decoder
#   may read every source position except the pads. It is not causal; the whole source is known.
#
# The result is **logits** $z$ [STATE], one unnormalised score per word of the vocabulary at each
# position. The softmax that turns them into probabilities belongs to the loss (Lesson 7) and to
# decoding (Lesson 9), not to the model. The $\sqrt{d}$ factor belongs to the embedding lookup only:
# the head is plain $h E^\top$.
#
# ### Exercise 6.4 — `decode(model, tgt_in, H_enc, src_mask)`
#
# `model.decoder` is a list of `DecoderBlock`s, called as `block(x, H_enc, self_attn_mask=...,
# cross_attn_mask=...)`; each returns `(output, cross_weights)`. The final gain is
# `model.decoder_norm_gamma`. `create_causal_mask(m)` gives the `(m, m)` causal mask.
# (The test uses the reference `embed` and the reference encoder's `H_enc`.)

# %% [solution] decode
def decode(model, tgt_in, H_enc, src_mask):
    """The decoder pass: embed, N decoder blocks, final RMSNorm, tied output head.

    Inputs:  model    a Seq2Seq
             tgt_in   (..., m) integer ids, BOS first (shift_right of the targets)
             H_enc    (..., n, d_model) the encoder output
             src_mask (..., 1, 1, n) the source padding mask, for cross-attention
    Returns: logits (..., m, V) = RMSNorm(top decoder state) @ E.T
    """
    ### BEGIN SOLUTION
    m = tgt_in.shape[-1]
    self_mask = create_causal_mask(m) + padding_mask(tgt_in, model.config.pad_id)  # (..., 1, m, m)
    x = embed(model, tgt_in)  # (..., m, d)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask)
    h = rms_norm(x, model.decoder_norm_gamma, model.config.eps)
    return h @ model.embedding.T  # (..., m, V)
    ### END SOLUTION


# %% [test] 6.4

# %% [markdown]
# The forward pass is the two together: `decode(model, tgt_in, *encode(model, src))`, which is what
# the reference's `model(src, tgt_in)` computes. Here is a small model for the toy task (with random,
# untrained weights) and the shape of what it returns.

# %%
model = Seq2Seq(vocab_size=task.vocab_size, d_model=32, n_heads=4, d_ff=64,
                n_encoder_layers=2, n_decoder_layers=2, pad_id=PAD, rng=0)
logits = model(src, tgt_in)
print("src", src.shape, "tgt_in", tgt_in.shape, "->  logits", logits.shape, "(B, m, V)")

# %% [demo]
# Your encode and decode, end to end, against the reference model on the toy batch.
try:
    mine = decode(model, tgt_in, *encode(model, src))
    print(f"your forward pass: largest difference from the reference {np.abs(mine - logits).max():.2e}")
except NotImplementedError:
    print("Finish Exercises 6.2 to 6.4 first, then run this cell again.")
except Exception as exc:
    print(f"your forward pass raised {type(exc).__name__}: {exc}")

# %% [markdown]
# What does an untrained model do? Left: the cross-attention of the last decoder block (averaged over
# its 4 heads) for the third example: rows are the decoder positions asking, columns the source
# positions; the two pad columns are hatched, hidden by $M_{\text{src}}$. Right: the probabilities
# $\operatorname{softmax}(z)$ at position 0, where the decoder reads `<bos>` (red), with the uniform
# $1/V$ dotted. The cell also prints the cross-entropy of the untrained model on the batch (Lesson 7
# defines it; lower is better), beside that of a uniform guess, $\ln V$.

# %% [markdown]
# **Self-check 6.3 — predict, then run.** This model has never been trained. At position 0, will its
# probabilities be close to uniform ($1/13 \approx 0.08$ each)? Will its cross-entropy be below, near,
# or above $\ln 13 \approx 2.565$?
#
# <details><summary>Answer</summary>
#
# Not uniform: this model puts 0.83 on `<bos>`, the token it reads there, and its cross-entropy is
# 3.755, above $\ln V$. The residual stream still carries $\sqrt{d}\,E[\text{token}]$ and the tied head
# scores the state against every row of $E$, so the input's own row tends to win: the model echoes its
# input, and a confident wrong guess costs more than a uniform one. How strongly depends on the random
# weights (this model is an extreme case); over 100 random models of this size the cross-entropy was
# above $\ln V$ in all 100.
#
# </details>

# %% [demo]
H_enc, src_mask = model.encode(src)
_, cross = model.decode(tgt_in, H_enc, src_mask, return_attention=True)
b = 2
weights = cross[-1][b].mean(axis=0)  # (m, n), averaged over heads
rows = [task.vocab[i] for i in tgt_in[b]]
cols = [task.vocab[i] for i in src[b]]
probs = ref.softmax(logits[b, 0])
fig, (left, right) = plotting.figure(1, 2, width=4.6, height=3.6)
plotting.heatmap(weights, rows, cols, kind="cross", ax=left, row_label="decoder position (tgt_in)",
                 col_label="source position", title="untrained cross-attention")
plotting.bars(probs, labels=task.vocab, ax=right, highlight=int(tgt_in[b, 0]),
              title=f"p at position 0 (reads <bos>, target {task.vocab[tgt[b, 0]]})")
plotting.threshold(right, 1 / task.vocab_size, label="uniform 1/V")
right.tick_params(axis="x", rotation=90)
right.legend(frameon=False, fontsize=8)
plt.show()
loss, _ = ref.softmax_cross_entropy(logits, tgt, pad_id=PAD)
keep = tgt_in != PAD
echo = (logits.argmax(axis=-1) == tgt_in)[keep].mean()
print(f"p(<bos>) at position 0 of example {b}: {probs[BOS]:.2f}")
print(f"top guess = the input token itself at {echo:.0%} of the non-pad positions")
print(f"cross-entropy of the untrained model {loss:.3f}; a uniform guess would score ln V = {np.log(task.vocab_size):.3f}")

# %% [markdown]
# The cross-attention weights are spread over all the real source positions, with no alignment yet: no
# anti-diagonal, only a mild preference that most rows share (here for the last real source column:
# 0.26 of the weight on average, against a uniform $1/6 \approx 0.17$, and the largest weight in 7 of the
# 9 rows). Over 100 random models of this size, the most-read column of this example gets 1.1 to 2.1
# times the uniform share: a bias of the random weights, not an alignment. The probabilities are
# not uniform, and they are wrong in a telling way: the favourite is `<bos>`, the token the position
# *reads*. The residual stream still carries $\sqrt{d}\,E[\text{token}]$, and the tied head scores a
# state against every row of $E$, so the closest row is often the input's own: an untrained tied model
# tends to echo its input. How strongly depends on the random weights: this model puts 0.83 on `<bos>`
# and echoes at every position; over 100 random models of this size, on this batch, the favourite at
# position 0 was `<bos>` in 76, and the favourite's probability had a median of 0.38 (0.18 to 0.83). Either way its cross-entropy is above
# $\ln V$: a wrong guess made with confidence costs more than a uniform one. Training (Lesson 8) turns
# the left panel into an anti-diagonal and moves the probability to the right letter.

# %% [markdown]
# ## 6.6 How many numbers does the model learn?
#
# Every [LEARNED] array, with its shape (see `block.parameters()` for each block):
#
# | where | arrays |
# |---|---|
# | shared embedding and head | $E$ `(V, d)` |
# | each attention sublayer | $W_q, W_k, W_v, W_o$, each `(d, d)`, no biases |
# | each feed-forward network | $W_1$ `(d, d_ff)`, $b_1$ `(d_ff,)`, $W_2$ `(d_ff, d)`, $b_2$ `(d,)` |
# | each RMSNorm | a gain $\gamma$ `(d,)` |
# | each encoder block | self-attention, feed-forward, 2 norms |
# | each decoder block | self-attention, cross-attention, feed-forward, 3 norms |
# | the top of each stack | one final norm for the encoder, one for the decoder |
#
# Positions are not counted: their formula is [CONFIG] and never learned, and the table computed from it
# for a batch's length is [STATE], like the mask arrays. Neither are the masks: their rules are
# [CONFIG], and the mask arrays, built from each batch, are [STATE].
#
# ### Exercise 6.5 — `parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None)`
#
# Write the count as a formula in $V$, $d$, $d_{ff}$, $N_{\text{enc}}$ and $N_{\text{dec}}$
# (`n_decoder_layers=None` means as many decoder layers as encoder layers). Count from the table, not
# from a model: the test checks your formula against the arrays of real models, and refuses code that
# builds one to count it.

# %% [solution] parameter_count
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """The number of [LEARNED] numbers in a Seq2Seq, from its [CONFIG] sizes.

    Inputs:  vocab_size V, d_model d, d_ff, n_encoder_layers N_enc, n_decoder_layers N_dec
             (None: the same as N_enc).
    Returns: an int.
    """
    ### BEGIN SOLUTION
    if n_decoder_layers is None:
        n_decoder_layers = n_encoder_layers
    V, d = vocab_size, d_model
    attention = 4 * d * d
    ffn = 2 * d * d_ff + d_ff + d
    encoder_block = attention + ffn + 2 * d
    decoder_block = 2 * attention + ffn + 3 * d
    return V * d + n_encoder_layers * encoder_block + n_decoder_layers * decoder_block + 2 * d
    ### END SOLUTION


# %% [test] 6.5

# %% [markdown]
# Where do the numbers go? The reference formula, component by component, for the toy model and for a
# base-sized model ($V = 32000$, $d = 512$, $d_{ff} = 2048$, $N = 6$).

# %% [markdown]
# **Self-check 6.4 — predict, then run.** For the base-sized model, rank the embedding $E$, the encoder
# blocks and the decoder blocks by size, and estimate the total. Will the ranking be the same in the toy
# model ($V = 13$, $d = 32$, $d_{ff} = 64$, $N = 2$)?
#
# <details><summary>Answer</summary>
#
# Base-sized: decoder blocks 25.2 million (42%), then encoder blocks 18.9 million (31%), then the
# embedding 16.4 million (27%); 60,471,296 in all. The decoder is the largest part because each of its
# blocks carries a second attention sublayer. In the toy model the embedding is only 1%, below both
# stacks: blocks grow like $d^2$, the embedding like $V d$, and $V = 13$ is tiny.
#
# </details>

# %% [demo]
def shares(V, d, d_ff, N):
    enc = N * (ref.parameter_count(V, d, d_ff, 1, 0) - V * d - 2 * d)
    dec = N * (ref.parameter_count(V, d, d_ff, 0, 1) - V * d - 2 * d)
    parts = {"embedding E": V * d, "encoder blocks": enc, "decoder blocks": dec, "final norms": 2 * d}
    assert sum(parts.values()) == ref.parameter_count(V, d, d_ff, N)
    return parts


fig, axes = plotting.figure(1, 2, width=4.4, height=3.2)
for ax, (name, sizes) in zip(axes, [("toy model", (task.vocab_size, 32, 64, 2)), ("base-sized model", (32000, 512, 2048, 6))]):
    parts = shares(*sizes)
    total = sum(parts.values())
    values = np.array(list(parts.values())) / total
    plotting.bars(values, labels=list(parts), ax=ax, role="reference", highlight=int(np.argmax(values)),
                  ylabel="share of the parameters", title=f"{name}: {total:,} numbers")
    ax.tick_params(axis="x", rotation=20)
plt.show()
print("toy model: formula", ref.parameter_count(task.vocab_size, 32, 64, 2), "= counted", model.num_parameters())
for name, sizes in [("toy model", (task.vocab_size, 32, 64, 2)), ("base-sized model", (32000, 512, 2048, 6))]:
    parts = shares(*sizes)
    print(f"{name}: " + ", ".join(f"{k} {v:,} ({v / sum(parts.values()):.1%})" for k, v in parts.items()))

# %% [markdown]
# ## 6.7 Where [LEARNED], [CONFIG] and [STATE] live
#
# Every quantity in the model is one of the three kinds, and each kind has its own home. Before the
# table, one question to test the rule on.

# %% [markdown]
# **Self-check 6.5 — explain why.** $H_{\text{enc}}$ is computed once per source and then read by every
# decoder block, and in Lesson 9 by every decoding step. Why is it [STATE] and not [CONFIG]? And the
# decoder's mask for the toy batch, `model.decoder_mask(tgt_in)` of shape `(3, 1, 9, 9)`?
#
# <details><summary>Answer</summary>
#
# $H_{\text{enc}}$ is computed by the program from the input: every source gives a different
# $H_{\text{enc}}$. Being reused does not make it a setting, since [CONFIG] is the same for every
# input; its lifetime is one forward pass, or one decoding run. Likewise the rules "hide the future"
# and "hide every pad" are [CONFIG], but the `(3, 1, 9, 9)` array is built for this batch's length and
# its pads, so it is [STATE].
#
# </details>

# %% [markdown]
# | tag | what | where in the model |
# |---|---|---|
# | [CONFIG] | $V$, $d$, $h$, $d_{ff}$, $N_{\text{enc}}$, $N_{\text{dec}}$, the pad id, $\varepsilon$, the dropout rate; the masking rules; the sinusoid formula of the positions; one $E$ shared by source, target and head | `model.config`, a frozen `ModelConfig`; the rules, the formula and the sharing are fixed in the code |
# | [LEARNED] | $E$, every $W$ and $b$, every gain $\gamma$ | `model.parameters()`: a dict of arrays, by name, saved with the model |
# | [STATE] | computed from the inputs: embedded inputs, the position rows and the mask arrays built for a batch, $H_{\text{enc}}$, attention weights, logits (later: gradients, Adam's $m$, $v$ and step count, the KV cache) | not in the model object; here, what a forward call computes and returns. Its lifetime varies: one forward pass (activations), one decoding run ($H_{\text{enc}}$, the KV cache of Lesson 9), a whole training run (Adam's state, checkpointed with the model) |
#
# The listing below prints all three for the toy model. Parameter names repeat per block, so they are
# shown once with the block number as `{i}`.

# %% [demo]
import re

print("[CONFIG]  model.config =", model.config)
groups = {}
for name, p in model.parameters().items():
    key = re.sub(r"^(encoder|decoder)\.\d+\.", r"\1.{i}.", name)
    groups.setdefault(key, [p.shape, 0])[1] += 1
print(f"\n[LEARNED] model.parameters(): {len(model.parameters())} arrays, {model.num_parameters():,} numbers")
for key, (shape, count) in groups.items():
    print(f"    {key:<30} {str(shape):<10}" + (f" x {count} blocks" if count > 1 else ""))
H_enc, src_mask = model.encode(src)
_, cross = model.decode(tgt_in, H_enc, src_mask, return_attention=True)
state = {"embed(src)": model.embed(src), "src_mask": src_mask, "decoder_mask(tgt_in)": model.decoder_mask(tgt_in),
         "H_enc": H_enc, "cross-attention weights, each block": cross[0], "logits": logits}
print("\n[STATE]   one forward pass on the toy batch creates:")
for key, value in state.items():
    print(f"    {key:<38} {value.shape}")

# %% [markdown]
# ## 6.8 The PyTorch twin
#
# `encdec.torch_model` holds the same model in PyTorch: the same [CONFIG], the same parameter names
# and shapes (`W` used as `x @ W`, gains of shape `(d,)`), but fused kernels, any device and automatic
# gradients. `from_numpy` copies every [LEARNED] array into it. In float64 the two agree to rounding
# error (about $10^{-15}$) on this batch: strong evidence that they compute the same function. In
# float32, the GPU's usual precision, they agree to about $10^{-6}$. The weights also travel back
# without loss.

# %% [demo]
import torch
from encdec import torch_model

twin = torch_model.from_numpy(model)  # float64, every array copied by name
with torch.no_grad():
    twin_logits = twin(torch.from_numpy(src), torch.from_numpy(tgt_in)).numpy()
    twin32 = torch_model.from_numpy(model, dtype=torch.float32)
    twin32_logits = twin32(torch.from_numpy(src), torch.from_numpy(tgt_in)).double().numpy()
print("same names:", sorted(twin.state_dict()) == sorted(model.parameters()))
print(f"float64 twin: largest logit difference {np.abs(twin_logits - logits).max():.1e}")
print(f"float32 twin: largest logit difference {np.abs(twin32_logits - logits).max():.1e}")
back = torch_model.to_numpy(twin)
print("weights back to NumPy unchanged:", all(np.array_equal(back.parameters()[k], v) for k, v in model.parameters().items()))

# %% [markdown]
# ## 6.9 The forward pass, in order
#
# ### Exercise 6.6 — order the steps
#
# Here are the steps that take a batch of token ids to logits, shuffled. Put them in the order the
# model performs them.
#
# 1. apply the encoder's final RMSNorm: the result is H_enc
# 2. multiply by E transposed (the tied output head): logits over the vocabulary
# 3. add the sinusoidal position encodings
# 4. embed the target inputs the same way (rows of E times sqrt(d_model), plus the positions), and run the N decoder blocks on them; each cross-attends to H_enc
# 5. look up each source token's row of E and multiply it by sqrt(d_model)
# 6. apply the decoder's final RMSNorm
# 7. run the N encoder blocks, each on the previous block's output
#
# Practise with the widget (instant feedback, grades nothing), then write your answer as a list of the
# step numbers above, in order, in the answer cell.

# %% [demo]
from encdec.checks.lesson06 import FORWARD_ORDER

FORWARD_ORDER.widget()

# %% [solution] forward_order
forward_order = [...]  # your answer: the step numbers in order
### BEGIN SOLUTION
forward_order = [5, 3, 7, 1, 4, 6, 2]
### END SOLUTION

# %% [test] 6.6

# %% [markdown]
# ## 6.10 What is a token? Characters, words, subwords
#
# Everything above is built around one number, the vocabulary size $V$ [CONFIG]: $E$ has $V$ rows, and
# the tied head scores $V$ tokens at every position. The toy task's $V = 13$ is easy: one id per letter,
# and one per special token.
# Real text needs a choice of what a token *is*. Take the translation task of Lesson 10, English number
# words to German ones: "four hundred and thirty two" → "vierhundertzweiunddreißig".
#
# * **Characters.** $V$ is small (the letters, "ß", "ö", "ü", the space) and no text is ever unknown. But the
#   sequences are long: the German above is 25 tokens, and attention's cost grows with the square of the
#   length. Every position also has to learn spelling before meaning: "drei" is four tokens the model
#   must learn to read as one idea.
# * **Whole words.** Short sequences, but every form of every word is its own row of $E$: "house" and
#   "houses" share nothing, and a word that training never saw has no id at all (word-level models map
#   it to one `<unk>` token and lose it). German makes it extreme: it writes a number as one compound
#   word, so the numbers 0 to 9,999 are 10,000 different German words, each a row of $E$ trained only
#   by the examples of its own number, while English builds all of them from a few dozen.
# * **Subwords.** Between the two: **byte-pair encoding** (BPE; Sennrich, Haddow and Birch, 2016, after
#   Gage's compression algorithm of 1994) starts from the characters and repeatedly merges the most
#   frequent pair of adjacent symbols into a new symbol, until the vocabulary has the size asked for.
#   Frequent pieces ("und", "hundert", "zig") become single tokens, and a word never seen is cut into
#   pieces that were: "vierhundertzweiunddreißig" becomes "vier" "hundert" "zwei" "und" "drei" "ßig".
#   Nothing is unknown as long as its characters are in the vocabulary.
#
# One detail makes decoding lossless: a space is not a token of its own but the mark "▁", glued to the
# front of the word after it (the convention of SentencePiece), so "four hundred" is `▁four ▁hundred`,
# and turning tokens back into text is joining them and writing each "▁" as a space.
#
# Below, BPE step by step on six German number words, with `encdec.subwords.merge_trace`: at each step
# the pair merged, and how two of the words are cut afterwards. Nothing is trained here beyond these
# eight merges on six words.

# %% [demo]
from encdec import number_words, subwords

words = ["dreiundzwanzig", "vierundzwanzig", "dreiunddreißig", "vierunddreißig", "dreihundert", "vierhundert"]
for k, (pair, cut) in enumerate(subwords.merge_trace(words, 8, show=["dreiundzwanzig", "vierunddreißig"]), start=1):
    print(f"merge {k}: {pair[0]} + {pair[1]} -> {pair[0] + pair[1]:<5}  " + "   ".join(" ".join(s) for s in cut.values()))

# %% [markdown]
# The vocabulary Lesson 10 trains with was made the same way, by Hugging Face's `tokenizers` library,
# on the English and German words of that task's training numbers, up to $V = 128$ symbols. It is
# shipped with the course (`encdec/data/numbers_bpe.json`) and loaded here, not trained: the three
# special tokens keep their ids (`<pad>` 0, `<bos>` 1, `<eos>` 2), the characters follow, then the
# merged symbols in the order they were made.

# %% [markdown]
# **Self-check 6.6 — predict, then run.** "siebenhundertsiebenundsiebzig" (777) has 29 characters. Into
# how many subwords will the shipped vocabulary cut it? Will the three "sieben"s be the same token?
#
# <details><summary>Answer</summary>
#
# Six: `▁sieben` `hundert` `sieben` `und` `sieb` `zig`. The three are three different tokens: the first
# carries the word-start mark "▁", the second does not, and "siebzig" drops the "en" of "sieben", so it
# is cut `sieb` + `zig`. A token is a piece of text in a position, not a word's meaning: the embedding
# has to learn that `▁sieben` and `sieben` mean the same.
#
# </details>

# %% [demo]
tokenizer = number_words.tokenizer()  # the shipped vocabulary (encdec/data/numbers_bpe.json)
vocab = subwords.vocab(tokenizer)
print(f"V = {len(vocab)}: {vocab[:3]}, {len(vocab[3:]) - len(subwords.merges(tokenizer))} characters, "
      f"then {len(subwords.merges(tokenizer))} merged symbols: {vocab[-len(subwords.merges(tokenizer)):][:12]} ...")
for text in ["four hundred and thirty two", "vierhundertzweiunddreißig", "siebenhundertsiebenundsiebzig"]:
    ids = number_words.encode(text)
    print(f"{text!r}: {len(text)} characters -> {len(ids)} subwords {number_words.tokens(text)}, ids {ids}")
sample = number_words.examples("test", n=200)  # 200 test numbers, English and German
for side, texts in (("English", [e for e, _, _ in sample]), ("German", [g for _, g, _ in sample])):
    chars = np.mean([len(t) for t in texts])
    pieces = np.mean([len(number_words.encode(t)) for t in texts])
    print(f"{side} over 200 test numbers: {chars:.1f} characters, {pieces:.1f} subwords on average")

# %% [markdown]
# ### What changes in the model
#
# Nothing in Sections 6.1–6.9 assumed letters, so a subword vocabulary changes sizes, not code:
#
# * **$V$** becomes the vocabulary's size, 128 here, and $E$ is `(128, d)`: the embedding lookup
#   `E[tokens]` is the same, its ids now name subwords. The count of Exercise 6.5 changes only in its $Vd$
#   term. A word-level vocabulary for the same task would have more than 10,000 rows, and with
#   $d = 64$ its $E$ alone would be larger than the rest of Lesson 10's model (the cell below computes both).
# * **Padding** is unchanged: the tokenizer was built with `<pad>`, `<bos>` and `<eos>` as ids 0, 1 and
#   2, so `padding_mask`, `shift_right` and the loss's `pad_id` read the same ids as with letters.
# * **The tied head** needs **one** vocabulary for source and target: $E$ embeds the English source, the
#   German target, and scores the next German token. So the vocabulary is trained on both languages at
#   once; the head also scores the English-only symbols (`▁four`), and training teaches the model never
#   to write them.

# %% [demo]
d, d_ff, N = 64, 256, 2  # Lesson 10's model
V_sub = len(vocab)
V_words = 3 + 10_000 + len({w for n in [*range(20), *range(20, 100, 10), 101, 1000]
                            for w in number_words.english(n).split()})  # specials, German words, English words
for name, V in (("subwords", V_sub), ("whole words", V_words)):
    total = ref.parameter_count(V, d, d_ff, N)
    print(f"{name:>11}: V = {V:>6,}, E = {V * d:>7,} numbers, the rest {total - V * d:,}; {total:,} in all")

# %% [markdown]
# ### Exercise 6.7 — `bpe_merge_step(words)`
#
# Write one merge step of BPE, in plain Python (NumPy has nothing to offer here). `words` is a corpus: a
# dict from each word, written as a tuple of its current symbols, to the number of times it occurs, e.g.
# `{("l", "o", "w"): 5, ("l", "o", "w", "e", "r"): 2}`.
#
# 1. **Count** every pair of adjacent symbols over the whole corpus, each occurrence weighted by the
#    count of its word. A pair that stands twice in a word counts twice, overlapping ones too:
#    `("a", "a", "a")` holds `("a", "a")` twice.
# 2. **Choose** the pair with the largest count. When several share it, take the one whose left symbol
#    comes first, and among those the one whose right symbol comes first, in the vocabulary's order:
#    every single character before every merged symbol, each group in Python's string order. With
#    `rank(s) = (len(s) > 1, s)`, that is the pair with the smallest `(-count, rank(left), rank(right))`.
#    It is the order in which `tokenizers` numbers its symbols, as far as one step can know it (the
#    library puts merged symbols in the order they were made; this rule, alphabetically): the test runs
#    your step again and again and compares the merges with the library's.
# 3. **Merge** it in every word: scan each word from left to right; where the pair stands, its two symbols
#    become one, `left + right`, and the scan goes on after both. So `("a", "a", "a")` becomes
#    `("aa", "a")`, and `("h", "a", "h", "a")` becomes `("ha", "ha")`.
#
# Return the pair and the new corpus, a new dict with the same counts; leave `words` unchanged.

# %% [solution] bpe_merge_step
def bpe_merge_step(words):
    """One BPE merge: the most frequent pair of adjacent symbols, merged in every word.

    Inputs:  words  a corpus {word as a tuple of symbols: count}, e.g. {("▁", "l", "o", "w"): 5}.
    Returns: (pair, new_words): the pair merged, (left, right), and a new dict in which every occurrence
             of it, scanned left to right, is one symbol left + right; the counts unchanged.
    """
    ### BEGIN SOLUTION
    counts = {}
    for word, n in words.items():
        for pair in zip(word, word[1:]):  # overlapping pairs too: ("a", "a", "a") holds ("a", "a") twice
            counts[pair] = counts.get(pair, 0) + n

    def rank(symbol):  # the single characters first, then the merged symbols
        return (len(symbol) > 1, symbol)

    best = min(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))
    new_words = {}
    for word, n in words.items():
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                out.append(word[i] + word[i + 1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        new_words[tuple(out)] = new_words.get(tuple(out), 0) + n
    return best, new_words
    ### END SOLUTION


# %% [test] 6.7

# %% [markdown]
# Your step, repeated, is a BPE trainer. Below it runs on Sennrich, Haddow and Birch's example corpus
# (*low* 5 times, *lower* 2, *newest* 6, *widest* 3), each word marked with its "▁", until every word is
# one symbol, next to the merges Hugging Face's `tokenizers` makes on the same words (with the course's
# own step until yours passes its test).

# %% [demo]
from encdec.checks.lesson06 import SENNRICH, yours_or_ours

step = yours_or_ours("6.7", globals().get("bpe_merge_step"))
corpus, yours = subwords.word_counts(SENNRICH), []
while any(len(w) > 1 for w in corpus):
    pair, corpus = step(corpus)
    yours.append(pair)
library = subwords.merges(subwords.train(SENNRICH, 100))
print(f"{'your step' if step is not subwords.bpe_merge_step else 'the course step'}: {len(yours)} merges; "
      f"the library: {len(library)}; the same, in the same order: {yours == library}")
print("the final symbols:", sorted(corpus))

# %% [markdown]
# ## Summary
#
# * Teacher forcing: the decoder reads the targets shifted right, `<bos>` first, so position $t$ sees
#   exactly the targets before the one it predicts, and all positions train in one pass.
# * One embedding matrix $E$ embeds the source and the target and, transposed, is the output head.
#   Its rows are scaled by $\sqrt{d}$, to the same order as the position encodings; the head is plain $hE^\top$.
# * `encode`: embed, $N$ encoder blocks with the source padding mask, a final RMSNorm: $H_{\text{enc}}$.
#   `decode`: embed, $N$ decoder blocks (causal plus padding self-mask, source padding cross-mask), a
#   final RMSNorm, the tied head: logits $(m, V)$.
# * The parameter count is $Vd$ for $E$ plus, per block, a quadratic in $d$ and $d_{ff}$, plus $2d$ for
#   the final norms; a decoder block has $4d^2 + d$ more than an encoder block.
# * [CONFIG] lives in `model.config` (and in the rules and formulas fixed in the code, such as the
#   masking rules and the positions' sinusoids), [LEARNED] in `model.parameters()`. [STATE] is everything
#   computed from the inputs, the position rows and mask arrays included: here, what a forward call
#   creates and returns.
# * The PyTorch twin computes the same function: on copied weights its float64 logits agree with
#   NumPy's to rounding error (about $10^{-15}$), its float32 logits to about $10^{-6}$.
# * Tokens: characters make long sequences, whole words a huge $V$ with unknown words; byte-pair
#   encoding merges the most frequent adjacent pair again and again, from the characters up to the $V$
#   chosen. A subword vocabulary changes $V$ and the rows of $E$, not the code: the special ids (pad 0)
#   stay, and one vocabulary serves source, target and the tied head.
#
# **Next — Lesson 7, Backpropagation.** To train this model we need the gradient of the loss with
# respect to every one of those numbers. You will derive and write the backward passes of the
# cross-entropy loss, the softmax, attention and RMSNorm, and check each one against finite
# differences and against PyTorch's autograd.
