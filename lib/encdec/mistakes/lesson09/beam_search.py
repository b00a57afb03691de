"""Exercise 9.3, beam_search: the mistakes of beam search, most of them one part changed in `_beam`, a
beam search with pluggable parts."""

import numpy as np

from ...loss import log_softmax
from .. import mistake
from .shared import _banned


# -- Exercise 9.3 beam_search ------------------------------------------------------------------------------
def _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=None, add=None, eos_ends=True,
          enough=None, ban_after=False):
    """A beam search with pluggable parts, so each mistake below changes exactly one of them."""
    banned = [model.config.pad_id, bos_id]
    H_enc, src_mask = model.encode(np.asarray(src)[None])
    live, finished = [((), 0.0)], []
    for _ in range(max_len):
        tgt_in = np.array([(bos_id,) + toks for toks, _ in live])
        logits = model.decode(tgt_in, np.broadcast_to(H_enc, (len(live),) + H_enc.shape[1:]), src_mask)[:, -1]
        logp = _banned(log_softmax(logits, axis=-1), banned) if ban_after else log_softmax(_banned(logits, banned), axis=-1)
        total = np.array([s for _, s in live])[:, None] + (logp if add is None else add(logp))
        new_live = []
        for rank, idx in enumerate(np.argsort(-total, axis=None, kind="stable")):
            b, tok = divmod(int(idx), logp.shape[1])
            if not np.isfinite(total[b, tok]):
                break
            toks = live[b][0] + (tok,)
            if tok == eos_id and eos_ends:
                if rank < beam_width:
                    finished.append((toks, float(total[b, tok])))
            else:
                new_live.append((toks, float(total[b, tok])))
            if len(new_live) == beam_width:
                break
        live = new_live
        if len(finished) >= (beam_width if enough is None else enough) or not live:
            break

    def score(hyp):
        toks, s = hyp
        return s / len(toks) ** alpha if final is None else final(toks, s, alpha, eos_id)

    results = sorted(finished, key=score, reverse=True)[:beam_width]
    if len(results) < beam_width:
        results += sorted(live, key=score, reverse=True)[: beam_width - len(results)]
    return [(np.array(toks, dtype=np.int64), score((toks, s))) for toks, s in results]


def _raw_sum(toks, s, alpha, eos_id):
    return s


def _length_without_eos(toks, s, alpha, eos_id):
    n = len(toks) - (1 if toks and toks[-1] == eos_id else 0)
    return s / max(n, 1) ** alpha


def _length_not_powered(toks, s, alpha, eos_id):
    return s / len(toks)


def _probabilities(logp):
    return np.exp(logp)


@mistake("beam_search", "no_length_normalisation",
         "hypotheses are ranked by their total log-probability. Every token adds a log-probability "
         "of at most 0 (negative unless the model is certain), so the total favours short outputs; "
         "rank the finished hypotheses by sum(log p) / len(y)^alpha.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=_raw_sum)


@mistake("beam_search", "length_without_eos",
         "the length used for normalisation leaves out the EOS token. EOS is generated and scored "
         "like any other token, so len(y) counts it.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=_length_without_eos)


@mistake("beam_search", "alpha_ignored",
         "alpha is ignored: the score is divided by len(y), not len(y)^alpha. alpha tunes how much "
         "length is forgiven (0: not at all, 1: a plain mean).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, final=_length_not_powered)


@mistake("beam_search", "eos_does_not_finish",
         "a hypothesis that produced EOS stays in the beam and keeps growing. EOS ends it: move it "
         "to the finished list, and stop once beam_width hypotheses have finished.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, eos_ends=False)


@mistake("beam_search", "probabilities_added",
         "probabilities are added along a hypothesis instead of log-probabilities. The probability "
         "of a sequence is the product of its tokens' probabilities, so its log is the sum of the "
         "log-probabilities: add log_softmax(logits).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, add=_probabilities)


@mistake("beam_search", "stops_at_first_finished",
         "the search stops as soon as one hypothesis produces EOS. A longer hypothesis may still "
         "score better once normalised by its length: keep going until beam_width hypotheses have "
         "finished (or max_len steps have run).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, enough=1)


@mistake("beam_search", "log_probs_before_banning",
         "the log-probabilities are taken before BOS and pad are banned, so they are normalised over "
         "tokens that can never be generated. Set the banned logits to -inf first, then take "
         "log_softmax: the allowed tokens' probabilities then sum to 1.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha, ban_after=True)


@mistake("beam_search", "bos_in_hypotheses",
         "the returned hypotheses start with <bos>. <bos> is only the decoder's first input: return the "
         "generated tokens, as greedy decoding does.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return [(np.concatenate([[bos_id], toks]), score)
            for toks, score in _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha)]


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("beam_search", "length_with_bos",
         "the length that normalises the score counts BOS too (len(y) + 1). BOS is given, not generated: "
         "len(y) counts the generated tokens, EOS included.")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha,
                 final=lambda toks, s, a, e: s / (len(toks) + 1) ** a)


@mistake("beam_search", "square_root_length",
         "the score is divided by sqrt(len(y)) whatever alpha is: the normalisation is len(y)^alpha, with "
         "the alpha passed in (1.0 by default).")
def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):  # noqa: F811
    return _beam(model, src, bos_id, eos_id, beam_width, max_len, alpha,
                 final=lambda toks, s, a, e: s / len(toks) ** 0.5)
