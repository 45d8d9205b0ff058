"""``python -m warehouse`` is the ``warehouse`` command."""
from warehouse.cli import main

main()
