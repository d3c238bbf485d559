"""Errors across the wire, both ways: a refusal becomes an RFC 9457 problem, a problem becomes an exception."""

from __future__ import annotations

import httpx2
from starlette.responses import JSONResponse

from toolproof.spec import ConfigurationError, ImplementationError, Problem, SimulatedCrash, StoreFault


class Refused(Exception):
    """A request the driver refuses: becomes a Problem."""

    def __init__(self, status: int, kind: str, detail: str, field_path: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail, self.field = status, kind, detail, field_path


def problem(status: int, kind: str, detail: str, field_path: str | None = None) -> JSONResponse:
    """The problem response of one refusal."""
    body = Problem(type=kind, title=kind.replace("-", " "), status=status, detail=detail, field=field_path)
    return JSONResponse(body.model_dump(mode="json"), status_code=status, media_type="application/problem+json")


def raise_problem(response: httpx2.Response) -> None:
    """Raise what a driver's problem answer means on the harness side; nothing for a success."""
    if response.status_code < 400:
        return
    try:
        answer = Problem.model_validate_json(response.content)
    except ValueError:
        raise ImplementationError(
            f"the driver answered {response.status_code} without a problem body: {response.text[:300]}"
        ) from None
    if answer.type == "simulated-crash":
        raise SimulatedCrash(answer.detail)
    if answer.type == "store-fault":
        raise StoreFault(answer.detail)
    if answer.type in ("configuration-error", "not-supported") or (
        answer.type == "invalid-request"
        and response.request.method == "POST"
        and response.request.url.path.endswith("/instances")
    ):
        raise ConfigurationError(answer.detail)
    # The harness's requests follow the protocol: a refusal or a failure is the implementation's (its driver's).
    raise ImplementationError(
        f"the driver {'refused' if answer.status < 500 else 'failed'} {response.request.method}"
        f" {response.request.url.path}: {answer.status} {answer.type}: {answer.detail}"
    )
