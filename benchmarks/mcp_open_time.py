"""How long opening one instance of ``serve-reference`` takes with N stdio MCP servers in its ``--mcp-config`` file.

Every open starts every stdio server of the file afresh (one process per server per instance: docs/operators.md,
"Many servers"). This starts ``serve-reference`` with N copies of the fake ``PlainServer`` and times whole opens
(``open`` entered: every server started, initialized and probed) through the driver protocol's Python client.

    python benchmarks/mcp_open_time.py                 # N = 1, 3, 6, 9; 5 opens each
    python benchmarks/mcp_open_time.py --counts 1 9 --opens 3
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from toolproof.driver import load
from toolproof.fakes import FakeClock
from toolproof.fakes.mcp import stdio_command
from toolproof.spec import InstanceConfig


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_file(path: Path, count: int) -> None:
    command, *args = stdio_command("PlainServer")
    tables = [
        f'[[server]]\nid = "s{i}"\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n' for i in range(count)
    ]
    path.write_text("\n".join(tables), encoding="utf-8")


async def _open_times(url: str, root: Path, opens: int) -> list[float]:
    times = []
    for n in range(opens):
        config = InstanceConfig(store_dir=root / f"store-{n}", workspace=root)
        start = time.perf_counter()
        async with load(url).open(config, [], FakeClock()):
            times.append(time.perf_counter() - start)
    return times


def measure(count: int, opens: int) -> list[float]:
    """Seconds each of ``opens`` opens took with ``count`` stdio servers."""
    with tempfile.TemporaryDirectory(prefix="toolproof-open-") as folder:
        root = Path(folder)
        config = root / "servers.toml"
        _server_file(config, count)
        port = _free_port()
        command = ["serve-reference", "--mcp-config", str(config), "--port", str(port), "--root", str(root)]
        served = subprocess.Popen([sys.executable, "-m", "toolproof", *command], stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    httpx2.get(f"{url}/v1/info", timeout=1)
                    break
                except httpx2.TransportError:
                    time.sleep(0.1)
            return anyio.run(_open_times, url, root, opens)
        finally:
            served.terminate()
            served.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 3, 6, 9])
    parser.add_argument("--opens", type=int, default=5)
    arguments = parser.parse_args()
    print("| stdio servers | median open (s) | min | max |")
    print("| --- | --- | --- | --- |")
    for count in arguments.counts:
        times = measure(count, arguments.opens)
        print(f"| {count} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} |", flush=True)


if __name__ == "__main__":
    main()
