"""Exercise 9.3, beam_search: the worked example of section 9.4 first, then random and trained models;
the knob model of beam search's slips (beam_model, BEAM_PROBES) and the checker."""

import numpy as np

from ... import decoding
from ...loss import log_softmax
from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import BOS, EOS, source_batch
from ..probes import Combos, Probes
from .models import ScriptedReverser, WorkedExampleModel, decoding_model, other_ids_model, trained_reverser


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
    its rank), ban ("both", "none"), rank ("score"; "total": the results ordered by their raw total
    log-probability, each returned with its normalised score)."""
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

    rank = normalised if k.get("rank", "score") == "score" else (lambda hyp: hyp[1])
    results = sorted(finished, key=rank, reverse=True)[:beam_width]
    if len(results) < beam_width:
        results += sorted(live, key=rank, reverse=True)[: beam_width - len(results)]
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
    ("rank", [("score", "", ""), ("total", "ranked_by_raw_total", "the hypotheses are ordered by their raw total "
                                                                  "log-probability, not by the normalised score they "
                                                                  "are returned with: sort by score(y), best first")]),
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
