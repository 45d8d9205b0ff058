"""Whole runs in and out: ingest of a file (:mod:`.ingest`) and of a folder on every core (:mod:`.folder`), copy
between warehouses (:mod:`.copy`), the original CSV back (:mod:`.export`), the Parquet lake (:mod:`.lake`), check and
rm (:mod:`.maintenance`), and what older runs lack built at upgrade (:mod:`.derived`)."""
