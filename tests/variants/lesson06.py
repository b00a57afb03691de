"""Correct implementations of lesson 06's exercises that differ from the reference."""
import numpy as np

from encdec import create_causal_mask, padding_mask, rms_norm, sinusoidal_positions

ALTERNATIVES = {}


def alternative(exercise):
    def register(fn):
        ALTERNATIVES.setdefault(exercise, []).append(fn)
        return fn
    return register


@alternative("shift_right")
def shift_right(targets, bos_id):
    """np.roll, then overwrite the wrapped-around token with BOS."""
    out = np.roll(np.asarray(targets), 1, axis=-1)
    out[..., 0] = bos_id
    return out


@alternative("shift_right")
def shift_right(targets, bos_id):  # noqa: F811
    """an empty array filled in two slices."""
    targets = np.asarray(targets)
    out = np.empty_like(targets)
    out[..., 0] = bos_id
    out[..., 1:] = targets[..., :-1]
    return out


@alternative("shift_right")
def shift_right(targets, bos_id):  # noqa: F811
    """np.pad with the BOS id as the constant, then cut the end."""
    widths = [(0, 0)] * (np.ndim(targets) - 1) + [(1, 0)]
    return np.pad(targets, widths, constant_values=bos_id)[..., :-1]


@alternative("embed")
def embed(model, tokens):
    """np.take on the table, math.sqrt-style scale as a power."""
    d = model.embedding.shape[1]
    rows = np.take(model.embedding, tokens, axis=0)
    return rows * d**0.5 + sinusoidal_positions(np.shape(tokens)[-1], d)


@alternative("embed")
def embed(model, tokens):  # noqa: F811
    """one-hot rows times the table (what a lookup is, written as a matrix product)."""
    V, d = model.embedding.shape
    one_hot = np.eye(V)[tokens]  # (..., T, V)
    return np.sqrt(d) * (one_hot @ model.embedding) + sinusoidal_positions(tokens.shape[-1], d)


@alternative("encode")
def encode(model, src):
    """the padding mask written with np.where; the final norm inline."""
    src = np.asarray(src)
    src_mask = np.where(src == model.config.pad_id, -np.inf, 0.0)[..., None, None, :]
    x = embed(model, src)
    for layer in model.encoder:
        x = layer(x, src_mask)
    rms = np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + model.config.eps)
    return model.encoder_norm_gamma * x / rms, src_mask


@alternative("encode")
def encode(model, src):  # noqa: F811
    """the model's own embed method; blocks applied with functools.reduce."""
    from functools import reduce
    src_mask = padding_mask(src, model.config.pad_id)
    x = reduce(lambda h, block: block(h, mask=src_mask), model.encoder, model.embed(src))
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), src_mask


@alternative("decode")
def decode(model, tgt_in, H_enc, src_mask):
    """the causal mask with np.triu; the head as an einsum."""
    m = tgt_in.shape[-1]
    causal = np.triu(np.full((m, m), -np.inf), k=1)
    self_mask = causal + np.where(tgt_in == model.config.pad_id, -np.inf, 0.0)[..., None, None, :]
    x = embed(model, tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_mask, src_mask)
    h = rms_norm(x, model.decoder_norm_gamma, model.config.eps)
    return np.einsum("...md,vd->...mv", h, model.embedding)


@alternative("decode")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    """the model's own decoder_mask; keyword arguments to the blocks."""
    x = model.embed(tgt_in)
    mask = model.decoder_mask(tgt_in)
    for block in model.decoder:
        x, cross_weights = block(x, encoder_output=H_enc, self_attn_mask=mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@alternative("parameter_count")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """component by component, summed from a table."""
    if n_decoder_layers is None:
        n_decoder_layers = n_encoder_layers
    d = d_model
    attention = 4 * d * d
    ffn = d * d_ff + d_ff + d_ff * d + d
    norm = d
    parts = {
        "embedding (shared, tied head)": vocab_size * d,
        "encoder blocks": n_encoder_layers * (attention + ffn + 2 * norm),
        "decoder blocks": n_decoder_layers * (2 * attention + ffn + 3 * norm),
        "final norms": 2 * norm,
    }
    return sum(parts.values())


@alternative("parameter_count")
def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):  # noqa: F811
    """expanded into powers of d."""
    N_e = n_encoder_layers
    N_d = N_e if n_decoder_layers is None else n_decoder_layers
    d = d_model
    return (4 * N_e + 8 * N_d) * d**2 + (N_e + N_d) * (2 * d * d_ff + d_ff) \
        + (vocab_size + 3 * N_e + 4 * N_d + 2) * d


@alternative("embed")
def embed(model, tokens):  # noqa: F811
    """the position encodings written with exp and log, row by row of the table."""
    V, d = model.embedding.shape
    T = np.shape(tokens)[-1]
    pos = np.arange(T)[:, None]
    freq = np.exp(-np.log(10000.0) * np.arange(0, d, 2) / d)
    pe = np.empty((T, d))
    pe[:, 0::2] = np.sin(pos * freq)
    pe[:, 1::2] = np.cos(pos * freq[: d // 2])
    return np.sqrt(d) * model.embedding[np.asarray(tokens)] + pe


@alternative("encode")
def encode(model, src):  # noqa: F811
    """a large negative number, not -inf, in the mask the blocks get (exp underflows to exactly 0)."""
    src = np.asarray(src)
    hidden = np.where(src == model.config.pad_id, -1e30, 0.0)[..., None, None, :]
    x = model.embed(src)
    for block in model.encoder:
        x = block(x, mask=hidden)
    return rms_norm(x, model.encoder_norm_gamma, model.config.eps), padding_mask(src, model.config.pad_id)


@alternative("decode")
def decode(model, tgt_in, H_enc, src_mask):  # noqa: F811
    """one combined boolean rule for the self-attention mask: key j visible iff j <= i and j is no pad."""
    tgt_in = np.asarray(tgt_in)
    m = tgt_in.shape[-1]
    visible = (np.arange(m)[None, :] <= np.arange(m)[:, None]) & (tgt_in != model.config.pad_id)[..., None, None, :]
    mask = np.where(visible, 0.0, -np.inf)
    x = model.embed(tgt_in)
    for block in model.decoder:
        x, _ = block(x, H_enc, self_attn_mask=mask, cross_attn_mask=src_mask)
    return rms_norm(x, model.decoder_norm_gamma, model.config.eps) @ model.embedding.T


@alternative("bpe_merge_step")
def bpe_merge_step(words):
    """collections.Counter for the pairs, the ties by sorting, a for loop with a flag that skips a used symbol."""
    from collections import Counter
    counts = Counter()
    for word, n in words.items():
        counts.update({pair: 0 for pair in zip(word, word[1:])})
        for pair in zip(word, word[1:]):
            counts[pair] += n

    def rank(symbol):
        return (len(symbol) > 1, symbol)

    best = sorted(counts, key=lambda p: (-counts[p], rank(p[0]), rank(p[1])))[0]
    merged = Counter()
    for word, n in words.items():
        out, skip = [], False
        for i, symbol in enumerate(word):
            if skip:
                skip = False
            elif word[i:i + 2] == best:
                out.append(symbol + word[i + 1])
                skip = True
            else:
                out.append(symbol)
        merged[tuple(out)] += n
    return best, dict(merged)


@alternative("bpe_merge_step")
def bpe_merge_step(words):  # noqa: F811
    """the best pair found in one pass; each word merged in place in a list by slice assignment."""
    counts = {}
    for word, n in words.items():
        for i in range(len(word) - 1):
            counts[word[i], word[i + 1]] = counts.get((word[i], word[i + 1]), 0) + n
    best, best_key = None, None
    for (left, right), count in counts.items():
        key = (-count, len(left) > 1, left, len(right) > 1, right)
        if best_key is None or key < best_key:
            best, best_key = (left, right), key
    new_words = {}
    for word, n in words.items():
        symbols, i = list(word), 0
        while i < len(symbols) - 1:
            if (symbols[i], symbols[i + 1]) == best:
                symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
            i += 1
        key = tuple(symbols)
        new_words[key] = new_words.get(key, 0) + n
    return best, new_words
