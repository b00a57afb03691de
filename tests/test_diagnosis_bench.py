"""The diagnosis-rate benchmark (bench/bench_diagnosis.py) and its slips (bench/slips/): the slips are
well formed, the rates count only what a record really names, and the benchmark grades a few real
answers end to end. Fast: the whole benchmark runs under `make bench BENCH=diagnosis`, not here."""

import ast
import importlib.util
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_bench():
    spec = importlib.util.spec_from_file_location("bench_diagnosis", ROOT / "bench" / "bench_diagnosis.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # puts bench/ (the slips) and tests/ (the variants) on sys.path
    return module


bench = _load_bench()
import slips  # noqa: E402  (bench/slips, on the path once the benchmark is loaded)

SLIPS = slips.all_slips()
EXERCISES = {ex.name: ex for ex in bench.coded_exercises()}


# -- the slips -------------------------------------------------------------------------------------------
def test_enough_slips_most_of_them_shape_preserving_in_every_lesson():
    assert len(SLIPS) >= 50
    assert sum(s.preserves_shape for s in SLIPS) >= 35
    lessons = {EXERCISES[s.exercise].lesson for s in SLIPS}
    assert lessons == set(range(1, 11))
    assert len({s.name for s in SLIPS}) == len(SLIPS)


def test_every_slip_answers_a_declared_exercise_with_sensible_expectations():
    for s in SLIPS:
        assert s.exercise in EXERCISES, s.name
        assert s.description.strip() and "\n" not in s.description, s.name
        assert s.expect and all(isinstance(p, str) and len(p) >= 2 for p in s.expect), s.name


def _notebook_signatures():
    """{exercise name (or Class.method): parameter names} from the lessons' sources in authoring/."""
    found = {}
    for source in sorted((ROOT / "authoring").glob("[0-9][0-9]_*.py")):
        for node in ast.parse(source.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                found.setdefault(node.name, [a.arg for a in node.args.args])
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found.setdefault(f"{node.name}.{item.name}", [a.arg for a in item.args.args])
    return found


def test_every_slip_has_the_notebook_signature():
    stubs = _notebook_signatures()
    for s in SLIPS:
        ex = EXERCISES[s.exercise]
        where = s.exercise if ex.method is None else f"{s.exercise}.{ex.method}"
        assert where in stubs, f"{s.name}: no `def {where}` in authoring/"
        assert list(inspect.signature(s.impl).parameters) == stubs[where], s.name
        assert s.impl.__name__ == (ex.method or s.exercise), s.name


def test_a_malformed_slip_is_refused():
    with pytest.raises(ValueError):
        slips.slip("softmax", "bad", "a bare string", expect="axis")
    with pytest.raises(ValueError):
        slips.slip("softmax", "bad", "a one-letter phrase", expect=("a",))
    with pytest.raises(ValueError):
        slips.slip("softmax", "axis_ignored", "registered twice", expect=("axis",))(lambda x, axis=-1: x)


# -- counting --------------------------------------------------------------------------------------------
def graded(score=0.0, points=2.0, misconceptions=(), parts=()):
    record = {"exercise": "1.1", "misconceptions": list(misconceptions), "parts": list(parts)}
    return bench.Graded(score, points, record)


HEADS = {"key": "probe:heads", "exercise": "MultiHeadAttention", "diagnosis": "The HEADS are mixed up: swap axes."}
SCALE = {"key": "probe:scale", "exercise": "MultiHeadAttention", "diagnosis": "the scores are scaled by 1/d_k"}


def test_a_slip_counts_only_when_a_named_misconception_has_an_expected_phrase():
    assert bench.names_phrase(graded(misconceptions=[HEADS]), ("head",))  # any case
    assert bench.names_phrase(graded(misconceptions=[HEADS]), ("Heads",))
    assert bench.names_phrase(graded(misconceptions=[SCALE, HEADS]), ("transpos", "head"))
    assert not bench.names_phrase(graded(misconceptions=[SCALE]), ("head",))  # named the wrong thing
    assert not bench.names_phrase(graded(), ("head",))  # named nothing
    # the phrase in a failing part's message is not a named misconception
    failing = {"label": "heads", "passed": False, "message": "the head outputs differ"}
    assert not bench.names_phrase(graded(parts=[failing]), ("head",))
    assert not bench.names_phrase(bench.Graded(None, 2.0, None, raised="ValueError: head"), ("head",))


def test_a_catalog_entry_counts_only_under_its_own_key_and_exercise():
    named = graded(misconceptions=[{"key": "no_scale", "exercise": "scaled_dot_product_attention", "diagnosis": ""}])
    assert bench.names_key(named, "scaled_dot_product_attention", "no_scale")
    assert not bench.names_key(named, "scaled_dot_product_attention", "scale_by_d_k")
    assert not bench.names_key(named, "cross_attention", "no_scale")  # the same key of another exercise


def _row(kind, name, diagnosed=False, score=0.0, named=(), shape=True, mutant=False, expect=("about",)):
    misconceptions = [{"key": k, "exercise": name.split(":")[0], "diagnosis": f"about {k}"} for k in named]
    return bench.Row(kind, "2.4", name, graded(score=score, misconceptions=misconceptions), diagnosed=diagnosed,
                     mutant=mutant, preserves_shape=shape, named=list(named), expect=expect)


def test_the_rows_count_right():
    rows = [_row("catalog", "MultiHeadAttention:no_W_o", diagnosed=True, named=["no_W_o"], mutant=True),
            _row("catalog", "MultiHeadAttention:mask_ignored", named=["no_W_o"]),
            _row("catalog", "MultiHeadAttention:scale_by_d_model"),
            _row("slip", "MultiHeadAttention:split_without_swap", diagnosed=True, named=["probe:heads", "no_W_o"],
                 expect=("heads",)),
            _row("slip", "MultiHeadAttention:W_q_transposed", named=["probe:scale"]),
            _row("slip", "MultiHeadAttention:self_only", diagnosed=True, named=["cross"], shape=False),
            _row("slip", "MultiHeadAttention:full_marks", score=2.0),
            _row("variant", "MultiHeadAttention:variant 1", score=2.0),
            _row("variant", "MultiHeadAttention:variant 2", score=2.0, named=["probe:heads"]),
            _row("variant", "MultiHeadAttention:variant 3", score=1.0)]
    out = bench.summarise(rows)
    value = {r["name"]: r["value"] for r in out if r["group"] == bench.GROUP}
    note = {r["name"]: r["note"] for r in out if r["group"] == bench.GROUP}
    assert value["overall (catalog and slips)"] == pytest.approx(100 * 3 / 7)
    assert value["catalog entries, by their own key"] == pytest.approx(100 / 3)
    assert value["mutation-proof mutants (3 per exercise)"] == pytest.approx(100)
    assert value["slips, by the phrases they expect"] == pytest.approx(50)
    assert value["slips that keep every shape"] == pytest.approx(100 / 3)
    assert value["wrong answers that lose points"] == pytest.approx(100 * 6 / 7)
    assert "MultiHeadAttention:full_marks" in note["wrong answers that lose points"]
    assert value["correct variants: full points, no cause named"] == pytest.approx(100 / 3)
    assert "variant 2" in note["correct variants: full points, no cause named"]
    assert value["slips not diagnosed"] == 2
    assert note["slips not diagnosed"] == "MultiHeadAttention:W_q_transposed, MultiHeadAttention:full_marks"
    assert value["catalog entries not named by their key"] == 2
    assert value["slips diagnosed, with another cause named too"] == 1  # a right cause, and a stray one
    assert note["slips diagnosed, with another cause named too"] == "MultiHeadAttention:split_without_swap (also no_W_o)"
    # the last group: each miss with what was named instead, for the probes' authors
    missed = {r["name"]: r["note"] for r in out if r["group"] == bench.MISSED_GROUP}
    assert set(missed) == {"2.4 MultiHeadAttention:mask_ignored", "2.4 MultiHeadAttention:scale_by_d_model",
                           "2.4 MultiHeadAttention:W_q_transposed", "2.4 MultiHeadAttention:full_marks"}
    assert missed["2.4 MultiHeadAttention:W_q_transposed"].startswith("named probe:scale: about probe:scale")
    assert missed["2.4 MultiHeadAttention:full_marks"] == "named nothing"
    for r in out:  # what bench/run.py reads
        assert {"group", "name", "value", "unit", "note"} <= set(r)


def test_instead_shows_the_first_failing_part_when_nothing_is_named():
    parts = [{"label": "shapes", "passed": True, "message": None},
             {"label": "values", "passed": False, "message": "values differ at index (0, 0)"}]
    assert bench.instead(graded(parts=parts)) == "named nothing; values: values differ at index (0, 0)"
    assert bench.instead(bench.Graded(None, 2.0, None, raised="KeyError: x")) == "the checker raised KeyError: x"


# -- end to end, on a few real answers -------------------------------------------------------------------
def test_the_benchmark_grades_a_few_answers_with_the_real_checkers():
    chosen = {"rms_norm:gamma_forgotten", "MultiHeadAttention:no_W_o"}
    few = [s for s in SLIPS if s.name in chosen]
    ex = EXERCISES["rms_norm"]
    # a right answer (a correct variant) dressed as a slip: full marks, nothing named, never counted as diagnosed
    right = slips.Slip("rms_norm", "the_reference", "a correct variant", ("gamma",), True, bench.variants(ex)[0])
    rows = bench.evaluate(slips=few + [right], catalog_entries=False, variant_answers=False,
                          exercises=[ex, EXERCISES["MultiHeadAttention"]])
    by_name = {r.name: r for r in rows}
    assert set(by_name) == chosen | {"rms_norm:the_reference"}
    for name in chosen:
        r = by_name[name]
        assert r.graded.record is not None and not r.graded.raised and not r.graded.stderr
        assert r.graded.record["hidden"] is True  # graded as grading does
        assert not r.graded.full_marks
        assert r.diagnosed == bench.names_phrase(r.graded, next(s.expect for s in few if s.name == name))
    ref = by_name["rms_norm:the_reference"]
    assert ref.graded.full_marks and not ref.named and not ref.diagnosed


def test_the_benchmark_is_a_make_bench_module():
    path = ROOT / "bench" / "bench_diagnosis.py"
    assert path.name.startswith("bench_") and "diagnosis" in path.stem  # make bench BENCH=diagnosis
    assert list(inspect.signature(bench.run).parameters) == ["quick"]
