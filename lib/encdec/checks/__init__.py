"""Checkers used by the notebooks' nbgrader test cells: tests that teach.

A test cell imports its checker from the lesson's module, e.g.
`from encdec.checks.lesson01 import check_softmax`. The modules, from the bottom up:

    catalog    Mistake and Catalog: the known-wrong implementations (filled by encdec.mistakes)
    record     where a check's structured record goes (displayed in a kernel, collected in tests)
    core       running student code safely, comparing, and the Checker that reports and records
    exercises  each graded exercise declared once: number, title, points, answer, checker
    quiz       the base of the questions answered with data: orderings and the tag quiz
    ordering   put the steps of a mechanism in order
    fixtures   seeded generators, random models and parameters, padded batches
    guard      the snapshot of what the checks rely on, verified before every score
    lessonNN   each lesson's exercises and their checkers (lesson06 to lesson10 are packages:
               a module per exercise or group of exercises, the names re-exported by the package)

This package imports none of them itself, so that `encdec.mistakes` can use the catalog alone.
"""
