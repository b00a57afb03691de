"""Lesson 03: the causal mask, the decoder's combined mask, one head of masked self-attention and
the tied output head.

Mistakes that need an earlier exercise call the reference under a trailing-underscore name
(`softmax_`, `create_causal_mask_`, `padding_mask_`), so that pasting one into a notebook never
replaces the student's own function of the plain name.
"""

import numpy as np

from ..attention import create_causal_mask as create_causal_mask_
from ..attention import padding_mask as padding_mask_
from ..attention import softmax as softmax_
from . import mistake


# -- Exercise 3.1 create_causal_mask --------------------------------------------------------------------
@mistake("create_causal_mask", "diagonal_masked",
         "the diagonal is masked too, so a position cannot see itself (and position 0 sees nothing "
         "at all). Hide only the future, j > i: np.triu(..., k=1), which starts one above the diagonal.")
def create_causal_mask(seq_len):
    return np.where(np.triu(np.ones((seq_len, seq_len), dtype=bool), k=0), -np.inf, 0.0)


@mistake("create_causal_mask", "past_masked",
         "the past is hidden instead of the future: -inf sits below the diagonal. Row i is query i; "
         "it may see keys j <= i (on and below the diagonal), so -inf goes above it, where j > i.")
def create_causal_mask(seq_len):  # noqa: F811
    return np.where(np.tril(np.ones((seq_len, seq_len), dtype=bool), k=-1), -np.inf, 0.0)


@mistake("create_causal_mask", "boolean",
         "the mask is boolean (True above the diagonal). Added to scores, True counts as 1 and False "
         "as 0, so the future is not hidden at all, just nudged up by 1. Return an additive float mask: "
         "np.where(future, -np.inf, 0.0).")
def create_causal_mask(seq_len):  # noqa: F811
    return np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)


@mistake("create_causal_mask", "zero_times_inf",
         "the mask was made by multiplying a 0/1 matrix by -inf, and 0 * (-inf) is nan, not 0: every "
         "visible entry became nan. Build it with np.where(future, -np.inf, 0.0).")
def create_causal_mask(seq_len):  # noqa: F811
    return np.triu(np.ones((seq_len, seq_len)), k=1) * -np.inf


@mistake("create_causal_mask", "multiplicative",
         "this is a multiplicative 1/0 mask (1 on and below the diagonal). The course's masks are "
         "added to the scores before the softmax: 0.0 where visible, -inf where hidden.")
def create_causal_mask(seq_len):  # noqa: F811
    return np.tril(np.ones((seq_len, seq_len)))


@mistake("create_causal_mask", "large_negative",
         "the future gets a large negative number (like -1e9) instead of -inf. In float32 and float64 "
         "the weights come out the same (exp underflows to exactly 0). But a row whose keys are all "
         "hidden then spreads its weight evenly over them instead of getting zeros, and -1e9 does not "
         "fit in float16 (it becomes -inf). The course's masks are exactly 0.0 and -np.inf.")
def create_causal_mask(seq_len):  # noqa: F811
    return np.where(np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1), -1e9, 0.0)


@mistake("create_causal_mask", "plus_inf",
         "the future gets +inf instead of -inf. Added to a score, +inf gives that key all the weight (and "
         "inf - inf is nan in the softmax): hidden keys get -inf, so that exp(-inf) = 0.")
def create_causal_mask(seq_len):  # noqa: F811
    return np.where(np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1), np.inf, 0.0)


@mistake("create_causal_mask", "next_token_visible",
         "each position also sees the next one: only keys j > i + 1 are hidden (np.triu with k=2). In "
         "training the next token is the answer, so query i may see keys 0..i only: np.triu(..., k=1).")
def create_causal_mask(seq_len):  # noqa: F811
    return np.where(np.triu(np.ones((seq_len, seq_len), dtype=bool), k=2), -np.inf, 0.0)


# -- Exercise 3.2 decoder_mask ------------------------------------------------------------------------
@mistake("decoder_mask", "padding_forgotten",
         "only the causal mask is returned: the target's pad positions are still visible. Add the "
         "padding mask of the target: create_causal_mask(m) + padding_mask(tgt_in, pad_id).")
def decoder_mask(tgt_in, pad_id):
    return create_causal_mask_(np.shape(tgt_in)[-1])


@mistake("decoder_mask", "causal_forgotten",
         "only the padding mask is returned: every position can see the future. The decoder's "
         "self-attention needs both: create_causal_mask(m) + padding_mask(tgt_in, pad_id).")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    return padding_mask_(tgt_in, pad_id)


@mistake("decoder_mask", "pads_hidden_as_queries",
         "the target pads are hidden as queries (whole rows) instead of as keys (columns). What must "
         "never happen is a real token looking *at* a pad: hide pad columns, shape (..., 1, 1, m), "
         "as padding_mask does.")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    tgt_in = np.asarray(tgt_in)
    rows = np.where(tgt_in == pad_id, -np.inf, 0.0)[..., None, :, None]
    return create_causal_mask_(tgt_in.shape[-1]) + rows


@mistake("decoder_mask", "multiplied",
         "the two masks are multiplied. Additive masks combine by adding: 0 + 0 = 0 (visible), and "
         "anything + (-inf) = -inf (hidden). A product gives 0 * (-inf) = nan and (-inf) * (-inf) = +inf.")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    return create_causal_mask_(np.shape(tgt_in)[-1]) * padding_mask_(tgt_in, pad_id)


@mistake("decoder_mask", "maximum",
         "a key is hidden only where *both* masks hide it: np.maximum of the additive masks, or `&` of "
         "boolean ones, keeps a key visible when either mask shows it. A key must be hidden when either "
         "mask hides it: add the additive masks (or take np.minimum), or join boolean ones with `|`.")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    return np.maximum(create_causal_mask_(np.shape(tgt_in)[-1]), padding_mask_(tgt_in, pad_id))


@mistake("decoder_mask", "hidden_from_first_pad",
         "every key from the first pad on is hidden (a running count or cumsum of the pads), as if pads only ever "
         "came at the end: a real token after a pad (left padding, or sequences packed one after another) is hidden "
         "too. Hide exactly the keys that are pads: -inf where tgt_in == pad_id, whatever comes before them.")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    tgt_in = np.asarray(tgt_in)
    after = np.cumsum(tgt_in == pad_id, axis=-1) > 0
    return create_causal_mask_(tgt_in.shape[-1]) + np.where(after, -np.inf, 0.0)[..., None, None, :]


@mistake("decoder_mask", "boolean",
         "the combined mask is boolean (True = hidden). Masks here are additive: turn the boolean "
         "'hidden' into np.where(hidden, -np.inf, 0.0), or add the two additive masks directly.")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    tgt_in = np.asarray(tgt_in)
    m = tgt_in.shape[-1]
    future = np.triu(np.ones((m, m), dtype=bool), k=1)
    return future | (tgt_in == pad_id)[..., None, None, :]


@mistake("decoder_mask", "pad_id_ignored",
         "the pad id is taken to be 0 whatever `pad_id` says. Pass `pad_id` on to padding_mask "
         "(or compare with it).")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    return create_causal_mask_(np.shape(tgt_in)[-1]) + padding_mask_(tgt_in, 0)


@mistake("decoder_mask", "causal_transposed",
         "the causal part is transposed: it hides the past (below the diagonal) and shows the future. Query "
         "i (a row) may see keys j <= i: -inf above the diagonal, as create_causal_mask(m) gives.")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    return create_causal_mask_(np.shape(tgt_in)[-1]).T + padding_mask_(tgt_in, pad_id)


@mistake("decoder_mask", "next_token_visible",
         "the causal part lets each position see the next one (np.triu with k=2). Query i may see keys "
         "0..i only: create_causal_mask(m) + padding_mask(tgt_in, pad_id).")
def decoder_mask(tgt_in, pad_id):  # noqa: F811
    m = np.shape(tgt_in)[-1]
    return np.where(np.triu(np.ones((m, m), dtype=bool), k=2), -np.inf, 0.0) + padding_mask_(tgt_in, pad_id)


# -- Exercise 3.3 causal_self_attention -----------------------------------------------------------------
@mistake("causal_self_attention", "mask_after_softmax_zeroed",
         "the future weights are zeroed after the softmax. The softmax has already shared the weight "
         "among all keys, future included, so each row now sums to less than 1. Add the mask to the "
         "scores before the softmax: exp(-inf) = 0, and the visible weights still sum to 1.")
def causal_self_attention(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    m = x.shape[-2]
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    weights = np.where(np.triu(np.ones((m, m), dtype=bool), k=1), 0.0, weights)
    return weights @ V, weights


@mistake("causal_self_attention", "mask_after_softmax_added",
         "the mask is added after the softmax, which puts -inf into the weights and nan or ±inf "
         "into the output. Add the mask to the scores, before the softmax.")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    weights = weights + create_causal_mask_(x.shape[-2])
    return weights @ V, weights


@mistake("causal_self_attention", "no_mask",
         "there is no causal mask, so every position reads the future, including the very token "
         "it is trained to predict. Add create_causal_mask(m) to the scores before the softmax.")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=-1)
    return weights @ V, weights


@mistake("causal_self_attention", "diagonal_masked",
         "the mask hides the diagonal too, so no position can see itself and position 0 sees nothing "
         "(its weights are all 0). Hide only j > i: np.triu(..., k=1), or create_causal_mask(m).")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    m = x.shape[-2]
    mask = np.where(np.triu(np.ones((m, m), dtype=bool), k=0), -np.inf, 0.0)
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + mask, axis=-1)
    return weights @ V, weights


@mistake("causal_self_attention", "past_masked",
         "the mask hides the past instead of the future (-inf below the diagonal). Query i may read "
         "keys j <= i: the -inf entries belong above the diagonal.")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    m = x.shape[-2]
    mask = np.where(np.tril(np.ones((m, m), dtype=bool), k=-1), -np.inf, 0.0)
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + mask, axis=-1)
    return weights @ V, weights


@mistake("causal_self_attention", "boolean_mask_added",
         "a boolean mask is added to the scores. True counts as 1, so future scores are raised by 1 "
         "instead of hidden. Add an additive mask: 0.0 where visible, -inf where hidden.")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    m = x.shape[-2]
    future = np.triu(np.ones((m, m), dtype=bool), k=1)
    weights = softmax_(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + future, axis=-1)
    return weights @ V, weights


@mistake("causal_self_attention", "scale_by_d_model",
         "the scores are divided by sqrt(d_model), the width of x. They are dot products of queries "
         "and keys, whose width is d_k = W_q.shape[1]: divide by sqrt(d_k).")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(x.shape[-1]) + create_causal_mask_(x.shape[-2])
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("causal_self_attention", "queries_keys_swapped",
         "every score comes out transposed, K Q^T instead of Q K^T: either the queries are made with W_k "
         "and the keys with W_q, or the product is taken with the keys first (K @ Q^T). Both give the same "
         "numbers. Q = x @ W_q, K = x @ W_k, and the scores are Q @ K^T: query i meets key j at row i, "
         "column j.")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_k, x @ W_q, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + create_causal_mask_(x.shape[-2])
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


@mistake("causal_self_attention", "scale_by_seq_len",
         "the scores are divided by sqrt(m), the number of positions (x.shape[-2]), instead of sqrt(d_k), "
         "the width of a query and a key (W_q.shape[1]).")
def causal_self_attention(x, W_q, W_k, W_v):  # noqa: F811
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(x.shape[-2]) + create_causal_mask_(x.shape[-2])
    weights = softmax_(scores, axis=-1)
    return weights @ V, weights


# -- Exercise 3.4 output_logits -------------------------------------------------------------------------
@mistake("output_logits", "no_transpose",
         "h @ E multiplies (m, d_model) by (V, d_model): the shapes do not fit. The head scores h "
         "against every row of E (one row per token), so use E's transpose: h @ E.T, giving (m, V).")
def output_logits(h, E):
    return h @ E


@mistake("output_logits", "transposed_result",
         "the result is (V, m), one column per position. Logits are (..., m, V): one row of V "
         "scores per position. Compute h @ E.T.")
def output_logits(h, E):  # noqa: F811
    return E @ h.T


@mistake("output_logits", "scaled_by_sqrt_d_model",
         "the logits are scaled by sqrt(d_model). That factor belongs to the input side, where the "
         "embedding row is scaled before the positions are added; the tied head is plain h @ E.T.")
def output_logits(h, E):  # noqa: F811
    return h @ E.T * np.sqrt(E.shape[-1])


@mistake("output_logits", "probabilities",
         "a softmax is applied, so these are probabilities, not logits. The head returns the raw "
         "scores h @ E.T; the loss (Lesson 7) and decoding (Lesson 9) apply the softmax themselves.")
def output_logits(h, E):  # noqa: F811
    return softmax_(h @ E.T, axis=-1)


@mistake("output_logits", "divided_by_sqrt_d_model",
         "the logits are divided by sqrt(d_model), as if they were attention scores. The tied head is the "
         "plain product h @ E.T: no scaling.")
def output_logits(h, E):  # noqa: F811
    return h @ E.T / np.sqrt(E.shape[-1])


@mistake("output_logits", "log_probabilities",
         "a log-softmax is applied, so these are log-probabilities, not logits. The head returns the raw "
         "scores h @ E.T; the loss (Lesson 7) takes the log-softmax itself.")
def output_logits(h, E):  # noqa: F811
    z = h @ E.T
    z = z - np.max(z, axis=-1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
