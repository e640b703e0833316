"""python -m iopulse: the iopulse command line."""
import sys

from .cli import main

sys.exit(main())
