"""What the checks build their inputs from: seeded generators, models and layers with random
parameters, padded batches of token ids and their masks. Every lesson's checker uses these (and the
test suite's `randomize`), so a model or a batch means the same thing in every lesson.

Everything is a function of its seed: the same call gives the same arrays.
"""

import numpy as np

from ..model import Seq2Seq

PAD, BOS, EOS = 0, 1, 2  # the special ids of every model the checks build


def generator(seed):
    """A NumPy generator seeded with `seed`."""
    return np.random.default_rng(seed)


def randomize(obj, rng, scale=0.4, *, fan_in=False, own=None):
    """Random values for every parameter, in place, so that no all-ones gain or zero bias hides a
    mistake: gains ("gamma") uniform in [0.5, 1.5], other vectors N(0, 0.3), matrices N(0, scale),
    or N(0, scale / sqrt(rows)) with fan_in. `own` gives some parameters their own scale (never
    divided by the rows), None to leave a parameter as it is; so does scale=None for the matrices.

    `obj` is a dict of arrays or an object with parameters(); it is returned.
    """
    own = own or {}
    params = obj.parameters() if hasattr(obj, "parameters") else obj
    for name, p in params.items():
        if "gamma" in name:
            p[...] = rng.uniform(0.5, 1.5, size=p.shape)
        elif p.ndim == 1:
            p[...] = rng.normal(0.0, 0.3, size=p.shape)
        elif name in own:
            if own[name] is not None:
                p[...] = rng.normal(0.0, own[name], size=p.shape)
        elif scale is not None:
            p[...] = rng.normal(0.0, scale / np.sqrt(p.shape[0]) if fan_in else scale, size=p.shape)
    return obj


def random_model(seed, vocab_size=9, d_model=8, n_heads=2, d_ff=12, n_layers=1, *, n_decoder_layers=None,
                 pad_id=PAD, model_class=Seq2Seq, scale=0.4, fan_in=False, embedding_scale=None, eps=1e-6):
    """A reference Seq2Seq (or `model_class`) with n_layers encoder blocks and n_decoder_layers
    (default: n_layers) decoder blocks and the RMSNorm constant eps, every parameter random as randomize()
    makes them, drawn from generator(seed + 1000). The embedding keeps its initial values unless
    embedding_scale is given."""
    model = model_class(vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, d_ff=d_ff,
                        n_encoder_layers=n_layers,
                        n_decoder_layers=n_layers if n_decoder_layers is None else n_decoder_layers,
                        pad_id=pad_id, eps=eps, rng=seed)
    return randomize(model, generator(seed + 1000), scale, fan_in=fan_in, own={"embedding": embedding_scale})


def padded_tokens(rng, lengths, width, vocab_size, pad_id=PAD, *, avoid=(PAD, BOS, EOS), first=None, last=None):
    """(len(lengths), width) right-padded token ids: row b holds lengths[b] tokens, then pad_id.

    The tokens are drawn from the ids below vocab_size that are neither in `avoid` nor pad_id;
    `first` (e.g. BOS) replaces each row's first token, `last` (e.g. EOS) ends each row."""
    ids = [i for i in range(vocab_size) if i not in avoid and i != pad_id]
    out = np.full((len(lengths), width), pad_id, dtype=np.int64)
    for b, n in enumerate(lengths):
        drawn = n - 1 if last is not None else n
        out[b, :drawn] = rng.choice(ids, size=drawn)
        if last is not None:
            out[b, n - 1] = last
        if first is not None:
            out[b, 0] = first
    return out


def source_batch(seed, lengths, vocab_size=9, width=None):
    """Right-padded source ids, (len(lengths), width or max(lengths)), letters only, from generator(seed)."""
    return padded_tokens(generator(seed), lengths, width or max(lengths), vocab_size)


def length_mask(lengths, n):
    """The additive padding mask (B, 1, 1, n) of a batch whose rows hold lengths[b] real tokens:
    0.0 over each row's real positions, -inf over its pads (the layout of padding_mask)."""
    keep = np.arange(n)[None, :] < np.asarray(lengths)[:, None]  # (B, n)
    return np.where(keep, 0.0, -np.inf)[:, None, None, :]
