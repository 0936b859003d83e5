"""Entry point: `python3 -m trainlock_engine ...` (see cli.py)."""

import sys

from trainlock_engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
