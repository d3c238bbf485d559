"""``python -m toolproof``."""

from toolproof._interrupt import main

main()
