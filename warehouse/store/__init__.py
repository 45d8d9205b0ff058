"""The database: tables (:mod:`.schema`), every SQLite / PostgreSQL difference (:mod:`.dialect`), engines,
migrations and snapshots (:mod:`.db`), the summary views (:mod:`.views`, typed in :mod:`.view_types`), the export
cells (:mod:`.cells`), listing and resolving runs (:mod:`.listing`), read-only user SQL and its guard
(:mod:`.query`, :mod:`.sqlguard`, :mod:`.roles`), the light read path (:mod:`.lite`, :mod:`.revisions`), stored
report documents and perf shapes."""
