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

.PHONY: help install lab test notebooks release autograde grade validate bench capstone gpu-check test-browser clean

help:
	@echo "make lab          open the course in JupyterLab (students)"
	@echo "make test         install everything and run the whole test suite"
	@echo "make grade        grade your own course/ notebooks (LESSON=05 for one lesson)"
	@echo "make release      regenerate course/ from solutions/ (instructors)"
	@echo "make autograde    grade autograder/submitted/* into autograder/grades.csv (JOBS=N)"
	@echo "make validate     nbgrader validate on course/; fails when a test fails"
	@echo "make capstone     train the PyTorch model (GPU when present) and write a report"
	@echo "make bench        speed and throughput figures, side by side"
	@echo "make test-browser the lessons in JupyterLab, driven in chromium"

# The venv is built once and rebuilt only when the pins or the package metadata change.
install: $(STAMP)
$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=$(LAB_DIR) --ServerApp.port=$(LAB_PORT) $(ROOT_FLAG) $(LAB_ARGS)

# Two runs: everything else on two workers, then the grading suites (marked nbgrader) in one
# process, because they share one graded class and already grade two notebooks at a time.
test: $(STAMP)
	@status=0; \
	$(BIN)/python -m pytest -n 2 -m "not nbgrader" --ignore=tests/browser $(PYTEST_ARGS) || status=1; \
	$(BIN)/python -m pytest -m nbgrader --ignore=tests/browser $(PYTEST_ARGS) || status=1; \
	exit $$status

# JupyterLab in a real browser: Debian's chromium driven by Playwright. Screenshots in screenshots/.
test-browser: $(STAMP)
	$(BIN)/python -m pytest -p no:xdist tests/browser $(PYTEST_ARGS)

# Lessons are written as percent-format sources in authoring/ and built into solutions/;
# the diagrams they embed are drawn into solutions/figures/ by the plotting module.
notebooks: $(STAMP)
	$(BIN)/python tools/nbbuild.py
	$(BIN)/python tools/figures.py

# course/ is generated from solutions/ by nbgrader (generate_assignment), never edited by hand.
release: notebooks
	$(BIN)/python -m autograder release

JOBS ?= 1
autograde: $(STAMP)
	$(BIN)/python -m autograder autograde --jobs $(JOBS)

LESSON ?=
grade: $(STAMP)
	$(BIN)/python -m autograder self $(if $(LESSON),--lesson $(LESSON),)

validate: $(STAMP)
	$(BIN)/python -m autograder validate

bench: $(STAMP)
	$(BIN)/python bench/run.py $(BENCH)

# Train the capstone model (cuda when available, else CPU) and write runs/capstone/report.json.
capstone: $(STAMP)
	$(BIN)/python -m encdec.capstone $(CAPSTONE_ARGS)

# The same default training, forced onto the GPU; fails when there is none.
gpu-check: $(STAMP)
	$(BIN)/python -m encdec.capstone --device cuda --out runs/gpu-check $(CAPSTONE_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
