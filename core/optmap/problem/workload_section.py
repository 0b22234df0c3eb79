"""The ``[workload]`` section: a registered workload by name, or a model file read by its suffix."""

from __future__ import annotations

from pathlib import Path

from optmap.errors import OptmapError
from optmap.host import Entry, Host
from optmap.problem.common import call, check_returned, pop_name, short


def _reader(where: str, file: Path, host: Host) -> Entry:
    """The workload registered to read ``file``'s suffix (``optmap_register_workload_readers``)."""
    readers = host.registries["workload_reader"]
    suffix = file.suffix.lower()
    if suffix in readers:
        name = readers[suffix].target
        if name not in host.registries["workload"]:
            raise OptmapError(f"{where}: [workload] plugin '{readers[suffix].plugin}' reads '{suffix}' files with "
                              f"workload '{name}', which no plugin registers; add model = \"<reader>\"")
        return host.registries["workload"][name]
    known = "; ".join(f"{entry.target} reads {s}" for s, entry in sorted(readers.items())) or "none registered"
    failed = f"; plugins that failed to load: {', '.join(host.failures)}" if host.failures else ""
    raise OptmapError(
        f"{where}: [workload] file '{file.name}': no workload reader loads '{file.suffix or '(no suffix)'}' "
        f"files ({known}{failed}); add model = \"<reader>\" or convert the file"
    )


def build_workload(where: str, table: dict, host: Host, base: Path | None):
    """The workload the table names (``model``), or the one that reads its ``file``."""
    from optmap.workload import Workload

    if "file" in table:
        raw = table["file"]
        if not isinstance(raw, str) or not raw:
            raise OptmapError(f"{where}: [workload] file must be a path (string), got {short(raw)}")
        file = Path(raw).expanduser()
        if base is not None and not file.is_absolute():
            file = base / file
        if not file.is_file():
            state = "is a folder" if file.is_dir() else "does not exist"
            raise OptmapError(
                f"{where}: [workload] file '{raw}' {state} (looked for {file}; relative paths start "
                f"at the problem file's folder)"
            )
        table["file"] = str(file)
    if "model" in table or "file" not in table:
        entry = pop_name(where, "workload", table, "model", host, "workload")
    else:
        entry = _reader(where, Path(table["file"]), host)
    what = f"{where}: [workload] model '{entry.name}'"
    keys = ("model", "file") if "file" in table else ("model",)
    workload = call(what, entry, table, section_keys=keys, host=host)
    return check_returned(what, entry, workload, Workload)
