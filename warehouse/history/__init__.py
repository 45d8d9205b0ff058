"""Across runs: series read from the rollups (:mod:`.series`), capture quality (:mod:`.quality`), the change-point
detector (:mod:`.changepoints`), the whole history's changes (:mod:`.changes`), the gate (:mod:`.gate`), trend,
compare, triage and Bound changes."""
