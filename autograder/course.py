"""Where the course lives, which lessons it has, and what grading needs to know about each."""

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent  # autograder/
ROOT = HERE.parent
SOLUTIONS, COURSE = ROOT / "solutions", ROOT / "course"


def lessons():
    """Every lesson `NN_slug` of solutions/ that has its notebook, in order."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name)
                  and (p / f"{p.name}.ipynb").exists())


def matching(only):
    """The lessons whose name starts with one of `only` (e.g. ["05"]); every lesson when empty."""
    return [lesson for lesson in lessons() if not only or any(lesson.startswith(x) for x in only)]


@dataclass(frozen=True)
class SourceFacts:
    """What grading needs to know about a lesson's source notebook."""

    demo: frozenset  # ids of the cells tagged `demo` (figures, widgets, training runs): skipped when grading
    sources: frozenset  # the source of the course's own code cells (setup and tests), which the audit trusts


def source_facts(lesson):
    import nbformat
    nb = nbformat.read(str(SOLUTIONS / lesson / f"{lesson}.ipynb"), as_version=4)
    demo = {c.get("id") for c in nb.cells if "demo" in c.get("metadata", {}).get("tags", [])}
    sources = {c.source for c in nb.cells if c.cell_type == "code"
               and not c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    return SourceFacts(frozenset(demo), frozenset(sources))
