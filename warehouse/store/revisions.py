"""What this code knows without importing SQLAlchemy or Alembic: the default warehouse file and the migrations'
revisions (every command checks the head; the light read path of :mod:`warehouse.store.lite` does too)."""
from __future__ import annotations

import re
from pathlib import Path

from warehouse.errors import WarehouseError

DEFAULT_DB = "warehouse.db"


def migrations_dir() -> Path:
    """The Alembic script directory (``warehouse/migrations``, in a source checkout and an installed wheel alike)."""
    here = Path(__file__).resolve().parent.parent  # (warehouse/, above store/)
    cand = here / "migrations"
    if (cand / "env.py").exists():
        return cand
    raise WarehouseError("the Alembic migrations are missing from this installation; reinstall the package")


_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def known_revisions() -> list[str]:
    """Every revision this code knows, oldest first, from the file names alone (revisions are linear and named
    ``NNNN_<slug>.py``, revision id ``NNNN``; a test holds this equal to Alembic's view): every command checks
    the head, and importing Alembic to parse the revisions costs more than most commands."""
    return sorted(m.group(1) for p in (migrations_dir() / "versions").iterdir()
                  if (m := _REVISION_FILE.match(p.name)))


def head_revision_fast() -> str:
    """The head revision, from the file names (see :func:`known_revisions`)."""
    return known_revisions()[-1]
