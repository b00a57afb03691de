# Encoder-Decoder Transformers, from NumPy to GPU.
# Two commands set everything up on a fresh machine: `make lab` and `make test`.

PYTHON ?= python3
VENV   := .venv
BIN    := $(CURDIR)/$(VENV)/bin
STAMP  := $(VENV)/.installed
# nbgrader runs `alembic` by name, so the venv's bin must come first on PATH.
export PATH := $(BIN):$(PATH)
export PYTHONNOUSERSITE := 1

ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_PORT  ?= 8888
LAB_ARGS  ?=
LAB_DIR   ?= course

.PHONY: help install lab test notebooks release autograde collect grade grade-stop validate bench capstone gpu-check ablations test-browser clean \
	class class-stop release-feedback export site

help:
	@echo "make lab          open the course in JupyterLab (students)"
	@echo "make test         install everything and run the whole test suite"
	@echo "make grade        grade your own course/ notebooks (LESSON=5 or LESSON=4,5 for some lessons)"
	@echo "make grade-stop   end the grader that make grade keeps ready for 15 minutes"
	@echo "make release      regenerate course/ from solutions/ (instructors)"
	@echo "make autograde    grade autograder/submitted/* into autograder/grades.csv (JOBS=N, STUDENT=, LESSON=, LESSONS=01-05)"
	@echo "make collect      the class's submissions from nbgrader's exchange into autograder/submitted/"
	@echo "                  (ZIP=submissions.zip: an LMS's zip of submissions instead)"
	@echo "make class        a JupyterHub for a class on this machine (root; STUDENTS=3 CLASS_PORT=8000)"
	@echo "make class-stop   stop the class's hub"
	@echo "make release-feedback  the feedback pages back to the students through the exchange"
	@echo "make export       grades.csv and canvas.csv (Canvas's gradebook import) from the gradebook"
	@echo "make validate     nbgrader validate on course/; fails when a test fails"
	@echo "make capstone     train the PyTorch model (GPU when present) and write a report (TASK=numbers: English -> German numbers)"
	@echo "make ablations    train the ablation ladder (reversal task, 3 seeds) into lib/encdec/data/ablations.json"
	@echo "make bench        speed and throughput figures, side by side"
	@echo "make test-browser the lessons in JupyterLab, driven in chromium"
	@echo "make site         the course as a static website in build/site/ (open build/site/index.html)"

# The venv is built once and rebuilt only when the pins or the package metadata change.
install: $(STAMP)
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# A student's JupyterLab: Jupyter reads tools/lab/ before its own configuration, which turns off
# nbgrader's instructor tools and the Jupyter news pop-up, and gives nbgrader a student config.
LAB_CONFIG := $(CURDIR)/tools/lab
# The lab also starts the grader `make grade` uses (autograder/self_server.py), in the background, with every
# lesson's set-up made, for as long as the lab runs: the first `make grade` is as quick as the next ones.
lab: $(STAMP)
	@$(BIN)/python -m autograder self --warm --keep-while $$$$ >/dev/null 2>&1 & \
	JUPYTER_CONFIG_PATH="$(LAB_CONFIG)$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH),)" \
	exec $(BIN)/jupyter lab --notebook-dir=$(LAB_DIR) --ServerApp.port=$(LAB_PORT) $(ROOT_FLAG) $(LAB_ARGS)

# What pip cannot install comes from the system's packages (tools/system_packages.py): bubblewrap, the
# sandbox the grading suites grade in. As root with apt-get it is installed; otherwise the run says
# which package and command, and the tests that need it are skipped, never failed.
# Two runs: everything else on two workers, then the grading suites (marked nbgrader) in one
# process, because they share one graded class and already grade two notebooks at a time.
# The last lines say what was skipped and why.
SKIPS := $(CURDIR)/.pytest_cache/skips.jsonl
test: $(STAMP)
	@$(BIN)/python tools/system_packages.py test
	@mkdir -p $(dir $(SKIPS)); rm -f $(SKIPS); status=0; \
	TEST_SKIPS=$(SKIPS) $(BIN)/python -m pytest -n 2 -m "not nbgrader" --ignore=tests/browser $(PYTEST_ARGS) || status=1; \
	TEST_SKIPS=$(SKIPS) $(BIN)/python -m pytest -m nbgrader --ignore=tests/browser $(PYTEST_ARGS) || status=1; \
	$(BIN)/python tools/system_packages.py summary $(SKIPS); \
	exit $$status

# JupyterLab, the site and a class on JupyterHub in a real browser: Debian's chromium driven by
# Playwright (installed as above where it can be). Screenshots in screenshots/.
test-browser: $(STAMP)
	@$(BIN)/python tools/system_packages.py browser
	@mkdir -p $(dir $(SKIPS)); rm -f $(SKIPS); status=0; \
	TEST_SKIPS=$(SKIPS) $(BIN)/python -m pytest -p no:xdist tests/browser $(PYTEST_ARGS) || status=1; \
	$(BIN)/python tools/system_packages.py summary $(SKIPS); \
	exit $$status

# The course as an offline static website (tools/site/: Sphinx, myst-nb, the book theme): the released
# lessons of course/, never run, the appendices and docs/*.md, into build/site/; no server needed.
site: $(STAMP)
	$(BIN)/python tools/site/build.py --out build/site

# Lessons are written as percent-format sources in authoring/ and built into solutions/;
# the diagrams they embed are drawn into solutions/figures/ by the plotting module.
notebooks: $(STAMP)
	$(BIN)/python tools/nbbuild.py
	$(BIN)/python tools/figures.py

# course/ is generated from solutions/ by nbgrader (generate_assignment), never edited by hand.
release: notebooks
	$(BIN)/python -m autograder release

JOBS ?= 1
# Every kernel runs in a sandbox (bubblewrap, autograder/sandbox.py); where it cannot, autograde
# stops and says what to install. SANDBOX=off grades without it (every row of grades.csv says so);
# SANDBOX_MEMORY=4G, SANDBOX_PROCESSES, SANDBOX_OPEN_FILES, SANDBOX_FILE_SIZE, SANDBOX_CPU_TIME
# change its limits. `make grade` uses it where it runs (SANDBOX=auto).
# STUDENT=bob LESSON=01: regrade only those rows (every other row, page and report entry stays);
# LESSONS=01-05: the assigned lessons (else autograder/assignments.csv, else the lessons submitted).
STUDENT ?=
LESSONS ?=
# DASK=tcp://host:8786: each notebook graded on that Dask cluster's workers (docs/large-classes.md).
DASK ?=
autograde: $(STAMP)
	$(BIN)/python -m autograder autograde --jobs $(JOBS) $(if $(STUDENT),--student "$(STUDENT)",) \
	  $(if $(LESSON),--lesson "$(LESSON)",) $(if $(LESSONS),--lessons "$(LESSONS)",) $(if $(DASK),--dask "$(DASK)",)

# A class on this machine's JupyterHub (tools/class/): its state, nbgrader's exchange included, lives
# in CLASS_DIR. `make class` (as root) creates the instructor and STUDENTS student accounts, releases
# the lessons and starts the hub at http://127.0.0.1:CLASS_PORT; `make class-stop` stops it.
export CLASS_DIR ?= /srv/encdec-class
STUDENTS   ?= 3
CLASS_PORT ?= 8000
# As root: the course's .venv is installed (or brought up to date) here only when root owns the
# course folder; otherwise its owner runs `make install` first, so root never writes into their .venv.
class:
	@if [ "$$(stat -c %u .)" != "$$(id -u)" ] && { [ ! -f $(STAMP) ] || [ requirements.txt -nt $(STAMP) ] || \
	  [ pyproject.toml -nt $(STAMP) ]; }; then \
	  echo "error: the course's environment is missing or out of date: run make install as $$(stat -c %U .), then make class"; \
	  exit 2; fi
	@$(MAKE) --no-print-directory install
	$(BIN)/python tools/class/class_hub.py start --students $(STUDENTS) --port $(CLASS_PORT) \
	  $(if $(LESSONS),--lessons "$(LESSONS)",)

class-stop:
	$(BIN)/python tools/class/class_hub.py stop

# The class's submissions, each student's latest, from nbgrader's exchange into autograder/submitted/
# (LESSON=01 for one lesson); ZIP=submissions.zip: an LMS's "download all submissions" zip
# (Canvas's naming) instead.
collect: $(STAMP)
	$(BIN)/python -m autograder collect $(if $(ZIP),--zip "$(ZIP)",) $(if $(LESSON),--lesson "$(LESSON)",)

# The feedback of the last grading (without hidden tests) into the exchange: students fetch it
# from their Assignments list.
release-feedback: $(STAMP)
	$(BIN)/python -m autograder release-feedback $(if $(LESSON),--lesson "$(LESSON)",)

# Grades out to the LMS: grades.csv and canvas.csv (Canvas's gradebook import layout) in autograder/,
# from the gradebook, without grading anything again.
export: $(STAMP)
	$(BIN)/python -m autograder export

# LESSON=4, LESSON=04, LESSON=4,5 or LESSON=04_cross_attention: grade only those lessons.
LESSON ?=
grade: $(STAMP)
	$(BIN)/python -m autograder self $(if $(LESSON),--lesson "$(LESSON)",)

# `make grade` keeps its grader ready for 15 minutes (autograder/self_server.py); this ends it now.
grade-stop:
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m autograder self --stop; fi

validate: $(STAMP)
	$(BIN)/python -m autograder validate

bench: $(STAMP)
	$(BIN)/python bench/run.py $(BENCH)

# Train the capstone model (cuda when available, else CPU) and write runs/capstone/report.json.
# TASK=numbers: English number words -> German (runs/capstone-numbers/report.json).
TASK ?=
capstone: $(STAMP)
	$(BIN)/python -m encdec.capstone $(if $(TASK),--task $(TASK),) $(CAPSTONE_ARGS)

# The ablation ladder (encdec.ablation_runs): every row, 3 seeds, into lib/encdec/data/ablations.json.
# ABLATIONS_ARGS="--smoke --only 'one head'" for a quick check of the machinery.
ablations: $(STAMP)
	nice -n 10 $(BIN)/python -m encdec.ablation_runs $(ABLATIONS_ARGS)

# The same default training, forced onto the GPU; fails when there is none.
gpu-check: $(STAMP)
	$(BIN)/python -m encdec.capstone --device cuda --out runs/gpu-check $(CAPSTONE_ARGS)

clean: grade-stop
	rm -rf $(VENV) .pytest_cache .hypothesis
