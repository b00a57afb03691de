"""Slips in Lesson 6: shift_right, the embedding, the encoder pass, the decoder pass, the parameter count."""

import numpy as np

from encdec import create_causal_mask, padding_mask, rms_norm, sinusoidal_positions  # noqa: F401  (setup cell)
from encdec import Seq2Seq

from . import slip

embed = Seq2Seq.embed  # a right Exercise 6.2 for encode and decode (their checkers swap in the reference anyway)


# -- 6.1 shift_right ------------------------------------------------------------------------------------------
@slip("shift_right", "shifted_left", "shifts left: drops the first target and puts BOS at the end",
      expect=("left", "right", "direction"))
def shift_right(targets, bos_id):
    targets = np.asarray(targets)
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([targets[..., 1:], bos], axis=-1)


@slip("shift_right", "drops_first", "puts BOS first but drops the first target instead of the last",
      expect=("last", "drop", "first"))
def shift_right(targets, bos_id):  # noqa: F811
    targets = np.asarray(targets)
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets[..., 1:]], axis=-1)


@slip("shift_right", "float_ids", "builds the BOS column with np.full(..., bos_id, dtype=float): the ids become floats",
      expect=("integer", "int", "dtype"))
def shift_right(targets, bos_id):  # noqa: F811
    targets = np.asarray(targets)
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=np.float64)
    return np.concatenate([bos, targets[..., :-1]], axis=-1)


@slip("shift_right", "batch_axis", "shifts along the first axis, which is the batch axis when targets are a batch",
      expect=("axis", "last axis", "batch"))
def shift_right(targets, bos_id):  # noqa: F811
    targets = np.asarray(targets)
    bos = np.full((1,) + targets.shape[1:], bos_id, dtype=targets.dtype)
    return np.concatenate([bos, targets[:-1]], axis=0)


# -- 6.2 embed ------------------------------------------------------------------------------------------------
@slip("embed", "no_sqrt_d", "forgets to multiply the embedding rows by sqrt(d_model)",
      expect=("sqrt(d", "scale", "factor"))
def embed(model, tokens):  # noqa: F811
    T, d = tokens.shape[-1], model.config.d_model
    return model.embedding[tokens] + sinusoidal_positions(T, d)


@slip("embed", "positions_scaled_too", "multiplies the sum (rows + positions) by sqrt(d_model)",
      expect=("position", "sqrt(d", "scale"))
def embed(model, tokens):  # noqa: F811
    T, d = tokens.shape[-1], model.config.d_model
    return (model.embedding[tokens] + sinusoidal_positions(T, d)) * np.sqrt(d)


@slip("embed", "positions_by_token_id", "looks up the position encodings by token id, PE[tokens], not by position",
      expect=("position", "token"))
def embed(model, tokens):  # noqa: F811
    d = model.config.d_model
    pe = sinusoidal_positions(model.config.vocab_size, d)
    return model.embedding[tokens] * np.sqrt(d) + pe[tokens]


@slip("embed", "divided_by_sqrt_d", "divides the embedding rows by sqrt(d_model) instead of multiplying",
      expect=("sqrt(d", "scale", "factor", "divid", "multipl"))
def embed(model, tokens):  # noqa: F811
    T, d = tokens.shape[-1], model.config.d_model
    return model.embedding[tokens] / np.sqrt(d) + sinusoidal_positions(T, d)


embed = Seq2Seq.embed  # noqa: F811  (the right one again, for the next exercises)


# -- 6.3 encode ---------------------------------------------------------------------------------------------------
@slip("encode", "no_final_norm", "returns the last block's output without the encoder's final RMSNorm",
      expect=("final", "norm", "encoder_norm_gamma"))
def encode(model, src):
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return x, src_mask


@slip("encode", "mask_not_passed", "runs the encoder blocks without the source padding mask",
      expect=("mask", "pad"))
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed(model, src)
    for block in model.encoder:
        x = block(x)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@slip("encode", "blocks_not_chained", "gives every block the embedding, not the previous block's output",
      expect=("previous", "chain", "each block", "every block", "in turn"))
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x0 = embed(model, src)
    x = x0
    for block in model.encoder:
        x = block(x0, mask=src_mask)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@slip("encode", "decoder_norm_gamma", "uses decoder_norm_gamma for the encoder's final norm",
      expect=("encoder_norm_gamma", "decoder_norm_gamma"))
def encode(model, src):  # noqa: F811
    src_mask = padding_mask(src, model.config.pad_id)
    x = embed(model, src)
    for block in model.encoder:
        x = block(x, mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps), src_mask


# -- 6.4 decode ----------------------------------------------------------------------------------------------------
def _decode(model, tgt_in, H_enc, src_mask, self_mask=None, cross_mask=True, gamma=None, head=None):
    m = tgt_in.shape[-1]
    if self_mask is None:
        self_mask = create_causal_mask(m) + padding_mask(tgt_in, model.config.pad_id)
    x = embed(model, tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=self_mask, cross_attn_mask=src_mask if cross_mask else None)
    h = rms_norm(x, model.decoder_norm_gamma if gamma is None else gamma, model.config.eps)
    logits = h @ model.embedding.T
    return logits if head is None else head(logits)


@slip("decode", "causal_only", "gives the decoder's self-attention the causal mask without the target padding",
      expect=("pad",))
def decode(model, tgt_in, H_enc, src_mask):
    return _decode(model, tgt_in, H_enc, src_mask, self_mask=create_causal_mask(tgt_in.shape[-1]))


@slip("decode", "cross_mask_dropped", "does not pass the source padding mask to cross-attention",
      expect=("src_mask", "mask", "pad", "source"))
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    return _decode(model, tgt_in, H_enc, src_mask, cross_mask=False)


@slip("decode", "head_scaled", "multiplies the logits by sqrt(d_model), as the embedding does",
      expect=("sqrt(d", "scale", "factor", "head"))
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    return _decode(model, tgt_in, H_enc, src_mask, head=lambda z: z * np.sqrt(model.config.d_model))


@slip("decode", "encoder_norm_gamma", "normalises the top decoder state with encoder_norm_gamma",
      expect=("encoder_norm_gamma", "decoder_norm_gamma"))
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    return _decode(model, tgt_in, H_enc, src_mask, gamma=model.encoder_norm_gamma)


@slip("decode", "softmax_at_the_end", "returns softmax probabilities instead of logits",
      expect=("softmax", "probabilit"))
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    def softmax(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return _decode(model, tgt_in, H_enc, src_mask, head=softmax)


@slip("decode", "padding_on_queries", "builds the target padding mask with the pads on the query axis",
      expect=("row", "column", "quer", "key", "pad"))
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    m = tgt_in.shape[-1]
    pads = np.where(tgt_in == model.config.pad_id, -np.inf, 0.0)[..., None, :, None]  # (..., 1, m, 1)
    return _decode(model, tgt_in, H_enc, src_mask, self_mask=create_causal_mask(m) + pads)


# -- 6.5 parameter_count ------------------------------------------------------------------------------------------------
def _count(V, d, d_ff, n_enc, n_dec, *, final=True, head=False, ffn_bias=True, cross=True, block_norms=True):
    attention = 4 * d * d
    ffn = 2 * d * d_ff + ((d_ff + d) if ffn_bias else 0)
    encoder_block = attention + ffn + (2 * d if block_norms else 0)
    decoder_block = (2 if cross else 1) * attention + ffn + ((3 if cross else 2) * d if block_norms else 0)
    return (V * d * (2 if head else 1) + n_enc * encoder_block + n_dec * decoder_block + (2 * d if final else 0))


@slip("parameter_count", "no_final_norms", "forgets the two final norms of the stacks",
      expect=("final",))
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    return _count(vocab_size, d_model, d_ff, n_encoder_layers, n_dec, final=False)


@slip("parameter_count", "untied_head", "counts the output head as a second V x d matrix (the head is tied to E)",
      expect=("tied", "head", "twice"))
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    return _count(vocab_size, d_model, d_ff, n_encoder_layers, n_dec, head=True)


@slip("parameter_count", "no_ffn_biases", "forgets the FFN's biases b1 and b2",
      expect=("bias", "b1", "b2"))
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    return _count(vocab_size, d_model, d_ff, n_encoder_layers, n_dec, ffn_bias=False)


@slip("parameter_count", "zero_decoder_layers_as_none", "writes n_decoder_layers or n_encoder_layers, so 0 decoder "
      "layers counts as N_enc", expect=("n_decoder_layers", "is none", "not none"))
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    return _count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers or n_encoder_layers)


@slip("parameter_count", "decoder_like_encoder", "counts a decoder block like an encoder block (no cross-attention)",
      expect=("cross",))
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    return _count(vocab_size, d_model, d_ff, n_encoder_layers, n_dec, cross=False)


# -- 6.7 bpe_merge_step ----------------------------------------------------------------------------------------
def _rank(symbol):
    return (len(symbol) > 1, symbol)


@slip("bpe_merge_step", "counter_of_pairs_per_word", "counts the pairs with Counter.update over the words' keys, "
      "ignoring how often each word occurs", expect=("count", "occurs", "weighted"))
def bpe_merge_step(words):
    from collections import Counter
    pairs = Counter()
    for word in words:
        pairs.update(zip(word, word[1:]))
    best = min(pairs, key=lambda p: (-pairs[p], _rank(p[0]), _rank(p[1])))
    result = {}
    for word, n in words.items():
        new, i = [], 0
        while i < len(word):
            if word[i:i + 2] == best:
                new.append(best[0] + best[1])
                i += 2
            else:
                new.append(word[i])
                i += 1
        result[tuple(new)] = n
    return best, result


@slip("bpe_merge_step", "ties_by_largest_pair", "picks max over (count, pair): among equal counts the largest pair",
      expect=("tie", "first", "smallest"))
def bpe_merge_step(words):  # noqa: F811
    pairs = {}
    for word, n in words.items():
        for a, b in zip(word, word[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + n
    best = max(pairs, key=lambda p: (pairs[p], p))
    result = {}
    for word, n in words.items():
        new, i = [], 0
        while i < len(word):
            if word[i:i + 2] == best:
                new.append(best[0] + best[1])
                i += 2
            else:
                new.append(word[i])
                i += 1
        result[tuple(new)] = n
    return best, result


@slip("bpe_merge_step", "merges_with_a_break", "leaves the word's loop with break after its first merge",
      expect=("first occurrence", "every occurrence", "keep scanning"))
def bpe_merge_step(words):  # noqa: F811
    pairs = {}
    for word, n in words.items():
        for a, b in zip(word, word[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + n
    best = min(pairs, key=lambda p: (-pairs[p], _rank(p[0]), _rank(p[1])))
    result = {}
    for word, n in words.items():
        new = list(word)
        for i in range(len(new) - 1):
            if (new[i], new[i + 1]) == best:
                new[i:i + 2] = [new[i] + new[i + 1]]
                break
        result[tuple(new)] = n
    return best, result


@slip("bpe_merge_step", "merged_by_index_plus_one", "moves the index on by one after a merge, so the pair's right "
      "symbol is copied again", expect=("both", "second time", "skip"))
def bpe_merge_step(words):  # noqa: F811
    pairs = {}
    for word, n in words.items():
        for a, b in zip(word, word[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + n
    best = min(pairs, key=lambda p: (-pairs[p], _rank(p[0]), _rank(p[1])))
    result = {}
    for word, n in words.items():
        new = []
        for i in range(len(word)):
            if word[i:i + 2] == best:
                new.append(best[0] + best[1])
            else:
                new.append(word[i])
        result[tuple(new)] = n
    return best, result


@slip("bpe_merge_step", "updates_the_given_dict", "rewrites the corpus it was given in place and returns it",
      expect=("in place", "leave", "new dict"))
def bpe_merge_step(words):  # noqa: F811
    pairs = {}
    for word, n in words.items():
        for a, b in zip(word, word[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + n
    best = min(pairs, key=lambda p: (-pairs[p], _rank(p[0]), _rank(p[1])))
    for word in list(words):
        new, i = [], 0
        while i < len(word):
            if word[i:i + 2] == best:
                new.append(best[0] + best[1])
                i += 2
            else:
                new.append(word[i])
                i += 1
        words[tuple(new)] = words.pop(word)
    return best, words
