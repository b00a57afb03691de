"""A catalog mistake that fits one part of an answer by coincidence is withdrawn when a later part of the same
answer shows that the answer does something else.

A beam search that lets an <eos> of rank beam_width finish (`rank <= beam_width`) returns the same best
hypothesis, on one case, as a search that stops at the first <eos>; the part that compares every hypothesis shows
that it does not stop there. The student must not be told that the search stops at the first <eos>."""
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
