"""``toolproof protocol``: where the driver protocol's document is, or the document itself, for a driver in any
language to read its shapes and constants from (never to copy them)."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import typer

from ._console import die

DOCUMENT = "driver-openapi.json"
"""The document's file name in the installed ``toolproof.spec`` package (``spec/`` in a checkout)."""


def document_path() -> Path:
    """The installed protocol document (OpenAPI 3.1), as a path on this machine."""
    return Path(str(files("toolproof.spec").joinpath(DOCUMENT)))


def protocol(
    path: Annotated[bool, typer.Option("--path", help="Print the document's path (the default).")] = False,
    show: Annotated[bool, typer.Option("--print", help="Print the document itself (JSON) instead.")] = False,
) -> None:
    """Where the driver protocol's OpenAPI document is: what a driver in any language reads its types and constants from.

    The document (protocol toolproof-driver/2) is generated from toolproof's own models, and installed with it:
    every operation of the driver and of the harness's tool host, the conventions both keep (its description), and
    the x-toolproof constants (outcome table, thresholds, steps, crash points, ...).

    Example: `toolproof protocol --print > driver-openapi.json`, or read it where `toolproof protocol` says it is.
    A running driver serves it too, as GET /v1/openapi.json.
    """
    if path and show:
        raise die("--path and --print: give one of them")
    if show:
        from toolproof.spec import openapi_document

        typer.echo(json.dumps(openapi_document(), indent=2, sort_keys=True))  # As is: no markup, no emoji codes.
        return
    where = document_path()
    if not where.is_file():
        raise die(f"the protocol document is missing from this installation: {where}; reinstall toolproof", 3)
    typer.echo(str(where))
