"""The finish keeps a device index on the events of the kinds placed on a device (trace/finish.py): the
lookup table it reads gives, for every kind, what comparing it with each of those kinds gave."""

from __future__ import annotations

import numpy as np

from tb_plugin.trace import finish
from tb_plugin.trace.categories import Kind


def test_the_device_kinds_table_is_the_comparison_with_each_kind():
    kinds = np.arange(256, dtype=np.uint8)
    compared = np.isin(kinds, (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION))
    assert finish._PLACED_ON_DEVICE[kinds].tolist() == compared.tolist()
    assert int(compared.sum()) == 4
