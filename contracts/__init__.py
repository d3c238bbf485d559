"""toolproof.contracts: the tool-author contract suite (``check_tool``), its CLI behaviour and pytest fixture."""

from toolproof.spec import publish_exports as _publish_exports

from ._arguments import arguments_strategy
from ._check import DEFAULT_SETTINGS, PYTHON_BLIND_SPOTS, assert_conforms, check_tool, load_tool
from ._cli import EXIT_BAD_INPUT, EXIT_CONFORMS, EXIT_FINDINGS, load_factory, run_check_tool
from ._confine import confinement_unavailable
from ._context import ContractContext
from ._example import GRACE_S, NORMAL_DEADLINE_S, PROBE_DEADLINE_S
from ._findings import CONTRACT_RULES, PROVISIONAL_RULES, ContractReport, ContractRule, Finding, rule_text
from ._leftovers import AFTER_RETURN_S
from ._options import KeyCarrier, KeyPlace, Observation
from ._transport import IDEMPOTENCY_HEADER, REMOTE_ERROR_TEXT, SAFE_METHODS

__all__ = [
    "AFTER_RETURN_S",
    "CONTRACT_RULES",
    "DEFAULT_SETTINGS",
    "EXIT_BAD_INPUT",
    "EXIT_CONFORMS",
    "EXIT_FINDINGS",
    "GRACE_S",
    "IDEMPOTENCY_HEADER",
    "NORMAL_DEADLINE_S",
    "PROBE_DEADLINE_S",
    "PROVISIONAL_RULES",
    "PYTHON_BLIND_SPOTS",
    "REMOTE_ERROR_TEXT",
    "SAFE_METHODS",
    "ContractContext",
    "ContractReport",
    "ContractRule",
    "Finding",
    "KeyCarrier",
    "KeyPlace",
    "Observation",
    "arguments_strategy",
    "assert_conforms",
    "check_tool",
    "confinement_unavailable",
    "load_factory",
    "load_tool",
    "rule_text",
    "run_check_tool",
]

_publish_exports(globals())
