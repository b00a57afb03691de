"""A class's round trip through nbgrader's real exchange, without a hub or a browser
(tests/browser/test_class.py plays the same class on the hub, in chromium).

In a copy of the course, with CLASS_DIR a scratch folder: the instructor publishes lesson 01
(`python -m autograder publish`), two students fetch it and submit with nbgrader's own student
commands (`nbgrader fetch_assignment`, `nbgrader submit`, `nbgrader fetch_feedback`), each from a
home folder of their own and with no configuration but the flags given. alice submits a blank
notebook, then the solution; bob a classic mistake. The instructor collects, grades against a due
date, releases the feedback, and each student fetches their own page. Then alice submits again
after grading (a classic mistake), and the round is played once more.

Every expected value comes from outside the code under test: the solution notebook's metadata,
what the students handed in, nbgrader's receipts in each student's cache, and nbgrader's own
notebook_hash for the names of the released feedback pages.
"""

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from encdec.mistakes import CATALOG
from nbtools import checks_module, course_copy, inject, require_sandbox, solution

pytestmark = pytest.mark.nbgrader

L1, L2 = "01_attention", "02_encoder"
COURSE_ID = "encdec"
BIN = Path(sys.executable).parent
ENV = {"GRADE_CELL_TIMEOUT": "30", "GRADE_TIMEOUT": "120"}
PAST, FUTURE = "2000-01-01 00:00:00 UTC", "2999-01-01 00:00:00 UTC"


# -- helpers ------------------------------------------------------------------------------------------
def lesson_points():
    """The lesson's points, from the solution notebook's graded cells."""
    return sum(float(c.metadata.nbgrader.points) for c in solution(L1).cells
               if c.metadata.get("nbgrader", {}).get("grade"))


def mistaken(exercise_name, key=None):
    """The solution with one exercise's answer replaced by a catalog mistake (the first, or `key`)."""
    exercise = next(e for e in checks_module(L1).EXERCISES if e.name == exercise_name)
    entries = list(CATALOG[exercise_name])
    impl = next(m.impl for m in entries if key is None or m.key == key)
    return inject(solution(L1), exercise, impl)


def autograder(klass, *args, class_dir=None, timeout=900):
    """`python -m autograder ARGS` from the course copy, as the instructor runs it."""
    if args and args[0] == "autograde":
        require_sandbox(ENV)
    env = {**os.environ, **ENV, "CLASS_DIR": str(class_dir or klass["class_dir"]),
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=klass["root"], env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def student(klass, who, *args):
    """One of nbgrader's student commands, as `who` runs it from their home folder, reading no
    configuration but the flags (an empty JUPYTER_CONFIG_DIR, no nbgrader_config.py in the cwd)."""
    home = klass["homes"][who]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update({"JUPYTER_CONFIG_DIR": str(klass["empty_config"]), "JUPYTER_DATA_DIR": str(home / ".data"),
                "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert not (home / "nbgrader_config.py").exists()
    proc = subprocess.run([str(BIN / "nbgrader"), *args, f"--student={who}", f"--course={COURSE_ID}",
                           f"--Exchange.root={klass['exchange']}", f"--Exchange.cache={home / 'cache'}"],
                          cwd=home, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} as {who}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout + proc.stderr


def submit(klass, who, nb):
    """Write `nb` into the student's fetched lesson and submit it; returns nbgrader's receipt of
    this submission from the student's cache: {'timestamp', 'secret', 'folder'}."""
    home = klass["homes"][who]
    cache = home / "cache" / COURSE_ID
    before = set(cache.glob(f"{who}+{L1}+*")) if cache.is_dir() else set()
    nbformat.write(nb, str(home / L1 / f"{L1}.ipynb"))
    student(klass, who, "submit", L1)
    (new,) = set(cache.glob(f"{who}+{L1}+*")) - before
    return {"timestamp": (new / "timestamp.txt").read_text(), "secret": (new / "submission_secret.txt").read_text(),
            "folder": new, "bytes": (home / L1 / f"{L1}.ipynb").read_bytes()}


def inbound(klass, who):
    return sorted((klass["exchange"] / COURSE_ID / "inbound").glob(f"{who}+{L1}+*"))


def read_grades(klass):
    with open(klass["root"] / "autograder" / "grades.csv") as f:
        return {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == L1}


def fetched_feedback(klass, who):
    """{timestamp folder name: page text} under the student's 01_attention/feedback/."""
    folder = klass["homes"][who] / L1 / "feedback"
    return {p.parent.name: p.read_text() for p in sorted(folder.glob(f"*/{L1}.html"))}


def released_pages(klass):
    return sorted(p.name for p in (klass["exchange"] / COURSE_ID / "feedback").iterdir())


def expected_name(receipt):
    """The feedback page's name in the exchange, by nbgrader's own rule (its secret and notebook)."""
    from nbgrader.utils import notebook_hash
    return notebook_hash(secret=receipt["secret"], notebook_id=L1) + ".html"


def score_line(score):
    """The header nbgrader's feedback template writes: 'NAME (Score: s / max)'."""
    return f"{L1} (Score: {round(float(score), 2)} / {round(lesson_points(), 2)})"


# -- the class, step by step (each fixture keeps what it saw) ------------------------------------------
@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exchange")
    root = course_copy(tmp / "course")
    class_dir = tmp / "class"
    class_dir.mkdir()
    exchange = class_dir / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o1777)  # as make class does (tools/class/class_hub.py)
    (tmp / "empty-config").mkdir()
    homes = {}
    for who in ("alice", "bob"):
        homes[who] = tmp / "home" / who
        homes[who].mkdir(parents=True)
    return {"root": root, "class_dir": class_dir, "exchange": exchange, "homes": homes,
            "empty_config": tmp / "empty-config", "tmp": tmp}


@pytest.fixture(scope="module")
def published(klass):
    code, out = autograder(klass, "publish", "--lesson", "01")
    fetched = {who: student(klass, who, "fetch_assignment", L1) for who in klass["homes"]}
    return {"code": code, "out": out, "fetched": fetched}


@pytest.fixture(scope="module")
def submitted(klass, published):
    first = submit(klass, "alice", nbformat.read(str(klass["homes"]["alice"] / L1 / f"{L1}.ipynb"), 4))  # blank
    time.sleep(1.1)  # a distinct timestamp
    second = submit(klass, "alice", solution(L1))
    bob = submit(klass, "bob", mistaken("softmax"))
    return {"alice": [first, second], "bob": [bob]}


@pytest.fixture(scope="module")
def graded(klass, submitted):
    (klass["root"] / "autograder" / "assignments.csv").write_text(f"name,duedate\n{L1},{PAST}\n")
    collected = autograder(klass, "collect", "--lesson", "01")
    folder = klass["root"] / "autograder" / "submitted" / "alice" / L1
    state = {"collect": collected, "alice_folder": sorted(p.name for p in folder.iterdir()) if folder.is_dir() else [],
             "alice_timestamp": (folder / "timestamp.txt").read_text() if (folder / "timestamp.txt").is_file() else None,
             "alice_notebook": (folder / f"{L1}.ipynb").read_bytes() if (folder / f"{L1}.ipynb").is_file() else None,
             "inbound_alice": [(p.name, (p / f"{L1}.ipynb").read_bytes()) for p in inbound(klass, "alice")]}
    state["autograde"] = autograder(klass, "autograde", "--lessons", "01")
    state["rows"] = read_grades(klass)
    return state


@pytest.fixture(scope="module")
def released(klass, graded):
    code, out = autograder(klass, "release-feedback", "--lesson", "01")
    for who in klass["homes"]:
        student(klass, who, "fetch_feedback", L1)
    return {"code": code, "out": out, "pages": released_pages(klass),
            "fetched": {who: fetched_feedback(klass, who) for who in klass["homes"]}}


@pytest.fixture(scope="module")
def resubmitted(klass, submitted, released):
    """alice hands in again after grading (the scores not divided by sqrt(d_k)); the due date is
    now in the future. Collect, grade the class, release the feedback, fetch it."""
    (klass["root"] / "autograder" / "assignments.csv").write_text(f"name,duedate\n{L1},{FUTURE}\n")
    time.sleep(1.1)
    third = submit(klass, "alice", mistaken("scaled_dot_product_attention", "no_scale"))
    state = {"third": third, "collect": autograder(klass, "collect", "--lesson", "01")}
    folder = klass["root"] / "autograder" / "submitted" / "alice" / L1
    state["alice_timestamp"] = (folder / "timestamp.txt").read_text()
    state["autograde"] = autograder(klass, "autograde", "--lessons", "01")
    state["rows"] = read_grades(klass)
    state["release"] = autograder(klass, "release-feedback", "--lesson", "01")
    student(klass, "alice", "fetch_feedback", L1)
    state["pages"] = released_pages(klass)
    state["fetched"] = fetched_feedback(klass, "alice")
    state["attempt_folders"] = sorted(p.name for p in (klass["root"] / "autograder" / "attempts" / "alice" / L1).iterdir()
                                      if p.is_dir())
    return state


# -- the tests ------------------------------------------------------------------------------------------
def test_publish_puts_the_lesson_in_outbound_and_a_student_fetches_it(klass, published):
    assert published["code"] == 0, published["out"][-3000:]
    outbound = klass["exchange"] / COURSE_ID / "outbound"
    assert sorted(p.name for p in outbound.iterdir()) == [L1]  # lesson 01 only
    released = klass["root"] / "course" / L1
    want = sorted(str(p.relative_to(released)) for p in released.rglob("*") if p.is_file())
    assert sorted(str(p.relative_to(outbound / L1)) for p in (outbound / L1).rglob("*") if p.is_file()) == want
    assert (outbound / L1 / f"{L1}.ipynb").read_bytes() == (released / f"{L1}.ipynb").read_bytes()
    for who, home in klass["homes"].items():
        assert (home / L1 / f"{L1}.ipynb").read_bytes() == (released / f"{L1}.ipynb").read_bytes(), who


def test_resubmission_the_latest_is_collected_and_nothing_is_lost(klass, submitted, graded):
    code, out = graded["collect"]
    assert code == 0, out[-3000:]
    first, second = submitted["alice"]
    assert first["timestamp"] != second["timestamp"] and first["bytes"] != second["bytes"]
    # the latest submission, with its receipt
    assert graded["alice_timestamp"] == second["timestamp"]
    assert graded["alice_notebook"] == second["bytes"]
    assert "timestamp.txt" in graded["alice_folder"] and f"{L1}.ipynb" in graded["alice_folder"]
    # both submissions still in the exchange, each with its own notebook
    kept = graded["inbound_alice"]
    assert len(kept) == 2, [name for name, _ in kept]
    assert sorted(nb for _, nb in kept) == sorted([first["bytes"], second["bytes"]])
    # bob's only submission collected too
    bob_folder = klass["root"] / "autograder" / "submitted" / "bob" / L1
    assert (bob_folder / "timestamp.txt").read_text() == submitted["bob"][0]["timestamp"]
    # graded: alice has every point of the lesson, bob fewer
    code, out = graded["autograde"]
    assert code == 0, out[-3000:]
    rows = graded["rows"]
    assert set(rows) == {"alice", "bob"}, out[-3000:]
    assert rows["alice"]["status"] == "graded", rows["alice"]
    assert float(rows["alice"]["max_score"]) == pytest.approx(lesson_points())
    assert float(rows["alice"]["score"]) == pytest.approx(lesson_points())
    assert rows["alice"]["attempts"] == "1"  # the blank one was never collected, so never graded
    assert float(rows["bob"]["score"]) < lesson_points()


def test_late_against_the_due_date_and_not_late_before_it(graded, resubmitted):
    rows = graded["rows"]  # due 2000-01-01: every submission is late
    assert rows["alice"]["late"] == "yes" and rows["bob"]["late"] == "yes", (rows["alice"], rows["bob"])
    assert "2 late" in graded["autograde"][1]
    later = resubmitted["rows"]  # due 2999-01-01: the same submission of bob's, and alice's new one, are not
    assert later["bob"]["late"] == "" and later["alice"]["late"] == "", (later["alice"], later["bob"])
    assert later["bob"]["timestamp"] == rows["bob"]["timestamp"]  # the same submission, graded again
    assert "0 late" in resubmitted["autograde"][1]


def test_feedback_goes_back_through_the_exchange_to_its_own_student(klass, submitted, graded, released):
    assert released["code"] == 0, released["out"][-3000:]
    rows = graded["rows"]
    alice_line, bob_line = score_line(rows["alice"]["score"]), score_line(rows["bob"]["score"])
    assert alice_line != bob_line
    second, bob = submitted["alice"][1], submitted["bob"][0]
    # alice's page: her graded submission's timestamp, her score, not bob's
    alice = released["fetched"]["alice"]
    assert list(alice) == [second["timestamp"]], list(alice)
    assert alice_line in alice[second["timestamp"]] and bob_line not in alice[second["timestamp"]]
    bobs = released["fetched"]["bob"]
    assert list(bobs) == [bob["timestamp"]], list(bobs)
    assert bob_line in bobs[bob["timestamp"]] and alice_line not in bobs[bob["timestamp"]]
    # the exchange holds one page per graded submission, named by its secret's hash, not by a name
    assert released["pages"] == sorted([expected_name(second), expected_name(bob)])
    assert not any(name in page for page in released["pages"] for name in ("alice", "bob"))


def test_resubmitting_after_grading_is_a_second_attempt_with_its_own_feedback(klass, submitted, graded, resubmitted):
    code, out = resubmitted["collect"]
    assert code == 0, out[-3000:]
    third = resubmitted["third"]
    assert resubmitted["alice_timestamp"] == third["timestamp"]
    assert len(inbound(klass, "alice")) == 3  # every submission kept in the exchange
    code, out = resubmitted["autograde"]
    assert code == 0, out[-3000:]
    before, after = graded["rows"]["alice"], resubmitted["rows"]["alice"]
    assert float(after["score"]) < float(before["score"]) == pytest.approx(lesson_points())
    assert after["attempts"] == "2" and after["timestamp"] != before["timestamp"]
    assert resubmitted["attempt_folders"] == ["1", "2"]
    assert resubmitted["rows"]["bob"]["attempts"] == "1"  # bob handed in nothing new
    code, out = resubmitted["release"]
    assert code == 0, out[-3000:]
    # the exchange: the new page beside the earlier ones
    second, bob = submitted["alice"][1], submitted["bob"][0]
    assert resubmitted["pages"] == sorted([expected_name(second), expected_name(bob), expected_name(third)])
    # alice fetches the feedback of her new submission, with her new score
    fetched = resubmitted["fetched"]
    assert third["timestamp"] in fetched, list(fetched)
    page = fetched[third["timestamp"]]
    assert score_line(after["score"]) in page and score_line(before["score"]) not in page


def test_collect_with_nothing_submitted_or_without_an_exchange(klass, published):
    code, out = autograder(klass, "collect", "--lesson", "02")
    assert code == 0, out[-3000:]
    assert "nothing submitted" in out and L2 in out, out
    assert not list((klass["root"] / "autograder" / "submitted").glob(f"*/{L2}"))
    empty = klass["tmp"] / "no-class"
    empty.mkdir(exist_ok=True)
    code, out = autograder(klass, "collect", "--lesson", "01", class_dir=empty)
    assert code != 0
    assert str(empty / "exchange") in out, out
    assert not (empty / "exchange").exists()


@pytest.fixture(scope="module")
def handed_in_by_hand(klass, resubmitted):
    """carol emailed her notebook; the instructor put it where submissions go
    (autograder/submitted/carol/01_attention/) and graded her alone. Her page has no receipts
    from the exchange (she never submitted there). Then the lesson's feedback is released afresh."""
    folder = klass["root"] / "autograder" / "submitted" / "carol" / L1
    folder.mkdir(parents=True)
    nbformat.write(solution(L1), str(folder / f"{L1}.ipynb"))
    graded = autograder(klass, "autograde", "--lessons", "01", "--student", "carol")
    for page in (klass["exchange"] / COURSE_ID / "feedback").iterdir():
        page.unlink()  # a fresh release: every page must be put there again
    code, out = autograder(klass, "release-feedback", "--lesson", "01")
    return {"autograde": graded, "code": code, "out": out, "pages": released_pages(klass)}


def test_a_submission_from_outside_the_exchange_does_not_block_the_others_feedback(klass, submitted, resubmitted,
                                                                                   handed_in_by_hand):
    code, out = handed_in_by_hand["autograde"]
    assert code == 0, out[-3000:]
    assert read_grades(klass)["carol"]["status"] == "graded"
    assert not (klass["root"] / "autograder" / "feedback" / "carol" / L1 / "timestamp.txt").exists()
    bob, third = submitted["bob"][0], resubmitted["third"]
    assert handed_in_by_hand["pages"] == sorted([expected_name(bob), expected_name(third)]), handed_in_by_hand["out"]
    assert handed_in_by_hand["code"] == 0, handed_in_by_hand["out"]
    assert "carol" in handed_in_by_hand["out"], handed_in_by_hand["out"]  # the instructor is told whose page stayed


def test_a_submission_in_another_name_or_backdated_is_held_back(tmp_path):
    """hold_back_forged, on an inbound folder made by hand: a submission whose folder another user
    owns, and one whose name gives a time long before the folder was made, move to held/; a
    genuine one stays. (tests/browser/test_class.py has a student do the first for real.)"""
    import pwd
    from datetime import datetime, timezone

    from autograder.exchange import hold_back_forged
    inbound = tmp_path / "encdec" / "inbound"
    inbound.mkdir(parents=True)
    me = pwd.getpwuid(os.geteuid()).pw_name
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    genuine = inbound / f"{me}+{L1}+{now}+aaaa"
    backdated = inbound / f"{me}+{L1}+2000-01-01 00:00:00.000000 UTC+bbbb"
    other = inbound / f"{me}+{L2}+{now}+cccc"
    linked = inbound / f"{me}+{L2}+{now}+dddd"
    for folder in (genuine, backdated, other, linked):
        folder.mkdir()
    secret = tmp_path / "owners-secret.json"
    secret.write_text('{"token": "do not leak"}')
    (linked / f"{L2}.ipynb").symlink_to(secret)  # collect would copy the owner's file as the notebook
    if os.geteuid() == 0:
        os.chown(other, 65534, 65534)  # nobody's folder, in my name
    notes = hold_back_forged(inbound)
    held = tmp_path / "encdec" / "held"
    assert genuine.is_dir()
    assert (held / backdated.name).is_dir() and not backdated.exists()
    assert any("backdated" in n and "bbbb" in n for n in notes)
    assert (held / linked.name).is_dir() and any("holds links" in n and "dddd" in n for n in notes)
    if os.geteuid() == 0:
        assert (held / other.name).is_dir() and any(f"in the name of {me} by" in n for n in notes)
        assert len(notes) == 3
    else:
        assert other.is_dir() and len(notes) == 2
