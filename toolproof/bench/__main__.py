"""``python -m toolproof.bench [--out DIR] [--quick]``: the bench without the CLI."""

from ._run import main

raise SystemExit(main())
