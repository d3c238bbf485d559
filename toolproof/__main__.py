"""``python -m toolproof``."""

from toolproof._main import main

main()
