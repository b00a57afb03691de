"""`python -m encdec.capstone` (also under torchrun): see encdec.capstone.cli."""

import sys

from .cli import main

sys.exit(main())
