"""Child processes and process-wide tricks, behind one small interface: children that die with their parent and
SIGTERM as an exception (:mod:`.children`), work forked to the other core (:mod:`.fork`), and freed heap given back
(:mod:`.heap`)."""
from warehouse.workers.children import Terminated, die_with_parent, pool_initializer, terminate_as_exception

__all__ = ["Terminated", "die_with_parent", "pool_initializer", "terminate_as_exception"]
