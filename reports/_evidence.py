"""A failure's evidence: the facts and the command a reviewer reproduces it from, and its text made safe to embed."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from toolproof.spec import CrashPoint

# Characters XML 1.0 cannot carry at all and HTML reports as parse errors: C0 controls other than
# tab, line feed and carriage return, DEL, lone surrogates, and the two non-characters U+FFFE/U+FFFF.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")

# Seeds as hypothesis and scenarios print them, most specific first: the decorator to paste beats a bare number.
_SEEDS: tuple[re.Pattern[str], ...] = (
    re.compile(r"@reproduce_failure\([^)\n]*\)"),
    re.compile(r"@seed\(\s*-?\d+\s*\)"),
    re.compile(r"--hypothesis-seed[= ](\S+)"),
    re.compile(r"\bseed\s*[=:]\s*(-?\w+)", re.IGNORECASE),
)
_CRASH_POINT = re.compile(r"\b(" + "|".join(re.escape(point.value) for point in CrashPoint) + r")\b")


def printable(text: str) -> str:
    """``text`` with every character XML cannot carry shown as a Python escape (``\\x1b``), everything else verbatim."""
    return _UNPRINTABLE.sub(_escape, text)


def evidence_facts(evidence: str) -> list[tuple[str, str]]:
    """The crash point and seed a failure's evidence names, as ``(label, value)`` pairs; absent ones are left out.

    The call sequence and the rule ID are in the evidence itself (``ConformanceFailure`` text); these
    two are picked out because a reviewer needs them to replay the failure: the crash point from a line
    that mentions a crash, the seed from ``@reproduce_failure(...)``, ``@seed(N)``,
    ``--hypothesis-seed=N`` or ``seed=N``.
    """
    facts: list[tuple[str, str]] = []
    crash_point = next(
        (
            match[1]
            for line in evidence.splitlines()
            if "crash" in line.lower()
            for match in _CRASH_POINT.finditer(line)
        ),
        None,
    )
    if crash_point is not None:
        facts.append(("Crash point", crash_point))
    for pattern in _SEEDS:
        match = pattern.search(evidence)
        if match:
            facts.append(("Seed", match[1] if pattern.groups else match[0]))
            break
    return facts


def headline(evidence: str) -> str:
    """The first non-blank line of ``evidence``, printable, for a one-line message; ``""`` when there is none."""
    return next((printable(line.strip()) for line in evidence.splitlines() if line.strip()), "")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def rerun_command(
    refs: Mapping[str, str], implementation: str, rule_id: str, scenario: str, options: Sequence[str] = ()
) -> str:
    """The shell command that reruns one scenario cell against one implementation and judges one rule.

    ``refs`` maps implementation names to the ``--impl`` each was loaded from (``RunInfo.implementation_refs``);
    an implementation missing there is named as itself, which an entry-point name such as ``reference`` is.
    ``options`` are the run's other options the cell needs (``RunInfo.rerun_options``: ``--database-url URL``).
    """
    ref = refs.get(implementation, implementation)
    words = ["toolproof", "run", "--impl", ref, "--rules", rule_id, "--cell", scenario, *options]
    return shlex.join([*words, "--out", "toolproof-rerun"])
