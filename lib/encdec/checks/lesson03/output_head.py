"""Exercise 3.4, output_logits (the tied output head): its probes (a scaled product) and the checker."""

import numpy as np

from ...mistakes import CATALOG
from ..cases import Case
from ..core import Checker
from ..exercises import Exercise
from ..fixtures import generator
from ..probes import NotFinite, Probes, Scale
from ..rebinding import rebind
from .references import EARLIER, REF_OUTPUT_LOGITS, output_logits


def _logit_scales(h, E):
    d_model = np.shape(E)[-1]
    return [("1", 1.0, None),
            ("1/sqrt(d_model)", 1.0 / np.sqrt(d_model), "the logits are divided by sqrt(d_model). The output head "
             "is the plain product h @ E.T, with no scaling."),
            ("sqrt(d_model)", np.sqrt(d_model), "the logits are multiplied by sqrt(d_model). The output head is "
             "the plain product h @ E.T, with no scaling."),
            ("1/d_model", 1.0 / d_model, "the logits are divided by d_model. The output head is the plain "
             "product h @ E.T, with no scaling.")]


OUTPUT_LOGITS_PROBES = Probes(lambda k, h, E: output_logits(h, E) * k.get("scale", 1.0),
                              Scale(_logit_scales, what="the logits"), NotFinite())


OUTPUT_LOGITS = Exercise("3.4", "output_logits", points=2, reference=REF_OUTPUT_LOGITS,
                         sizes={"h": "... m d_model", "E": "V d_model"})


@OUTPUT_LOGITS.checked_by
def check_output_logits(output_logits=None, *, points=None, hidden=False):
    """logits = h @ E.T, shape (..., m, V)."""
    c = Checker(OUTPUT_LOGITS, points, hidden)
    fn = c.find(output_logits, "output_logits")
    fn = rebind(fn, **EARLIER)
    r = generator(34)
    ref = REF_OUTPUT_LOGITS
    common = dict(catalog=CATALOG["output_logits"], forbidden=[ref], probes=OUTPUT_LOGITS_PROBES)
    c.check_cases("one sequence: (m, d_model) -> (m, V)", fn, ref,
                  [Case("h (4, 8), E (11, 8): m=4, d_model=8, V=11", (r.normal(size=(4, 8)), r.normal(size=(11, 8)))),
                   Case("one position, h (1, 6), E (9, 6)", (r.normal(size=(1, 6)), r.normal(size=(9, 6))), hidden=True)],
                  **common)
    c.check_cases("leading batch dimensions and float32", fn, ref,
                  [Case("h (2, 3, 8), E (13, 8)", (r.normal(size=(2, 3, 8)), r.normal(size=(13, 8)))),
                   Case("float32 h (3, 6) and E (10, 6)",
                        (r.normal(size=(3, 6)).astype(np.float32), r.normal(size=(10, 6)).astype(np.float32)), float32=True),
                   Case("leading shape (2, 2), h (2, 2, 3, 4), E (7, 4)",
                        (r.normal(size=(2, 2, 3, 4)), r.normal(size=(7, 4))), hidden=True),
                   Case("large states (about 1e3) and near-zero embeddings (about 1e-4)",
                        (r.normal(size=(3, 5)) * 1e3, r.normal(size=(6, 5)) * 1e-4), hidden=True)],
                  **common)
    return c.result()
