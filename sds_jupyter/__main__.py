"""``python -m sds_jupyter``: the same command line as ``sds-jupyter``."""

import sys

from sds_jupyter.cli import main

sys.exit(main())
