"""What a tool author can tell the check: how to observe, how the key travels, whether safe requests act."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qs, urlsplit

from toolproof.spec import ConfigurationError

DEFAULT_KEY_HEADER = "Idempotency-Key"
"""The header the simulated service deduplicates on unless the tool declares another carrier."""


class Observation(StrEnum):
    """Where the check observes a tool's effects."""

    AUTO = "auto"
    """At the operating-system boundary when confinement is available, else at the Python level (partial)."""
    OS = "os"
    """At the operating-system boundary only; a ConfigurationError when confinement is unavailable."""
    PYTHON = "python"
    """At the Python level only (audit hooks and the recording service): a partial observation."""


class KeyPlace(StrEnum):
    """Where a request carries the idempotency key to the external service."""

    HEADER = "header"
    """A request header, by name (case-insensitive)."""
    BODY = "body"
    """A field of a JSON request body, by dotted path (``meta.idempotency_key``)."""
    QUERY = "query"
    """A query parameter of the request URL, by name."""


@dataclass(frozen=True)
class KeyCarrier:
    """How the key reaches the remote: the simulated service deduplicates unsafe requests on it."""

    place: KeyPlace
    """Header, JSON body field, or query parameter."""
    name: str
    """The header name, the body field's dotted path, or the parameter name."""

    @classmethod
    def parse(cls, text: str) -> KeyCarrier:
        """``header:NAME``, ``body:PATH`` or ``query:NAME``.

        Raises:
            ConfigurationError: another form.
        """
        place, sep, name = text.partition(":")
        if not sep or not name.strip() or place not in set(KeyPlace):
            raise ConfigurationError(
                f"key carrier {text!r} is not header:NAME, body:PATH or query:NAME "
                "(e.g. header:Idempotency-Key, body:meta.idempotency_key, query:request_id)"
            )
        return cls(KeyPlace(place), name.strip())

    def describe(self) -> str:
        """How the report names it: ``header Idempotency-Key``, ``body field meta.key``, ``query parameter key``."""
        return {KeyPlace.HEADER: "header", KeyPlace.BODY: "body field", KeyPlace.QUERY: "query parameter"}[
            self.place
        ] + f" {self.name}"

    def extract(self, headers: dict[str, str], target: str, body: bytes) -> str | None:
        """The key a request carries in this place, or None.

        ``headers`` maps lower-case names to values; ``target`` is the request target (path and query).
        """
        if self.place is KeyPlace.HEADER:
            return headers.get(self.name.lower())
        if self.place is KeyPlace.QUERY:
            values = parse_qs(urlsplit(target).query).get(self.name)
            return values[0] if values else None
        try:
            found: Any = json.loads(body)
        except ValueError:
            return None
        for part in self.name.split("."):
            if not isinstance(found, dict) or part not in found:
                return None
            found = found[part]
        return found if isinstance(found, str) else None


DEFAULT_KEY_CARRIER = KeyCarrier(KeyPlace.HEADER, DEFAULT_KEY_HEADER)
"""The carrier the service assumes when the tool declares none."""


@dataclass(frozen=True)
class CheckOptions:
    """The declarations and switches of one check (see ``check_tool``)."""

    observation: Observation = Observation.AUTO
    """Where effects are observed."""
    key_in: KeyCarrier = DEFAULT_KEY_CARRIER
    """Where the tool's requests carry the idempotency key."""
    requests_act: bool = False
    """The tool declares that its requests act even with a safe method (a GET webhook)."""
    strict: bool = False
    """A warning (no observable effect, partial observation) fails the check."""
