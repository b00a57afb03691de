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


def chosen(specs):
    """The lessons that `specs` name (the values of --lesson, each one or several lessons separated
    by commas or spaces: "4", "04", "4,5", "01-05", "04_cross_attention"), in course order; every lesson when
    there are none. A name that is no lesson raises ValueError with the list of lessons."""
    wanted = [word for spec in specs or () for word in spec.replace(",", " ").split()]
    wanted = [str(k) for word in wanted for k in _expand_range(word)]
    every = lessons()
    if not wanted:
        return every
    picked, unknown = set(), []
    for word in wanted:
        if word.isdigit():  # "4", "04" and "004" are Lesson 4; "1" is not Lesson 10
            hits = [lesson for lesson in every if int(lesson.split("_")[0]) == int(word)]
        else:
            hits = [lesson for lesson in every if lesson.startswith(word)]
        picked.update(hits)
        if not hits:
            unknown.append(word)
    if unknown:
        raise ValueError(f"no lesson {', '.join(unknown)}. The lessons are {', '.join(every)}; "
                         "name them by number (4, 04, or several: 4,5) or by name (04_cross_attention).")
    return [lesson for lesson in every if lesson in picked]


def _expand_range(word):
    """'01-05' -> 1, 2, 3, 4, 5 (a range of lesson numbers, both ends included); any other word as it is."""
    bounds = re.fullmatch(r"(\d+)-(\d+)", word)
    return range(int(bounds[1]), int(bounds[2]) + 1) if bounds else [word]


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


def points(lesson, solutions=SOLUTIONS):
    """{grade_id: points} of a lesson's graded code cells, in notebook order, from its source notebook:
    what nbgrader's generate_assignment records as each grade cell's max_score."""
    import nbformat
    nb = nbformat.read(str(Path(solutions) / lesson / f"{lesson}.ipynb"), as_version=4)
    return {c.metadata.nbgrader.grade_id: float(c.metadata.nbgrader.get("points", 0)) for c in nb.cells
            if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("grade")}
