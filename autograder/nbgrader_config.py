"""nbgrader configuration for the course. nbgrader reads this file from the current folder, so
run nbgrader's own commands from autograder/ (`python -m autograder`, which the Makefile runs, does this for you):

    cd autograder && nbgrader generate_assignment 01_attention --force
    cd autograder && nbgrader autograde 01_attention

Layout: solutions/ is the source directory, course/ the release directory, and lesson NN_slug
lives at {solutions,course}/NN_slug/NN_slug.ipynb. Submissions go to
autograder/submitted/<student>/<lesson>/<lesson>.ipynb.
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by nbgrader)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "autograder")

c.CourseDirectory.course_id = "encdec"
c.CourseDirectory.root = ROOT
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "course"
c.CourseDirectory.submitted_directory = "autograder/submitted"
c.CourseDirectory.autograded_directory = "autograder/autograded"
c.CourseDirectory.feedback_directory = "autograder/feedback"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".*"]

# Release: the stub students see in place of each solution.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.enforce_metadata = True

# Grading: put back tampered or deleted test cells, time out runaway cells.
c.OverwriteCells.add_missing_cells = True
c.Execute.timeout = int(os.environ.get("GRADE_CELL_TIMEOUT", "60"))
c.Execute.interrupt_on_timeout = True
# Before the first cell, snapshot what the checks rely on (encdec.checks.guard), so that a
# notebook that replaces NumPy functions, checkers or reference code scores zero; and tell the
# checks that the grader runs them (encdec.checks.mode): every cell has run already, so a missing
# answer is missing from the notebook, not a cell the student has yet to run.
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.exec_lines=['import encdec.checks.mode as _course_mode; _course_mode.start_grading()', "
    "'import encdec.checks.guard as _course_guard; _course_guard.take()']",
]

# Feedback: never show the hidden tests' source; show each check's record as a table; build the
# page with formulas as MathML (it reads offline) and the exercises named (feedback_exporter.py).
# nbgrader's own `generate_feedback`, run from autograder/, imports them from the repository root.
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "autograder.feedback.RecordsAsHTML",
]
c.GenerateFeedback.exporter_class = "autograder.feedback_exporter.FeedbackExporter"

# Late work: the due dates are nbgrader's (autograder/assignments.csv, imported into the gradebook,
# or `nbgrader db assignment add NAME --duedate=...`), the time is nbgrader's timestamp.txt beside
# a submission. The penalty is nbgrader's LateSubmissionPlugin: 'none' (late work is marked, not
# penalised) or 'zero'; a plugin of your own goes in c.AssignLatePenalties.plugin_class.
c.LateSubmissionPlugin.penalty_method = "none"

# A class on a JupyterHub (make class, tools/class/): nbgrader's exchange, where lessons are
# released, submissions collected and feedback returned (autograder/exchange.py).
c.Exchange.root = os.path.join(os.environ.get("CLASS_DIR", "/srv/encdec-class"), "exchange")
