"""Helpers the harness's own tests share: import them from here, never from ``conftest``.

- ``POSTGRES_URL``: the PostgreSQL the tests use (``$TOOLPROOF_DATABASE_URL`` or the local server);
- ``Run`` and ``run_and_load``: a suite run in-process and the rows it stored; ``shared_run`` and
  ``shared_root``: such a run made once per session, whichever xdist worker asks first (``try_shared_run``: or
  None at once while another worker makes it); ``shared_cli_run``: ``toolproof run`` as a user runs it, once per
  session, as a ``CliRun`` (the process's result, the folder it wrote, and ``.run()`` its ``Run``);
- ``free_port``, ``wait_for_driver`` and ``served_driver``: a loopback port, waiting until a driver answers on it,
  and a driver served for the length of a ``with`` block;
- ``helpers.contract_corpus``: realistic tools with the verdicts ADR-0021 expects of them.
"""

from ._runs import POSTGRES_URL, CliRun, Run, run_and_load, shared_cli_run, shared_root, shared_run, try_shared_run
from ._servers import free_port, served_driver, wait_for_driver

__all__ = [
    "POSTGRES_URL",
    "CliRun",
    "Run",
    "free_port",
    "run_and_load",
    "served_driver",
    "shared_cli_run",
    "shared_root",
    "shared_run",
    "try_shared_run",
    "wait_for_driver",
]
