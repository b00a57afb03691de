"""Lesson 4, Cross-attention: the concepts asked before and after the lesson."""

import numpy as np

from .. import attention
from .items import Concept, choice, number


def _cross_weights(m, n, pads=0):
    """Cross-attention weights of m target queries over n source keys, the last `pads` of them pads."""
    r = np.random.default_rng(5)
    Q, K, V = r.normal(size=(m, 4)), r.normal(size=(n, 4)), r.normal(size=(n, 4))
    mask = attention.padding_mask(np.array([1] * (n - pads) + [0] * pads), pad_id=0)[0, 0]
    return attention.cross_attention(Q, K, V, mask)[1]


def _which_rows_sum_to_one(m, n):
    w = _cross_weights(m, n)
    return "target rows" if np.allclose(w.sum(-1), 1) else "source columns"


def _source_projections(steps):
    """How many times decoding `steps` tokens with project_kv once projects the source to K and V."""
    calls = []
    mha = attention.MultiHeadAttention(8, 2, rng=0)
    project = mha.project_kv
    mha.project_kv = lambda H: calls.append(1) or project(H)
    H_enc, H_dec = np.ones((5, 8)), np.ones((steps, 8))
    K, V = mha.project_kv(H_enc)
    for t in range(steps):
        mha.attend(H_dec[t:t + 1], K, V)
    return "once" if len(calls) == 1 else f"{len(calls)} times"


CONCEPTS = [
    Concept(
        "cross-sources",
        pre=choice(
            "In cross-attention, where do the queries, the keys and the values come from?",
            ["Queries from the encoder's output; keys and values from the decoder states.",
             "Queries from the decoder states; keys and values from the encoder's output.",
             "All three from the encoder's output.",
             "Queries and keys from the decoder states; values from the encoder's output."],
            answer="b",
            explanation="The decoder asks (Q = norm(H_dec) W_q: what am I looking for?) and the source answers "
                        "(K = H_enc W_k, V = H_enc W_v: what does it offer, and what do I take?). Keys and values "
                        "from the decoder would make it a second self-attention.",
            mistakes=["cross_attention/keys_from_queries", "CrossAttention/kv_from_decoder"]),
        post=choice(
            "You call `mha(query_input, key_value_input)` as the cross-attention of a decoder block. What do "
            "you pass?",
            ["`query_input` = the encoder output $H_{\\text{enc}}$, `key_value_input` = the decoder states.",
             "Both = the encoder output $H_{\\text{enc}}$.",
             "`query_input` = the decoder states (normalised), `key_value_input` = the encoder output "
             "$H_{\\text{enc}}$.",
             "Both = the decoder states; the encoder output is added afterwards."],
            answer="c",
            explanation="Queries are projected from query_input, keys and values from key_value_input: the "
                        "decoder states go in as queries and H_enc provides the keys and values. Without a "
                        "key_value_input the layer is self-attention.",
            mistakes=["MultiHeadAttention/key_value_input_ignored", "DecoderBlock/encoder_output_ignored"]),
    ),
    Concept(
        "cross-weights",
        pre=number(
            "A decoder with $m = 5$ target positions cross-attends to a source of $n = 9$ tokens. How many "
            "entries does one head's cross-attention weight matrix hold?",
            45,
            explanation="One row per target position and one column per source position: a rectangular m x n = "
                        "5 x 9 matrix, 45 weights. Self-attention's are square; cross-attention's need not be.",
            compute=lambda: _cross_weights(5, 9).size),
        post=choice(
            "Each row of a cross-attention weight matrix sums to 1. What is a row?",
            ["One target position's weights over the source positions.",
             "One source position's weights over the target positions.",
             "One head's weights over the other heads.",
             "One target position's weights over the target positions before it."],
            answer="a",
            explanation="Rows are queries, target positions; columns are keys, source positions. The softmax runs "
                        "over the last axis, the source, so each target position gets a distribution over the "
                        "source. Columns sum to nothing in particular.",
            mistakes=["cross_attention/softmax_over_decoder_axis", "CrossAttention/softmax_over_decoder_axis"],
            compute=lambda: _which_rows_sum_to_one(3, 7),
            values=["target rows", "source columns", "heads", "target prefix"]),
    ),
    Concept(
        "cross-masks",
        pre=choice(
            "Which mask does cross-attention use?",
            ["The causal mask: target position $i$ sees source positions $j \\le i$.",
             "The causal mask plus the source padding mask.",
             "The source padding mask only.",
             "No mask: the pads are harmless there."],
            answer="c",
            explanation="The source is input, known in full before the first target word, so hiding part of it "
                        "would only throw information away: no causal mask. Source pads carry no meaning, so the "
                        "encoder's padding mask hides their columns for every target row.",
            mistakes=["cross_attention/causal_mask", "cross_attention/padding_ignored", "CrossAttention/causal_mask"]),
        post=number(
            "A target of 4 positions cross-attends to a source of 6 tokens whose last 2 are pads. How many "
            "entries of the $4 \\times 6$ cross-attention weights are exactly 0?",
            8,
            explanation="The padding mask gives both pad columns exactly zero weight in all 4 rows: 8 entries. "
                        "Every other entry is positive: there is no causal mask, so each target position reads "
                        "all 4 real source tokens.",
            mistakes=["cross_attention/causal_mask", "cross_attention/padding_ignored"],
            compute=lambda: int((_cross_weights(4, 6, pads=2) == 0).sum())),
    ),
    Concept(
        "kv-once",
        pre=choice(
            "A decoder generates one token at a time. Which part of its cross-attention stays the same at every "
            "step and can be computed once per source sentence?",
            ["The queries.", "The keys and the values.", "The attention weights.",
             "Nothing: every part changes at every step."],
            answer="b",
            explanation="K = H_enc W_k and V = H_enc W_v depend only on the encoder output, which does not change "
                        "while the target is written: project_kv computes them once, and each step only adds its "
                        "own query.",
            mistakes=["cross_attention_step_by_step/recompute_every_step"]),
        post=choice(
            "A translator decodes 30 tokens for one source sentence, cross-attention step by step. How often "
            "is the source projected to keys and values?",
            ["Once.", "30 times, once per step.", "Once per step and per head.",
             "Never: the encoder output is used as the keys and values directly."],
            answer="a",
            explanation="The projections of H_enc are the same at every step, so project_kv runs once before the "
                        "loop; attend reuses K and V at each of the 30 steps, which turns m projections of the "
                        "source into one.",
            mistakes=["cross_attention_step_by_step/recompute_every_step"],
            compute=lambda: _source_projections(30),
            values=["once", "30 times", "per head", "never"]),
    ),
    Concept(
        "alignment",
        pre=choice(
            "In a model trained on translation, what do the weights of a cross-attention head often look "
            "like (target words as rows, source words as columns)?",
            ["A soft, approximate alignment: each target word puts most of its weight on the source words it "
             "translates.",
             "A lower triangle, like the causal mask.",
             "The same weight on every source word.",
             "An exact one-to-one table: one source word per target word, weight 1."],
            answer="a",
            explanation="Nobody tells the model which word goes with which; from the loss alone some heads learn to "
                        "look at the words being translated. Each row is a distribution, so one English word can "
                        "serve two French words: a soft alignment, not a word aligner.",
            mistakes=[]),
        post=choice(
            "A model learns to reverse a sequence of letters (the output is the source backwards). What pattern "
            "do its trained cross-attention weights show (target positions as rows, source positions as "
            "columns)?",
            ["The diagonal: position $i$ reads source position $i$.",
             "The anti-diagonal: position $i$ reads the source position counted from the end.",
             "A lower triangle.",
             "Uniform rows."],
            answer="b",
            explanation="To write the i-th letter of the reversal the model needs the i-th source letter from the "
                        "end: the alignment, and so the weights, run along the anti-diagonal (Lesson 8 trains it).",
            mistakes=[]),
    ),
]
