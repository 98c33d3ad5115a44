"""Memory artifacts other than traces: CUDA allocator snapshots and ``export_memory_timeline`` output.

Bytes in, columns out, like :mod:`tb_plugin.trace`: this package is the only code that knows their
layouts. Pickles are read with a restricted unpickler (:mod:`.unpickle`).
"""
