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

The modules, one job each (the test cells and the notebooks import everything from this package):

    models           the models the checks decode with, and the worked example of section 9.4
    greedy           Exercise 9.1, greedy_decode (and greedy decoding's knob model)
    behind_the_ban   9.1's second look: a slip hidden behind a missing ban of <bos> and <pad>
    sampling_draws   Exercise 9.2's cases and the statistics of random draws
    sampling_slips   Exercise 9.2's diagnoses: the catalog mistake, else the kind of slip, the draws fit
    sampling         Exercise 9.2, sample_next_token
    beam_search      Exercise 9.3, beam_search
    decode_step      Exercise 9.4, decode_step
    cached_decoding  Exercise 9.5, cached_greedy_decode
    step_order       Exercise 9.6, one cached decoding step in order
"""

from ...mistakes import lesson09 as _register  # noqa: F401  (fills the catalog)
# What the notebooks, the tests, the tools and Lesson 10's checks read from encdec.checks.lesson09, re-exported:
from .beam_search import BEAM_PROBES, BEAM_SEARCH, _every, beam_cases, beam_model, check_beam_search  # noqa: F401
from .cached_decoding import CACHED_GREEDY_DECODE, cached_cases, check_cached_greedy_decode  # noqa: F401
from .decode_step import (DECODE_STEP, DECODE_STEP_PROBES, _decode_step_knobbed, _steps,  # noqa: F401
                          check_decode_step, decode_step_cases)
from .greedy import (GREEDY_CHOICES, GREEDY_DECODE, GREEDY_PROBES, GREEDY_RIGHT, _reference_greedy,  # noqa: F401
                     check_greedy_decode, greedy_cases, greedy_model)
from .models import (WORKED_EXAMPLE, ScriptedReverser, WorkedExampleModel, decoding_model,  # noqa: F401
                     other_ids_model, trained_reverser, wild_model)
from .sampling import SAMPLE_NEXT_TOKEN, check_sample_next_token  # noqa: F401
from .sampling_draws import LOGITS, N_DRAWS, SamplingCase, sampling_cases  # noqa: F401
from .sampling_slips import (SAMPLING_CHOICES, SAMPLING_RIGHT, UNNORMALISED_CDF, _distribution,  # noqa: F401
                             _sampling_diagnosis, _sampling_probe, _unnormalised_cdf)
from .step_order import CACHED_STEP_ORDER, check_cached_step_order  # noqa: F401

EXERCISES = [GREEDY_DECODE, SAMPLE_NEXT_TOKEN, BEAM_SEARCH, DECODE_STEP, CACHED_GREEDY_DECODE]
ORDERINGS = [CACHED_STEP_ORDER]

for _graded in [*EXERCISES, *ORDERINGS]:  # the test cells import the checkers from this package
    _graded.checker.__module__ = __name__
del _graded


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 9.0, and the one
# numbered after the last exercise above.
from ..concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(9, after=[*EXERCISES, *ORDERINGS])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
