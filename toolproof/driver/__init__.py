"""toolproof.driver: the implementation port over HTTP (the driver protocol of ``spec.openapi_document()``).

Three roles, one package, importing only ``toolproof.spec``:

- the harness's side (``HttpImplementation``, ``load``): an implementation behind a driver URL,
  and the tool host the driver calls back so the harness's tools run in the harness;
- the driver's side (``Driver``, ``serve``, ``DriverOptions``): any Python ``Implementation``
  behind ``/v1`` — ``serve(MyPipeline(), 8787, DriverOptions(root=Path("/srv/toolproof")))``;
- the supervisor (``supervise``, ``child_command``): a driver process started again after
  each SIGKILL a crash plan deals it, so the recovery scenarios run over HTTP too.
"""

from toolproof.spec import publish_exports as _publish_exports

from ._admission import DriverOptions
from ._client import HttpImplementation, HttpInstance, is_driver_url, load
from ._hosted import describe_context
from ._mutant import MUTANT_VARIABLE, MutantFinder, install_mutant, install_mutant_from_environment
from ._server import Driver, serve
from ._supervisor import child_command, supervise
from ._tool_host import ToolHost, stand_in_context

__all__ = [
    "MUTANT_VARIABLE",
    "Driver",
    "DriverOptions",
    "HttpImplementation",
    "HttpInstance",
    "MutantFinder",
    "ToolHost",
    "child_command",
    "describe_context",
    "install_mutant",
    "install_mutant_from_environment",
    "is_driver_url",
    "load",
    "serve",
    "stand_in_context",
    "supervise",
]

_publish_exports(globals())
