"""Memory of the decision-12 excerpter on a large streamed output.

Streams ``--mb`` MiB of generated text, in four parts with different labels, through
``excerpt_parts`` with the sink writing to a temporary file, and prints one line: the peak RSS
growth, the tracemalloc peak and the wall time. The output is generated chunk by chunk and is
never held in memory, so both figures should stay near ``--limit`` whatever ``--mb`` is.

    python benchmarks/excerpt_memory.py [--mb 200] [--limit 65536]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import tracemalloc
from collections.abc import Iterator

from toolproof.reference.hooks import excerpt_parts
from toolproof.spec import TrustLabel

CHUNK_CHARS = 64 * 1024
LABELS = (TrustLabel.INTERNAL, TrustLabel.EXTERNAL_UNTRUSTED, TrustLabel.USER, TrustLabel.EXTERNAL_UNTRUSTED)


def _chunks(part: int, target_bytes: int) -> Iterator[str]:
    """About ``target_bytes`` of text with multi-byte characters, one fresh chunk at a time."""
    sent = 0
    index = 0
    while sent < target_bytes:
        # A fresh string per chunk, as a real tool's reads would produce, rather than one block reused.
        chunk = f"part {part} chunk {index}: é€𝄞 ".ljust(CHUNK_CHARS, "x")
        sent += len(chunk.encode("utf-8"))
        index += 1
        yield chunk


def _parts(total_bytes: int) -> Iterator[tuple[TrustLabel, str, Iterator[str]]]:
    for part, label in enumerate(LABELS):
        yield label, f"bench.part{part}", _chunks(part, total_bytes // len(LABELS))


def _max_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Run the benchmark once and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mb", type=int, default=200, help="MiB of output to stream (default 200)")
    parser.add_argument("--limit", type=int, default=65536, help="excerpt limit in bytes (default 65536)")
    args = parser.parse_args()

    with tempfile.TemporaryFile() as artifact:
        rss_before = _max_rss_mb()
        tracemalloc.start()
        started = time.perf_counter()
        result = excerpt_parts(_parts(args.mb * 1024 * 1024), args.limit, artifact.write)
        elapsed = time.perf_counter() - started
        _, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss_growth = _max_rss_mb() - rss_before
        artifact_bytes = artifact.tell()

    assert artifact_bytes == result.total_bytes, (artifact_bytes, result.total_bytes)
    print(
        f"excerpt_memory: {result.total_bytes / 2**20:.1f} MiB in {len(LABELS)} parts, limit {args.limit} B: "
        f"peak RSS growth {rss_growth:.1f} MiB, tracemalloc peak {traced_peak / 2**20:.2f} MiB, {elapsed:.2f} s "
        f"({len(result.envelopes)} envelopes, {result.omitted_bytes} bytes omitted)"
    )


if __name__ == "__main__":
    main()
