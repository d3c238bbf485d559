"""What the driver side's HTTP clients share: one TLS context per process, and a path segment escaped.

httpx builds a default context (the CA bundle read and parsed) for each client it constructs, 20 ms or more a time;
the harness opens a client per instance and per tool host, hundreds in a run over a driver. The context is built
once, with the default verification, and handed to each client.
"""

from __future__ import annotations

import functools
import ssl
from urllib.parse import quote


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's client TLS context: ``ssl.create_default_context()`` (certificates and host names verified)."""
    return ssl.create_default_context()


def path_segment(value: str) -> str:
    """``value`` as one path segment: every reserved character escaped, ``/`` included, and a dot segment too (a
    URL library would otherwise remove it)."""
    segment = quote(value, safe="")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment
