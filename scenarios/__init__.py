"""toolproof.scenarios: executable scenarios, one module per ADR decision, judged per rule.

Scenarios talk to the Implementation port only; they never import an implementation.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._exploration import PROFILE_VARIABLE, PROFILES, Exploration, ExplorationError, selected_exploration
from ._harness import USER_ITEM, Harness, Session, describe
from ._plugin import PLUGIN, ResultCollector, scenario_names
from ._shard import SHIPPED as CELL_SECONDS
from ._shard import Shard, ShardSelector, assign, cell_key, weights, write_shipped

__all__ = [
    "CELL_SECONDS",
    "PLUGIN",
    "PROFILES",
    "PROFILE_VARIABLE",
    "USER_ITEM",
    "Exploration",
    "ExplorationError",
    "Harness",
    "ResultCollector",
    "Session",
    "Shard",
    "ShardSelector",
    "assign",
    "cell_key",
    "describe",
    "scenario_names",
    "selected_exploration",
    "weights",
    "write_shipped",
]

_publish_exports(globals())
