"""``python -m ract_cli`` runs the ``ract`` command."""

from ract_cli.cli.launch import run

run()
