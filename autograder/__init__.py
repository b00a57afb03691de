"""The course's grader, on top of nbgrader: `python -m autograder <command>` from the repository root.

One job per module:
    cli.py            the command line (release, autograde, self, validate, collect, export…)
    classroom.py      grading a class (make autograde): what is due, collection, grading, the outputs
    due.py            what is due: the assigned lessons with their due dates, and the roster
    collection.py     which file is each student's submission for each lesson
    jobs.py           the typed units: Job, Row and where a run writes (Outputs)
    pipeline.py       grading one job, grading them all on this machine (JOBS=N, progress bar)
    dask_grading.py   grading them all on a Dask cluster (DASK=tcp://…): jobs out, rows back, one writer
    dask_worker.py    a Dask worker's side: one job graded from its own course, checked against the run's hash
    sandbox.py        the sandbox's interface (start, run, Outcome, configure_kernel), from the four below
    sandbox_start.py  probing and starting the sandbox for a run: bubblewrap, the Python paths, the rlimits
    bytecode.py       the course library compiled for the sandbox's read-only view, kept from run to run
    cgroups.py        the cgroups that hold a job's memory and processes
    kernel_cell.py    one job's sandbox cell (folder, kernelspec, sockets) and nbgrader's kernel glue
    timed_process.py  one grading task in a process of its own, with a time limit
    warm.py           the process server's warm-up (GRADE_PATH=fast): imports, each lesson's feedback page
    self_server.py    `make grade` kept warm: the client, and starting the grader that stays ready between runs
    self_server_process.py  that grader: one run at a time, the run's setup (snapshot, zygote…) kept from run to run
    phases.py         where a graded notebook's time goes (kernel start, cells, feedback…), for timings.json
    jail.py           the launcher that starts a graded kernel inside bubblewrap, with its limits
    zygote.py         the run's sandboxed kernel zygote: imports done once, a sandbox of its own for each kernel it forks
    zygote_client.py  the kernelspec of a forked kernel: asks the zygote, puts the kernel in the job's cgroups
    settings.py       the sandbox's mode (SANDBOX=on/auto/off) and limits (SANDBOX_MEMORY, …), GRADE_DASK, GRADE_PATH
    gradebook.py      the course's one state: nbgrader's gradebook, with every attempt beside it
    integrity.py      the private snapshot of the course; restoring changed files; finding the culprit
    nbgrader_glue.py  nbgrader's configuration, API and calls (generate_assignment, autograde, feedback)
    audit.py          the static audit of a submission, before it runs: what it may not do
    audit_rules.py    what the audit flags (modules, calls, attributes) and what it finds (Finding, Audit)
    audit_values.py   the audit's reading of what a name or expression refers to (imports, aliases, getattr…)
    audit_paths.py    the audit's path rules: where a notebook may write (its own folder, /tmp)
    records.py        reading the checkers' structured records out of graded notebooks
    reports.py        grades.csv, the `make grade` table, the cohort report
    feedback.py       the records in the HTML feedback (an nbconvert preprocessor)
    feedback_exporter.py  the feedback page as a whole (nbgrader's template, offline, exercises named)
    feedback_pages.py the pages the course writes itself (failures, a page per student)
    gains.py          the learning gain, from the concept checks before and after each lesson
    similarity.py     answers that are close copies of the reference, for the instructor to judge
    lms_export.py     grades out to the LMS (Canvas's gradebook CSV)
    exchange.py       the course's side of nbgrader's exchange, for a class on a JupyterHub
    course.py         where the course lives and which lessons it has
nbgrader_config.py is nbgrader's own configuration, read by nbgrader's commands run from autograder/.
"""

import sys

# jsonschema, which nbformat imports, builds 38 parsers on import when rfc3987_syntax is installed (it
# comes with jupyter-events), to check the "iri" format that no notebook schema uses: 1.2 s of the
# start of every grading process (make grade waits for two of them). Without the module, jsonschema
# leaves that one format unchecked, as it does wherever the module is not installed.
sys.modules.setdefault("rfc3987_syntax", None)
