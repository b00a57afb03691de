"""The models Lesson 9's checks decode with: random ones (decoding_model, wild_model), ScriptedReverser
(random, but its outputs end like a reverser's), a briefly trained reverser, a model with other special
ids (other_ids_model), and WorkedExampleModel, the table of section 9.4's worked beam-search example."""

import dataclasses
import functools

import numpy as np

from ...model import Seq2Seq
from ..fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model


def decoding_model(seed, *, embedding_scale=0.6, push=None, **sizes):
    """A random model (fixtures.random_model) whose embedding is random too; `push` sets a
    ScriptedReverser's push towards EOS."""
    model = random_model(seed, embedding_scale=embedding_scale, **sizes)
    if push is not None:
        model.push = push
    return model


def wild_model(seed, **sizes):
    """A random model with large weights (N(0, 3 / sqrt(d_in))): its outputs vary a lot from step to step."""
    return decoding_model(seed, embedding_scale=0.3, scale=3.0, fan_in=True, **sizes)


class ScriptedReverser(Seq2Seq):
    """A random model with a reading rule added to its logits, so its outputs vary and end like a
    reverser's: position t favours the token read (through a fixed random readout) from the
    encoder state of source position n - 1 - t, and EOS is pushed up once n tokens are out
    (n = the row's number of real source tokens). Everything is a function of decode's inputs."""

    push = 2.5
    readout_scale = 1.0
    eos_id = EOS  # the token pushed up once the source is read

    def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
        out = super().decode(tgt_in, H_enc, src_mask, return_attention)
        logits, cross = out if return_attention else (out, None)
        readout = generator(self.config.vocab_size).normal(0.0, self.readout_scale, size=(self.config.d_model, self.config.vocab_size))
        H = np.asarray(H_enc)
        n_src = np.sum(np.asarray(src_mask) == 0, axis=-1)[..., 0, 0]  # (...,) real source tokens per row
        t = np.arange(logits.shape[-2])
        n_src = np.asarray(n_src)[..., None]  # (..., 1)
        read = np.clip(n_src - 1 - t, 0, H.shape[-2] - 1)  # (..., m): the source position to read
        if H.ndim == 2:
            picked = H[read]  # (m, d)
        else:
            read = np.broadcast_to(read, H.shape[:-2] + read.shape[-1:])
            picked = np.take_along_axis(H, read[..., None], axis=-2)  # (..., m, d)
        centred = picked - np.mean(H, axis=-2, keepdims=True)  # what is particular to that source position
        logits = logits + centred @ readout
        logits[..., self.eos_id] += self.push * (t - n_src + 0.5)
        return (logits, cross) if return_attention else logits


@functools.lru_cache(maxsize=None)
def trained_reverser():
    """A small model trained briefly on the reversal task: it often, not always, stops at EOS."""
    from ...optim import Adam
    from ...toy import ReverseTask
    from ...training import train_step

    task = ReverseTask(n_letters=6, min_len=2, max_len=5)
    model = Seq2Seq(vocab_size=task.vocab_size, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                    n_decoder_layers=1, pad_id=PAD, rng=5)
    optimizer = Adam(model.parameters(), lr=0.01)
    r = generator(0)
    for _ in range(120):
        src, tgt = task.batch(r, 16)
        train_step(model, optimizer, src, tgt, BOS)
    return model


class WorkedExampleModel:
    """The model of the worked beam-search example in section 9.4, small enough to trace by hand.

    Its vocabulary is <pad> <bos> <eos> a b (ids 0 to 4). It ignores the source: the distribution of
    the next token depends only on the tokens generated so far, read from WORKED_EXAMPLE (a third
    each for a prefix that is not in the table). <pad> and <bos> get logit 0, above every allowed
    token's log-probability, so a search that forgets to ban them picks them. It has what
    beam_search and greedy_decode (use_cache=False) use: config.pad_id, encode and decode.
    """

    vocab = ("<pad>", "<bos>", "<eos>", "a", "b")
    config = dataclasses.make_dataclass("Config", [("pad_id", int), ("vocab_size", int)])(PAD, 5)
    training = False

    def check_tokens(self, tokens, name):
        return np.asarray(tokens)

    def encode(self, src):
        """(H_enc, src_mask), both zeros: nothing here depends on the source."""
        src = np.asarray(src)
        return np.zeros(src.shape + (1,)), np.zeros(src.shape[:-1] + (1, 1, src.shape[-1]))

    def decode(self, tgt_in, H_enc, src_mask, return_attention=False):
        """Logits (..., t, 5): position j holds log P(next token | the j tokens after <bos>)."""
        tgt_in = np.asarray(tgt_in)
        logits = np.zeros(tgt_in.shape + (5,))
        for row in np.ndindex(tgt_in.shape[:-1]):
            words = [self.vocab[int(t)] for t in tgt_in[row][1:]]
            for j in range(tgt_in.shape[-1]):
                p = WORKED_EXAMPLE.get(tuple(words[:j]), {"a": 1 / 3, "b": 1 / 3, "<eos>": 1 / 3})
                logits[row + (j,)] = [0.0, 0.0, np.log(p["<eos>"]), np.log(p["a"]), np.log(p["b"])]
        return (logits, None) if return_attention else logits

    def spell(self, tokens):
        """Token ids -> 'b a <eos>'."""
        return " ".join(self.vocab[int(t)] for t in np.ravel(tokens))


WORKED_EXAMPLE = {  # the tokens generated so far -> the probabilities of the next token
    (): {"a": 0.5, "b": 0.4, "<eos>": 0.1},
    ("a",): {"a": 0.3, "b": 0.2, "<eos>": 0.5},
    ("b",): {"a": 0.9, "b": 0.05, "<eos>": 0.05},
    ("a", "a"): {"a": 0.1, "b": 0.3, "<eos>": 0.6},
    ("b", "a"): {"a": 0.3, "b": 0.2, "<eos>": 0.5},
    ("b", "a", "a"): {"a": 0.005, "b": 0.005, "<eos>": 0.99},
}


def other_ids_model(seed, pad_id=3, bos_id=4, eos_id=5, scripted=True, **sizes):
    """A model whose pad id is `pad_id` and which says `eos_id` (a ScriptedReverser once the source is read;
    else a random model whose `eos_id` row is larger, for cached decoding, which the script does not reach),
    and a batch of its sources (padded with pad_id, free of the special ids): the case where an answer that
    writes a constant (the toy task's PAD, BOS, EOS) instead of reading model.config.pad_id, bos_id or
    eos_id decodes other tokens."""
    if scripted:
        model = decoding_model(seed, model_class=ScriptedReverser, embedding_scale=0.2, pad_id=pad_id, **sizes)
        model.eos_id = eos_id
    else:
        model = wild_model(seed, pad_id=pad_id, **sizes)
        model.embedding[eos_id] *= 1.5
    V = model.config.vocab_size
    src = padded_tokens(generator(seed + 1), [4, 2, 3], 4, V, pad_id, avoid=(pad_id, bos_id, eos_id, PAD, BOS, EOS))
    return model, src
