"""One TLS context per process for every HTTP client the driver side opens.

httpx builds a default context (the CA bundle read and parsed) for each client it constructs, 20 ms or more a time;
the harness opens a client per instance and per tool host, hundreds in a run over a driver. The context is built
once, with the default verification, and handed to each client.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's client TLS context: ``ssl.create_default_context()`` (certificates and host names verified)."""
    return ssl.create_default_context()
