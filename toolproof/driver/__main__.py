"""``python -m toolproof.driver REF PORT ROOT supervised|alone [--mcp-config=FILE] [STDIO_COMMAND...]`` (see ``child_command``)."""

import sys

from ._supervisor import serve_child

serve_child(sys.argv[1:])
