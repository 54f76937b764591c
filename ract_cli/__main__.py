"""``python -m ract_cli`` runs the ``ract`` command."""

import sys

from ract_cli.cli.launch import main

sys.exit(main())
