"""Child processes and process-wide tricks, behind one small interface: children that die with their parent and
SIGTERM as an exception (:mod:`.children`), work forked to the other core (:mod:`.fork`, the one way anything is
forked), a pool of spawned workers for ``ingest --jobs`` (:mod:`.pool`), the cycle collector paused
(:mod:`.collector`) and freed heap given back between an ingest's stages (:mod:`.heap`)."""
from warehouse.workers.children import Terminated, die_with_parent, pool_initializer, terminate_as_exception

__all__ = ["Terminated", "die_with_parent", "pool_initializer", "terminate_as_exception"]
