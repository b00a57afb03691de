"""The points the concept checks are worth: 0 unless the course's configuration says otherwise.

The configuration is autograder/concept_checks.toml, beside nbgrader's own configuration:

    before = 0          # the check before each lesson: earned by answering every question
    after = 0           # the check after each lesson: each right answer earns its share
    [lesson.05]         # one lesson otherwise
    after = 2

The declarations read it when they are made (encdec.checks.concepts), so the notebook's test cells
(written by `make notebooks`, released by `make release`), the checkers' defaults and the tests that
compare them all agree. Without the file (a copy of the library on its own) every check is worth 0.
"""

import numbers
import tomllib
from pathlib import Path

PHASES = ("before", "after")
CONFIG = Path(__file__).resolve().parents[3] / "autograder" / "concept_checks.toml"


def _points(value, where):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:
        raise ValueError(f"{where}: the points of a concept check must be a number >= 0, got {value!r}")
    return value


def points(lesson, phase, path=None):
    """The points of lesson `lesson`'s check `phase` ("before" or "after")."""
    if phase not in PHASES:
        raise ValueError(f"a concept check is 'before' or 'after' the lesson, got {phase!r}")
    path = Path(path) if path is not None else CONFIG
    if not path.is_file():
        return 0
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    unknown = set(data) - {*PHASES, "lesson"}
    if unknown:
        raise ValueError(f"{path}: unknown settings {sorted(unknown)}; write before = N, after = N, "
                         "or a [lesson.NN] table")
    value = data.get(phase, 0)
    own = data.get("lesson", {}).get(f"{int(lesson):02d}", {})
    if not isinstance(own, dict) or set(own) - set(PHASES):
        raise ValueError(f"{path}: [lesson.{int(lesson):02d}] may set only before and after")
    if phase in own:
        return _points(own[phase], f"{path}: [lesson.{int(lesson):02d}] {phase}")
    return _points(value, f"{path}: {phase}")
