"""Text of an exact UTF-8 size for the model's workloads: ASCII, blanks and one character of each UTF-8 width."""

from __future__ import annotations

CHARS = "aé€𝄞 \n"
"""ASCII and one character of each UTF-8 width, so only a byte count tells whether output is over a limit."""


def text_of(size: int, seed: int) -> str:
    """Exactly ``size`` UTF-8 bytes of mixed-width text, varied by ``seed``."""
    out, used, i = [], 0, seed
    while used < size:
        ch = CHARS[i % len(CHARS)]
        i = i * 7 + 3
        if used + len(ch.encode()) > size:
            ch = "a"
        out.append(ch)
        used += len(ch.encode())
    return "".join(out)
