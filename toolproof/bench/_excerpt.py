"""Excerpt memory in ``toolproof bench``: peak RSS while decision 12 streams a large output.

``peak_rss_mib`` is the whole process's high-water mark (interpreter and imports included);
``rss_growth_mib`` is how far RSS rose above where it stood when the excerpt began.

Run as ``python -m toolproof.bench._excerpt --bytes N`` it prints one JSON object; the bench runs
it in a fresh process so the peak belongs to the excerpt alone and not to the bench's own heap.
The output is generated one chunk at a time (four parts with different labels, multi-byte text)
and streamed to a temporary file as the artifact, so only the excerpter holds any of it.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from toolproof.reference.hooks import excerpt_parts
from toolproof.spec import TrustLabel

CHUNK_CHARS = 64 * 1024
"""Characters per generated chunk."""
_LABELS = (TrustLabel.INTERNAL, TrustLabel.EXTERNAL_UNTRUSTED, TrustLabel.USER, TrustLabel.EXTERNAL_UNTRUSTED)


def _status_mib(field: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return None


def _peak_rss_mib() -> float:
    """This process's RSS high-water mark.

    VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child of a large parent would report the
    parent's size as its own peak. ru_maxrss only where /proc is missing.
    """
    peak = _status_mib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mib() -> float:
    current = _status_mib("VmRSS")
    return current if current is not None else _peak_rss_mib()


def _reset_peak() -> bool:
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+), so the peak is the excerpt's window.
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


def _chunks(part: int, budget: int) -> Iterator[str]:
    sent = 0
    index = 0
    while sent < budget:
        # A fresh string per chunk, as a tool's successive reads would give, never one block reused.
        chunk = f"part {part} chunk {index}: é€𝄞 ".ljust(CHUNK_CHARS, "x")
        sent += len(chunk.encode("utf-8"))
        index += 1
        yield chunk


def excerpt_memory(total_bytes: int, limit: int = 64 * 1024) -> dict[str, Any]:
    """Excerpt about ``total_bytes`` of generated output in this process and report its memory."""
    parts = ((label, f"bench.part{n}", _chunks(n, total_bytes // len(_LABELS))) for n, label in enumerate(_LABELS))
    process_peak_before = _peak_rss_mib()
    windowed = _reset_peak()
    before = _current_rss_mib()
    with tempfile.TemporaryFile() as artifact:
        started = time.perf_counter()
        excerpt = excerpt_parts(parts, limit, artifact.write)
        seconds = time.perf_counter() - started
        written = artifact.tell()
    window_peak = _peak_rss_mib()
    if written != excerpt.total_bytes:
        raise RuntimeError(f"artifact holds {written} bytes, the excerpt counted {excerpt.total_bytes}")
    return {
        "total_bytes": excerpt.total_bytes,
        "limit_bytes": limit,
        "omitted_bytes": excerpt.omitted_bytes,
        "envelopes": len(excerpt.envelopes),
        "seconds": seconds,
        "peak_rss_mib": max(process_peak_before, window_peak),
        "rss_growth_mib": window_peak - before,
        "peak_window_reset": windowed,
    }


def excerpt_memory_in_subprocess(total_bytes: int, limit: int = 64 * 1024) -> dict[str, Any]:
    """``excerpt_memory`` in a fresh interpreter: its peak RSS is the excerpt's plus the imports'."""
    command = [sys.executable, "-m", "toolproof.bench._excerpt", "--bytes", str(total_bytes), "--limit", str(limit)]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def main(argv: list[str] | None = None) -> None:
    """Print ``excerpt_memory`` as JSON."""
    parser = argparse.ArgumentParser(description="Peak memory of the decision-12 excerpter on a streamed output.")
    parser.add_argument("--bytes", type=int, default=200 * 1024 * 1024, help="bytes of output (default 200 MiB)")
    parser.add_argument("--limit", type=int, default=64 * 1024, help="excerpt limit in bytes (default 65536)")
    args = parser.parse_args(argv)
    print(json.dumps(excerpt_memory(args.bytes, args.limit)))


if __name__ == "__main__":
    main()
