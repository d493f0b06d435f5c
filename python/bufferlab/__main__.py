"""`python -m bufferlab` is the `bufferlab` command."""

import sys

from .cli import main

sys.exit(main())
