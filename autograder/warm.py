"""The grader's process server, warmed once per run (GRADE_PATH=fast, the default).

Every job is graded in a child forked from a server (timed_process.py); what the server holds, each
child has without doing it again. Imported in that server, this module does the work every job would
otherwise repeat: it imports what grading uses (nbgrader's converters and preprocessors, nbconvert's
HTML exporter, the database's mappings), and builds the feedback page of each lesson the run grades
from its source notebook (AUTOGRADER_WARM lists them), which compiles the page's templates, the
code highlighter's and the Markdown reader's patterns and converts the lesson's formulas to MathML,
all kept in memory. Nothing of a student's is here: the server starts before any job.
"""

import os
import sys


def _warm():
    import nbformat
    import nbgrader.api
    import nbgrader.converters  # noqa: F401
    import nbgrader.preprocessors  # noqa: F401
    import sqlalchemy.orm

    from . import feedback, feedback_exporter, nbgrader_glue  # noqa: F401
    sqlalchemy.orm.configure_mappers()
    assert nbgrader.api.Gradebook
    notebooks = [p for p in os.environ.get("AUTOGRADER_WARM", "").split(os.pathsep) if p]
    config = nbgrader_glue.feedback_config()
    for path in notebooks:
        try:
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:  # what nbgrader's GetGrades gives the page
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if meta.get("grade"):
                    meta["score"], meta["max_score"] = 0.0, float(meta.get("points", 0))
            resources = {"nbgrader": {"notebook": os.path.basename(path)[:-6], "score": 0.0, "max_score": 0.0,
                                      "late_penalty": 0.0}}
            feedback_exporter.FeedbackExporter(config=config).from_notebook_node(nb, resources)
        except Exception as exc:  # a warm-up that fails costs time, never a grade
            print(f"autograder.warm: {path}: {type(exc).__name__}: {exc}", file=sys.stderr)


_warm()
