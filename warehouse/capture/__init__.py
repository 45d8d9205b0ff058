"""Reading one capture, with no database: finding files (:mod:`.files`), the CSV reader (:mod:`.csvfile`), rows
typed and encoded by lines or by columns (:mod:`.rowprep`, :mod:`.arrowprep`), signposts and the oracle's
attribution (:mod:`.signposts`), history's attribution across replays (:mod:`.alignment`), the device log's
frequency (:mod:`.devicelog`), per-op static facts (:mod:`.perffacts`), stored byte formats (:mod:`.packing`),
occurrence counts and place keys; synthetic captures for tests and benchmarks (:mod:`.synthetic`)."""
