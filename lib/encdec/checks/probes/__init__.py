"""Probes: which *kind* of slip a wrong answer makes, when no catalog entry names it.

A catalog entry (encdec.mistakes) is one wrong implementation someone thought of in advance. A probe
is a kind of slip: a weight used transposed, two parameters swapped, the heads split without the axis
swap, the scores scaled by the wrong factor, a reduction over the wrong axis, another activation, a
missing bias, residual or norm, attention weights that break their own rules... It names what it
found in the student's terms (W_q, norm2_gamma, d_k), whatever else their code looks like.

Each exercise declares the probes that apply to it, in `Probes(model, *probes, ...)` (see
encdec.checks.lesson01 .. lesson05), and hands the declaration to `Checker.check_cases(probes=...)`.
The checker runs them only after a case fails and no catalog entry explains it; the first finding
is printed as the likely cause and recorded like a catalog misconception, under a key
"probe:<kind>:<detail>" (e.g. "probe:transposed:W_q"), once per key. A probe never raises, never
prints, and never costs or gives points.

Two families:

- Variant probes compute the exercise with one part changed and compare with the student's output.
  They need a *model*: the reference written with its parts made variable ("knobs"),
  `model(k, *args, **kwargs)`, where `k` is a `Knobs` (a dict of knob values, plus `k.obj`, the layer
  under test with a probe's parameter changes applied). With no knobs the model must compute the
  reference (tests/test_probes.py checks it on every case). A variant whose output equals the
  reference's on the case is skipped: it is not a slip there. Kinds: Transposed, Swapped, Missing,
  Activation, Axis, Scale, and Variants (any list of knob settings a lesson names).
- Property probes look at the student's own output, or run the student's code again on an edited
  input: RowsSumToOne, MaskedKeysZero, Causal, HeadsCompared, AdditiveMask, NotFinite, Calls (what
  a sublayer received). They need no model.

An answer that raises is matched against the variants that raise the same error, and a shape error
is explained by naming the arrays and the step that failed (`ShapeError`, always on).

The attempt a probe inspects is cases.Attempt: `.case`, `.got`, `.expected`, `.error`, `.float32`,
`.args()` and `.kwargs()` (fresh copies of the case's inputs), `.matches(value)` (the student's output
equals `value`), `.is_expected(value)`, `.rerun(args, kwargs)` (the student's code run safely again).

To add a kind: subclass `Variant` (yield `(detail, diagnosis, Knobs)` from `variants`) or `Property`
(return a `Finding` from `inspect`). Lessons 6-10 declare their own models and probes the same way.

Keys: "probe:<kind>:<detail>", e.g. probe:transposed:W_q, probe:swapped:norm1_gamma:norm2_gamma,
probe:instead:W_k:W_q (W_k used where W_q belongs), probe:heads:split_bare, probe:scale:1/sqrt(n),
probe:axis:-2, probe:missing:b1, probe:masks:causal_to_cross, probe:shape_error:broadcast.

Among an exercise's own probes, before the first that is not `exact` (a property that names an effect), a
parameter the answer never reads where the right result needs it (`unread.py`), and a mask applied after the
softmax (`masking.py`). After them, two always-on
kinds: the repair (`repair.py`, with the edits it tries in `wiring.py`, `edits.py`, `moves.py` and
`arithmetic.py`) finds the one small edit of the answer's own code that makes it right on every
case of the part and names its line ("`/` in place of `//`", "axis=-1 in place of axis=0", "line 7 after
the loop"); the failed-line probes (`failed_lines.py`) explain an index with too many axes, a slice given a
value of another length, None or a tuple used as an array, axes written out for one batch axis, an array
used as a condition. Before them all, what the returned value alone says (`results.py`): the right results
in another order, the right numbers in another shape, an integer array where the answer has fractions.

The package, one module a kind: base (Finding, Knobs, Probes, Probe, Variant, Property, the audit),
variants, properties (attention's rules), behaviour (calls, invariants, decoded rows), combos (named
choices for gradients, training and decoding), constants (fitted numbers), results (what the returned
value alone says), settings (a setting lost on its way in: `if pad_id:` for 0, a notebook's constant), unread (a parameter never read, a numbered attribute whose siblings are, or an attribute the course's own method reads), defaults (a helper's list default that earlier calls fill), masking (a mask applied after the softmax), stability (a log of a softmax's
output), flattening (np.insert given no axis), repair with wiring, size_one_axes (an axis of size 1 inserted or dropped), default_axes (a reduction with no axis, a slice with one index), streams (a value carried from step to step), everywhere (one
edit at every place at once), edits, moves, arithmetic and factors, failed_lines with indexing and failing (the failing line read from an error), shapes (shape errors, and a wrong output
shape explained) with views (the arrays a failing line's expressions hold) and shape_causes (what caused one), tracer and divergence (the first line that goes wrong), and judging.py, the one
place that says in which order the causes of a failure are looked for.

Proof that nothing misfires: inside `audit()` every checker runs its probes on every case it passes
(on the answer's output and on the reference's) and checks its model with no knobs against the
reference (`model_problem`); tests/test_probes.py runs every correct variant of Lessons 1-5 so.
"""

from .base import (Finding, Knobs, NO_PROBES, Probe, Probes, Property, Variant, argument, attribute, audit, auditing,
                   model_problem, quiet, replaced)
from .behaviour import Calls, DecodedRows, Invariant, Proportional
from .combos import Combos, EachOutput, combos
from .constants import Constant, Fitted, name_number
from .judging import find_slip, setting_slip
from .causality import Causal
from .properties import AdditiveMask, HeadsCompared, MaskedKeysZero, NotFinite, RowsSumToOne
from .shape_reasons import explain_shape
from .shapes import ERROR_PROBES, FailedProduct, ShapeError, TorchShapeError
from .divergence import locate
from .variants import ACTIVATIONS, Activation, Axis, Missing, Scale, Swapped, Transposed, Variants

__all__ = ["ACTIVATIONS", "ERROR_PROBES", "NO_PROBES", "Activation", "AdditiveMask", "Axis", "Calls", "Causal",
           "Combos", "Constant", "Fitted", "name_number", "explain_shape", "DecodedRows", "EachOutput", "FailedProduct", "Finding", "HeadsCompared", "Invariant", "Knobs",
           "MaskedKeysZero", "Missing", "NotFinite", "Probe", "Probes", "Property", "Proportional", "RowsSumToOne",
           "Scale", "ShapeError", "Swapped", "TorchShapeError", "Transposed", "Variant", "Variants", "argument",
           "attribute", "audit", "auditing", "combos", "find_slip", "locate", "setting_slip", "model_problem", "quiet", "replaced"]
