"""The visible cases separate what students confuse (encdec.checks.sizes), from each exercise's
declaration:

- in every visible case the named sizes (B, m, n, d_k, d_v, h, d_model, d_ff, V, ...) are pairwise
  distinct, except the pairs the case makes equal on purpose (`Case.alike`, said in its label), so
  that reading one size for another fails a case the student sees;
- every size takes at least two values across the visible cases, and every value the answer must read
  (`reads`: a pad id, an eps, a bos id, model.config.pad_id, ...) is proven read: the reference with that
  value pinned to the constant an answer would write instead loses points on the visible cases;
- the sizes are declared for every exercise whose cases are arrays, and they agree with the cases.

The cases are those each checker really runs (encdec.checks.recording), on a correct answer.
"""

import contextlib
import copy
import dataclasses
import importlib
import inspect
import io

import pytest

from encdec.checks.core import reference_allowed
from encdec.checks.recording import recording
from encdec.checks.sizes import case_sizes, collisions
from encdec.model import ModelConfig

# Exercises whose answers take no arrays of named sizes (a schedule of numbers, a count, an
# optimizer's set-up), or whose cases are built inside the check: their reason.
NO_SIZES = {
    "1.1": "softmax works on any array; its axes have no names",
    "2.2": "gelu is elementwise",
    "3.1": "create_causal_mask takes one number",
    "5.4": "cross_attention_params takes d_model alone",
    "6.5": "parameter_count takes numbers, every one of them read (see reads)",
    "6.7": "bpe_merge_step takes a corpus, a dict of words (tuples of strings) to counts: no arrays",
    "7.2": "numerical_gradient takes a function and a point",
    "7.3": "softmax_backward works on any array; its axis is read (see reads)",
    "8.2": "adam_update is elementwise, on arrays of any shape",
    "8.3": "warmup_schedule takes numbers",
    "8.4": "train_step hands the batch to the model and the loss; it reads no size itself",
    "8.6": "dropout is elementwise",
    "9.2": "sample_next_token reads one row of logits",
    "10.1": "load_numpy_parameters copies arrays by name; it reads no size",
    "10.2": "lr_at takes numbers",
    "10.3": "make_optimizer sorts a model's parameters into groups; it reads no size",
    "10.4": "torch_train_step hands the batch to the model and the loss; it reads no size itself",
    "10.5": "exact_match compares decoded rows with their targets, whatever their lengths",
    "10.6": "decoding reads no size: the models and sources vary with the cases (model_name, see reads)",
}


# Exercises whose answer reads no argument or setting that a constant could stand for: their reason.
READS_NOTHING = {
    "1.1": "softmax's only setting, axis, is read (a test of its own part)",
    "1.2": "the arguments are arrays; their sizes are checked above",
    "1.3": "n and d are sizes, checked above",
    "2.2": "gelu has no argument but x",
    "2.4": "the layer's sizes are checked above", "2.5": "the layer's sizes are checked above",
    "2.6": "the block's sizes are checked above",
    "3.1": "seq_len is a size", "3.3": "the arguments are arrays", "3.4": "the arguments are arrays",
    "4.1": "the arguments are arrays", "4.2": "the layer's sizes are checked above",
    "4.3": "the layer's sizes are checked above", "5.2": "the block's sizes are checked above",
    "5.3": "the block's sizes are checked above", "5.4": "d_model is a size",
    "6.2": "the model's sizes are checked above",
    "6.7": "the corpus is its only argument, and every case gives another one",
    "7.3": "axis is read (a part of its own)", "7.4": "the arguments are arrays",
    "10.1": "the module and the dict are all it reads", "10.3": "lr, weight_decay and betas are compared with "
    "NumPy's AdamW at values no default has",
}


def lesson_modules():
    return [importlib.import_module(f"encdec.checks.lesson{k:02d}") for k in range(1, 11)]


def correct_answer(module, exercise):
    lesson = module.__name__.rsplit(".", 1)[1]
    alternatives = importlib.import_module(f"variants.{lesson}").ALTERNATIVES[exercise.name]
    alt = alternatives[0]
    if exercise.method is None:  # an alternative may call other exercises by their notebook names
        alt.__globals__.update({e.name: e.reference for e in module.EXERCISES
                                if e.name != exercise.name and e.method is None})
    return exercise.answer_from(alt)


def visible_cases(module, exercise):
    with recording() as seen, contextlib.redirect_stdout(io.StringIO()):
        exercise.checker(correct_answer(module, exercise), points=exercise.points, hidden=False)
    return [s for s in seen if not s.case.hidden]


EXERCISES = [pytest.param(m, ex, marks=getattr(pytest.mark, m.__name__.rsplit(".", 1)[1]), id=ex.number)
             for m in lesson_modules() for ex in m.EXERCISES]


@pytest.mark.parametrize("module,exercise", EXERCISES)
def test_visible_sizes_are_pairwise_distinct(module, exercise):
    if exercise.number in NO_SIZES:
        assert not exercise.sizes, f"{exercise.number} declares sizes: remove it from NO_SIZES"
        return
    assert exercise.sizes, f"Exercise {exercise.number} declares no sizes (Exercise(..., sizes={{...}}))"
    seen = visible_cases(module, exercise)
    assert seen, f"Exercise {exercise.number}: no visible case recorded"
    problems = []
    for s in seen:
        sizes = case_sizes(exercise.sizes, s.reference, s.case)
        same = collisions(sizes, s.case.alike)
        if same:
            problems.append(f"[{s.case.label}] {sizes}: " + ", ".join(f"{a} = {b}" for a, b in same))
    assert not problems, f"Exercise {exercise.number}: sizes that coincide in visible cases:\n" + "\n".join(problems)


@pytest.mark.parametrize("module,exercise", EXERCISES)
def test_every_size_varies_across_visible_cases(module, exercise):
    if exercise.number in NO_SIZES:
        return
    per_case = [case_sizes(exercise.sizes, s.reference, s.case) for s in visible_cases(module, exercise)]
    named = {name for sizes in per_case for name in sizes}
    values = {name: {sizes.get(name) for sizes in per_case} for name in named}  # an absent axis counts too
    fixed = {name: vals for name, vals in values.items() if len(vals) < 2}
    assert not fixed, (f"Exercise {exercise.number}: one value in every visible case, so a constant passes: "
                       + ", ".join(f"{k} = {sorted(v, key=str)[0]}" for k, v in fixed.items()))


def constant_for(exercise, path, seen):
    """What an answer that writes a constant instead of reading `path` would use: the parameter's default
    (the configuration's default for a config value), else the value most visible cases give it."""
    head, *attrs = path.split(".")
    parameter = inspect.signature(exercise.reference).parameters[head]
    if not attrs and parameter.default is not inspect.Parameter.empty:
        return parameter.default
    if len(attrs) == 2 and attrs[0] == "config":
        return ModelConfig.__dataclass_fields__[attrs[-1]].default
    values = [v for v in seen if v is not None]
    texts = [repr(v) for v in values]
    return values[texts.index(max(set(texts), key=texts.count))] if values else None


def pinned(exercise, path, value):
    """The reference with `path` (an argument, or model.config.<field>) replaced by `value`: an answer that
    writes a constant instead of reading it."""
    reference = exercise.reference
    signature = inspect.signature(reference)
    head, *attrs = path.split(".")

    def answer(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if not attrs:
            bound.arguments[head] = value
        else:  # model.config.<field>: a shallow copy of the model whose configuration says `value`
            model = copy.copy(bound.arguments[head])
            model.config = dataclasses.replace(model.config, **{attrs[-1]: value})
            bound.arguments[head] = model
        return reference(*bound.args, **bound.kwargs)
    return answer


def answer_values(exercise, path, module):
    """The values the visible cases give `path` at the answer's own call (recorded through a spy)."""
    signature = inspect.signature(exercise.reference)
    head, *attrs = path.split(".")
    seen = []

    def spy(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        value = bound.arguments.get(head)
        for attr in attrs:
            value = getattr(value, attr, None)
        seen.append(value)
        return exercise.reference(*args, **kwargs)
    with reference_allowed(), contextlib.redirect_stdout(io.StringIO()):
        exercise.checker(spy, points=exercise.points, hidden=False)
    return seen


READS = [pytest.param(m, ex, path, marks=getattr(pytest.mark, m.__name__.rsplit(".", 1)[1]), id=f"{ex.number}-{path}")
         for m in lesson_modules() for ex in m.EXERCISES for path in ex.reads]


@pytest.mark.parametrize("module,exercise,path", READS)
def test_a_constant_in_place_of_a_read_value_fails_a_visible_case(module, exercise, path):
    """The reference with the value pinned to the constant an answer would write (the default, or the value
    of most cases) must lose points on the visible cases: a mutant of the answer, made from the reference."""
    value = constant_for(exercise, path, answer_values(exercise, path, module))
    with reference_allowed(), contextlib.redirect_stdout(io.StringIO()) as out:
        score = exercise.checker(pinned(exercise, path, value), points=exercise.points, hidden=False)
    assert score < exercise.points, (f"Exercise {exercise.number}: an answer that uses {value!r} instead of "
                                     f"reading {path} passes every visible case:\n{out.getvalue()}")


def test_every_coded_exercise_declares_what_its_answer_reads_or_why_not():
    missing = [ex.number for m in lesson_modules() for ex in m.EXERCISES if not ex.reads and ex.number not in READS_NOTHING]
    assert not missing, f"declare reads=(...) for {missing}, or say in READS_NOTHING why there is nothing to read"


@pytest.mark.parametrize("module,exercise", EXERCISES)
def test_every_part_has_a_visible_case(module, exercise):
    """A part made only of hidden cases would count at grading and not in the notebook: the notebook's score
    and the grade would be out of proportion."""
    with recording() as seen, contextlib.redirect_stdout(io.StringIO()):
        exercise.checker(correct_answer(module, exercise), points=exercise.points, hidden=True)
    parts = {}
    for s in seen:
        parts.setdefault(s.part, []).append(s.case.hidden)
    hidden_only = [part for part, hidden in parts.items() if all(hidden)]
    assert not hidden_only, f"Exercise {exercise.number}: parts with hidden cases only: {hidden_only}"
