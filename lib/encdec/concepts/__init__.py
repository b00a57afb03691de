"""The concept checks: for every lesson, the concepts it teaches, each asked before the lesson (its
PRE item) and after it (its POST item, parallel: the same concept in other words, with another number
or in another situation). The scores before and after give the learning gain.

    items      Item (a choice or a number, its answer, explanation, catalog keys, computed key) and Concept
    lessonNN   CONCEPTS: the lesson's concepts, in the order the checks ask them
    config     the points the checks are worth (0 unless the course's configuration says otherwise)

The checks themselves (declaration, checker, record) are encdec.checks.concepts; the notebook cells
are written by tools/nbbuild.py; the grader reads the records (autograder/gains.py).
"""

import importlib


def concepts(lesson):
    """The concepts of lesson `lesson` (a number), in the order the checks ask them."""
    return importlib.import_module(f"{__name__}.lesson{int(lesson):02d}").CONCEPTS
