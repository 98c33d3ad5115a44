"""Pure analyses: a :class:`~tb_plugin.trace.model.Trace` in, plain dataclasses/dicts out.

One module per question. Nothing here reads files, knows HTTP, or formats for display.
"""
