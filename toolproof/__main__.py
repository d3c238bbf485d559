"""``python -m toolproof``."""

from toolproof._cli import main

main()
