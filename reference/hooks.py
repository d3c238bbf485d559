"""What a witness, or a fork of the reference, may replace: the public hook surface of the reference.

- The step table: ``STEP_TABLE`` maps every ``spec.Step`` to ``async def step(pipeline, state)``, the pipeline
  seen as a ``PipelineHost`` (the members a step may use);
  a ``Pipeline`` subclass replaces entries (``steps = STEP_TABLE | {Step.NORMALIZE: mine}``) and its
  table is checked against ``spec.STEPS`` when the class is defined. ``resolved_step`` adapts a step
  that needs what step 1 resolved.
- ``Pipeline``: its public methods are the hooks the steps call (``prior_identical``, ``trip``,
  ``escaped``, ``context_parts``, ``artifact_writer``, ``context_for``, ``mark_effect``,
  ``parse_result``, ``accepts_structure``, ``metrics_for``, ``unmarked``) and the entries around them (``run_call``,
  ``run_step``, ``qualifies``, ``resume``, ``orphans``, ``recover``...); ``registry_class``,
  ``mcp_class`` and ``bridge_class`` name the parts it is built with.
- ``CallState`` and its records ``Resolved`` (step 1) and ``Prepared`` (step 9); ``ContextParts``,
  the public fields a context is built from.
- The MCP adapter (``McpAdapter`` and what its hooks take; ``connection_lost``, its test of an exception for a
  lost connection), the bridge, the registry, the store
  (``Store``) and its tables, and decision 12's excerpter (``excerpt_parts``).
"""

from toolproof.spec import publish_exports as _publish_exports

from ._bridge import Bridge, bridge_call_id
from ._context import CancellationSignal, ContextParts, ExecutionContext, FileArtifactWriter, ScopedCredentials
from ._excerpt import excerpt_parts
from ._host import PipelineHost, StepFunction, resolved_step
from ._instance import ReferenceImplementation
from ._keys import idempotency_key
from ._mcp import McpAdapter
from ._mcp_catalog import wire
from ._mcp_classify import McpTool
from ._mcp_link import Link, Opening, RemoteTool, connection_lost
from ._persist import invocation_row
from ._pipeline import Pipeline, structure_accepted
from ._policy import Decision
from ._registry import Registry
from ._state import DISPOSITION, CallState, Prepared, Resolved
from ._steps import FINISHING, STEP_TABLE, step_table
from ._store import Store
from ._tables import CatalogHistoryTable, CatalogRow, EventTable, InvocationTable, PinRow, SessionPinTable, dump_json

__all__ = [
    "DISPOSITION",
    "FINISHING",
    "STEP_TABLE",
    "Bridge",
    "CallState",
    "CancellationSignal",
    "CatalogHistoryTable",
    "CatalogRow",
    "ContextParts",
    "Decision",
    "EventTable",
    "ExecutionContext",
    "FileArtifactWriter",
    "InvocationTable",
    "Link",
    "McpAdapter",
    "McpTool",
    "Opening",
    "PinRow",
    "Pipeline",
    "PipelineHost",
    "Prepared",
    "ReferenceImplementation",
    "Registry",
    "RemoteTool",
    "Resolved",
    "ScopedCredentials",
    "SessionPinTable",
    "StepFunction",
    "Store",
    "bridge_call_id",
    "connection_lost",
    "dump_json",
    "excerpt_parts",
    "idempotency_key",
    "invocation_row",
    "resolved_step",
    "step_table",
    "structure_accepted",
    "wire",
]

_publish_exports(globals())
