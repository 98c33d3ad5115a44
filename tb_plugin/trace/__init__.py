"""Trace format knowledge: bytes in, a columnar :class:`~tb_plugin.trace.model.Trace` out.

This package is the only code that knows Kineto's category names and argument spellings.
"""
