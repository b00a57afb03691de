"""Exercise 9.1, greedy_decode: its cases, the knob model of greedy decoding's slips (greedy_model and
GREEDY_CHOICES, which Lesson 10's cached decoding uses too; GREEDY_PROBES, which 9.5 uses too) and the
checker."""

import numpy as np

from ... import decoding
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import BOS, EOS, source_batch
from ..probes import Combos, DecodedRows, Probes
from .behind_the_ban import behind_the_ban
from .models import ScriptedReverser, decoding_model, other_ids_model, trained_reverser


def _reference_greedy(model, src, bos_id, eos_id, max_len):
    return decoding.greedy_decode(model, src, bos_id, eos_id, max_len, use_cache=False)


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
    behind_the_ban(c, fn, cases.values(), _reference_greedy, **common)
    return c.result()
