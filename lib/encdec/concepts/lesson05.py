"""Lesson 5, Block ordering: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention, layers
from .items import Concept, choice, number


def _extra_parameters(d_model, n_heads):
    """How many more [LEARNED] numbers a decoder block has than an encoder block of the same size."""
    def size(block):
        return sum(int(np.size(p)) for p in block.parameters().values())
    return (size(layers.DecoderBlock(d_model, n_heads, 2 * d_model, rng=0))
            - size(layers.EncoderBlock(d_model, n_heads, 2 * d_model, rng=0)))


def _moved_by_editing(position, causal, m=6, d=8):
    """The output positions of a decoder block that move when the input at `position` changes."""
    block = layers.DecoderBlock(d, 2, 16, rng=1)
    r = np.random.default_rng(2)
    x, H_enc = r.normal(size=(m, d)), r.normal(size=(4, d))
    mask = attention.create_causal_mask(m) if causal else None
    edited = x.copy()
    edited[position] += 1.0
    moved = np.abs(block(edited, H_enc, mask)[0] - block(x, H_enc, mask)[0]).max(axis=-1) > 1e-12
    return tuple(int(i) for i in np.flatnonzero(moved))


def _norm_gains():
    return sorted(name for name in layers.DecoderBlock(8, 2, 16, rng=0).parameters() if "norm" in name)


CONCEPTS = [
    Concept(
        "sublayer-order",
        pre=choice(
            "In the course's decoder block, in which order does a token meet the three sublayers?",
            ["Cross-attention, then masked self-attention, then the feed-forward network.",
             "Masked self-attention, then cross-attention, then the feed-forward network.",
             "Masked self-attention, then the feed-forward network, then cross-attention.",
             "The feed-forward network, then masked self-attention, then cross-attention."],
            answer="b",
            explanation="The standard order of 2017, kept by T5 and BART: read what has been written (causal "
                        "self-attention), consult the source (cross-attention), then transform each position "
                        "(feed-forward), each sublayer adding its result to the residual stream.",
            mistakes=["DecoderBlock/cross_before_self", "decoder_block_post_norm/cross_before_self"]),
        post=choice(
            "Why does masked self-attention come before cross-attention in the standard decoder block?",
            ["Cross-attention needs the causal mask, which self-attention applies first.",
             "So that, already in the first block, cross-attention asks the source with a state that knows "
             "the target written so far.",
             "It is the only order in which the model can be trained.",
             "Self-attention is cheaper, and cheap sublayers go first."],
            answer="b",
            explanation="In block 1 a position's state is only its token and position; self-attention mixes in the "
                        "target written so far, so the query cross-attention sends to the source is informed. "
                        "Other orders also train; cross-attention never uses the causal mask.",
            mistakes=["DecoderBlock/cross_before_self", "DecoderBlock/causal_mask_to_cross"]),
    ),
    Concept(
        "post-norm",
        pre=choice(
            "Which line is one sublayer of the post-norm block of 2017?",
            ["`x = x + sublayer(norm(x))`", "`x = norm(x + sublayer(x))`", "`x = x + norm(sublayer(x))`",
             "`x = norm(x) + sublayer(norm(x))`"],
            answer="b",
            explanation="Post-norm normalises the sum after each residual add: x = Norm(x + Sublayer(x)). The "
                        "course's pre-norm block, x = x + Sublayer(Norm(x)), moves the norm onto the sublayer's "
                        "input and leaves the residual stream itself unnormalised.",
            mistakes=["decoder_block_post_norm/pre_norm", "decoder_block_post_norm/norm_inside_residual"]),
        post=choice(
            "Which arrangement keeps a clean identity path from a block's input to the top of a deep stack?",
            ["Post-norm: every sum is normalised, so the stream stays at unit size.",
             "Pre-norm: the residual stream is never normalised inside the stack.",
             "Both equally: they differ only in where the norm sits.",
             "Neither: the norms break every identity path."],
            answer="b",
            explanation="In pre-norm each block adds to x without touching it, so a block's input reaches the top "
                        "unchanged apart from what the sublayers add; post-norm rescales the stream after every "
                        "sublayer. In untrained 24-block stacks, block 1's influence on the top was 22 to 519 times "
                        "smaller in post-norm.",
            mistakes=["decoder_block_post_norm/pre_norm"]),
    ),
    Concept(
        "norm-per-sublayer",
        pre=choice(
            "How many RMSNorm gains does one pre-norm decoder block have?",
            ["One, shared by the three sublayers.", "Two, as in an encoder block.",
             "Three, one before each sublayer.", "None: the block uses the encoder's final norm."],
            answer="c",
            explanation="Each of the three sublayers reads its own normalised copy of the stream: norm1_gamma before "
                        "self-attention, norm2_gamma before cross-attention, norm3_gamma before the feed-forward "
                        "network, each [LEARNED] with d_model numbers.",
            mistakes=["DecoderBlock/shared_norm", "parameter_count/no_cross_attention_norm"],
            compute=lambda: len(_norm_gains()),
            values=[1, 2, 3, 0]),
        post=choice(
            "In the pre-norm decoder block, which sublayer reads its input through `norm2_gamma`?",
            ["Masked self-attention.", "Cross-attention (the queries' side).", "The feed-forward network.",
             "The encoder output $H_{\\text{enc}}$, before cross-attention."],
            answer="b",
            explanation="The gains follow the sublayers in order: norm1 before self-attention, norm2 before "
                        "cross-attention, norm3 before the feed-forward network. norm2 normalises the decoder side "
                        "only; H_enc arrives normalised once by the encoder and is used as it is.",
            mistakes=["DecoderBlock/norms_2_3_swapped", "DecoderBlock/encoder_output_normalized"]),
    ),
    Concept(
        "cross-attention-cost",
        pre=number(
            "How many more [LEARNED] numbers does a decoder block hold than an encoder block of the same size, "
            "at $d_{model} = 8$? (The course's attention projections have no biases.)",
            264,
            explanation="The decoder block adds one sublayer, cross-attention: W_q, W_k, W_v and W_o, each d x d "
                        "(4 * 64 = 256), and its own RMSNorm gain (8): 4d^2 + d = 264.",
            mistakes=["cross_attention_params/no_norm", "cross_attention_params/missing_output_projection",
                      "cross_attention_params/with_biases"],
            compute=lambda: _extra_parameters(8, 2)),
        post=number(
            "At $d_{model} = 16$ with 4 heads, how many [LEARNED] numbers does the cross-attention sublayer "
            "(with its norm) add to a decoder block?",
            1040,
            explanation="4d^2 + d = 4 * 256 + 16 = 1040, whatever the number of heads: the heads split the d x d "
                        "projections, they do not add any.",
            mistakes=["cross_attention_params/no_norm", "cross_attention_params/kv_only",
                      "cross_attention_params/layer_norm"],
            compute=lambda: _extra_parameters(16, 4)),
    ),
    Concept(
        "causal-experiment",
        pre=choice(
            "A decoder block runs without its causal mask on 6 target positions (0 to 5). You change the input "
            "at position 5 only. Which output positions change?",
            ["All six.", "Only position 5.", "Positions 0 to 4, not 5.", "None."],
            answer="a",
            explanation="Without the mask every position reads every other, the future included, so a change at "
                        "position 5 reaches them all: in training the model could copy the answer.",
            mistakes=["DecoderBlock/no_causal_mask"],
            compute=lambda: _moved_by_editing(5, causal=False),
            values=[(0, 1, 2, 3, 4, 5), (5,), (0, 1, 2, 3, 4), ()]),
        post=choice(
            "The same block, now with its causal mask: you change the input at position 3 only (of 0 to 5). "
            "Which output positions change?",
            ["All six.", "Only position 3.", "Positions 3, 4 and 5.", "Positions 0, 1 and 2."],
            answer="c",
            explanation="With the mask, position t reads positions 0..t only, so a change at 3 reaches 3 itself "
                        "and the later positions 4 and 5; the earlier ones cannot see it and do not move.",
            mistakes=["DecoderBlock/no_causal_mask", "create_causal_mask/past_masked"],
            compute=lambda: _moved_by_editing(3, causal=True),
            values=[(0, 1, 2, 3, 4, 5), (3,), (3, 4, 5), (0, 1, 2)]),
    ),
]
