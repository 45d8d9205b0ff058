"""Alembic revisions, named ``NNNN_<slug>.py``."""
