"""Where a driver keeps the bridge scripts the harness sends (``POST /v1/scripts``): a script is data.

A bridge script is named ``module:function`` and imported by the implementation's own process (and by its
sandbox, a child process). The harness cannot write to a served driver's import path, so it sends the module's
source; the driver writes it into a folder of its own, which it puts on its import path and on ``PYTHONPATH``
for the processes it starts.
"""

from __future__ import annotations

import importlib
import importlib.util
import linecache
import os
import sys
import tempfile
from pathlib import Path

from ._problems import Refused


class ScriptFolder:
    """A folder of script modules under the driver's root, created when the first script arrives."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder: Path | None = None

    def _ready(self) -> Path:
        if self.folder is None:
            self.root.mkdir(parents=True, exist_ok=True)
            self.folder = Path(tempfile.mkdtemp(prefix="toolproof-scripts-", dir=self.root)).resolve()
            # Last on this process's path, so no module it already finds is shadowed; the children see it through
            # PYTHONPATH, where a name found elsewhere is refused before it is placed.
            sys.path.append(str(self.folder))
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(self.folder)]))
        return self.folder

    def place(self, module: str, source: str) -> None:
        """Write ``module``'s source (replacing an earlier one, which is then imported afresh).

        Raises:
            Refused: another module already has the name (the standard library's, an installed one).
        """
        folder = self._ready()
        mine = folder / f"{module}.py"
        if module in sys.stdlib_module_names or module in sys.builtin_module_names:
            raise Refused(422, "invalid-request", f"module: {module!r} is a standard library module's name", "module")
        try:
            found = importlib.util.find_spec(module) if module not in sys.modules else sys.modules[module].__spec__
        except (ImportError, ValueError):
            found = None
        origin = getattr(found, "origin", None)
        if found is not None and (origin is None or Path(origin).resolve() != mine):
            raise Refused(422, "invalid-request", f"module: {module!r} is already another module's name", "module")
        mine.write_text(source, encoding="utf-8")
        # The new source is what the next import (and the next look at a function's source) reads, even when it has
        # the old one's size and was written within the old one's second.
        sys.modules.pop(module, None)
        for compiled in (folder / "__pycache__").glob(f"{module}.*.pyc"):
            compiled.unlink(missing_ok=True)
        importlib.invalidate_caches()
        linecache.checkcache(str(mine))
