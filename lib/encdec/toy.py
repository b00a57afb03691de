"""The toy task of lessons 6-9: reverse a sequence of letters.

    source  "c a f e b"      ->  target  "b e f a c <eos>"

Reversal needs real alignment: target position t must read source position n - 1 - t, so a
trained model's cross-attention draws an anti-diagonal. Generated in code, nothing downloaded.
Token ids: 0 <pad>, 1 <bos>, 2 <eos>, then one id per letter.
"""

import numpy as np

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ["<pad>", "<bos>", "<eos>"]


class ReverseTask:
    """Random letter sequences of length min_len..max_len over `n_letters` letters."""

    def __init__(self, n_letters=10, min_len=3, max_len=8):
        if not 1 <= n_letters <= 26 or not 1 <= min_len <= max_len:
            raise ValueError(f"need 1 <= n_letters <= 26 and 1 <= min_len <= max_len, "
                             f"got n_letters={n_letters}, min_len={min_len}, max_len={max_len}")
        self.letters = [chr(ord("a") + i) for i in range(n_letters)]
        self.vocab = SPECIALS + self.letters
        self.min_len, self.max_len = min_len, max_len

    @property
    def vocab_size(self):
        return len(self.vocab)

    def encode(self, text):
        """'cafe' or 'c a f e' -> ids (no BOS/EOS)."""
        return np.array([self.vocab.index(ch) for ch in text.replace(" ", "")], dtype=np.int64)

    def decode(self, ids):
        """ids -> 'cafe', stopping at EOS, skipping pad and BOS."""
        out = []
        for i in np.asarray(ids).tolist():
            if i == EOS:
                break
            if i not in (PAD, BOS):
                out.append(self.vocab[i])
        return "".join(out)

    def batch(self, rng, size):
        """(src (size, max_len), tgt (size, max_len + 1)): right-padded ids; tgt ends in EOS."""
        rng = np.random.default_rng(rng)
        src = np.full((size, self.max_len), PAD, dtype=np.int64)
        tgt = np.full((size, self.max_len + 1), PAD, dtype=np.int64)
        for b in range(size):
            n = int(rng.integers(self.min_len, self.max_len + 1))
            seq = rng.integers(len(SPECIALS), self.vocab_size, size=n)
            src[b, :n] = seq
            tgt[b, :n] = seq[::-1]
            tgt[b, n] = EOS
        return src, tgt
