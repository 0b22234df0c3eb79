"""The complete plugin of docs/plugins.md runs as the guide says (the guide's code is the test's)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from conftest import ROOT


def test_the_guides_plugin_runs_from_its_problem_file(tmp_path):
    text = (ROOT / "docs" / "plugins.md").read_text()
    block = text[text.index("<summary>myplugin.py and mlp.toml</summary>"):]
    block = block[:block.index("</details>")]
    code = dict(re.findall(r"```(\w+)\n(.*?)```", block, re.S))
    (tmp_path / "myplugin.py").write_text(code["python"])
    (tmp_path / "mlp.toml").write_text(code["toml"])
    proc = subprocess.run([sys.executable, "-m", "optmap.cli", "--plugin", "myplugin", "run", "mlp.toml",
                           "--quiet", "--json", "out.json"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((tmp_path / "out.json").read_text())
    # 6 layers, each data or tensor parallel: the space the guide describes; the budget it sets
    assert saved["engine"] == "hillclimb" and saved["evaluations"] == 2000
    assert len(saved["mapping"]) == 6 and set(saved["mapping"].values()) <= {"data", "tensor"}
