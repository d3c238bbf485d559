"""The reference over HTTP (a separate, supervised process) gives the verdicts it gives in-process."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import Run, free_port, wait_for_driver

from toolproof._run import run_suite
from toolproof.spec import Verdict, load_catalog

# The whole suite over HTTP is the over-HTTP tier's (nox -s transport), with every witness over HTTP; the default
# run keeps tests/test_driver.py's served runs of D3 and D13 against their in-process verdicts.
pytestmark = [pytest.mark.slow, pytest.mark.transport_matrix]


def test_the_reference_over_http_gives_the_same_verdict_on_every_rule(reference_run: Run, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = [sys.executable, "-m", "toolproof", "serve-reference", "--port", str(port)]
    server = subprocess.Popen(serve)
    try:
        wait_for_driver(url, server)
        outcome = run_suite([url], None, tmp_path / "over-http")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    [over_http] = outcome.verdicts.values()
    in_process = reference_run.outcome.verdicts["reference"]
    # A rule the catalog judges in-process only reads not-covered over HTTP (never pass), with its reason.
    only_in_process = {rule.id for rule in load_catalog().rules if rule.over_http}
    differing = {
        r: (v.value, over_http.get(r))
        for r, v in in_process.items()
        if over_http.get(r) is not v and not (r in only_in_process and over_http.get(r) is Verdict.NOT_COVERED)
    }
    assert differing == {}
    assert outcome.exit_code == 0
