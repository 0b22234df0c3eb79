"""What made a saved file: optmap's version, the command line, the date, the plugins' versions.

Every result, comparison and sweep that optmap writes carries this under ``"provenance"``, so a
number in a paper can be traced to the code that computed it:

``{"optmap_version": "0.1.0", "command": "optmap run problems/quickstart.toml --search ga",
"date": "2026-11-27T04:40:00+00:00", "plugins": {"accpar": "optmap 0.1.0", ...},
"python": "3.11.9"}``

``plugins`` maps each loaded plugin to its package and version (``(command line)`` for a
``--plugin`` module); ``date`` is UTC.
"""

from __future__ import annotations

import platform
import shlex
import sys
from datetime import datetime, timezone
from typing import Any


def provenance(argv: list[str] | None = None, host: Any = None) -> dict[str, Any]:
    """The provenance of a file written now by ``optmap ARGV`` (default: this process's
    arguments) with the plugins of ``host`` (default: every installed plugin)."""
    from optmap import __version__

    if host is None:
        from optmap.host import load_host

        host = load_host()
    words = list(sys.argv[1:] if argv is None else argv)
    return {"optmap_version": __version__, "command": shlex.join(["optmap", *words]),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "plugins": dict(sorted(host.plugins.items())), "python": platform.python_version()}
