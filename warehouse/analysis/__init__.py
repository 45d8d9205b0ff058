"""One run's figures: the OPT_BASELINE report (:mod:`.report`), tt-perf-report's per-op table (:mod:`.perf`,
:mod:`.perfadvice`, :mod:`.perfsummary`) and the per-run rollups history reads (:mod:`.rollups`, computed by
:mod:`.rollupcalc`)."""
