"""``python -m parity.cli`` runs the ``parity`` command (as ``python -m parity`` does)."""

import sys

from parity.cli.main import main

sys.exit(main())
