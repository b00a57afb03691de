"""Checkers for lesson 09, Decoding.

Each exercise is declared (number, title, points) right above its checker; EXERCISES and ORDERINGS,
at the end, list them.

The decoding exercises receive reference `encdec.Seq2Seq` models: random ones (every parameter
random, gains and biases included), a random one whose output stops (it pushes EOS up once it has
written as many tokens as the source holds, like a trained reverser), and a briefly trained
reverser. `cached_greedy_decode` runs with the reference `decode_step` and `KVCache` in place of the
notebook's, so a mistake in Exercise 9.4 is never charged again in 9.5.

Beam search is checked first on the worked example of section 9.4 (`WorkedExampleModel`, a table of
next-token probabilities small enough to trace by hand), then on random and trained models.

Sampling is checked without comparing random draws with the reference's: many draws from one
seeded generator must never leave the allowed set (top-k, top-p) and their frequencies must match
`next_token_distribution` within a few standard errors.
"""

import dataclasses
import functools

import numpy as np

from .. import decoding
from ..mistakes import CATALOG
from ..mistakes import lesson09 as _register  # noqa: F401  (fills the catalog)
from ..attention import MultiHeadAttention
from ..model import Seq2Seq
from .catalog import wrapped
from .core import Case, Checker, compare, rebind, run_student, with_cause
from .exercises import Exercise
from .fixtures import BOS, EOS, PAD, generator, padded_tokens, random_model, source_batch
from .ordering import Ordering, Step
from .probes import Combos, DecodedRows, Finding, Probes, Property, combos
from ..layers import rms_norm
from ..loss import log_softmax


# -- models the checks decode with ----------------------------------------------------------------------
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
    from ..optim import Adam
    from ..toy import ReverseTask
    from ..training import train_step

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


# -- Exercise 9.1 ---------------------------------------------------------------------------------------
def _reference_greedy(model, src, bos_id, eos_id, max_len):
    return decoding.greedy_decode(model, src, bos_id, eos_id, max_len, use_cache=False)


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


def greedy_cases():
    other, other_src = other_ids_model(24)
    stop = decoding_model(21, model_class=ScriptedReverser, embedding_scale=0.2)
    stop2 = decoding_model(22, vocab_size=11, d_model=12, n_heads=3, n_layers=2, model_class=ScriptedReverser,
                           embedding_scale=0.2)
    wild = decoding_model(23)
    return {
        "one": [Case("one source (n,) of 4 tokens, a model that stops after about 4 tokens",
                     (stop, source_batch(1, [4])[0], BOS, EOS, 8)),
                Case("one source of 3 tokens, a random model that rarely says EOS, max_len=6",
                     (wild, source_batch(2, [3])[0], BOS, EOS, 6)),
                Case("one source, two layers each side, max_len=10", (stop2, source_batch(3, [5], vocab_size=11)[0], BOS, EOS, 10),
                     hidden=True)],
        "stops": [Case("max_len=2 cuts the output before EOS", (stop, source_batch(4, [5])[0], BOS, EOS, 2)),
                  Case("a source of 1 token: EOS comes early", (stop, source_batch(5, [1])[0], BOS, EOS, 8))],
        "batch": [Case("a batch of 3 padded sources (lengths 2, 5, 3): rows end at different steps",
                       (stop, source_batch(6, [2, 5, 3]), BOS, EOS, 9)),
                  Case("a batch of 2 sources with the random model, max_len=5", (wild, source_batch(7, [4, 2]), BOS, EOS, 5)),
                  Case("a model whose pad id is 3 (model.config.pad_id), with <bos> 4 and <eos> 5: 3 padded sources",
                       (other, other_src, 4, 5, 8)),
                  Case("a batch of 4 sources, the briefly trained reverser",
                       (trained_reverser(), source_batch(8, [3, 5, 2, 4]), BOS, EOS, 7), hidden=True)],
    }


def greedy_model(k, model, src, bos_id, eos_id, max_len):
    """greedy_decode (no cache) with knobs: stop ("all": when every row has ended; "never"; "first": when
    one row ends), pad_after (False: finished rows keep choosing tokens), ban ("both", "none", "pad",
    "bos": the ids set to -inf), with_bos (True: BOS returned first)."""
    src = np.asarray(src)
    single = src.ndim == 1
    src2 = src[None] if single else src
    pad = model.config.pad_id
    banned = {"both": [pad, bos_id], "none": [], "pad": [pad], "bos": [bos_id]}[k.get("ban", "both")]
    B = src2.shape[0]
    generated = np.full((B, 0), pad, dtype=np.int64)
    done = np.zeros(B, dtype=bool)
    tgt_in = np.full((B, 1), bos_id, dtype=np.int64)
    H_enc, src_mask = model.encode(src2)
    stop = k.get("stop", "all")
    for _ in range(max_len):
        logits = np.array(model.decode(tgt_in, H_enc, src_mask)[:, -1], dtype=np.float64)
        logits[:, banned] = -np.inf
        nxt = np.argmax(logits, axis=-1)
        if k.get("pad_after", True):
            nxt = np.where(done, pad, nxt)
        generated = np.concatenate([generated, nxt[:, None]], axis=1)
        done |= nxt == eos_id
        if (stop == "all" and done.all()) or (stop == "first" and done.any()):
            break
        tgt_in = np.concatenate([tgt_in, nxt[:, None]], axis=1)
    if k.get("with_bos"):
        generated = np.concatenate([np.full((B, 1), bos_id), generated], axis=1)
    return generated[0] if single else generated


GREEDY_CHOICES = [
    ("stop", [("all", "", ""), ("never", "never_stops", "the loop never stops at EOS: it runs to max_len even when "
                                                       "every row has ended"),
              ("first", "stops_at_first_row", "the loop stops as soon as one row produces EOS, while others go on")]),
    ("pad_after", [(True, "", ""), (False, "writes_after_eos", "a finished row keeps choosing tokens after its EOS "
                                                               "instead of the pad id")]),
    ("ban", [("both", "", ""), ("none", "nothing_banned", "BOS and the pad token are not banned (set their logits to -inf)"),
             ("pad", "bos_not_banned", "BOS is not banned, only the pad token"),
             ("bos", "pad_not_banned", "the pad token is not banned, only BOS")]),
    ("with_bos", [(False, "", ""), (True, "bos_returned", "BOS is returned as the first token")]),
]
GREEDY_RIGHT = ("At each step: the last position's logits, BOS and pad set to -inf, argmax; a row that has produced EOS "
                "gets the pad id from then on; stop when every row has ended or after max_len tokens.")


def _decoded_ids(attempt, value):
    return value


def _decoding_ids(attempt):
    model, _, bos, eos, max_len = attempt.case.args[:5]
    return {"bos": bos, "eos": eos, "pad": model.config.pad_id, "max_len": max_len}


GREEDY_PROBES = Probes(greedy_model, Combos("greedy", GREEDY_CHOICES, GREEDY_RIGHT),
                       DecodedRows(_decoded_ids, _decoding_ids))


GREEDY_DECODE = Exercise("9.1", "greedy_decode", points=3, reference=decoding.greedy_decode,
                         sizes={"src": "... n"}, reads=("bos_id", "eos_id", "max_len", "model.config.pad_id"))


@GREEDY_DECODE.checked_by
def check_greedy_decode(greedy_decode=None, *, points=None, hidden=False):
    """The most probable token at every step, from BOS until EOS or max_len."""
    c = Checker(GREEDY_DECODE, points, hidden)
    fn = c.find(greedy_decode, "greedy_decode")
    cases = greedy_cases()
    common = dict(catalog=CATALOG["greedy_decode"], forbidden=[decoding.greedy_decode, decoding.beam_search],
                  probes=GREEDY_PROBES)
    c.check_cases("one source sequence", fn, _reference_greedy, cases["one"], **common)
    c.check_cases("stopping at EOS or at max_len", fn, _reference_greedy, cases["stops"], **common)
    c.check_cases("a batch of sources: each row stops at its own EOS, pads after it", fn, _reference_greedy,
                  cases["batch"], **common)
    return c.result()


# -- Exercise 9.2 ---------------------------------------------------------------------------------------
N_DRAWS = 4000


@dataclasses.dataclass
class SamplingCase:
    label: str
    logits: np.ndarray  # (V,)
    kwargs: dict
    seed: int
    hidden: bool = False

    def describe(self):
        return ", ".join(f"{k}={v}" for k, v in self.kwargs.items()) or "temperature=1.0"


def _draws(fn, case):
    """N_DRAWS tokens from one call on N_DRAWS copies of the logits row, with a seeded generator."""
    tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
    return run_student(fn, (tiled,), dict(case.kwargs, rng=generator(case.seed)))


def _as_ids(value, V, shape):
    """The draws as an int array of `shape`, or a message saying why they are not."""
    try:
        ids = np.asarray(value)
    except Exception:
        return None, f"expected integer token ids, got {type(value).__name__}"
    if ids.shape != shape:
        return None, f"shape: expected {shape}, got {ids.shape}"
    if not (np.issubdtype(ids.dtype, np.integer) or (np.issubdtype(ids.dtype, np.floating)
                                                      and np.all(ids == np.round(ids)))):
        return None, f"expected integer token ids, got dtype {ids.dtype}"
    ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= V):
        return None, f"ids must lie in [0, {V}); got {ids.min()} ... {ids.max()}"
    return ids, None


def _frequencies(ids, V):
    return np.bincount(ids, minlength=V) / len(ids)


def _close(f, p, n, z=5.0):
    """Frequencies f (from n draws) agree with probabilities p within z standard errors."""
    return np.all(np.abs(f - p) <= z * np.sqrt(p * (1 - p) / n) + 2.0 / n)


def _close_two(f, g, n, z=5.0):
    """Two sets of empirical frequencies (n draws each) that could come from one distribution."""
    return np.all(np.abs(f - g) <= z * np.sqrt((f * (1 - f) + g * (1 - g)) / n) + 3.0 / n)


def _fmt_p(x):
    return f"{100 * x:.1f}%"


def _one_token(ids, V):
    return np.count_nonzero(np.bincount(np.asarray(ids).ravel(), minlength=V)) == 1


def _greedy_whatever_the_cut(m, tiled, case, V):
    """A catalog mistake that draws one token every time even with top_k and top_p left out (argmax
    decoding): under a cut its draws are also those of a cut too tight, so it must not name them."""
    plain = {k: v for k, v in case.kwargs.items() if k not in ("top_k", "top_p")}
    value, merr = m.run((tiled,), dict(plain, rng=generator(case.seed)))
    if merr is not None:
        return False
    ids, problem = _as_ids(value, V, (N_DRAWS,))
    return problem is None and _one_token(ids, V)


def _sampling_diagnosis(c, freqs, error, case, catalog):
    """The diagnosis of the first catalog mistake that draws like the student (or fails alike)."""
    V = len(case.logits)
    tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
    if error is not None:  # only a mistake failing with the very same message
        for m in catalog:
            _, merr = m.run((tiled,), dict(case.kwargs, rng=generator(case.seed)))
            if merr is not None and type(merr) is type(error) and str(merr) == str(error):
                return c.likely_cause(m)
        return ""
    cut = case.kwargs.get("top_k") is not None or case.kwargs.get("top_p") is not None
    for m in catalog:
        value, merr = m.run((tiled,), dict(case.kwargs, rng=generator(case.seed)))
        if merr is not None:
            continue
        ids, problem = _as_ids(value, V, (N_DRAWS,))
        if problem is None and cut and _one_token(ids, V) and _greedy_whatever_the_cut(m, tiled, case, V):
            continue  # greedy draws under a cut: a cut too tight draws that way too, so they say nothing
        if problem is None and _close_two(freqs, _frequencies(ids, V), N_DRAWS):
            return c.likely_cause(m)
    return ""


def _distribution(logits, temperature=1.0, top_k=None, top_p=None, *, temp="divide", k_shift=0, nucleus="before",
                  order="k_then_p"):
    """next_token_distribution with knobs: temp ("divide"; "multiply": logits * T; "none": T ignored;
    "after": the top-k/top-p sets chosen at temperature 1), k_shift (top_k + shift kept), nucleus
    ("before": a token is kept while the mass before it is < top_p; "inclusive": while the mass up to it
    is < top_p, so the crossing token is dropped; "le": mass before it <= top_p, one token more on a tie;
    "none": top_p ignored), order ("k_then_p"; "p_then_k")."""
    logits = np.asarray(logits, dtype=np.float64)
    V = logits.shape[-1]
    if temperature == 0:
        return np.eye(V)[np.argmax(logits, axis=-1)]
    z = {"divide": logits / temperature, "multiply": logits * temperature, "none": logits,
         "after": logits}[temp]
    chooser = logits if temp == "after" else z

    def top_k_set(allowed):
        if top_k is None:
            return allowed
        kk = min(max(top_k + k_shift, 1), V)
        masked = np.where(allowed, chooser, -np.inf)
        kth = np.sort(masked, axis=-1)[..., V - kk][..., None]
        return allowed & (masked >= kth)

    def top_p_set(allowed):
        if top_p is None or nucleus == "none":
            return allowed
        probs = decoding.softmax(np.where(allowed, chooser, -np.inf), axis=-1)
        order_ = np.argsort(-probs, axis=-1, kind="stable")
        sp = np.take_along_axis(probs, order_, axis=-1)
        cum = np.cumsum(sp, axis=-1)
        before = cum - sp
        keep_sorted = {"before": before < top_p, "inclusive": cum < top_p, "le": before <= top_p}[nucleus]
        keep_sorted[..., 0] = True
        keep = np.zeros_like(keep_sorted)
        np.put_along_axis(keep, order_, keep_sorted, axis=-1)
        return allowed & keep

    allowed = np.ones(logits.shape, dtype=bool)
    allowed = top_p_set(top_k_set(allowed)) if order == "k_then_p" else top_k_set(top_p_set(allowed))
    return decoding.softmax(np.where(allowed, z, -np.inf), axis=-1)


SAMPLING_CHOICES = [
    ("temp", [("divide", "", ""),
              ("multiply", "temperature_multiplies", "the logits are multiplied by the temperature instead of divided "
                                                     "(softmax(logits / T): T < 1 sharpens, T > 1 flattens)"),
              ("none", "temperature_ignored", "the temperature has no effect"),
              ("after", "sets_at_temperature_one", "the top-k / top-p sets are chosen at temperature 1, before "
                                                   "dividing by T")]),
    ("k_shift", [(0, "", ""), (-1, "top_k_one_less", "one token fewer than top_k is kept"),
                 (1, "top_k_one_more", "one token more than top_k is kept")]),
    ("nucleus", [("before", "", ""),
                 ("inclusive", "nucleus_drops_crossing_token", "the nucleus stops before the token that takes the mass "
                                                               "to top_p (that token must stay)"),
                 ("le", "nucleus_one_more_on_a_tie", "the nucleus keeps a token whose mass before it equals top_p "
                                                     "(keep while the mass before is < top_p, strictly)"),
                 ("none", "nucleus_ignored", "top_p has no effect")]),
    ("order", [("k_then_p", "", ""), ("p_then_k", "top_p_before_top_k", "the nucleus is chosen before top-k")]),
]
SAMPLING_RIGHT = ("The distribution is softmax(logits / T), cut to the top_k most probable tokens, then to the smallest "
                  "set of most probable tokens whose mass reaches top_p, renormalised.")


def _unnormalised_cdf(logits, temperature=1.0, top_k=None, top_p=None, *, renormalised="none", leftover="last"):
    """The draw u = rng.random() looked up in the cumulative sum of probabilities that the cut did not
    renormalise: the kept probabilities are drawn as they are, and the mass left over (u beyond the last
    cumulative value) lands on the last token (an index clipped to V - 1, or the last entry of a
    searchsorted), or on token 0 (np.argmax(cdf > u) when no entry is above u). renormalised: "none" (the
    probabilities of the full softmax, cut), "top_k" (renormalised after top-k, the nucleus not)."""
    p = decoding.next_token_distribution(logits, temperature, top_k, top_p)
    kept = p > 0
    z = np.asarray(logits, dtype=np.float64) / temperature
    base = decoding.softmax(z, axis=-1)
    if renormalised == "top_k":
        if top_k is None or top_p is None:
            raise LookupError("nothing to renormalise between the cuts")
        base = decoding.next_token_distribution(logits, temperature, top_k, None)
    q = np.where(kept, base, 0.0)
    rest = 1.0 - q.sum(axis=-1)
    q[..., -1 if leftover == "last" else 0] += rest
    return q


UNNORMALISED_CDF = [
    (f"unnormalised_cdf:{renorm}:{where}", dict(renormalised=renorm, leftover=where),
     "the draw is read from the cumulative sum of the kept probabilities without renormalising them"
     + (" after top-p" if renorm == "top_k" else "") + ": that sum ends below 1, so whenever u = rng.random() is "
     "above it the draw falls past the kept tokens (here onto token " + ("V - 1" if where == "last" else "0")
     + "). Renormalise the kept probabilities (divide by their sum, or set the dropped logits to -inf and take the "
     "softmax again) before the cumulative sum.")
    for renorm in ("none", "top_k") for where in ("last", "first")]


def _sampling_probe(c, freqs, case):
    """A kind of slip whose distribution the draws fit (when no catalog entry does), as a likely cause."""
    p = decoding.next_token_distribution(case.logits, **case.kwargs)
    for key, knobs, diagnosis in [o for o in combos(SAMPLING_CHOICES, SAMPLING_RIGHT) if o[0].count("+") < 2] \
            + UNNORMALISED_CDF:
        try:
            if key.startswith("unnormalised_cdf"):
                q = _unnormalised_cdf(case.logits, **case.kwargs, **knobs)
            else:
                q = _distribution(case.logits, **case.kwargs, **knobs)
        except Exception:
            continue
        if np.allclose(q, p, atol=1e-3):
            continue  # not a slip on this case
        if np.all((freqs == 0) | (q > 0)) and _close(freqs, q, N_DRAWS):
            return c.likely_cause(Finding(c.name, f"probe:sampling:{key}", diagnosis))
    return ""


def _one_at_a_time(fn, case, forbidden):
    """N_DRAWS single draws from the (V,) row, for an answer that cannot do a batch of rows."""
    rng = generator(case.seed)

    def draws():
        return np.array([np.asarray(fn(case.logits, rng=rng, **case.kwargs)).item() for _ in range(N_DRAWS)])
    return run_student(draws, (), {}, forbidden)


def _check_sampling(c, label, fn, cases, catalog, forbidden):
    """One part: for each case, the draws stay in the allowed set and match its probabilities.

    The draws come from one call on N_DRAWS copies of the row; an answer that cannot take a batch
    (the shapes part already says so) is asked N_DRAWS times for one draw instead."""
    if c.stopped:
        return False
    cases = c.to_run(cases)
    for case in cases:
        V = len(case.logits)
        p = decoding.next_token_distribution(case.logits, **case.kwargs)
        tiled = np.repeat(case.logits[None, :], N_DRAWS, axis=0)
        outcome = run_student(fn, (tiled,), dict(case.kwargs, rng=generator(case.seed)), forbidden)
        if not outcome.delegated and (outcome.error is not None or _as_ids(outcome.value, V, (N_DRAWS,))[1]):
            single = _one_at_a_time(fn, case, forbidden)
            if single.error is None and not _as_ids(single.value, V, (N_DRAWS,))[1]:
                outcome = single
        c._absorb(outcome, case.label)
        where = f"[{case.label}: {case.describe()}, {N_DRAWS} draws]"
        if outcome.error is not None:
            msg = c._explain_error(outcome)
            if outcome.delegated or isinstance(outcome.error, NotImplementedError):
                return c.part(label, False, c.stopped, cases=cases, failed=case)
            diagnosis = _sampling_diagnosis(c, None, outcome.error, case, catalog)
            return c.part(label, False, with_cause(f"{where} {msg}", diagnosis), cases=cases, failed=case)
        ids, problem = _as_ids(outcome.value, V, (N_DRAWS,))
        if problem:
            return c.part(label, False, f"{where} {problem}", cases=cases, failed=case)
        freqs = _frequencies(ids, V)
        outside = np.flatnonzero((freqs > 0) & (p == 0))
        if outside.size:
            allowed = [int(i) for i in np.flatnonzero(p > 0)]
            problem = (f"token {int(outside[0])} was drawn {_fmt_p(freqs[outside[0]])} of the time, but only "
                       f"tokens {allowed} may be drawn here")
        elif not _close(freqs, p, N_DRAWS):
            worst = int(np.argmax(np.abs(freqs - p) / np.sqrt(p * (1 - p) / N_DRAWS + 1e-12)))
            problem = (f"token {worst} was drawn {_fmt_p(freqs[worst])} of the time; its probability is "
                       f"{_fmt_p(p[worst])} (expected frequencies {[_fmt_p(x) for x in p]})")
        if problem:
            diagnosis = _sampling_diagnosis(c, freqs, None, case, catalog) or _sampling_probe(c, freqs, case)
            return c.part(label, False, with_cause(f"{where} {problem}", diagnosis), cases=cases, failed=case)
    return c.part(label, True, cases=cases)


LOGITS = np.log(np.array([0.06, 0.40, 0.04, 0.25, 0.10, 0.15]))  # token 1 most probable, then 3, 5, 4, 0, 2


def sampling_cases():
    r = generator(92)
    spread = r.normal(size=9) * 1.5
    flat = np.log(np.array([0.3, 0.28, 0.22, 0.12, 0.08]))
    peaked = np.log(np.array([0.02, 0.9, 0.03, 0.05]))
    return {
        "plain": [SamplingCase("6 tokens", LOGITS, {}, 1),
                  SamplingCase("9 tokens", spread, {}, 2, hidden=True)],
        "temperature": [SamplingCase("6 tokens", LOGITS, {"temperature": 0.5}, 3),
                        SamplingCase("6 tokens", LOGITS, {"temperature": 2.0}, 4),
                        SamplingCase("9 tokens", spread, {"temperature": 1.7}, 5, hidden=True)],
        "top_k": [SamplingCase("6 tokens", LOGITS, {"top_k": 3}, 6),
                  SamplingCase("9 tokens", spread, {"temperature": 0.8, "top_k": 4}, 7, hidden=True)],
        "top_p": [SamplingCase("6 tokens", LOGITS, {"top_p": 0.7}, 8),
                  SamplingCase("6 tokens", LOGITS, {"temperature": 0.5, "top_p": 0.8}, 9),
                  SamplingCase("one token holds 90%", peaked, {"top_p": 0.8}, 10),
                  SamplingCase("5 similar tokens", flat, {"top_p": 0.9}, 11, hidden=True)],
        "both": [SamplingCase("6 tokens", LOGITS, {"top_k": 3, "top_p": 0.7}, 12),
                 SamplingCase("9 tokens", spread, {"temperature": 1.3, "top_k": 5, "top_p": 0.6}, 13, hidden=True)],
    }


SAMPLE_NEXT_TOKEN = Exercise("9.2", "sample_next_token", points=3, reference=decoding.sample_next_token,
                             reads=("temperature", "top_k", "top_p"))


@SAMPLE_NEXT_TOKEN.checked_by
def check_sample_next_token(sample_next_token=None, *, points=None, hidden=False):
    """One draw per row from softmax(logits / T), restricted by top-k and top-p."""
    c = Checker(SAMPLE_NEXT_TOKEN, points, hidden)
    fn = c.find(sample_next_token, "sample_next_token")
    catalog = CATALOG["sample_next_token"]
    forbidden = [decoding.sample_next_token, decoding.next_token_distribution]
    if not c.stopped:
        _check_shapes_and_seed(c, fn, catalog, forbidden)
    cases = sampling_cases()
    _check_sampling(c, "plain sampling (temperature 1)", fn, cases["plain"], catalog, forbidden)
    _check_sampling(c, "temperature", fn, cases["temperature"], catalog, forbidden)
    _check_sampling(c, "top-k", fn, cases["top_k"], catalog, forbidden)
    _check_sampling(c, "top-p (the nucleus)", fn, cases["top_p"], catalog, forbidden)
    _check_sampling(c, "top-k and top-p together", fn, cases["both"], catalog, forbidden)
    return c.result()


def _check_shapes_and_seed(c, fn, catalog, forbidden):
    """Shapes (..., V) -> (...), temperature 0 is the argmax, and the rng decides the draws."""
    r = generator(91)
    V = len(LOGITS)
    problems = []
    for shape in [(), (5,), (2, 3)]:
        logits = r.normal(size=shape + (V,))
        out = run_student(fn, (logits,), {"rng": generator(1)}, forbidden)
        c._absorb(out, f"logits of shape {logits.shape}")
        if out.error is not None:
            if out.delegated or isinstance(out.error, NotImplementedError):
                c._explain_error(out)
                return c.part("one id per row of logits", False, c.stopped)
            problems.append(f"[logits of shape {logits.shape}] {c._explain_error(out)}")
        else:
            _, problem = _as_ids(out.value, V, shape)
            if problem:
                problems.append(f"[logits of shape {logits.shape}] {problem}")
        if problems:
            if shape:
                problems[0] += ("\n      A batch of rows needs one draw per row: rng.choice takes one 1-D distribution "
                                "at a time, so loop over the rows, or draw every row at once with the inverse CDF "
                                "(section 9.3).")
            break
    c.part("one id per row of logits: (V,) gives one id, (B, V) gives (B,), (2, 3, V) gives (2, 3)",
           not problems, problems[0] if problems else "")
    cases = [Case("temperature=0 on 7 logits", (r.normal(size=7) * 3,), {"temperature": 0.0, "rng": generator(2)}),
             Case("temperature=0 on large logits (about 1000)", (r.normal(size=9) * 1e3,),
                  {"temperature": 0.0, "rng": generator(4)})]
    c.check_cases("temperature=0 picks the most probable token (no randomness)", fn,
                  lambda x, temperature, rng: np.argmax(x, axis=-1), cases, catalog=catalog, forbidden=forbidden)
    first = run_student(fn, (np.repeat(LOGITS[None], 50, axis=0),), {"rng": generator(3)}, forbidden)
    again = run_student(fn, (np.repeat(LOGITS[None], 50, axis=0),), {"rng": generator(3)}, forbidden)
    if first.error is None and again.error is None:
        same = compare(again.value, first.value) is None
        c.part("the rng argument decides the draws (the same seed gives the same tokens)", same,
               "" if same else "two calls with generators of the same seed drew different tokens: draw your "
               "random numbers from `rng` (rng.random(...) or rng.choice(...)), not from np.random.")


# -- Exercise 9.3 ---------------------------------------------------------------------------------------
def _best(results):
    """(tokens, score) of the best hypothesis."""
    toks, score = results[0]
    return np.asarray(toks), np.float64(score)


def _every(results):
    """All hypotheses as one (k, L) array padded with -1, and their scores (k,)."""
    rows = [np.asarray(t).ravel() for t, _ in results]
    width = max([len(t) for t in rows] + [1])
    table = np.full((len(rows), width), -1, dtype=np.int64)
    for i, t in enumerate(rows):
        table[i, : len(t)] = t
    return table, np.array([float(s) for _, s in results])


def beam_cases():
    other, other_src = other_ids_model(34, push=1.0)
    stop = decoding_model(31, model_class=ScriptedReverser, embedding_scale=0.2)
    slow = decoding_model(31, model_class=ScriptedReverser, embedding_scale=0.2, push=1.0)
    slower = decoding_model(35, model_class=ScriptedReverser, embedding_scale=0.2, push=1.5)
    stop2 = decoding_model(32, vocab_size=11, d_model=12, n_heads=3, n_layers=2, model_class=ScriptedReverser,
                         embedding_scale=0.2, push=1.2)
    wild = decoding_model(33)
    src = source_batch(1, [4])[0]
    example, example_src = WorkedExampleModel(), np.array([3, 4])
    return {
        "worked": [Case("the worked example of section 9.4: WorkedExampleModel() (ids: <eos> 2, a 3, b 4), "
                        "beam_width=2, max_len=5; expected b a <eos> (-0.5716), then a <eos> (-0.6931)",
                        (example, example_src, BOS, EOS, 2, 5)),
                   Case("the worked example with max_len=2: the finished a <eos> (-0.6931) comes first, then "
                        "the live b a (-0.5108), although its score is better",
                        (example, example_src, BOS, EOS, 2, 2)),
                   Case("the worked example with beam_width=3: a a <eos> (rank 2 < 3) finishes at step 3",
                        (example, example_src, BOS, EOS, 3, 5), hidden=True)],
        "width1": [Case("beam_width=1 (must equal greedy decoding)", (stop, src, BOS, EOS, 1, 8)),
                   Case("beam_width=1, a random model, max_len=5", (wild, source_batch(2, [3])[0], BOS, EOS, 1, 5),
                        hidden=True)],
        "wide": [Case("beam_width=3, a 4-token source; hypotheses end at different steps",
                      (slow, source_batch(3, [4])[0], BOS, EOS, 3, 9)),
                 Case("beam_width=4, alpha=0.6", (slower, source_batch(3, [4])[0], BOS, EOS, 4, 9, 0.6)),
                 Case("beam_width=2, a random model (no EOS within max_len=4)", (wild, source_batch(4, [5])[0], BOS, EOS, 2, 4)),
                 Case("beam_width=3 with <bos> 4 and <eos> 5, a model whose pad id is 3",
                      (other, other_src[0], 4, 5, 3, 8)),
                 Case("beam_width=3, two layers each side, alpha=0.8", (stop2, source_batch(5, [5], vocab_size=11)[0],
                                                                        BOS, EOS, 3, 9, 0.8), hidden=True),
                 Case("beam_width=3, the briefly trained reverser", (trained_reverser(), source_batch(6, [4])[0], BOS, EOS, 3, 7),
                      hidden=True)],
    }


def beam_model(k, model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    """beam_search with knobs: length ("with_eos": len counts EOS; "without_eos"; "with_bos": one more),
    alpha_used ("given"; "one": alpha ignored, 1.0 used; "none": no normalisation at all), finish
    ("rank": an EOS finishes a hypothesis only among the beam_width best candidates; "any": whatever
    its rank), ban ("both", "none")."""
    src = np.asarray(src)
    banned = [model.config.pad_id, bos_id] if k.get("ban", "both") == "both" else []
    live, finished = [((), 0.0)], []
    H_enc, src_mask = model.encode(src[None])
    for _ in range(max_len):
        tgt_in = np.array([(bos_id,) + toks for toks, _ in live])
        n = len(live)
        logits = np.array(model.decode(tgt_in, np.broadcast_to(H_enc, (n,) + H_enc.shape[1:]), src_mask)[:, -1],
                          dtype=np.float64)
        logits[:, banned] = -np.inf
        logp = log_softmax(logits, axis=-1)
        total = np.array([sc for _, sc in live])[:, None] + logp
        flat = np.argsort(-total, axis=None, kind="stable")
        new_live, ended = [], 0
        slots = k.get("slots", "live")
        width = beam_width - len(finished) if slots == "shrink" else beam_width
        for rank, idx in enumerate(flat):
            b, tok = divmod(int(idx), logp.shape[1])
            if not np.isfinite(total[b, tok]):
                break
            toks = live[b][0] + (tok,)
            if tok == eos_id:
                if rank < beam_width or k.get("finish", "rank") == "any":
                    finished.append((toks, float(total[b, tok])))
                    ended += 1
            else:
                new_live.append((toks, float(total[b, tok])))
            if len(new_live) + (ended if slots == "step" else 0) >= width:
                break
        live = new_live
        if len(finished) >= beam_width or not live:
            break
    a = {"given": alpha, "one": 1.0, "none": 0.0}[k.get("alpha_used", "given")]

    def normalised(hyp):
        toks, sc = hyp
        length = len(toks) + {"with_eos": 0, "with_bos": 1}.get(k.get("length", "with_eos"), 0)
        if k.get("length") == "without_eos" and toks and toks[-1] == eos_id:
            length -= 1
        return sc / max(length, 1) ** a

    results = sorted(finished, key=normalised, reverse=True)[:beam_width]
    if len(results) < beam_width:
        results += sorted(live, key=normalised, reverse=True)[: beam_width - len(results)]
    return [(np.array(toks, dtype=np.int64), normalised((toks, sc))) for toks, sc in results]


BEAM_PROBES = Probes(beam_model, Combos("beam", [
    ("length", [("with_eos", "", ""), ("without_eos", "length_without_eos", "the length that normalises the score leaves "
                                                                          "EOS out: len(y) counts every generated token, EOS included"),
                ("with_bos", "length_with_bos", "the length that normalises the score counts BOS too: len(y) counts the "
                                                "generated tokens only (EOS included, BOS not)")]),
    ("alpha_used", [("given", "", ""), ("one", "alpha_ignored", "alpha is ignored: the score is divided by len(y), not "
                                                               "len(y)^alpha"),
                    ("none", "no_length_normalisation", "the scores are not length-normalised: divide the sum of "
                                                        "log-probabilities by len(y)^alpha")]),
    ("finish", [("rank", "", ""), ("any", "eos_at_any_rank", "a hypothesis ending in EOS is kept as finished whatever "
                                                             "its rank: only EOS among the beam_width best candidates "
                                                             "finishes one")]),
    ("ban", [("both", "", ""), ("none", "nothing_banned", "BOS and the pad token are not banned")]),
    ("slots", [("live", "", ""), ("step", "finished_take_a_slot", "a hypothesis that finishes (EOS) takes one of "
                                                                  "the beam_width places of that step, so fewer live "
                                                                  "hypotheses go on: keep beam_width live (non-EOS) "
                                                                  "candidates, the finished ones set aside"),
               ("shrink", "beam_shrinks", "the beam shrinks by one for every finished hypothesis (beam_width minus "
                                          "the number finished): keep beam_width live (non-EOS) candidates at every "
                                          "step, the finished ones set aside")]),
], "score(y) = (sum of log p(y_t)) / len(y)^alpha with len(y) counting EOS; finished hypotheses first, best first."))


BEAM_SEARCH = Exercise("9.3", "beam_search", points=3, reference=decoding.beam_search, sizes={"src": "n"},
                       reads=("bos_id", "eos_id", "beam_width", "max_len", "alpha"))


@BEAM_SEARCH.checked_by
def check_beam_search(beam_search=None, *, points=None, hidden=False):
    """Length-normalised beam search; a list of (tokens, score), best first."""
    c = Checker(BEAM_SEARCH, points, hidden)
    fn = c.find(beam_search, "beam_search")
    cases = beam_cases()
    catalog = CATALOG["beam_search"]
    forbidden = [decoding.beam_search, decoding.greedy_decode]
    ref = decoding.beam_search
    best = dict(catalog=catalog, forbidden=forbidden, postprocess=_best, names=("best tokens", "best score"),
                probes=BEAM_PROBES)
    every = dict(catalog=catalog, forbidden=forbidden, postprocess=_every, probes=BEAM_PROBES,
                 names=("the hypotheses, best first (one row each, -1 after the end)", "their scores"))
    c.check_cases("the worked example of section 9.4, traced by hand", fn, ref, cases["worked"], **every)
    c.check_cases("beam_width=1: the best hypothesis is the greedy output", fn, ref, cases["width1"], **best)
    c.check_cases("the best hypothesis and its normalised score", fn, ref, cases["wide"], **best)
    c.check_cases("every returned hypothesis, in order, with its score", fn, ref, cases["wide"], **every)
    return c.result()


# -- Exercise 9.4 ---------------------------------------------------------------------------------------
def _steps(decode_step):
    """Feed `tokens[:, t]` one step at a time into a fresh cache; collect what the checks compare."""
    def run(seed, src_lengths, n_steps, n_layers=1, vocab_size=9, d_model=8, n_heads=2, single=False, eps=1e-6):
        model = decoding_model(seed, vocab_size=vocab_size, d_model=d_model, n_heads=n_heads, n_layers=n_layers, eps=eps)
        src = source_batch(seed + 1, src_lengths, vocab_size=vocab_size)
        tokens = np.concatenate([np.full((len(src_lengths), 1), BOS),
                                 generator(seed + 2).integers(3, vocab_size, size=(len(src_lengths), n_steps - 1))], axis=1)
        if single:
            src, tokens = src[0], tokens[0]
        H_enc, src_mask = model.encode(src)
        cache = decoding.KVCache(model, H_enc, src_mask)
        logits, rows = [], []
        for t in range(n_steps):
            out = decode_step(model, tokens[..., t], cache)
            if out is None:
                raise TypeError("decode_step returned None (did you forget `return`?)")
            logits.append(np.asarray(out))
            k = cache.self_k[0]
            rows.append(-1 if k is None else np.shape(k)[-2])
        shapes = {np.shape(x) for x in logits}
        stacked = np.stack(logits, axis=-2) if len(shapes) == 1 else np.array([np.nan])
        return stacked, np.array(rows), np.array(cache.length)
    return run


def decode_step_cases():
    return {
        "one": [Case("one source (n=4), 3 steps", (41, [4], 3, 1, 9, 8, 2, True)),
                Case("one source (n=6), 5 steps, two layers", (42, [6], 5, 2, 11, 12, 3, True), hidden=True)],
        "batch": [Case("a batch of 2 sources (lengths 5 and 2, padded), 4 steps, V=11, d_model=12, 3 heads, "
                       "eps=0.05 (model.config.eps)", (43, [5, 2], 4, 1, 11, 12, 3, False, 0.05)),
                  Case("a batch of 3 padded sources, 6 steps, two layers", (44, [3, 6, 1], 6, 2, 11, 12, 4),
                       hidden=True)],
    }


def _decode_step_knobbed(k):
    """decode_step with knobs: position ("length", "zero", "ahead": length + 1), cache ("extend";
    "own": attends only to the new row, though it is appended), cross_norm (False: the cross-attention
    query not normalised), cross_mask (False: src_mask not passed), final_norm (False), advance (False:
    cache.length not advanced)."""
    def step(model, tokens, cache):
        offset = {"length": cache.length, "zero": 0, "ahead": cache.length + 1}[k.get("position", "length")]
        x = model.embed(np.asarray(tokens)[..., None], offset=offset)
        for i, block in enumerate(model.decoder):
            normed = rms_norm(x, block.norm1_gamma, block.eps)
            self_norm = k.get("self_norm", "both")
            K_new, V_new = block.self_attn.project_kv(normed if self_norm == "both" else x)
            K, V = cache.append(i, K_new, V_new)
            if k.get("cache", "extend") == "own":
                K, V = K_new, V_new
            out, _ = block.self_attn.attend(x if self_norm == "none" else normed, K, V)
            x = x + out
            q = rms_norm(x, block.norm2_gamma, block.eps) if k.get("cross_norm", True) else x
            out, _ = block.cross_attn.attend(q, cache.cross_k[i], cache.cross_v[i],
                                             cache.src_mask if k.get("cross_mask", True) else None)
            x = x + out
            x = x + block.ffn(rms_norm(x, block.norm3_gamma, block.eps))
        if k.get("advance", True):
            cache.length += 1
        h = rms_norm(x, model.decoder_norm_gamma, model.config.eps) if k.get("final_norm", True) else x
        return (h @ model.embedding.T)[..., 0, :]
    return step


class _CacheNotExtended(Property):
    """The rows of the self-attention cache after each step (the second output of _steps) must grow by one
    per step (1, 2, 3, ...): rows that stay put (or a cache never written, -1) mean the new keys and values
    were not stored in it, whatever the step attended to."""

    kind = "cache"

    def inspect(self, attempt, probes):
        got, expected = attempt.got, attempt.expected
        if not (isinstance(got, tuple) and len(got) == 3 and isinstance(expected, tuple)):
            return None
        rows, right = np.asarray(got[1]).ravel(), np.asarray(expected[1]).ravel()
        if rows.shape != right.shape or rows.size < 2 or np.array_equal(rows, right):
            return None
        if not np.all(np.diff(right) == 1) or np.all(np.diff(rows) >= 1):
            return None
        return self.finding(attempt, "not_extended", (
            "the self-attention cache is not extended: after each step cache.self_k[i] (and self_v[i]) must hold "
            "one more row, the new token's keys and values, so that the next step attends to every token so far. "
            "Store the concatenation back in the cache (K, V = cache.append(i, K_new, V_new)), not in a local "
            "variable only."), f"rows in the cache after each step: {rows.tolist()} (expected {right.tolist()}).")


def _decode_step_model(k, *args):
    return _steps(_decode_step_knobbed(k))(*args)


DECODE_STEP_PROBES = Probes(_decode_step_model, Combos("decode_step", [
    ("position", [("length", "", ""), ("zero", "position_zero", "the new token is embedded at position 0 every step, not "
                                                                "at position cache.length"),
                  ("ahead", "position_ahead", "the new token is embedded one position ahead (cache.length + 1)")]),
    ("self_norm", [("both", "", ""),
                   ("kv_raw", "kv_from_unnormalised", "the new keys and values are projected from x, not from "
                                                      "rms_norm(x, norm1_gamma): the query and the cached keys and "
                                                      "values all come from the normalised x"),
                   ("none", "self_attention_unnormalised", "self-attention reads x itself: norm1_gamma's RMSNorm is "
                                                           "missing before it (query, keys and values)")]),
    ("cache", [("extend", "", ""), ("own", "attends_to_itself_only", "self-attention reads only the new token's own key "
                                                                     "and value, not the whole cache")]),
    ("cross_norm", [(True, "", ""), (False, "cross_query_not_normalised", "the cross-attention query is not normalised "
                                                                          "(norm2_gamma)")]),
    ("cross_mask", [(True, "", ""), (False, "source_padding_visible", "cross-attention gets no src_mask, so the source pads "
                                                                     "are visible")]),
    ("final_norm", [(True, "", ""), (False, "no_final_norm", "the final RMSNorm (decoder_norm_gamma) is missing")]),
    ("advance", [(True, "", ""), (False, "length_not_advanced", "cache.length is not advanced after the step")]),
], "One step: embed at position cache.length, in each block append the new K, V row and attend over the whole cache, "
   "cross-attend with src_mask; final norm, head; then cache.length += 1."), _CacheNotExtended())


DECODE_STEP = Exercise("9.4", "decode_step", points=3, reference=decoding.decode_step,
                       sizes={"vocab_size": "V", "d_model": "d_model", "n_heads": "h"}, reads=("model.config.eps",))


@DECODE_STEP.checked_by
def check_decode_step(decode_step=None, *, points=None, hidden=False):
    """One cached decoder step; logits (..., V) for the new token, the cache one row longer."""
    c = Checker(DECODE_STEP, points, hidden)
    fn = c.find(decode_step, "decode_step")
    cases = decode_step_cases()
    catalog = wrapped(CATALOG["decode_step"], _steps)
    common = dict(catalog=catalog, forbidden=[decoding.decode_step, decoding.greedy_decode], probes=DECODE_STEP_PROBES,
                  names=("the logits of every step, stacked (..., steps, V)",
                         "rows in the self-attention cache after each step", "cache.length at the end"))
    ref = _steps(decoding.decode_step)
    c.check_cases("one source sequence, step by step", _steps(fn), ref, cases["one"], **common)
    c.check_cases("a padded batch, step by step", _steps(fn), ref, cases["batch"], **common)
    return c.result()


# -- Exercise 9.5 ---------------------------------------------------------------------------------------
class _WatchedAttention(MultiHeadAttention):
    """Counts the rows projected to keys and values, and every read of W_k."""

    @property
    def W_k(self):
        self.__dict__["k_reads"] = self.__dict__.get("k_reads", 0) + 1
        return self.__dict__["W_k"]

    @W_k.setter
    def W_k(self, value):
        self.__dict__["W_k"] = value

    def project_kv(self, key_value_input):
        kv = np.asarray(key_value_input)
        self.__dict__["kv_rows"] = self.__dict__.get("kv_rows", 0) + int(np.prod(kv.shape[:-1]))
        return super().project_kv(key_value_input)


class _WatchedModel(Seq2Seq):
    """Counts full decoder passes (decode, or the whole model called)."""

    def decode(self, *args, **kwargs):
        self.__dict__["full_passes"] = self.__dict__.get("full_passes", 0) + 1
        return super().decode(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        self.__dict__["full_passes"] = self.__dict__.get("full_passes", 0) + 1
        return super().__call__(*args, **kwargs)


def _watched(model):
    """A copy of `model` whose decoder reports how it is used."""
    copy = _WatchedModel(model.config, rng=0)
    copy.load_parameters(model.parameters())
    for block in copy.decoder:
        for name in ("self_attn", "cross_attn"):
            getattr(block, name).__class__ = _WatchedAttention
    return copy


def _reference_cached(model, src, bos_id, eos_id, max_len):
    return decoding.greedy_decode(model, src, bos_id, eos_id, max_len, use_cache=True)


def cached_cases():
    other, other_src = other_ids_model(256, scripted=False)
    wild = wild_model(55)
    wild2 = wild_model(56, vocab_size=11, d_model=12, n_heads=3, n_layers=2)
    likes_specials = wild_model(61)
    likes_specials.embedding[[PAD, BOS]] *= 2.0
    return {
        "one": [Case("one source (n=4), a random model, max_len=6", (wild, source_batch(1, [4])[0], BOS, EOS, 6)),
                Case("one source, the briefly trained reverser (it stops at EOS)",
                     (trained_reverser(), source_batch(2, [3])[0], BOS, EOS, 8)),
                Case("one source, two layers each side, max_len=9", (wild2, source_batch(3, [5], vocab_size=11)[0], BOS, EOS, 9),
                     hidden=True)],
        "batch": [Case("a batch of 3 padded sources, the briefly trained reverser",
                       (trained_reverser(), source_batch(4, [2, 5, 3]), BOS, EOS, 8)),
                  Case("a batch of 2 sources, a random model that favours BOS and pad (both must be banned)",
                       (likes_specials, source_batch(8, [4, 3]), BOS, EOS, 6)),
                  Case("a model whose pad id is 3 (model.config.pad_id), with <bos> 4 and <eos> 5: 3 padded sources",
                       (other, other_src, 4, 5, 8)),
                  Case("a batch of 4 sources, two layers each side", (wild2, source_batch(6, [2, 6, 4, 1], vocab_size=11), BOS, EOS, 7),
                       hidden=True)],
    }


CACHED_GREEDY_DECODE = Exercise("9.5", "cached_greedy_decode", points=2, reference=decoding.greedy_decode,
                                sizes={"src": "... n"}, reads=("bos_id", "eos_id", "max_len", "model.config.pad_id"))


@CACHED_GREEDY_DECODE.checked_by
def check_cached_greedy_decode(cached_greedy_decode=None, *, points=None, hidden=False):
    """Greedy decoding with a KV cache; exactly the tokens of greedy decoding.

    Your `decode_step` and `KVCache` are replaced by the reference while this runs, so a mistake in
    Exercise 9.4 is not charged again here.
    """
    c = Checker(CACHED_GREEDY_DECODE, points, hidden)
    fn = c.find(cached_greedy_decode, "cached_greedy_decode")
    fn = rebind(fn, decode_step=decoding.decode_step, KVCache=decoding.KVCache)
    cases = cached_cases()
    common = dict(catalog=CATALOG["cached_greedy_decode"], forbidden=[decoding.greedy_decode], probes=GREEDY_PROBES)
    c.check_cases("one source: the same tokens as greedy decoding", fn, _reference_cached, cases["one"], **common)
    c.check_cases("a batch: the same tokens as greedy decoding", fn, _reference_cached, cases["batch"], **common)
    if not c.stopped:
        _check_cache_use(c, fn)
    return c.result()


def _check_cache_use(c, fn):
    """One new token per step through the decoder; a hint when cross-attention K/V are recomputed."""
    model = _watched(decoding_model(53, n_layers=2))
    src = source_batch(7, [4, 2])
    max_len = 6
    out = run_student(fn, (model, src, BOS, EOS, max_len), {}, [decoding.greedy_decode])
    if out.error is not None:
        return c.part("decodes with the cache: one new token per step", False,
                      f"[a batch of 2 sources, max_len={max_len}] {c._explain_error(out)}")
    steps = np.shape(out.value)[-1] if np.ndim(out.value) else max_len
    B = src.shape[0]
    full = model.__dict__.get("full_passes", 0)
    self_rows = max(b.self_attn.__dict__.get("kv_rows", 0) for b in model.decoder)
    if full:
        return c.part("decodes with the cache: one new token per step", False,
                      f"your code runs the whole decoder over the prefix ({full} calls of model.decode or "
                      "model(...)): that is decoding without a cache. Feed only the newest token through "
                      "decode_step(model, tokens, cache).")
    if self_rows > B * (steps + 1):
        return c.part("decodes with the cache: one new token per step", False,
                      f"the self-attention keys and values were computed for {self_rows} positions per block "
                      f"while generating {steps} tokens for {B} sequences ({B * steps} would do): each step "
                      "must feed only the newest token; the cache keeps the rest.")
    c.part("decodes with the cache: one new token per step", True)
    k_reads = max(b.cross_attn.__dict__.get("k_reads", 0) for b in model.decoder)
    if k_reads > B and k_reads >= steps:
        c.note(f"speed hint (no points lost): cross-attention's W_k was used {k_reads} times per block while "
               f"generating {steps} tokens. The encoder output H_enc does not change during decoding, so its "
               "keys and values can be computed once, before the first step (KVCache does this), and reused: "
               "recomputing them at every step gives the same tokens, only slower.")


# -- Exercise 9.6 ---------------------------------------------------------------------------------------
CACHED_STEP_ORDER = Ordering(
    "9.6", "one decoding step with a KV cache, in order", "cached_step_order", points=1,
    steps=[
        Step("embed the newest token at position t, the number of tokens already cached",
             "Every step starts from the one token just generated: nothing can be computed for it before it "
             "is embedded at its position."),
        Step("normalise it, project it to one new row of keys and values, and append that row to the "
             "self-attention cache",
             "The new row of keys and values is computed from the newly embedded token, so the embedding "
             "must come first."),
        Step("self-attention: the new token's query attends over all cached keys and values, plus the residual",
             "The query must see its own key and value too, so the new row (made from the embedded token) "
             "has to be in the cache before self-attention runs."),
        Step("cross-attention: the query attends over the encoder's keys and values, computed once "
             "before the first step, plus the residual",
             "Cross-attention's query is the output of the self-attention sublayer, so self-attention, and "
             "everything before it, must have run."),
        Step("feed-forward network, plus the residual",
             "The feed-forward sublayer is the last of the block and reads what cross-attention wrote."),
        Step("final RMSNorm and the tied output head: logits for the next token",
             "The output head reads the last block's output, so every sublayer of every block must have run first."),
        Step("choose the next token (argmax or a sample) and stop if it is EOS",
             "A token can only be chosen from the logits, so the output head (and everything before it) must "
             "have produced them."),
    ],
    shown=[4, 1, 6, 3, 0, 5, 2],
)


@CACHED_STEP_ORDER.checked_by
def check_cached_step_order(cached_step_order=None, *, points=None):
    """All or nothing."""
    return CACHED_STEP_ORDER.check(cached_step_order, points)


EXERCISES = [GREEDY_DECODE, SAMPLE_NEXT_TOKEN, BEAM_SEARCH, DECODE_STEP, CACHED_GREEDY_DECODE]
ORDERINGS = [CACHED_STEP_ORDER]


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 9.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(9, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
