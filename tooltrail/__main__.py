"""`python -m tooltrail`: the `tooltrail` command (collector/cli.py)."""

import sys

from tooltrail.collector.cli import main

if __name__ == "__main__":
    sys.exit(main())
