"""``python -m toolproof.fakes.mcp NAME --transport stdio|http [--port P] [--down-while PATH] [--state-dir DIR]``
or ``--list``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._registry import SERVERS, catalog
from ._serve import serve


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and serve (or list) the fakes; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m toolproof.fakes.mcp", description="Serve one hostile fake MCP server."
    )
    parser.add_argument("name", nargs="?", help="a fake server name (see --list)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port on 127.0.0.1 (http only)")
    parser.add_argument("--list", action="store_true", help="list the fake servers and exit")
    parser.add_argument(
        "--down-while",
        metavar="PATH",
        help="exit with status 3 at start, serving nothing, while PATH exists (a server kept down across restarts)",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        type=Path,
        help="where the fake keeps what must outlive its process, so a restart can differ (ChangedOnRestartServer)",
    )
    args = parser.parse_args(argv)
    if args.list:
        for name, behaviour in catalog():
            print(f"{name}\t{behaviour}")
        return 0
    if args.name not in SERVERS:
        print(f"unknown fake MCP server name={args.name!r}; see --list", file=sys.stderr)
        return 2
    if args.down_while is not None and os.path.exists(args.down_while):
        print(f"fake MCP server {args.name} is kept down while {args.down_while} exists", file=sys.stderr)
        return 3
    serve(args.name, args.transport, args.port, args.state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
