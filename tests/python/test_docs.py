"""Every Python example in the README and docs/python.md runs, as written, from the repo root."""

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def examples():
    for doc in (REPO / "README.md", REPO / "docs" / "python.md"):
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)):
            yield pytest.param(block, id=f"{doc.name}-{i}")


@pytest.mark.parametrize("code", list(examples()))
def test_the_example_runs(code, monkeypatch):
    monkeypatch.chdir(REPO)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})
