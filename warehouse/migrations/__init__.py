"""Alembic migrations of the warehouse (shipped in the wheel as ``warehouse.migrations``)."""
