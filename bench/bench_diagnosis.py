"""Diagnosis rate: how often the feedback names the right misconception, read from the checkers' records.

Every wrong answer below is graded by its exercise's checker exactly as grading does (hidden cases
included), and the structured record the checker publishes (encdec.checks.record, collected here
without a kernel) is read, never the printed text:

- the catalog (encdec.mistakes): each entry must be named by its own key;
- the mutation proof's mutants (the three catalog entries per exercise that tests/grading_class.py
  pastes into real notebooks): the same rule; they are catalog entries, so the overall rate counts
  them once;
- the slips (bench/slips): wrong answers written for this measurement without looking at the catalog
  or the probes; one is diagnosed when a misconception the record names contains one of the phrases
  the slip expects (case-insensitive);
- the correct variants (tests/variants): each must keep full points and have no misconception named.

Rows: the diagnosis rate overall, for the catalog, the mutants, the slips and the shape-preserving
slips; the share of wrong answers that lose points (goal 100%); the share of correct variants that
keep full points with no misleading cause (goal 100%); and, by name, the slips not diagnosed. A last
group lists each undiagnosed slip with what its feedback named instead (the misconception's key and
the start of its diagnosis), or, when it named nothing, the first failing part's message: the list
for the probes' authors.

    make bench BENCH=diagnosis          # through bench/run.py (also writes bench/results.json)
    python bench/bench_diagnosis.py     # the rows, then every wrong answer that was not diagnosed
"""

import contextlib
import importlib
import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "tests", ROOT / "bench"):  # tests/variants, bench/slips
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

GROUP = "diagnosis rate: the feedback names the right misconception (checkers' records, hidden cases included)"
MISSED_GROUP = "diagnosis rate: slips not diagnosed, and what the feedback named instead"
GOAL = 0.95
MUTANTS_PER_EXERCISE = 3


# -- what is graded ------------------------------------------------------------------------------------
def lesson_modules():
    """The checker modules of the ten lessons, in order."""
    return [importlib.import_module(f"encdec.checks.lesson{k:02d}") for k in range(1, 11)]


def coded_exercises():
    """Every exercise answered with code (orderings and the quiz are answer lists), in lesson order."""
    return [ex for module in lesson_modules() for ex in module.EXERCISES]


def mutant_keys(exercises_of_lesson, catalog, k):
    """{exercise name: catalog key} of mutant k (0, 1, 2) of one lesson: exercise i of the lesson gets
    its (i + k)-th catalog entry, as tests/grading_class.py's mutant() pastes them."""
    keys = {}
    for i, ex in enumerate(exercises_of_lesson):
        entries = catalog[ex.name]
        keys[ex.name] = entries[(i + k) % len(entries)].key
    return keys


def mutants(catalog):
    """{(exercise name, catalog key)} of every mutant of the mutation proof."""
    chosen = set()
    for module in lesson_modules():
        for k in range(MUTANTS_PER_EXERCISE):
            chosen |= set(mutant_keys(module.EXERCISES, catalog, k).items())
    return chosen


def variants(exercise):
    """The correct variants of an exercise (tests/variants/lessonNN.py)."""
    try:
        module = importlib.import_module(f"variants.lesson{exercise.lesson:02d}")
    except ModuleNotFoundError:
        return []
    return module.ALTERNATIVES.get(exercise.name, [])


# -- grading one answer ----------------------------------------------------------------------------------
@dataclass
class Graded:
    """What one answer got: its score, the checker's record (None if there was none), what it wrote
    to stderr, and the exception if the checker raised (it never should)."""

    score: float
    points: float
    record: dict = None
    stderr: str = ""
    raised: str = ""
    seconds: float = 0.0

    @property
    def located(self):
        """A cause named (a catalog mistake, a probe, the tracer's line) or the line an error was raised at."""
        if self.misconceptions:
            return True
        parts = (self.record or {}).get("parts") or []
        return any(", line " in (p.get("message") or "") for p in parts if not p.get("passed"))

    @property
    def misconceptions(self):
        return list((self.record or {}).get("misconceptions") or [])

    @property
    def full_marks(self):
        return self.score is not None and self.score >= self.points - 1e-9


def grade(exercise, impl, answer=None):
    """Grade `impl` (a function, or the method of a class exercise) with the exercise's checker,
    hidden cases included, and return what it got."""
    from encdec.checks.record import collected

    answer = exercise.answer_from(impl) if answer is None else answer
    out, err = io.StringIO(), io.StringIO()
    state = np.random.get_state()  # an answer drawing from np.random (a slip) gets the same draws every run
    np.random.seed(0)
    start = time.perf_counter()
    try:
        with collected() as records, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                score = exercise.checker(answer, points=exercise.points, hidden=True)
            except Exception as exc:  # a checker must never raise: count it, do not stop the benchmark
                return Graded(None, exercise.points, None, err.getvalue(), f"{type(exc).__name__}: {exc}")
    finally:
        np.random.set_state(state)
    record = next((r for r in reversed(records) if r.get("exercise") == exercise.number), None)
    return Graded(float(score), exercise.points, record, err.getvalue(), seconds=time.perf_counter() - start)


@contextlib.contextmanager
def earlier_answers(impl, exercise, exercises):
    """A variant may call other exercises by their notebook names: give it the references meanwhile
    (what tests/test_checkers.py does), and put its module's names back afterwards."""
    namespace = getattr(impl, "__globals__", None)
    if exercise.method is not None or namespace is None:
        yield
        return
    added = {e.name: e.reference for e in exercises if e.name != exercise.name and e.method is None}
    saved = {name: namespace[name] for name in added if name in namespace}
    namespace.update(added)
    try:
        yield
    finally:
        for name in added:
            if name in saved:
                namespace[name] = saved[name]
            else:
                namespace.pop(name, None)


# -- reading the record ----------------------------------------------------------------------------------
def names_key(graded, exercise_name, key):
    """True when the record names catalog mistake `key` of `exercise_name`."""
    return any(m.get("key") == key and m.get("exercise") == exercise_name for m in graded.misconceptions)


def fits(misconception, phrases):
    """True when a named misconception's diagnosis has one of `phrases` in it (any case)."""
    text = str(misconception.get("diagnosis") or "").lower()
    return any(p.lower() in text for p in phrases)


def names_phrase(graded, phrases):
    """True when a misconception the record names has one of `phrases` in its diagnosis (any case)."""
    return any(fits(m, phrases) for m in graded.misconceptions)


def instead(graded, width=160):
    """What the feedback said instead of the right misconception: each misconception it named (key and
    the start of its diagnosis), or, when it named none, the first failing part's message."""
    def cut(text):
        text = " ".join(str(text or "").split())
        return text if len(text) <= width else text[: width - 3] + "..."

    if graded.raised:
        return f"the checker raised {cut(graded.raised)}"
    if graded.misconceptions:
        return "; ".join(f"named {m.get('key')}: {cut(m.get('diagnosis'))}" for m in graded.misconceptions)
    failed = [p for p in (graded.record or {}).get("parts") or [] if not p.get("passed")]
    if failed:
        return f"named nothing; {failed[0].get('label')}: {cut(failed[0].get('message'))}"
    return "named nothing"


@dataclass
class Row:
    """One answer of the benchmark and what its feedback did."""

    kind: str  # "catalog", "slip" or "variant"
    exercise: str  # "2.4"
    name: str  # "MultiHeadAttention:heads_no_swap"
    graded: Graded
    diagnosed: bool = False  # wrong answers: the right misconception was named
    mutant: bool = False
    preserves_shape: bool = False
    named: list = field(default_factory=list)  # the keys the record named
    expect: tuple = ()  # slips: the phrases a right diagnosis contains


def rate(rows):
    """(share, diagnosed, total) of wrong answers whose right misconception was named."""
    hit = sum(r.diagnosed for r in rows)
    return (hit / len(rows) if rows else 0.0), hit, len(rows)


# -- the benchmark -----------------------------------------------------------------------------------------
def evaluate(slips=None, catalog_entries=True, variant_answers=True, exercises=None):
    """Grade every answer; return the list of Rows. `slips` defaults to all of bench/slips; the
    arguments narrow the run (the tests use a few slips)."""
    from encdec.mistakes import CATALOG

    import slips as slip_registry

    exercises = coded_exercises() if exercises is None else exercises
    by_name = {ex.name: ex for ex in exercises}
    slips = slip_registry.all_slips() if slips is None else slips
    chosen = mutants(CATALOG)
    rows = []
    for ex in exercises:
        if catalog_entries:
            for m in CATALOG[ex.name]:
                graded = grade(ex, m.impl)
                rows.append(Row("catalog", ex.number, f"{ex.name}:{m.key}", graded,
                                diagnosed=names_key(graded, ex.name, m.key), mutant=(ex.name, m.key) in chosen,
                                named=[c.get("key") for c in graded.misconceptions]))
        if variant_answers:
            for i, alt in enumerate(variants(ex)):
                with earlier_answers(alt, ex, exercises):
                    graded = grade(ex, alt)
                rows.append(Row("variant", ex.number, f"{ex.name}:variant {i + 1}", graded,
                                named=[c.get("key") for c in graded.misconceptions]))
    for s in slips:
        ex = by_name.get(s.exercise)
        if ex is None:
            raise KeyError(f"slip {s.name} answers {s.exercise!r}, which no lesson declares")
        graded = grade(ex, s.impl)
        rows.append(Row("slip", ex.number, s.name, graded, diagnosed=names_phrase(graded, s.expect),
                        preserves_shape=s.preserves_shape, named=[c.get("key") for c in graded.misconceptions],
                        expect=s.expect))
    return rows


def _pct(x):
    return 100.0 * x


def summarise(rows):
    """The benchmark's rows (group, name, value, unit, note) from the graded answers."""
    wrong = [r for r in rows if r.kind != "variant"]
    catalog = [r for r in rows if r.kind == "catalog"]
    mutant_rows = [r for r in catalog if r.mutant]
    slip_rows = [r for r in rows if r.kind == "slip"]
    shape_rows = [r for r in slip_rows if r.preserves_shape]
    correct = [r for r in rows if r.kind == "variant"]
    out = []

    def rate_row(name, subset, note=""):
        share, hit, total = rate(subset)
        out.append({"group": GROUP, "name": name, "value": _pct(share), "unit": "%",
                    "note": f"{hit} of {total}" + (f"; {note}" if note else "")})

    rate_row("overall (catalog and slips)", wrong,
             f"goal >= {GOAL:.0%}; the mutants are catalog entries, counted once")
    rate_row("catalog entries, by their own key", catalog)
    rate_row("mutation-proof mutants (3 per exercise)", mutant_rows)
    rate_row("slips, by the phrases they expect", slip_rows)
    rate_row("slips that keep every shape", shape_rows)
    lose = [r for r in wrong if r.graded.score is not None and not r.graded.full_marks]
    out.append({"group": GROUP, "name": "wrong answers that lose points", "value": _pct(len(lose) / max(len(wrong), 1)),
                "unit": "%", "note": f"{len(lose)} of {len(wrong)}; goal 100%"
                + _names("full marks", [r for r in wrong if r not in lose])})
    kept = [r for r in correct if r.graded.full_marks and not r.named]
    out.append({"group": GROUP, "name": "correct variants: full points, no cause named",
                "value": _pct(len(kept) / max(len(correct), 1)), "unit": "%",
                "note": f"{len(kept)} of {len(correct)}; goal 100%"
                + _names("lost points", [r for r in correct if not r.graded.full_marks])
                + _names("a cause named", [r for r in correct if r.graded.full_marks and r.named])})
    losing = [r for r in wrong if not r.graded.full_marks]
    located = [r for r in losing if r.graded.located]
    out.append({"group": GROUP, "name": "wrong answers located: a cause named or a line quoted", "value":
                _pct(len(located) / max(len(losing), 1)), "unit": "%", "note": f"{len(located)} of {len(losing)}; goal 100%"
                + _names("neither", [r for r in losing if not r.graded.located])})
    times = sorted(r.graded.seconds for r in wrong)
    if times:
        out.append({"group": GROUP, "name": "seconds to check and diagnose a wrong answer (median, slowest)",
                    "value": round(times[len(times) // 2], 3), "unit": "s",
                    "note": f"slowest {times[-1]:.2f} s ({max(wrong, key=lambda r: r.graded.seconds).name}); goal: "
                            "within 2 s; hidden cases included, this machine's load as it is"})
    broken = [r for r in rows if r.graded.raised or r.graded.stderr or r.graded.record is None]
    out.append({"group": GROUP, "name": "checks that raised, wrote to stderr or left no record", "value": len(broken),
                "unit": "answers", "note": "goal 0" + _names("", broken)})
    missed = [r for r in slip_rows if not r.diagnosed]
    out.append({"group": GROUP, "name": "slips not diagnosed", "value": len(missed), "unit": "slips",
                "note": ", ".join(r.name for r in missed) or "none"})
    stray = {r.name: [m.get("key") for m in r.graded.misconceptions if not fits(m, r.expect)]
             for r in slip_rows if r.diagnosed}
    stray = {name: keys for name, keys in stray.items() if keys}
    out.append({"group": GROUP, "name": "slips diagnosed, with another cause named too", "value": len(stray),
                "unit": "slips", "note": "; ".join(f"{n} (also {', '.join(map(str, k))})" for n, k in stray.items())
                or "none"})
    missed_catalog = [r for r in catalog if not r.diagnosed]
    if missed_catalog:
        out.append({"group": GROUP, "name": "catalog entries not named by their key", "value": len(missed_catalog),
                    "unit": "entries", "note": ", ".join(r.name for r in missed_catalog)})
    for r in missed_catalog + missed:  # last: one row each, what the feedback named instead
        score = "raised" if r.graded.score is None else f"{r.graded.score:g} / {r.graded.points:g}"
        out.append({"group": MISSED_GROUP, "name": f"{r.exercise} {r.name}", "value": score, "unit": "points",
                    "note": instead(r.graded)})
    return out


def _names(label, rows):
    if not rows:
        return ""
    return f"; {label}: " + ", ".join(r.name for r in rows) if label else "; " + ", ".join(r.name for r in rows)


def run(quick=False):
    """The benchmark's rows (bench/run.py). Every answer is graded even with quick=True: a rate over a
    sample would not be the course's. Beside them: the blind batches as first measured (bench_blind), and
    the correct answers graded through the real grader with the catalog mistakes that pass every visible
    case (bench_correct; the grading is left out with quick=True)."""
    import bench_blind
    import bench_correct
    return summarise(evaluate()) + bench_blind.run(quick) + bench_correct.run(quick)


def _report(rows):
    """The answers whose feedback missed, with what it named instead: a list for the probes' authors."""
    lines = []
    for r in rows:
        if r.kind == "variant":
            if not r.graded.full_marks or r.named:
                lines.append(f"  VARIANT {r.exercise} {r.name}: score {r.graded.score} / {r.graded.points}, "
                             f"named {r.named or 'nothing'}")
            continue
        if not r.diagnosed or r.graded.full_marks:
            lost = "FULL MARKS" if r.graded.full_marks else f"{r.graded.score} / {r.graded.points}"
            lines.append(f"  {r.kind:<7} {r.exercise:<5} {r.name}: {lost}\n          {instead(r.graded)}")
    return lines


if __name__ == "__main__":
    graded = evaluate()
    for row in summarise(graded):
        if row["group"] == GROUP:
            print(f"{row['name']:<55} {row['value']:>8.4g} {row['unit']:<8} {row['note']}")
    print("\nnot diagnosed, or not losing points:")
    print("\n".join(_report(graded)) or "  none")
