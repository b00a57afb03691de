"""Lesson 3, The decoder stack: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention
from .items import Concept, choice, number


def _decoder_mask_hidden(tgt_in, pad_id):
    """How many entries of the decoder self-attention mask (causal plus target padding) are -inf."""
    tgt_in = np.asarray(tgt_in)
    mask = attention.create_causal_mask(tgt_in.shape[-1]) + attention.padding_mask(tgt_in, pad_id)
    return int(np.isinf(mask).sum())


CONCEPTS = [
    Concept(
        "causal-mask",
        pre=number(
            "The causal mask for a sequence of 4 positions, `create_causal_mask(4)`, is a $4 \\times 4$ "
            "array. How many of its entries are $-\\infty$?",
            6,
            explanation="Query i may see keys j <= i, itself included; everything strictly above the diagonal is "
                        "hidden: 3 + 2 + 1 + 0 = 6 of the 16 entries, m(m - 1)/2 in general.",
            mistakes=["create_causal_mask/diagonal_masked", "create_causal_mask/next_token_visible",
                      "create_causal_mask/past_masked"],
            compute=lambda: int(np.isinf(attention.create_causal_mask(4)).sum())),
        post=number(
            "In the causal mask of a sequence of 7 positions, how many keys may query 4 (counting from 0) "
            "look at?",
            5,
            explanation="Query 4 sees keys 0, 1, 2, 3 and 4: the past and itself, 5 keys. Keys 5 and 6 lie in "
                        "its future and get -inf.",
            mistakes=["create_causal_mask/diagonal_masked", "create_causal_mask/next_token_visible"],
            compute=lambda: int(np.isfinite(attention.create_causal_mask(7)[4]).sum())),
    ),
    Concept(
        "why-causal",
        pre=choice(
            "Why does the decoder's self-attention need a causal mask during training?",
            ["To save compute: half of the scores need not be computed.",
             "The whole target is fed at once, and without the mask position $t$ could read the very token "
             "it must predict.",
             "To hide the padding at the end of the targets.",
             "Because the encoder's output is not ready yet when the decoder starts."],
            answer="b",
            explanation="In training all positions run in one pass over the known target. Position t is fed "
                        "<bos>, y1 .. yt and must predict y(t+1); if it could look ahead it would find the answer "
                        "and learn to copy it. The mask makes each position's logits those of a pass over its "
                        "prefix alone.",
            mistakes=["causal_self_attention/no_mask", "decoder_mask/causal_forgotten"]),
        post=choice(
            "A decoder trained without the causal mask reaches an excellent training loss. How does it do "
            "when it generates, one token at a time?",
            ["Badly: it learned to read the next token, which does not exist yet when it generates.",
             "Just as well: generation needs no mask, so the mask never mattered.",
             "Better: it has seen more of each sentence during training.",
             "It cannot generate at all: its output has the wrong shape."],
            answer="a",
            explanation="Without the mask each position can copy the next target token, so the training loss is "
                        "low for the wrong reason. At generation time that token is missing and the model has "
                        "learned nothing useful to put in its place.",
            mistakes=["causal_self_attention/no_mask"]),
    ),
    Concept(
        "combined-mask",
        pre=choice(
            "The decoder's self-attention mask combines the causal mask $(m, m)$ and the target's padding "
            "mask $(B, 1, 1, m)$. How?",
            ["Multiply them.",
             "Take the element-wise maximum, `np.maximum`.",
             "Add them: visible only where both are 0, and $-\\infty$ wherever either hides.",
             "Use only the causal mask: with the pads at the end it already hides them everywhere."],
            answer="c",
            explanation="Additive masks combine by adding: 0 + 0 = 0 (visible), anything + (-inf) = -inf "
                        "(hidden); broadcasting gives (B, 1, m, m). A product gives 0 * (-inf) = nan; the maximum "
                        "shows a key that either mask shows; the causal mask alone leaves a pad visible to the "
                        "queries at and after it.",
            mistakes=["decoder_mask/multiplied", "decoder_mask/maximum", "decoder_mask/padding_forgotten"]),
        post=number(
            "One target sequence of 4 positions whose last position is a pad. How many entries of its "
            "$4 \\times 4$ decoder self-attention mask (causal plus padding) are $-\\infty$?",
            7,
            explanation="The causal part hides the 6 entries above the diagonal. The pad hides key column 3, whose "
                        "entries in rows 0 to 2 are already hidden; only row 3, the pad looking at itself, is "
                        "new: 6 + 1 = 7.",
            mistakes=["decoder_mask/padding_forgotten", "decoder_mask/maximum"],
            compute=lambda: _decoder_mask_hidden([[5, 6, 7, 0]], 0)),
    ),
    Concept(
        "decoder-vs-decoder-only",
        pre=choice(
            "What does each decoder block of an encoder–decoder have that a decoder-only (GPT-style) block "
            "has not?",
            ["A causal mask.",
             "A feed-forward network.",
             "A cross-attention sublayer that reads the encoder's output $H_{\\text{enc}}$.",
             "A final RMSNorm and an output head in every block."],
            answer="c",
            explanation="Both are causal self-attention plus a feed-forward network; the encoder–decoder's block "
                        "adds one sublayer, cross-attention, the only place the source enters the decoder, with "
                        "its own W_q, W_k, W_v, W_o and norm.",
            mistakes=["DecoderBlock/encoder_output_ignored"]),
        post=choice(
            "You turn a decoder-only block into an encoder–decoder's decoder block. Where does the new "
            "sublayer go?",
            ["Before the causal self-attention.",
             "Between the causal self-attention and the feed-forward network.",
             "After the feed-forward network.",
             "In place of the causal self-attention."],
            answer="b",
            explanation="The block reads what has been written (causal self-attention), then consults the source "
                        "(cross-attention), then transforms each position (feed-forward): cross-attention sits "
                        "between the other two, each a pre-norm residual sublayer.",
            mistakes=["DecoderBlock/cross_before_self"]),
    ),
    Concept(
        "tied-head",
        pre=choice(
            "The tied output head turns a decoder state $h$ (width $d_{model}$) into logits, using the embedding "
            "matrix $E$ of shape $(V, d_{model})$. What are the logits?",
            ["$h E$", "$\\operatorname{softmax}(h E^\\top)$", "$h E^\\top$",
             "$h E^\\top / \\sqrt{d_{model}}$"],
            answer="c",
            explanation="Each logit is the dot product of the state with one token's embedding row: z = h E^T, V "
                        "numbers per position. The head returns raw scores: the softmax belongs to the loss and to "
                        "decoding, and no sqrt(d_model) scale is applied on the output side.",
            mistakes=["output_logits/no_transpose", "output_logits/probabilities", "output_logits/divided_by_sqrt_d_model"]),
        post=number(
            "A vocabulary of $V = 50$ tokens, $d_{model} = 16$, and decoder states for three positions, shape "
            "$(3, 16)$. How many logits does the tied head produce?",
            150,
            explanation="One logit per position and per vocabulary token: (3, 16) @ (16, 50) gives (3, 50), 150 "
                        "logits. Each position is scored against every row of E.",
            mistakes=["output_logits/no_transpose", "output_logits/transposed_result"],
            compute=lambda: (np.zeros((3, 16)) @ np.zeros((50, 16)).T).size),
    ),
]
