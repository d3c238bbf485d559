"""The page of what toolproof assumes beyond the ADR, generated from ``spec/`` (``docs/assumptions.md``)."""

from __future__ import annotations

from enum import Enum

import toolproof.spec as spec
from toolproof.spec import ConfigurationError, Rule, load_assumptions, load_catalog, member_doc

ASSUMPTIONS_FILE = "docs/assumptions.md"
"""Where the generated page is checked in, relative to the repository."""


def render_assumptions() -> str:
    """The text of ``docs/assumptions.md``: each topic of ``spec/assumptions.toml`` with the rules it quotes (text
    and interpretation from ``spec/rules.toml``), the spec values it names and its own facts, then every other
    interpretation in the catalog.

    Raises:
        ConfigurationError: a topic names something ``toolproof.spec`` does not export.
    """
    catalog = load_catalog()
    topics = load_assumptions().topics
    lines = [
        "# What toolproof assumes beyond ADR-0021",
        "",
        "Generated from `spec/` by `toolproof rules --interpretations`; do not edit. The topics live in",
        "`spec/assumptions.toml`, rule texts and interpretations in `spec/rules.toml`, names and their meanings in",
        "the `toolproof.spec` enums. Where the ADR is silent, or leans on plan sections and other ADRs we do not",
        "have, the suite judges by these readings; an implementation that reads the ADR otherwise fails the rules",
        "named here, and the fix may be ours.",
    ]
    quoted: set[str] = set()
    for topic in topics:
        lines += ["", f"## {topic.title}", ""]
        if topic.text:
            lines += [topic.text, ""]
        for rule_id in topic.rules:
            lines.append(_rule(catalog.rule(rule_id)))
            quoted.add(rule_id)
        if topic.rules:
            lines.append("")
        for name in topic.names:
            lines += _name(name)
        while lines[-1] == "":
            lines.pop()
    others = [rule for rule in catalog.rules if rule.interpretation and rule.id not in quoted]
    if others:
        lines += ["", "## Every other interpretation", ""]
        lines += [_rule(rule) for rule in others]
    everywhere = [rule for rule in catalog.rules if rule.everywhere]
    if everywhere:
        lines += [
            "",
            "## Checked in every scenario",
            "",
            "The harness checks these rules on everything any scenario observes, whatever rule the scenario itself",
            "judges; a violation seen there fails the rule in that scenario's cell.",
            "",
        ]
        lines += [f"- **{rule.id}**: {rule.everywhere}" for rule in everywhere]
    review = [rule for rule in catalog.rules if rule.review_only]
    lines += [
        "",
        "## Review-only clauses",
        "",
        "A clause no run can judge is its own rule, marked `review_only` in `spec/rules.toml` with the reason; no",
        "scenario cites it and every run reports it review-only, never pass. A reviewer judges it by reading the",
        "implementation.",
        "",
    ]
    lines += [f"- **{rule.id}** ({rule.profile.value}): {rule.text}\n  Why: {rule.review_only}" for rule in review]
    if not review:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def _rule(rule: Rule) -> str:
    text = f"- **{rule.id}** ({rule.profile.value}): {rule.text}"
    if rule.interpretation:
        text += f"\n  Our reading: {rule.interpretation}"
    return text


def _name(name: str) -> list[str]:
    if name not in spec.__all__:
        raise ConfigurationError(
            f"spec/assumptions.toml names {name!r}, which toolproof.spec does not export: name an exported value"
        )
    value = getattr(spec, name)
    if isinstance(value, type) and issubclass(value, Enum):
        lines = [f"`spec.{name}`:", "", "| Value | Meaning |", "| --- | --- |"]
        lines += [f"| `{member.value}` | {member_doc(member)} |" for member in value]
        return [*lines, ""]
    return [f"`spec.{name}` = `{value!r}`", ""]
