"""The judging order, written in one place: which causes of a failed case are looked for, and in what
order. The first that names one wins; none of them changes the score.

1. the catalog (encdec.mistakes): a known wrong implementation whose output (or error) is the answer's
   (core.diagnose and core.diagnose_error, run by the checker before anything here), after a setting lost on
   its way in (setting_slip, below: the catalog names its effect, it the code);
2. an output whose shape says that pieces were joined along the wrong axis (shapes.joined): the repair,
   else that, before anything that reads the output's values (rows summing to 3 are that slip's effect);
   otherwise what the returned value alone says (results.RESULT_PROBES: the right results in another
   order, the right numbers in another shape, an integer array where the answer has fractions; loop_results.LOOP_RESULT_PROBES: a loop's last pass
   returned where every pass's value belongs), then a
   setting lost on its way in (settings.SETTING_PROBES: `if pad_id:` where pad_id is 0, a notebook's `PAD`
   where the case gives model.config.pad_id), then the exercise's own probes, in the order it declares them (exact variants first, properties last), with a
   helper's list default that earlier calls fill (defaults.DEFAULT_PROBES), a
   parameter the answer never reads, where the right result needs it, or an attribute the course's own method
   reads and the answer's never does (unread.UNREAD_PROBES), a mask
   applied after the softmax (masking.MASKING_PROBES), a log of a softmax's output that gives -inf and an
   np.exp that overflows (stability.STABILITY_PROBES), an array flattened by np.insert given no axis
   (flattening.FLATTENING_PROBES), and the repair's few targeted edits, tried on their own where the source has
   their pattern (a cache read before the step's row is appended: targeted.TARGETED_PROBES),
   tried
   before the first probe that is not `exact` (a property of the output, which names only an effect:
   positions that read later ones, where cross-attention was given no encoder output), except
   those that name a symptom rather than a cause (`symptom`: nan or inf in the output), tried after 4;
   a finding marked `weak` (a fitted factor, or the right array reduced over an axis, which says what is
   off but not where) is given only when the repair (4) finds no edit;
3. an error read from the failing line, always on: an index with too many axes, a slice given a value of
   another length, None or a tuple used as an array (failed_lines.FAILED_LINE_PROBES), then errors whose
   message is NumPy's or PyTorch's (library_errors.LIBRARY_ERROR_PROBES: -inf into an integer array, einsum
   without `...`, cross_entropy's class axis): each names its
   cause, where an edit that happens to mend the part's cases (dropping `+ mask` where every case's mask
   is None) would not;
4. the repair (repair.py), always on: the one small edit of the answer's own code that makes it right on
   every case of the part; then a failed operation's arrays and step (shapes.ERROR_PROBES);
5. the tracer (divergence.locate, called by the checker last): the first line of the answer whose value
   leaves the right computation, when the answer returned a wrong value and nothing above named why.
"""

from .base import NO_PROBES, Finding
from .failed_lines import FAILED_LINE_PROBES
from .flattening import FLATTENING_PROBES
from .library_errors import LIBRARY_ERROR_PROBES
from .loop_results import LOOP_RESULT_PROBES
from .masking import MASKING_PROBES
from .repair import Repair
from .results import RESULT_PROBES
from .shape_reasons import explain_shape, joined
from .stability import STABILITY_PROBES
from .targeted import TARGETED_PROBES
from .settings import SETTING_PROBES
from .shapes import ERROR_PROBES
from .unread import UNREAD_PROBES
from .defaults import DEFAULT_PROBES

REPAIR = Repair()


def find_slip(probes, attempt):
    """What kind of slip `attempt` makes, by the declared probes, then the always-on repair and error probes."""
    probes = probes or NO_PROBES
    wrong_axis = _joined(attempt)
    if wrong_axis is not None:
        return REPAIR.safe_find(attempt, probes) or wrong_axis
    for probe in [*RESULT_PROBES, *LOOP_RESULT_PROBES]:
        finding = probe.safe_find(attempt, probes)
        if finding is not None:
            return REPAIR.safe_find(attempt, probes) or finding if finding.weak else finding
    causes = [probe for probe in probes.probes if not probe.symptom]
    first_effect = next((k for k, probe in enumerate(causes) if not probe.exact), len(causes))
    causes[first_effect:first_effect] = [*DEFAULT_PROBES, *UNREAD_PROBES, *MASKING_PROBES, *STABILITY_PROBES,
                                         *FLATTENING_PROBES, *TARGETED_PROBES]
    causes[:0] = SETTING_PROBES
    symptoms = [probe for probe in probes.probes if probe.symptom]
    for probe in [*causes, *FAILED_LINE_PROBES, *LIBRARY_ERROR_PROBES, REPAIR, *symptoms, *ERROR_PROBES]:
        finding = probe.safe_find(attempt, probes)
        if finding is not None:
            if finding.weak and probe is not REPAIR:  # a fitted factor: the line, where one edit mends it
                return REPAIR.safe_find(attempt, probes) or finding
            return finding
    return None


def setting_slip(attempt):
    """A setting lost on its way in (settings.py), looked for before the catalog too: a catalog entry names the
    effect (the pads counted as targets), this the code that has it (`if pad_id:` with pad_id 0)."""
    for probe in SETTING_PROBES:
        finding = probe.safe_find(attempt, NO_PROBES)
        if finding is not None:
            return finding
    return None


def _joined(attempt):
    """A Finding when the answer's output (or a part of it) has the pieces-joined-along-the-wrong-axis shape."""
    if attempt.error is not None:
        return None
    got, expected = attempt.got, attempt.expected
    pairs = list(zip(got, expected)) if isinstance(got, (tuple, list)) and isinstance(expected, tuple) \
        else [(got, expected)]
    for g, e in pairs:
        gs, es = getattr(g, "shape", None), getattr(e, "shape", None)
        if gs is not None and es is not None and joined(tuple(gs), tuple(es)) is not None:
            return Finding(attempt.exercise, "probe:shape:joined", explain_shape(tuple(gs), tuple(es), attempt.sizes)
                           + ". Check the axis where the pieces are joined.")
    return None
