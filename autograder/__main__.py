"""`python -m autograder <command>`: the course's grader (see autograder/cli.py)."""

import sys

from autograder.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
