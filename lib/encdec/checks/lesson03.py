"""Checkers for lesson 03, The decoder stack: causal self-attention revisited.

Each exercise is declared (number, title, points) right above its checker; EXERCISES, ORDERINGS and
QUIZZES, at the end, list them. Exercise 3.6 is a quiz of another kind: tag each quantity
[LEARNED], [CONFIG] or [STATE].
"""

from dataclasses import dataclass

import numpy as np

from .. import attention, model
from ..mistakes import CATALOG
from ..mistakes import lesson03 as _register  # noqa: F401  (fills the catalog)
from .cases import Case
from .core import Checker
from .exercises import Exercise
from .fixtures import generator
from .lesson01 import attention_model, score_scales
from .ordering import Ordering, Step
from .probes import (AdditiveMask, Axis, Causal, MaskedKeysZero, Missing, NotFinite, Probes, RowsSumToOne, Scale,
                     Swapped, Transposed)
from .quiz import Quiz, html, mark
from .rebinding import rebind

# Earlier exercises a student's answer may call: each runs as the reference while a later
# exercise is checked, so a mistake is charged once, where it was made.
EARLIER = dict(softmax=attention.softmax, create_causal_mask=attention.create_causal_mask,
               padding_mask=attention.padding_mask)


# -- the references of this lesson's exercises (the library computes them inline) ---------------------
def decoder_mask(tgt_in, pad_id):
    """The decoder self-attention mask: causal plus target padding, (..., 1, m, m)."""
    tgt_in = np.asarray(tgt_in)
    return attention.create_causal_mask(tgt_in.shape[-1]) + attention.padding_mask(tgt_in, pad_id)


def causal_self_attention(x, W_q, W_k, W_v):
    """One head of masked self-attention: (output (..., m, d_v), weights (..., m, m))."""
    Q, K, V = x @ W_q, x @ W_k, x @ W_v
    return attention.scaled_dot_product_attention(Q, K, V, attention.create_causal_mask(np.shape(x)[-2]))


def output_logits(h, E):
    """The tied output head: h (..., m, d_model), E (V, d_model) -> logits (..., m, V)."""
    return np.asarray(h) @ np.asarray(E).T


# the checkers' parameters take these names, so the checkers use these aliases
REF_DECODER_MASK, REF_CAUSAL_SELF_ATTENTION, REF_OUTPUT_LOGITS = decoder_mask, causal_self_attention, output_logits


# -- probes: the kinds of slip each exercise's answer may show (encdec.checks.probes) -------------------------
def _causal_where(idx):
    return f"query {idx[-2]}, key {idx[-1]}"


def _decoder_where(idx):
    lead = ", ".join(str(int(i)) for i in idx[:-3])
    return (f"sequence {lead}, " if lead else "") + f"query {idx[-2]}, key {idx[-1]}"


CAUSAL_MASK_PROBES = Probes(None, AdditiveMask(_causal_where, what="the causal mask"))
DECODER_MASK_PROBES = Probes(None, AdditiveMask(_decoder_where, what="the decoder mask"))


def causal_attention_model(k, x, W_q, W_k, W_v):
    """causal_self_attention with the attention's knobs (scale, axis, without={"mask"})."""
    x = np.asarray(x, dtype=np.float64)
    return attention_model(k, x @ W_q, x @ W_k, x @ W_v, attention.create_causal_mask(np.shape(x)[-2]))


def _projected_scales(x, W_q, W_k, W_v):
    return score_scales(x @ W_q, x @ W_k, x @ W_v)


CAUSAL_ATTENTION_PROBES = Probes(
    causal_attention_model,
    Transposed(), Swapped(),
    Scale(_projected_scales),
    Axis("the softmax", "axis", lambda x, *W: [-2, None],
         labels={-1: "the keys (axis=-1)", -2: "the queries (axis=-2)", None: "the whole array"},
         fix="Each query needs a distribution over the keys it may see: softmax along the last axis."),
    Missing({"mask": ("the causal mask", "Add create_causal_mask(m) to the scores before the softmax.")}),
    NotFinite(),
    Causal(edit=(0,), what="x"),
    RowsSumToOne(weights=lambda v: v[1], what="attention weights", over="the keys"),
    MaskedKeysZero(lambda x, *W: attention.create_causal_mask(np.shape(x)[-2]), weights=lambda v: v[1]),
    params={"W_q": 1, "W_k": 2, "W_v": 3},
    roles={"W_q": "it makes the queries", "W_k": "it makes the keys", "W_v": "it makes the values"})


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


# -- Exercise 3.1 -------------------------------------------------------------------------------------
CREATE_CAUSAL_MASK = Exercise("3.1", "create_causal_mask", points=2, reference=attention.create_causal_mask)


@CREATE_CAUSAL_MASK.checked_by
def check_create_causal_mask(create_causal_mask=None, *, points=None, hidden=False):
    """(seq_len, seq_len), 0.0 on and below the diagonal, -inf above."""
    c = Checker(CREATE_CAUSAL_MASK, points, hidden)
    fn = c.find(create_causal_mask, "create_causal_mask")
    common = dict(catalog=CATALOG["create_causal_mask"], forbidden=[attention.create_causal_mask],
                  probes=CAUSAL_MASK_PROBES)
    ref = attention.create_causal_mask
    c.check_cases("0 on and below the diagonal, -inf above", fn, ref,
                  [Case("seq_len=4", (4,)), Case("seq_len=7", (7,)), Case("seq_len=12", (12,), hidden=True)],
                  **common)
    c.check_cases("the smallest cases", fn, ref,
                  [Case("seq_len=2", (2,)), Case("seq_len=1: a single position sees itself", (1,), hidden=True)],
                  **common)
    return c.result()


# -- Exercise 3.2 -------------------------------------------------------------------------------------
DECODER_MASK = Exercise("3.2", "decoder_mask", points=2, reference=REF_DECODER_MASK, sizes={"tgt_in": "... m"},
                        reads=("pad_id",))


@DECODER_MASK.checked_by
def check_decoder_mask(decoder_mask=None, *, points=None, hidden=False):
    """create_causal_mask(m) + padding_mask(tgt_in, pad_id), shape (..., 1, m, m).

    Your `create_causal_mask` and `padding_mask` run as the reference while this is checked.
    """
    c = Checker(DECODER_MASK, points, hidden)
    fn = c.find(decoder_mask, "decoder_mask")
    fn = rebind(fn, **EARLIER)
    common = dict(catalog=CATALOG["decoder_mask"], forbidden=[REF_DECODER_MASK, model.Seq2Seq.decoder_mask],
                  probes=DECODER_MASK_PROBES)
    ref = REF_DECODER_MASK
    c.check_cases("one target sequence", fn, ref,
                  [Case("[1, 5, 6, 2, 0, 0] with pad_id=0", (np.array([1, 5, 6, 2, 0, 0]), 0)),
                   Case("no padding: [1, 4, 4, 2]", (np.array([1, 4, 4, 2]), 0), hidden=True),
                   Case("a pad between real tokens (sequences packed one after another): [1, 5, 2, 0, 1, 6, 2]",
                        (np.array([1, 5, 2, 0, 1, 6, 2]), 0))], **common)
    c.check_cases("a padded batch: shape (B, 1, m, m)", fn, ref,
                  [Case("2 sequences of length 5", (np.array([[1, 7, 8, 2, 0], [1, 3, 4, 5, 2]]), 0)),
                   Case("leading shape (2, 2), length 4",
                        (np.array([[[1, 2, 0, 0], [1, 5, 6, 2]], [[1, 0, 0, 0], [1, 9, 2, 0]]]), 0), hidden=True)],
                  **common)
    c.check_cases("the pad_id argument", fn, ref,
                  [Case("pad_id=3, where 0 is a real token: [1, 0, 5, 2, 3, 3]", (np.array([1, 0, 5, 2, 3, 3]), 3))],
                  **common)
    return c.result()


# -- Exercise 3.3 -------------------------------------------------------------------------------------
def causal_attention_cases():
    r = generator(33)

    def inputs(lead, m, d_model, d_k, d_v, scale=1.0, dtype=np.float64):
        x = (r.normal(size=lead + (m, d_model)) * scale).astype(dtype)
        W = [(r.normal(size=(d_model, d)) / np.sqrt(d_model)).astype(dtype) for d in (d_k, d_k, d_v)]
        return (x, *W)

    return {
        "one": [Case("x (5, 8), W_q and W_k (8, 4), W_v (8, 3)", inputs((), 5, 8, 4, 3)),
                Case("a single position, x (1, 6)", inputs((), 1, 6, 2, 2), hidden=True)],
        "batched": [Case("a batch, x (2, 6, 8)", inputs((2,), 6, 8, 4, 5)),
                    Case("leading shape (2, 3), x (2, 3, 4, 6)", inputs((2, 3), 4, 6, 3, 2), hidden=True)],
        "robust": [Case("float32 inputs", inputs((), 4, 6, 3, 5, dtype=np.float32), float32=True),
                   Case("large scores (x of size about 10)", inputs((2,), 5, 8, 6, 3, scale=10.0)),
                   Case("near-zero inputs (x of size about 1e-6)", inputs((), 4, 6, 3, 3, scale=1e-6), hidden=True)],
    }


CAUSAL_SELF_ATTENTION = Exercise("3.3", "causal_self_attention", points=3, reference=REF_CAUSAL_SELF_ATTENTION,
                                 sizes={"x": "... m d_model", "W_q": "d_model d_k", "W_v": "d_model d_v"})


@CAUSAL_SELF_ATTENTION.checked_by
def check_causal_self_attention(causal_self_attention=None, *, points=None, hidden=False):
    """Q, K, V = x W_q, x W_k, x W_v; softmax(Q K^T / sqrt(d_k) + causal mask) V.

    Your `softmax` and `create_causal_mask` run as the reference while this is checked.
    """
    c = Checker(CAUSAL_SELF_ATTENTION, points, hidden)
    fn = c.find(causal_self_attention, "causal_self_attention")
    fn = rebind(fn, **EARLIER)
    cases = causal_attention_cases()
    ref = REF_CAUSAL_SELF_ATTENTION
    common = dict(catalog=CATALOG["causal_self_attention"], names=("output", "weights"),
                  forbidden=[ref, attention.scaled_dot_product_attention, attention.cross_attention,
                             attention.MultiHeadAttention.__call__, attention.MultiHeadAttention.attend],
                  probes=CAUSAL_ATTENTION_PROBES)
    c.check_cases("one sequence (m=5, d_model=8, d_k=4, d_v=3)", fn, ref, cases["one"], **common)
    c.check_cases("leading batch dimensions", fn, ref, cases["batched"], **common)
    c.check_cases("float32 and large scores", fn, ref, cases["robust"], robust=True, **common)
    return c.result()


# -- Exercise 3.4 -------------------------------------------------------------------------------------
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


# -- Exercise 3.5 -------------------------------------------------------------------------------------
MASKED_ATTENTION_ORDER = Ordering(
    "3.5", "the steps of masked multi-head self-attention, in order", "masked_attention_order", points=1,
    steps=[
        Step("project the decoder states into queries, keys and values (x @ W_q, x @ W_k, x @ W_v)",
             "Queries, keys and values are made from the decoder states by the projections; every "
             "other step works on them, so the projection comes first."),
        Step("split the queries, keys and values into heads of width d_k",
             "Each head takes its own d_k columns of the projected Q, K and V, so the projection must "
             "come before the split; every step after it runs in each head separately."),
        Step("score every query against every key, in each head: Q @ K.T",
             "Scores compare each head's queries with that head's keys, so the heads must be split "
             "first."),
        Step("scale the scores by 1/sqrt(d_k) and add the causal mask",
             "Scaling and masking change the raw scores, so the scores must exist first, and both must "
             "be done before the softmax. (Between the two, the order does not matter: -inf scaled is "
             "still -inf and 0 scaled is still 0, so they are one step here.)"),
        Step("softmax along the key axis",
             "The softmax must see the scaled, masked scores: exp(-inf) = 0 is what gives every future "
             "position exactly zero weight while the visible weights still sum to 1."),
        Step("take the weighted sum of the values, in each head",
             "The values are mixed with the attention weights, so the softmax must have produced them."),
        Step("merge the heads back into one vector of width d_model per position",
             "Merging puts the heads' outputs side by side, so every head must have finished its "
             "weighted sum first."),
        Step("project the merged vector with W_o",
             "W_o mixes information across heads, so it comes last, once the heads sit side by side "
             "again in one d_model-wide vector."),
    ],
    shown=[4, 7, 1, 6, 0, 2, 5, 3],
)


@MASKED_ATTENTION_ORDER.checked_by
def check_masked_attention_order(masked_attention_order=None, *, points=None):
    """All or nothing."""
    return MASKED_ATTENTION_ORDER.check(masked_attention_order, points)


# -- Exercise 3.6: a quiz, a new kind of check ------------------------------------------------------------
TAGS = ("LEARNED", "CONFIG", "STATE")
MEANING = {
    "LEARNED": "a parameter: set by the optimiser, one step at a time, to lower the loss, and saved with the model",
    "CONFIG": "set by a person before the run, or by a fixed formula of other CONFIG values: the same for every "
              "input, and never changed by the optimiser",
    "STATE": "computed by the running program from the inputs (or from the training so far); it lives for one "
             "forward pass, one decoding run or a whole training run",
}


@dataclass(frozen=True)
class Item:
    text: str
    tag: str  # one of TAGS
    why: str  # why this item carries its tag, in the student's words


class TagQuiz(Quiz):
    """Tag each quantity [LEARNED], [CONFIG] or [STATE]. The graded answer is a dict from the item
    numbers the notebook shows to tags, e.g. `quantity_tags = {1: LEARNED, 2: CONFIG, ...}`; every
    item is worth the same share of the points, and every wrong item gets its own explanation."""

    def __init__(self, number, title, name, *, points, items):
        super().__init__(number, title, name, points)
        if any(item.tag not in TAGS for item in items):
            raise ValueError(f"Exercise {number}: every tag must be one of {TAGS}")
        self.items = list(items)

    def prompt(self):
        """The numbered list of quantities, as Markdown."""
        return "\n".join(f"{n}. {item.text}" for n, item in enumerate(self.items, start=1))

    @property
    def answer(self):
        return {n: item.tag for n, item in enumerate(self.items, start=1)}

    @staticmethod
    def _tag(value):
        """'LEARNED', '[learned]', ' Learned ' -> 'LEARNED'; anything else -> None."""
        if not isinstance(value, str):
            return None
        word = value.strip().strip("[]").strip().upper()
        return word if word in TAGS else None

    def _normalise(self, answer):
        """(tags by item number, problems with the answer as a whole)."""
        N = len(self.items)
        example = "{1: LEARNED, 2: CONFIG, ...}"
        if not isinstance(answer, dict):
            return None, (f"`{self.name}` should be a dict from item number to tag, like {example}; "
                          f"got {type(answer).__name__}")
        tags, unknown = {}, []
        for key, value in answer.items():
            try:
                n = int(key)
                if n != key and str(n) != str(key).strip():
                    raise ValueError
            except (TypeError, ValueError):
                unknown.append(repr(key))
                continue
            if not 1 <= n <= N:
                unknown.append(repr(key))
                continue
            tags[n] = value
        if unknown:
            return None, (f"`{self.name}` has keys that are not item numbers 1..{N}: {', '.join(unknown)}. "
                          f"Use the numbers of the list, like {example}")
        return tags, ""

    def feedback(self, answer):
        """[(n, ok, message)] per item, or a message when the answer cannot be read at all."""
        tags, problem = self._normalise(answer)
        if tags is None:
            return problem
        results = []
        for n, item in enumerate(self.items, start=1):
            if n not in tags:
                results.append((n, False, "no tag given for this item"))
                continue
            given = self._tag(tags[n])
            if given is None:
                results.append((n, False, f"{tags[n]!r} is not a tag: use LEARNED, CONFIG or STATE"))
            elif given != item.tag:
                results.append((n, False, f"you said {given}, but it is {item.tag}: {item.why} "
                                          f"({item.tag} means {MEANING[item.tag]}.)"))
            else:
                results.append((n, True, ""))
        return results

    def marks(self, answer):
        """One mark per item: each earns the same share of the points."""
        results = self.feedback(answer)
        if isinstance(results, str):
            return results
        return [(f"{n}. {self.items[n - 1].text}", ok, message) for n, ok, message in results]

    def controls(self, widgets):
        """One dropdown per item, a mark beside it."""
        w = widgets
        options = [("(choose)", None)] + [(tag, tag) for tag in TAGS]
        boxes = [w.Dropdown(options=options, value=None, description=f"{n}.",
                            layout=w.Layout(width="14em"), style={"description_width": "2em"})
                 for n in range(1, len(self.items) + 1)]
        notes = [w.HTML(value="") for _ in self.items]
        rows = [w.HBox([box, w.HTML(value=html(item.text).replace("`", ""), layout=w.Layout(width="34em")), note])
                for box, item, note in zip(boxes, self.items, notes)]

        def update(_=None):
            for box, item, note in zip(boxes, self.items, notes):
                if box.value is None:
                    note.value = ""
                elif box.value == item.tag:
                    note.value = mark(True)
                else:
                    note.value = mark(False, item.why, tooltip=item.why)

        return rows, boxes, update


TAG_QUIZ = TagQuiz(
    "3.6", "[LEARNED], [CONFIG] or [STATE]?", "quantity_tags", points=3,
    items=[
        Item("the self-attention projections `W_q, W_k, W_v, W_o` of a decoder block", "LEARNED",
             "they are weight matrices, and every training step moves them along their gradient."),
        Item("the number of decoder blocks `N_dec`", "CONFIG",
             "you pick it before training; no gradient can add or remove a block."),
        Item("the attention weights of a decoder block, for one input", "STATE",
             "the softmax computes them afresh from each input's queries and keys; a new input gives new weights."),
        Item("the embedding matrix `E`, shared by the source, the target and the output head", "LEARNED",
             "its rows are trained like any weight; tying it to the output head makes it one parameter "
             "used in three places, not a fixed table."),
        Item("the logits `h @ E.T` for one input", "STATE",
             "they are the output of a forward pass on one input; a new input gives new logits."),
        Item("the rule that position `i` may only look at positions `j <= i` (the causal-mask policy)", "CONFIG",
             "the rule is a design decision fixed before training, the same for every input, with no parameters. "
             "(The (m, m) array that create_causal_mask(m) builds from it for an input of length m is STATE.)"),
        Item("the RMSNorm gains `norm1_gamma`, `norm2_gamma`, `norm3_gamma`", "LEARNED",
             "they start at 1 but are trained like any other weight."),
        Item("the encoder output `H_enc` for one source sentence", "STATE",
             "it is computed from the source each time the model runs (once per sentence, then reused "
             "at every decoding step); training changes the weights that produce it, not it."),
        Item("the widths `d_model` and `d_ff` and the number of heads `h`", "CONFIG",
             "they fix the shapes of the weight matrices, so they must be chosen before any weight exists."),
        Item("the cross-attention projections of a decoder block", "LEARNED",
             "they are a second full set of weight matrices, trained like the self-attention ones."),
        Item("the decoder hidden states `H_dec` after each block", "STATE",
             "they are intermediate results of one forward pass, different for every input."),
        Item("whether the source, the target and the output head share one embedding matrix", "CONFIG",
             "it decides how many embedding matrices exist, an architecture choice made before training, "
             "not the values inside them."),
        Item("the predicted next-token probabilities `softmax(h @ E.T)`", "STATE",
             "they are computed from one input's logits and change with every input."),
        Item("the feed-forward weights `W1, b1, W2, b2`", "LEARNED",
             "weights and biases are both parameters: the optimiser updates them at every step."),
        Item("the learning rate and RMSNorm's `eps`", "CONFIG",
             "you set them before the run (a learning-rate schedule too: a fixed formula of the step number, "
             "Lesson 8); the optimiser uses the learning rate but never learns it."),
        Item("the mask array that `decoder_mask(tgt_in, pad_id)` builds for one batch of targets", "STATE",
             "the program builds it from the batch at hand: its shape follows the target length and its hidden "
             "columns follow where the pads are, so a new batch gives a new array. Only the rule it applies "
             "(item 6) is CONFIG."),
    ],
)


@TAG_QUIZ.checked_by
def check_quantity_tags(quantity_tags=None, *, points=None):
    """Each item earns the same share of the points."""
    return TAG_QUIZ.check(quantity_tags, points)


EXERCISES = [CREATE_CAUSAL_MASK, DECODER_MASK, CAUSAL_SELF_ATTENTION, OUTPUT_LOGITS]
ORDERINGS = [MASKED_ATTENTION_ORDER]
QUIZZES = [TAG_QUIZ]


# The concept checks before and after the lesson (encdec.checks.concepts): Exercise 3.0, and the one
# numbered after the last exercise above.
from .concepts import concept_checks  # noqa: E402

CONCEPTS = concept_checks(3, after=[*EXERCISES, *ORDERINGS, *QUIZZES])
check_concepts_before, check_concepts_after = (check.checker for check in CONCEPTS)
