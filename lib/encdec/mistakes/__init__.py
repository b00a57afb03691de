"""Known-wrong implementations of the exercises, one module per lesson (a package of one module per
exercise where the lesson has outgrown one module), kept beside the reference.

Each entry is a complete implementation with the exercise's own name and signature, plus the
misconception it embodies, in the words the student reads. The checkers use them to name a
student's mistake; the tests prove each one is rejected with its own diagnosis; the mutation
tests paste them into real notebooks and grade them.
"""

from ..checks.catalog import Catalog

CATALOG = Catalog()
mistake = CATALOG.mistake
