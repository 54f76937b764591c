"""``python -m ract_cli`` runs the ``ract`` command."""

import sys

from .cli.app import main

sys.exit(main())
