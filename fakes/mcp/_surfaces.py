"""Servers whose other surfaces (prompts, resources, process environment) meet the catalog in ways real ones do."""

from __future__ import annotations

import os

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ._base import ECHO, TEXT_SCHEMA, Context, FakeServer, ServerFake, echo, text

SHARED_NAME = "fetch"
"""The name TwinNamesServer gives a tool and a prompt alike, as a real fetch server does."""

TWIN_PROMPT_NAMES = (SHARED_NAME, "Echo", "read_resource", "Summarize", "summarize")
"""TwinNamesServer's prompts: one named as its tool, one normalizing as its tool ``echo``, one as the synthetic
read tool, and two normalizing alike (each other's case variant)."""

TWIN_RESOURCE_URI = "file:///docs/fetch.txt"
"""The one resource TwinNamesServer lists (its template is named ``fetch`` too)."""

TEMPLATE = "file:///docs/{name}"
"""The one resource template TemplateResourcesServer offers; it lists no resource."""

ENV_KEY = "TOOLPROOF_FAKE_API_KEY"
"""The environment variable EnvironmentServer reports, as a server that needs a key reads one."""


async def _fetch(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    return text(f"fetched {(params.arguments or {}).get('text', '')}")


async def _twin_prompts(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(
        prompts=[types.Prompt(name=name, description=f"Prompt {name!r}.") for name in TWIN_PROMPT_NAMES]
    )


async def _twin_get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"Prompt {params.name}."))
    return types.GetPromptResult(messages=[message])


async def _twin_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri=TWIN_RESOURCE_URI, name=SHARED_NAME)])


async def _twin_templates(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template="file:///docs/{page}", name=SHARED_NAME)
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def _read_docs(ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    uri = str(params.uri)
    if not uri.startswith("file:///docs/"):
        raise MCPError(types.INVALID_PARAMS, f"no resource {uri!r}")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"Docs at {uri}.")])


def _twin_names() -> FakeServer:
    catalog = [ECHO, types.Tool(name=SHARED_NAME, description="Fetches a page.", input_schema=TEXT_SCHEMA)]
    return FakeServer(
        "TwinNamesServer",
        lambda: catalog,
        {"echo": echo, SHARED_NAME: _fetch},
        on_list_prompts=_twin_prompts,
        on_get_prompt=_twin_get_prompt,
        on_list_resources=_twin_resources,
        on_list_resource_templates=_twin_templates,
        on_read_resource=_read_docs,
    )


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


async def _environment(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    # The process's own view: what an operator's env and cwd settings reached.
    return text(f"{ENV_KEY}={os.environ.get(ENV_KEY, '<unset>')}\ncwd={os.getcwd()}")


def _environment_server() -> FakeServer:
    tool = types.Tool(
        name="environment",
        description="Reports its process's API key and working directory.",
        input_schema={"type": "object", "additionalProperties": False},
    )
    return FakeServer("EnvironmentServer", lambda: [ECHO, tool], {"echo": echo, "environment": _environment})


TwinNamesServer = ServerFake(
    "TwinNamesServer",
    f"ships a tool and a prompt both named {SHARED_NAME!r} (and prompts named like its other tool, like the "
    "synthetic read tool, and like each other)",
    _twin_names,
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
EnvironmentServer = ServerFake(
    "EnvironmentServer",
    f"reports the {ENV_KEY} it was started with and its working directory (a server that needs a key)",
    _environment_server,
)
