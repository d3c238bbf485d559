"""Decision 15: a batch runs in parallel only when every member qualifies; otherwise wholly in proposal order."""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import IdempotencyClass, SideEffect, ToolKind, ToolSpec

from ._expect import Problems


def parallel_allowed(members: Sequence[ToolSpec | None]) -> bool:
    """D15.3: every member resolved, READ_ONLY, IDEMPOTENT and not CONTROL (an unknown member never qualifies)."""
    return all(
        spec is not None
        and spec.side_effect is SideEffect.READ_ONLY
        and spec.idempotency is IdempotencyClass.IDEMPOTENT
        and spec.kind is ToolKind.ACTION
        for spec in members
    )


def sequential_problems(order: Sequence[tuple[str, str]], proposal: Sequence[str]) -> Problems:
    """D15.4: executions of a non-qualifying batch never overlap and follow proposal order."""
    running: str | None = None
    seen: list[str] = []
    for event, call_id in order:
        if event == "start":
            if running is not None and running != call_id:
                return [("D15.4", f"{call_id} started while {running} was running; the batch does not qualify")]
            running = call_id
            if not seen or seen[-1] != call_id:
                seen.append(call_id)
        elif running == call_id:
            running = None
    expected = [c for c in proposal if c in seen]
    if seen != expected:
        return [("D15.4", f"model allowed the execution order {expected}, implementation gave {seen}")]
    return []
