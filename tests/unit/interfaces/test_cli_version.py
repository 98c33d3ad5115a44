"""``kinetoscope --version`` prints the package version, the one setup.py reads from tb_plugin/__init__.py."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from tb_plugin import __version__
from tb_plugin.cli import main


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"kinetoscope {__version__}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert 'tb_plugin" / "__init__.py"' in (REPO / "setup.py").read_text()  # setup.py's version: the same
