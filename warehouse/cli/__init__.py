"""The ``warehouse`` command: a thin skin over the library. Each command validates its arguments, calls one method of
:class:`warehouse.Warehouse` and renders the result; every :class:`~warehouse.errors.WarehouseError` becomes one
``Error: ...`` line. The group and the options commands share are in :mod:`.base`; the commands on runs, across runs
and on the warehouse itself in :mod:`.runs`, :mod:`.history` and :mod:`.admin`."""
from warehouse.cli import admin, history, runs  # noqa: F401 (each registers its commands on the group)
from warehouse.cli.base import cli, main

__all__ = ["cli", "main"]
