"""The judging order, written in one place: which causes of a failed case are looked for, and in what
order. The first that names one wins; none of them changes the score.

1. the catalog (encdec.mistakes): a known wrong implementation whose output (or error) is the answer's
   (core.diagnose and core.diagnose_error, run by the checker before anything here);
2. the exercise's own probes, in the order it declares them (exact variants first, properties last);
3. the error probes (shapes.ERROR_PROBES), always on: a failed operation's arrays and step;
4. the tracer (divergence.locate, called by the checker last): the first line of the answer whose value
   leaves the right computation, when the answer returned a wrong value and nothing above named why.
"""

from .base import NO_PROBES
from .shapes import ERROR_PROBES


def find_slip(probes, attempt):
    """What kind of slip `attempt` makes, by the declared probes, then the always-on error probes."""
    probes = probes or NO_PROBES
    for probe in [*probes.probes, *ERROR_PROBES]:
        finding = probe.safe_find(attempt, probes)
        if finding is not None:
            return finding
    return None
