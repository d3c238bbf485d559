"""Decision 17: the bridge."""

from __future__ import annotations

import hashlib
import uuid

from toolproof.reference.hooks import Bridge, Pipeline, ReferenceImplementation, bridge_call_id
from toolproof.spec import ProposedCall, ScriptRequest

from ._common import impl


class _RandomIds(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        return f"script-{uuid.uuid4().hex[:16]}-{ordinal}"  # The mistake: a fresh id per call.


class _Random(Pipeline):
    bridge_class = _RandomIds


def random_call_ids() -> ReferenceImplementation:
    """D17 "synthesizes call_id from the script hash and a bridge-counted call ordinal": call ids are random (with
    the ordinal appended), so a replayed script never deduplicates at step 8."""
    return impl("d17-random-call-ids", _Random)


class _ToolOnlyDivergence(Bridge):
    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        if recorded is None or recorded.tool_name == call.tool_name:  # The mistake: arguments not compared.
            return ""
        return f"the script diverged on replay at ordinal {ordinal}: it now calls {call.tool_name}"


class _Divergence(Pipeline):
    bridge_class = _ToolOnlyDivergence


def divergence_checks_tool_only() -> ReferenceImplementation:
    """D17 replay safety: divergence compares only the tool name at an ordinal, so a replay calling the same tool
    with other arguments is not stopped (it is answered with the recorded outcome of the old arguments)."""
    return impl("d17-divergence-tool-only", _Divergence)


class _RefHash(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        # The mistake: the "script hash" is the hash of its reference, not of its content.
        return bridge_call_id(hashlib.sha256(request.script.encode()).hexdigest(), ordinal)


class _ScriptRefHash(Pipeline):
    bridge_class = _RefHash


def script_hash_of_reference_only() -> ReferenceImplementation:
    """D17 "call_id from the script hash": the hash covers the script's reference (package.module:function) but not
    its source, so an edited script under the same reference replays the old script's outcomes."""
    return impl("d17-script-hash-reference-only", _ScriptRefHash)


class _WholeScriptOrdinal(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        # The mistake: the ordinal is taken from the run's recorded calls of this step (store), not counted.
        rows = [r for r in self.pipeline.store.invocations(request.run_id) if r.step_number == request.step_number]
        return bridge_call_id(digest, len({r.call_id for r in rows}) + 1)


class _StoreOrdinal(Pipeline):
    bridge_class = _WholeScriptOrdinal


def ordinal_from_store_not_counted() -> ReferenceImplementation:
    """D17 "a bridge-counted call ordinal": the ordinal is derived from the calls already recorded in this step, so
    on replay every call gets a fresh ordinal past the recorded ones and nothing deduplicates."""
    return impl("d17-ordinal-from-store", _StoreOrdinal)
