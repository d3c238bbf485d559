"""Servers whose other surfaces (prompts, resources, process environment) meet the catalog in ways real ones do."""

from __future__ import annotations

import os

import mcp_types as types
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS
from mcp.shared.exceptions import MCPError

from ._base import ECHO, TEXT_SCHEMA, Context, FakeServer, ServerFake, echo, text
from ._lifecycle import EXIT, exits_between_calls

SHARED_NAME = "fetch"
"""The name TwinNamesServer gives a tool and a prompt alike, as a real fetch server does."""

TWIN_PROMPT_NAMES = (SHARED_NAME, "Echo", "read_resource", "Summarize", "summarize", "Review Code")
"""TwinNamesServer's prompts: one named as its tool, one normalizing as its tool ``echo``, one as the synthetic
read tool, two normalizing alike (each other's case variant), and one no tool of it is named like."""

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


PAGED_RESOURCE_URI = "file:///docs/paged.txt"
"""The one resource PagedResourcesServer lists, on the second page of resources/list."""


async def _resources_on_page_two(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    if params is None or params.cursor is None:
        return types.ListResourcesResult(resources=[], next_cursor="2")
    return types.ListResourcesResult(resources=[types.Resource(uri=PAGED_RESOURCE_URI, name="paged")])


async def _templates_on_page_two(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    if params is None or params.cursor is None:
        return types.ListResourceTemplatesResult(resource_templates=[], next_cursor="2")
    return types.ListResourceTemplatesResult(
        resource_templates=[types.ResourceTemplate(uri_template=TEMPLATE, name="doc")]
    )


def _paged_resources() -> FakeServer:
    return FakeServer(
        "PagedResourcesServer",
        lambda: [ECHO],
        {"echo": echo},
        on_list_resources=_resources_on_page_two,
        on_list_resource_templates=_no_templates,
        on_read_resource=_read_docs,
    )


def _paged_templates() -> FakeServer:
    return FakeServer(
        "PagedTemplatesServer",
        lambda: [ECHO],
        {"echo": echo},
        on_list_resources=_no_resources,
        on_list_resource_templates=_templates_on_page_two,
        on_read_resource=_read_docs,
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


SAFE_ENV_NAMES = frozenset({*DEFAULT_INHERITED_ENV_VARS, "LC_CTYPE"})
"""What a stdio server may see of its parent's environment besides what its operator configured: the MCP SDK's
safe default list, and ``LC_CTYPE``, which Python itself sets when it coerces the C locale (PEP 538)."""
PUBLISHED_URI = "file:///docs/published.txt"
"""The resource ChangingResourcesServer lists once ``publish`` was called with ``resource``."""


def _changing_resources() -> FakeServer:
    # What the server offers now: resources and templates come and go with its `publish` and `retract` tools.
    offered: dict[str, bool] = {"resource": False, "template": False}

    async def publish(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        surface = str((params.arguments or {}).get("text", "resource"))
        if surface not in offered:
            raise MCPError(types.INVALID_PARAMS, f"publish takes 'resource' or 'template', not {surface!r}")
        offered[surface] = True
        return text(f"published a {surface}")

    async def retract(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        offered.update(dict.fromkeys(offered, False))
        return text("retracted every resource and template")

    async def resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        listed = [types.Resource(uri=PUBLISHED_URI, name="published")] if offered["resource"] else []
        return types.ListResourcesResult(resources=listed)

    async def templates(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        listed = [types.ResourceTemplate(uri_template=TEMPLATE, name="doc")] if offered["template"] else []
        return types.ListResourceTemplatesResult(resource_templates=listed)

    catalog = [
        ECHO,
        types.Tool(name="publish", description="Offers a resource or a template.", input_schema=TEXT_SCHEMA),
        types.Tool(name="retract", description="Withdraws every resource and template.", input_schema=TEXT_SCHEMA),
    ]
    return FakeServer(
        "ChangingResourcesServer",
        lambda: catalog,
        {"echo": echo, "publish": publish, "retract": retract},
        on_list_resources=resources,
        on_list_resource_templates=templates,
        on_read_resource=_read_docs,
    )


async def _environment(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    # The process's own view: what an operator's env and cwd settings reached, any variables asked for, and every
    # variable's name (never a value), so a server that sees the rest of its parent's environment shows it wherever
    # its parent runs.
    lines = [f"{ENV_KEY}={os.environ.get(ENV_KEY, '<unset>')}", f"cwd={os.getcwd()}"]
    asked = (params.arguments or {}).get("names", [])
    lines.extend(f"{name}={os.environ.get(name, '<unset>')}" for name in asked if isinstance(name, str))
    lines.append("names=" + ",".join(sorted(os.environ)))
    return text("\n".join(lines))


def _environment_server() -> FakeServer:
    tool = types.Tool(
        name="environment",
        description="Reports its process's API key and working directory, and the variables `names` lists.",
        input_schema={
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"}}},
            "additionalProperties": False,
        },
    )
    fake = FakeServer("EnvironmentServer", lambda: [ECHO, tool, EXIT], {"echo": echo, "environment": _environment})
    fake.tools["exit"] = exits_between_calls(fake)
    return fake


TwinNamesServer = ServerFake(
    "TwinNamesServer",
    f"ships a tool and a prompt both named {SHARED_NAME!r} (and prompts named like its other tool, like the "
    "synthetic read tool, like each other, and like nothing else)",
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
PagedResourcesServer = ServerFake(
    "PagedResourcesServer",
    "lists its one resource on the second page of resources/list (the first page is empty, with a nextCursor)",
    _paged_resources,
)
PagedTemplatesServer = ServerFake(
    "PagedTemplatesServer",
    "lists no resource, and its one resource template on the second page of resources/templates/list",
    _paged_templates,
)
ChangingResourcesServer = ServerFake(
    "ChangingResourcesServer",
    "lists no resource until `publish` (text 'resource' or 'template') offers one; `retract` withdraws them all",
    _changing_resources,
)
EnvironmentServer = ServerFake(
    "EnvironmentServer",
    f"reports the {ENV_KEY} it was started with, its working directory, any variables asked for and the names of "
    "its environment variables (a server that needs a key); after an `exit` call its process exits as the next "
    "request arrives, as ExitsBetweenCallsServer's",
    _environment_server,
)
