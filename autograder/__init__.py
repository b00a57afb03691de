"""The course's grader, on top of nbgrader: `python -m autograder <command>` from the repository root.

One job per module:
    cli.py            the command line (release, autograde, self, validate)
    pipeline.py       typed jobs and rows; grading one job, grading them all (JOBS=N, progress bar)
    sandbox.py        one grading task in a process of its own, with a time limit; its kernel in bubblewrap
    jail.py           the launcher that starts a graded kernel inside bubblewrap, with its limits
    settings.py       the sandbox's mode (SANDBOX=on/auto/off) and limits (SANDBOX_MEMORY, …)
    integrity.py      the private snapshot of the course; restoring changed files; finding the culprit
    nbgrader_glue.py  nbgrader's configuration, API and calls (generate_assignment, autograde, feedback)
    audit.py          the static audit of a submission, before it runs: what it may not do
    audit_values.py   the audit's reading of what a name or expression refers to (imports, aliases, getattr…)
    audit_paths.py    the audit's path rules: where a notebook may write (its own folder, /tmp)
    records.py        reading the checkers' structured records out of graded notebooks
    reports.py        grades.csv, the `make grade` table, the cohort report
    feedback.py       the records in the HTML feedback (an nbconvert preprocessor)
    course.py         where the course lives and which lessons it has
nbgrader_config.py is nbgrader's own configuration, read by nbgrader's commands run from autograder/.
"""
