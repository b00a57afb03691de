"""Blind batches: answers written by someone who read only the released lessons, graded through the
real grader (`python -m autograder autograde`, in its sandbox), exactly as a class is graded.

A batch is a folder bench/blind/<date>-<name>/ with batch.json, a list of answers:

    {"lesson": "08", "exercise": "8.2", "answer_name": "adam_update", "kind": "wrong" | "correct",
     "id": "8.2-adam-inplace", "source": "<the whole answer cell>", "slip": "<what is wrong, in words>",
     "visible_effect": "..."}

and, once graded and judged, judged.json: {id: "named" | "located" | "unnamed" | "misleading"} for each
wrong answer (named: the feedback says what the slip is; located: it points at the right place or kind
without saying what is wrong; unnamed: only that values differ; misleading: it names another cause), said
by a reader who compares the slip's words with the feedback, with the date it was measured; a
rejudged_*.json beside it holds answers judged again where the judges' copy of the feedback lacked
something the student saw (its verdicts replace the first ones, and the row says how many). Each answer is
pasted into its lesson's solution notebook (every other answer right) and graded as one student.

    python bench/bench_blind.py bench/blind/2026-12-06-lessons08-10   # grade: graded.json and feedback.md
    python bench/bench_blind.py --feedback-only bench/blind/…         # feedback.md again, from graded.json
    make bench BENCH=blind                                            # the rows of every judged batch

A batch is graded once, reported, and only then joins the bench: the rows below read judged.json, which
records what the first grading gave; later gradings are shown beside it, never in its place.
"""

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

BLIND = ROOT / "bench" / "blind"
GROUP = "blind batches: answers written from the released lessons only, graded through make autograde"


def declarations(lesson):
    """{exercise number: declaration} of a lesson (coded exercises and answer lists)."""
    from encdec.checks.exercises import declared
    from nbtools import checks_module
    return {g.number: g for g in declared(checks_module(lesson))}


def lesson_folder(lesson):
    return next(p.name for p in (ROOT / "solutions").glob(f"{lesson}_*") if p.is_dir())


def submissions(batch, submitted):
    """Write one submission per answer: the lesson's solution with that answer cell replaced. Returns
    {answer id: (student, lesson folder, grade id of the exercise's test cell, points)}."""
    from nbtools import set_answer, solution, write_submission
    placed = {}
    for i, answer in enumerate(batch):
        lesson = lesson_folder(answer["lesson"])
        graded = declarations(answer["lesson"])[answer["exercise"]]
        nb = set_answer(solution(lesson), graded.answer_cell, answer["source"])
        student = f"b{i:03d}"
        write_submission(submitted, student, lesson, nb)
        placed[answer["id"]] = (student, lesson, graded.grade_id, float(graded.points))
    return placed


def grade(folder, jobs=2):
    """Grade a batch through the real grader; write graded.json (score, status, what the feedback said)
    and feedback.md (the same, to read beside each slip) into the batch's folder."""
    from autograder import records
    from nbtools import autograde, course_copy
    folder = Path(folder)
    batch = json.loads((folder / "batch.json").read_text())
    with tempfile.TemporaryDirectory(prefix="blind-") as tmp:
        tmp = Path(tmp)
        root = course_copy(tmp / "course")
        placed = submissions(batch, tmp / "submitted")
        code, rows, output = autograde(tmp / "submitted", tmp / "out", jobs=jobs, root=root)
        results = {}
        for answer in batch:
            student, lesson, grade_id, points = placed[answer["id"]]
            row = rows.get((student, lesson), {})
            graded_nb = tmp / "out" / "autograded" / student / lesson / f"{lesson}.ipynb"
            found = {"score": None, "points": points, "status": row.get("status", "missing"),
                     "lesson_score": row.get("score"), "lesson_max": row.get("max_score"),
                     "misconceptions": [], "failed": [], "notes": [], "message": ""}
            if row.get("status", "").startswith("graded"):
                found["score"] = float(row.get(f"{lesson[:2]}:{grade_id}") or 0.0)
            if graded_nb.exists():
                import nbformat
                nb = nbformat.read(str(graded_nb), as_version=4)
                test = next((c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                             == grade_id), None)
                _, record = records.record_output(test) if test is not None else (None, None)
                if record is not None:
                    found["misconceptions"] = [{"key": m.key, "diagnosis": m.diagnosis} for m in record.misconceptions]
                    found["failed"] = [f"{p.label}: {p.message}" for p in record.parts if not p.passed]
                    found["notes"] = list(record.notes)
                    found["message"] = record.message
            results[answer["id"]] = found
    (folder / "graded.json").write_text(json.dumps(results, indent=1))
    write_feedback(folder, batch, results)
    return results, code, output


def write_feedback(folder, batch, results):
    """feedback.md: beside each slip, everything its feedback said (failed parts, causes named, notes)."""
    lines = [f"# {folder.name}: what the feedback said\n"]
    for answer in batch:
        r = results[answer["id"]]
        lines += [f"## {answer['id']} ({answer['kind']}, Exercise {answer['exercise']})", "",
                  f"**Slip (as written):** {answer['slip']}", "",
                  f"**Score:** {r['score']} / {r['points']} ({r['status']})", ""]
        if r["message"]:
            lines += [f"**Stopped:** {r['message']}", ""]
        for f in r["failed"]:
            lines += [f"- failed: {f}"]
        for m in r["misconceptions"]:
            lines += [f"- named ({m['key']}): {m['diagnosis']}"]
        for note in r.get("notes", []):
            lines += [f"- note: {note}"]
        lines.append("")
    (folder / "feedback.md").write_text("\n".join(lines))


def summarise(folder):
    """Rows of one judged batch: full marks on correct answers, lost points and the judgement of wrong ones."""
    folder = Path(folder)
    batch = json.loads((folder / "batch.json").read_text())
    graded = json.loads((folder / "graded.json").read_text())
    judged = json.loads((folder / "judged.json").read_text())
    when = judged.get("_measured", "")
    again = {}
    for path in sorted(folder.glob("rejudged_*.json")):  # answers judged again on feedback a first copy lacked
        again.update({k: v for k, v in json.loads(path.read_text()).items() if k != "_measured"})
    judged = {**judged, **again}
    correct = [a for a in batch if a["kind"] == "correct"]
    wrong = [a for a in batch if a["kind"] == "wrong"]
    full = sum(graded[a["id"]]["score"] == graded[a["id"]]["points"] for a in correct)
    lost = sum((graded[a["id"]]["score"] or 0.0) < graded[a["id"]]["points"] for a in wrong)
    verdicts = [judged.get(a["id"]) for a in wrong]
    count = {v: verdicts.count(v) for v in ("named", "located", "unnamed", "misleading")}
    note = f"{folder.name}, measured {when}" + (f"; {len(again)} judged again with the checkers' notes" if again else "")
    rows = [{"group": GROUP, "name": f"{folder.name}: correct answers with full marks", "value": full,
             "unit": f"of {len(correct)}", "note": note},
            {"group": GROUP, "name": f"{folder.name}: wrong answers that lose points", "value": lost,
             "unit": f"of {len(wrong)}", "note": note}]
    for verdict in ("named", "located", "unnamed", "misleading"):
        rows.append({"group": GROUP, "name": f"{folder.name}: wrong answers {verdict}", "value": count[verdict],
                     "unit": f"of {len(wrong)}", "note": note})
    return rows


def run(quick=False):
    return [row for folder in sorted(BLIND.glob("*")) if (folder / "judged.json").exists()
            for row in summarise(folder)]


if __name__ == "__main__":
    if "--feedback-only" in sys.argv:  # feedback.md again from graded.json, without grading again
        where = Path(next(a for a in sys.argv[1:] if not a.startswith("--")))
        write_feedback(where, json.loads((where / "batch.json").read_text()),
                       json.loads((where / "graded.json").read_text()))
        sys.exit(0)
    results, code, output = grade(sys.argv[1])
    print(output[-3000:])
    print(f"graded {len(results)} answers; feedback in {Path(sys.argv[1]) / 'feedback.md'}")
