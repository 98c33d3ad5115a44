"""Kinetoscope: the PyTorch Profiler for TensorBoard.

Data flows one way: ``storage`` (fsspec) → ``trace`` (bytes become columns) → ``analysis`` (pure
functions) → ``api``/``plugin`` routes and ``cli`` → the frontend in ``static/``.
"""

__version__ = "0.1.0"
