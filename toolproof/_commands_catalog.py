"""``toolproof rules`` and ``toolproof impls``: what there is to run, the rules and the implementations."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.table import Table

from toolproof.spec import Profile, Rule, available_implementations, load_catalog

from ._console import out


def rules(
    as_json: Annotated[bool, typer.Option("--json", help="Print the catalog as JSON.")] = False,
    profile: Annotated[Profile | None, typer.Option(help="Only rules of this profile.")] = None,
    interpretations: Annotated[
        bool,
        typer.Option(
            "--interpretations",
            help="Print instead the page of what toolproof assumes beyond the ADR (Markdown, as docs/assumptions.md):"
            " the policy matrix, control suspension, refused calls' rows and events, cancellation order, clocks,"
            " the idempotency key, event and metric names, and every interpretation.",
        ),
    ] = False,
) -> None:
    """List the rule catalog: every rule of the ADR's 18 decisions, with its ID, profile and text.

    \b
    Examples:
      toolproof rules --profile recovery
      toolproof rules --json
    """
    if interpretations:
        from toolproof.reports import render_assumptions

        sys.stdout.write(render_assumptions())
        return
    catalog = load_catalog()
    chosen = [r for r in catalog.rules if profile is None or r.profile is profile]
    if as_json:
        payload = {
            "decisions": [d.model_dump() for d in catalog.decisions],
            "rules": [r.model_dump(mode="json") | {"decision": r.decision} for r in chosen],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    if not out.is_terminal:  # A pipe gets one line per rule, tab-separated, for scripts.
        for rule in chosen:
            sys.stdout.write(f"{rule.id}\t{rule.profile.value}\t{_listed(rule)}\n")
        return
    table = Table("id", "profile", "rule", show_lines=False, expand=True)
    for rule in chosen:
        table.add_row(rule.id, rule.profile.value, _listed(rule))
    out.print(table)


def _listed(rule: Rule) -> str:
    """A rule's text as ``toolproof rules`` lists it: a review-only rule says so, and why."""
    return f"{rule.text} [review-only: {rule.review_only}]" if rule.review_only else rule.text


def impls() -> None:
    """List implementations registered under the toolproof.implementations entry point, and the witnesses.

    Each line is a name --impl takes.

    \b
    Example:
      toolproof impls
    """
    for name in available_implementations():
        out.print(name, markup=False)
    try:
        from toolproof.reference.witnesses import WITNESSES
    except ImportError:  # pragma: no cover - the reference is part of the distribution
        return
    for witness in WITNESSES.values():
        out.print(
            f"toolproof.reference.witnesses:{witness.name}  (witness; breaks {', '.join(witness.breaks)}"
            + (f", seen through {', '.join(witness.through)}" if witness.through else "")
            + f": {witness.defect})",
            markup=False,
        )
