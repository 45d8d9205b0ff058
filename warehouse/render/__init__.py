"""Rendering: every result of the application layer (:class:`warehouse.Warehouse`) as text, Markdown, CSV and JSON,
one module per result; the CLI prints what these give and the dashboard's templates only lay it out.

- :mod:`.rows`: rows of values (``sql``, tables of any result): aligned text, CSV, JSON, NDJSON, Markdown, and the
  one number and time format of every output (:func:`plain`);
- :mod:`.report`: the OPT_BASELINE document, byte for byte as profile_summary.py writes it;
- :mod:`.perf`: tt-perf-report's per-op table; :mod:`.compare`, :mod:`.trend`, :mod:`.regressions`,
  :mod:`.changes`: the history results; :mod:`.admin`: runs, ingest lines, triage decisions, the schema.
"""
from warehouse.render.rows import (markdown, plain, plain_row, records, render, stream, table, to_csv, to_json,
                                   within_budget)

__all__ = ["markdown", "plain", "plain_row", "records", "render", "stream", "table", "to_csv", "to_json",
           "within_budget"]
