"""Alembic environment: drop every view, run the migrations, recreate the views when at head (and then build the
derived rows that are computed through them, for runs that lack them).

Views are not in ``target_metadata``; they are defined once in :mod:`warehouse.store.views`. Dropping them first lets
batch mode on SQLite rebuild a table that a view reads (a known Alembic limitation).
"""
from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from warehouse.store.schema import metadata
from warehouse.store.dialect import declared_for
from warehouse.store.views import create_views, drop_views, not_a_view

config = context.config


def _run(connection) -> None:
    # transactional_ddl: SQLite can roll DDL back too; one transaction for the whole upgrade means that a
    # concurrent process sees the database before or after it, never half-way (Alembic assumes otherwise).
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True, compare_type=True,
                      include_name=not_a_view, include_object=declared_for(connection.dialect.name),
                      transactional_ddl=True)
    with context.begin_transaction():
        drop_views(connection)
        context.run_migrations()
        script = context.script
        if context.get_context().get_current_revision() == script.get_current_head():
            create_views(connection)
            # derived rows of older runs, computed by the head's code (the rollups, the stored report parts)
            from warehouse.runs.derived import backfill
            backfill(connection)


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as conn:
        _run(conn)
        conn.commit()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
