"""Servers whose other surfaces (prompts, resources, process environment) meet the catalog in ways real ones do."""

from __future__ import annotations

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ._base import ECHO, Context, FakeServer, ServerFake, echo

TEMPLATE = "file:///docs/{name}"
"""The one resource template TemplateResourcesServer offers; it lists no resource."""


async def _read_docs(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if not uri.startswith("file:///docs/"):
        raise MCPError(types.INVALID_PARAMS, f"no resource {uri!r}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"Docs at {uri}.")])


async def _no_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def _no_templates(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


async def _templates(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[types.ResourceTemplate(uri_template=TEMPLATE, name="doc")]
    )


def _empty_resources() -> FakeServer:
    return FakeServer(
        "EmptyResourcesServer",
        lambda: [ECHO],
        {"echo": echo},
        on_list_resources=_no_resources,
        on_list_resource_templates=_no_templates,
        on_read_resource=_read_docs,
    )


def _template_resources() -> FakeServer:
    return FakeServer(
        "TemplateResourcesServer",
        lambda: [ECHO],
        {"echo": echo},
        on_list_resources=_no_resources,
        on_list_resource_templates=_templates,
        on_read_resource=_read_docs,
    )


EmptyResourcesServer = ServerFake(
    "EmptyResourcesServer",
    "answers resources/list and resources/templates/list with nothing, as an SDK server without resources does",
    _empty_resources,
)
TemplateResourcesServer = ServerFake(
    "TemplateResourcesServer",
    "offers its resources through a resource template only, listing none",
    _template_resources,
)
