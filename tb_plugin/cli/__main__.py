"""``python -m tb_plugin.cli``: the ``kinetoscope`` command."""

import sys

from . import entry

sys.exit(entry())
