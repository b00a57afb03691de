"""The shipped numbers model (data/capstone_numbers.npz) at work: translate your own number, and the
decoder's cross-attention maps while it writes the German.

    translate(432)                            -> 'vierhundertzweiunddreißig'
    translate("seventy-one")                  -> 'einundsiebzig'
    maps = cross_attention(432)               # maps["weights"][layer]: (heads, target tokens, source tokens)
"""

from functools import lru_cache

import numpy as np
import torch

from .. import number_words as numbers
from .checkpoints import load_weights


@lru_cache(maxsize=1)
def _shipped():
    return load_weights(task="numbers")[0]


def english_source(number_or_words):
    """The model's input for an int (432) or English words ('Four hundred and thirty-two'), normalised
    as encdec.number_words writes its sources: lowercase, no commas, hyphens as spaces."""
    if isinstance(number_or_words, str) and number_or_words.strip().isdigit():
        number_or_words = int(number_or_words.strip())
    if not isinstance(number_or_words, str):
        return numbers.english(number_or_words)
    text = number_or_words.lower().replace(",", " ").replace("-", " ")
    return " ".join(text.split())


@torch.no_grad()
def _greedy(model, source):
    src = torch.from_numpy(numbers.pad_batch([numbers.encode(source)]))
    out = model.greedy_decode(src, numbers.BOS, numbers.EOS, max_len=numbers.TARGET_LEN)[0].tolist()
    return src, out[:out.index(numbers.EOS) + 1] if numbers.EOS in out else out


def translate(number_or_words, model=None):
    """German number words, greedy, from the shipped model (or `model`): translate(432) -> 'vierhundertzweiunddreißig'.

    Inputs outside 0..9,999 are the model's guess: it was trained on that range only."""
    model = _shipped() if model is None else model
    return numbers.decode(_greedy(model.eval(), english_source(number_or_words))[1])


@torch.no_grad()
def cross_attention(number_or_words, model=None):
    """The decoder's cross-attention while the model translates one number (greedy decoding).

    Returns {"source", "translation", "expected" (num2words' German, for an int in range),
    "source_tokens" (n subwords), "target_tokens" (m subwords, <eos> last),
    "weights": one (heads, m, n) NumPy array per decoder layer}: row i of a head's map is the query
    of the decoder position that wrote target token i (rows sum to 1), column j a source subword.
    """
    model = (_shipped() if model is None else model).eval()
    source = english_source(number_or_words)
    src, out = _greedy(model, source)
    tgt_in = torch.tensor([[numbers.BOS] + out[:-1]])
    H_enc, src_mask = model.encode(src)
    _, cross = model.decode(tgt_in, H_enc, src_mask, return_attention=True)
    vocab = numbers.VOCAB
    expected = numbers.german(int(number_or_words)) if isinstance(number_or_words, (int, np.integer)) else None
    return {"source": source, "translation": numbers.decode(out), "expected": expected,
            "source_tokens": [vocab[i] for i in numbers.encode(source)],
            "target_tokens": [vocab[i] for i in out],
            "weights": [w[0].to(torch.float64).numpy() for w in cross]}
