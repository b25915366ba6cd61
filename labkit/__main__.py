"""Allow `python -m labkit VERB ...`."""

import sys

from labkit.cli import main

sys.exit(main())
