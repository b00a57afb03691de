"""What Exercises 6.3 and 6.4 (the forward pass) share: the models and batches both checks use
(forward_setups), their cases, the forward functions an answer must not call (_FORWARD), and
_other_last, the edit of the last token both checks' invariants make."""

import numpy as np

from ... import training
from ...model import Seq2Seq
from ..core import Case
from ..fixtures import BOS, generator, padded_tokens, random_model


def model_inputs(model, seed, src_lengths, n, tgt_lengths, m):
    """Right-padded src (B, n) and teacher-forced tgt_in (B, m) for `model`, BOS first."""
    r = generator(seed)
    V, pad = model.config.vocab_size, model.config.pad_id
    src = padded_tokens(r, src_lengths, n, V, pad)
    tgt_in = padded_tokens(r, tgt_lengths, m, V, pad, first=BOS)
    return src, tgt_in


def forward_setups():
    """(label, model, src, tgt_in, hidden): the models and batches both checks use."""
    base = random_model(630, vocab_size=13, n_layers=2)
    pad3 = random_model(631, vocab_size=11, d_model=12, n_heads=3, d_ff=10, n_layers=1, pad_id=3, eps=0.05)
    deep = random_model(632, vocab_size=15, d_model=8, n_heads=4, d_ff=16, n_layers=3, n_decoder_layers=2)
    tiny = random_model(633, vocab_size=13, n_layers=2, embedding_scale=1e-4)
    large = random_model(634, vocab_size=13, n_layers=2, embedding_scale=30.0)
    setups = []
    src, tgt_in = model_inputs(base, 1, [6, 4, 5], 6, [5, 3, 4], 5)
    setups.append(("a batch of 3, n=6 source and m=5 target positions, padded, 2+2 layers", base, src, tgt_in, False))
    src, tgt_in = model_inputs(base, 2, [4], 4, [3], 3)
    setups.append(("one unbatched pair, n=4, m=3", base, src[0], tgt_in[0], False))
    src, tgt_in = model_inputs(pad3, 3, [5, 2, 4, 3], 5, [4, 4, 2, 5], 6)
    setups.append(("pad_id=3, eps=0.05, d_model=12, 3 heads, 1+1 layers, a batch of 4, n=5, m=6", pad3, src, tgt_in,
                   False))
    src, tgt_in = model_inputs(deep, 4, [3, 7], 7, [6, 2], 6)
    setups.append(("3 encoder and 2 decoder layers, 4 heads", deep, src, tgt_in, True))
    src, tgt_in = model_inputs(base, 5, [5, 3, 2, 4], 5, [4, 2, 3, 4], 4)
    setups.append(("leading shape (2, 2)", base, src.reshape(2, 2, 5), tgt_in.reshape(2, 2, 4), True))
    src, tgt_in = model_inputs(tiny, 6, [4, 3], 4, [3, 3], 3)
    setups.append(("near-zero embeddings (1e-4)", tiny, src, tgt_in, True))
    src, tgt_in = model_inputs(large, 7, [4, 2], 4, [3, 2], 3)
    setups.append(("large embeddings (about 30)", large, src, tgt_in, True))
    return setups


def encode_cases():
    return [Case(label, (model, src), hidden=hidden) for label, model, src, _, hidden in forward_setups()]


def decode_cases():
    cases = []
    for label, model, src, tgt_in, hidden in forward_setups():
        H_enc, src_mask = model.encode(src)
        cases.append(Case(label, (model, tgt_in, H_enc, src_mask), hidden=hidden))
    return cases


_FORWARD = [Seq2Seq.encode, Seq2Seq.decode, Seq2Seq.__call__, training.forward_with_cache]


def _other_last(tokens, model):
    """tokens with the last column changed to another real id wherever it is not the pad id; None if
    every row ends in padding."""
    tokens = np.array(tokens, copy=True)
    last = tokens[..., -1]
    real = last != model.config.pad_id
    if not np.any(real):
        return None
    V, avoid = model.config.vocab_size, {model.config.pad_id, BOS}
    new = (last + 1) % V
    while any(int(t) in avoid for t in np.ravel(new[real])):
        new = np.where(np.isin(new, list(avoid)), (new + 1) % V, new)
    tokens[..., -1] = np.where(real, new, last)
    return tokens
