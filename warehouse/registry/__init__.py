"""What the data is: the oracle's vocabulary (:mod:`.contract`), the typed op columns and CSV eras
(:mod:`.columns`), column families (:mod:`.families`), groupings and metrics (:mod:`.measures`), the report's op
categories (:mod:`.categories`) and the small codes stored for them (:mod:`.codes`). Pure data and functions: a new
metric, column era or family is an entry here, and the views, rollups and CLI choices follow from it."""
