"""The registry name grammar and reserved domains (decision 5)."""

from __future__ import annotations

import re

NAME_GRAMMAR = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
"""``domain.name``: lower-case ASCII segments joined by dots, at least two."""
MAX_NAME_LENGTH = 128
"""Longest registered name."""
RESERVED_DOMAINS = frozenset({"mcp", "device"})
"""Domains no builtin may use."""


def is_valid_name(name: str) -> bool:
    """Whether ``name`` matches the grammar and the length cap."""
    return len(name) <= MAX_NAME_LENGTH and NAME_GRAMMAR.fullmatch(name) is not None


def domain_of(name: str) -> str:
    """The first segment of ``name``."""
    return name.split(".", 1)[0]
