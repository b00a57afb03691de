"""Lesson 3's references (the library computes them inline, so they are written out here), the
aliases the checkers use for them, and EARLIER: the earlier exercises an answer may call, run as the
reference while a later exercise is checked."""

import numpy as np

from ... import attention

# Earlier exercises a student's answer may call: each runs as the reference while a later
# exercise is checked, so a mistake is charged once, where it was made.
EARLIER = dict(softmax=attention.softmax, create_causal_mask=attention.create_causal_mask,
               padding_mask=attention.padding_mask)


# -- the references of this lesson's exercises (the library computes them inline) ---------------------
def decoder_mask(tgt_in, pad_id):
    """The decoder self-attention mask: causal plus target padding, (..., 1, m, m)."""
    tgt_in = np.asarray(tgt_in)
    return attention.create_causal_mask(tgt_in.shape[-1]) + attention.padding_mask(tgt_in, pad_id)


def causal_self_attention(x, W_q, W_k, W_v):
    """One head of masked self-attention: (output (..., m, d_v), weights (..., m, m))."""
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    return attention.scaled_dot_product_attention(Q, K, V, attention.create_causal_mask(np.shape(x)[-2]))


def output_logits(h, E):
    """The tied output head: h (..., m, d_model), E (V, d_model) -> logits (..., m, V)."""
    return np.asarray(h) @ np.asarray(E).T


# the checkers' parameters take these names, so the checkers use these aliases
REF_DECODER_MASK, REF_CAUSAL_SELF_ATTENTION, REF_OUTPUT_LOGITS = decoder_mask, causal_self_attention, output_logits
