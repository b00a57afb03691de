"""A catalog mistake that fits one part of an answer by coincidence is withdrawn when a later part of the same
answer shows that the answer does something else.

A beam search that lets an <eos> of rank beam_width finish (`rank <= beam_width`) returns the same best
hypothesis, on one case, as a search that stops at the first <eos>; the part that compares every hypothesis shows
that it does not stop there. The student must not be told that the search stops at the first <eos>. So with a
sampler's draws: a catalog mistake must draw like the answer on every case where the answer's draws do not fit."""
import contextlib
import io

import numpy as np
import pytest

from encdec.checks.lesson09 import check_beam_search
from encdec.loss import log_softmax
from encdec.mistakes import CATALOG

pytestmark = pytest.mark.lesson09


def beam_search(model, src, bos_id, eos_id, beam_width, max_len, alpha=1.0):
    pad = model.config.pad_id
    H_enc, src_mask = model.encode(np.asarray(src)[None])

    def normalised(hyp):
        tokens, total = hyp
        return total / len(tokens) ** alpha

    beam = [((), 0.0)]           # live hypotheses: (tokens, total log-probability)
    done = []                    # finished ones
    step = 0
    while step < max_len and beam and len(done) < beam_width:
        step += 1
        prefixes = np.array([(bos_id,) + tokens for tokens, _ in beam])
        logits = model.decode(prefixes, H_enc, src_mask)[:, -1].copy()
        logits[:, [pad, bos_id]] = -np.inf
        totals = np.array([total for _, total in beam])[:, None] + log_softmax(logits, axis=-1)
        V = totals.shape[1]
        ranked = np.argsort(-totals.ravel(), kind="stable")
        next_beam = []
        for rank, flat in enumerate(ranked):
            parent, token = divmod(int(flat), V)
            total = float(totals[parent, token])
            if not np.isfinite(total):
                break                                 # only banned tokens are left
            hyp = (beam[parent][0] + (token,), total)
            if token == eos_id:
                if rank <= beam_width:
                    done.append(hyp)                  # finishes, takes no slot
            else:
                next_beam.append(hyp)
                if len(next_beam) == beam_width:
                    break
        beam = next_beam
    results = sorted(done, key=normalised, reverse=True)[:beam_width]
    results += sorted(beam, key=normalised, reverse=True)[: beam_width - len(results)]
    return [(np.array(tokens), normalised((tokens, total))) for tokens, total in results]


def test_a_coincidence_of_one_part_is_not_named_when_a_later_part_disagrees():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = check_beam_search(beam_search, hidden=True)
    text = out.getvalue()
    stops = next(m for m in CATALOG["beam_search"] if m.key == "stops_at_first_finished")
    assert score < 3, text
    assert "best tokens: shape: expected (6,), got (5,)" in text, text  # the part the coincidence fitted
    assert stops.diagnosis not in text, text


def sample_with_probabilities_divided(logits, temperature=1.0, top_k=None, top_p=None, rng=None):
    """The temperature divides the probabilities, which the renormalisation undoes: it has no effect."""
    logits = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return np.argmax(logits, axis=-1)
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = z / z.sum(axis=-1, keepdims=True) / temperature
    if top_k is not None:
        kth = np.sort(p, axis=-1)[..., -top_k][..., None]
        p = np.where(p >= kth, p, 0.0)
    p = p / p.sum(axis=-1, keepdims=True)
    if top_p is not None:
        order = np.argsort(-p, axis=-1, kind="stable")
        ranked = np.take_along_axis(p, order, axis=-1)
        before = np.cumsum(ranked, axis=-1) - ranked
        keep = np.zeros_like(p, dtype=bool)
        np.put_along_axis(keep, order, before < top_p, axis=-1)
        p = np.where(keep, p, 0.0)
        p = p / p.sum(axis=-1, keepdims=True)
    u = rng.random(p.shape[:-1])[..., None]
    return np.minimum((np.cumsum(p, axis=-1) <= u).sum(axis=-1), p.shape[-1] - 1)


def test_a_sampling_mistake_that_draws_alike_on_one_case_only_is_not_named():
    from encdec.checks.lesson09 import check_sample_next_token
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = check_sample_next_token(sample_with_probabilities_divided, hidden=True)
    text = out.getvalue()
    multiplied = next(m for m in CATALOG["sample_next_token"] if m.key == "temperature_multiplies")
    assert score < 3, text
    assert "the temperature has no effect on the draws" in text, text
    assert multiplied.diagnosis not in text, text
