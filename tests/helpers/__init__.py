"""Helpers the harness's own tests share: import them from here, never from ``conftest``.

- ``POSTGRES_URL``: the PostgreSQL the tests use (``$TOOLPROOF_DATABASE_URL`` or the local server);
- ``Run`` and ``run_and_load``: a suite run in-process and the rows it stored; ``shared_run`` and
  ``shared_root``: such a run made once per session, whichever xdist worker asks first;
- ``helpers.contract_corpus``: realistic tools with the verdicts ADR-0021 expects of them.
"""

from ._runs import POSTGRES_URL, Run, run_and_load, shared_root, shared_run

__all__ = ["POSTGRES_URL", "Run", "run_and_load", "shared_root", "shared_run"]
