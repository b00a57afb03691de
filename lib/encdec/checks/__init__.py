"""Checkers used by the notebooks' nbgrader test cells: tests that teach.

A test cell imports its checker from the lesson's module, e.g.
`from encdec.checks.lesson01 import check_softmax`. The modules, from the bottom up:

    catalog    Mistake and Catalog: the known-wrong implementations (filled by encdec.mistakes)
    record     where a check's structured record goes (displayed in a kernel, collected in tests)
    running    running student code safely: warnings, prints and errors caught, delegation refused
    comparing  comparing an answer's values with the reference's (type, shape, first differing index)
    cases      Case (one input to try) and Attempt (one case as the probes see it)
    matching   matching a failure against the catalog (diagnose, diagnose_error)
    causes     the Checker's diagnosis of failed parts (a mixin): catalog, probes, repair, tracer
    core       the Checker that checks the parts, scores them, reports and records
    exercises  each graded exercise declared once: number, title, points, answer, checker
    quiz       the base of the questions answered with data: orderings and the tag quiz
    ordering   put the steps of a mechanism in order
    fixtures   seeded generators, random models and parameters, padded batches
    guard      the snapshot of what the checks rely on, verified before every score
    lessonNN   each lesson's exercises and their checkers (lesson02, lesson03 and lesson05 to lesson10 are packages:
               a module per exercise or group of exercises, the names re-exported by the package)

This package imports none of them itself, so that `encdec.mistakes` can use the catalog alone.
"""
