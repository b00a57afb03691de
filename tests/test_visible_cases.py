"""The visible cases separate what students confuse (encdec.checks.sizes), from each exercise's
declaration:

- in every visible case the named sizes (B, m, n, d_k, d_v, h, d_model, d_ff, V, ...) are pairwise
  distinct, except the pairs the case makes equal on purpose (`Case.alike`, said in its label), so
  that reading one size for another fails a case the student sees;
- every size and every value the answer must read (`reads`: a pad id, an eps, a bos id, ...) takes at
  least two values across the visible cases, so that a constant written in its place fails one;
- the sizes are declared for every exercise whose cases are arrays, and they agree with the cases.

The cases are those each checker really runs (encdec.checks.recording), on a correct answer.
"""

import contextlib
import importlib
import io

import pytest

from encdec.checks.recording import recording
from encdec.checks.sizes import case_sizes, collisions, read_values

# Exercises whose answers take no arrays of named sizes (a schedule of numbers, a count, an
# optimizer's set-up), or whose cases are built inside the check: their reason.
NO_SIZES = {
    "1.1": "softmax works on any array; its axes have no names",
    "2.2": "gelu is elementwise",
    "3.1": "create_causal_mask takes one number",
    "5.4": "cross_attention_params takes d_model alone",
    "6.5": "parameter_count takes numbers, every one of them read (see reads)",
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
def test_every_size_and_read_value_varies_across_visible_cases(module, exercise):
    if exercise.number in NO_SIZES and not exercise.reads:
        return
    seen = visible_cases(module, exercise)
    values, per_case = {}, []
    for s in seen:
        if exercise.number not in NO_SIZES:
            per_case.append(case_sizes(exercise.sizes, s.reference, s.case))
    named = {name for sizes in per_case for name in sizes}
    for sizes in per_case:  # a case without an axis (unbatched) also tells a constant apart
        for name in named:
            values.setdefault(name, set()).add(sizes.get(name))
    for s in seen:
        for path, value in read_values(exercise.reads, s.reference, s.case).items():
            values.setdefault(path, set()).add(repr(value))
    fixed = {name: vals for name, vals in values.items() if len(vals) < 2}
    missing = [path for path in exercise.reads if values.get(path, {repr(None)}) == {repr(None)}]
    assert not missing, f"Exercise {exercise.number}: no visible case gives {missing}"
    assert not fixed, (f"Exercise {exercise.number}: one value in every visible case, so a constant passes: "
                       + ", ".join(f"{k} = {sorted(v)[0]}" for k, v in fixed.items()))
