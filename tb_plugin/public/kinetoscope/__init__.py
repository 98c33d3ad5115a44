"""Kinetoscope's notebook API: ``import kinetoscope`` (see tb_plugin/interfaces/notebook.py).

This package is only the public name (mapped in setup.py); the code is in :mod:`tb_plugin.interfaces`.
"""

from tb_plugin import __version__
from tb_plugin.interfaces.notebook import Invalid, LoadError, Run, Trace, diff, hang, load, load_run

__all__ = ["Invalid", "LoadError", "Run", "Trace", "__version__", "diff", "hang", "load", "load_run"]
