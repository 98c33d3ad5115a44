"""What the decoders cut a trace into, without numpy: the batch size, a batch's joined bytes and the
object form's top-level structure. The early reader's child (:mod:`.early_split`), forked before numpy's
import, splits with these exactly as :mod:`.decode` does."""

# No ``from __future__ import annotations`` here (see events.py: msgspec resolves the struct's annotations).
from typing import Any, Sequence, Union

import msgspec

# Events decoded into columns at once. Both decoders (whole document, stream) cut at the same
# multiples of it, which makes their string interning, and so their Traces, equal byte for byte; the
# whole-document decoder reports progress once per batch. Smaller batches keep a batch's structs and
# joined bytes in the CPU caches: decoding the 35 MB V100 sample takes 262 ms with 10 000, 205 with
# 5 000, 190 with 2 500, 197 with 1 000 (a 150 MB H100 trace: 2.31, 1.73, 1.42, 1.36 s).
BATCH_EVENTS = 2_500


def batch_parts(raws: Sequence[msgspec.Raw]) -> list[Any]:
    """The pieces a batch is joined from, in order: ``[``, each raw event with a ``,`` between them, ``]``."""
    if not raws:
        return [b"[]"]
    parts: list[Any] = [b","] * (2 * len(raws) + 1)
    parts[1::2] = raws
    parts[0], parts[-1] = b"[", b"]"
    return parts


def join_batch(raws: Sequence[msgspec.Raw]) -> bytes:
    """A batch as the whole-document decoder joins it, ``[`` + ``,``.join(raws) + ``]`` (one copy of the events)."""
    return b"".join(batch_parts(raws))


class _ObjectForm(msgspec.Struct):
    traceEvents: Union[list[msgspec.Raw], msgspec.UnsetType] = msgspec.UNSET
    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    schemaVersion: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    baseTimeNanoseconds: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    roctracer_version: Any = None
    rocprof_version: Any = None
    pytorch_version: Any = None  # not written by Kineto today; kept if a tool adds it


OBJECT_DECODER = msgspec.json.Decoder(_ObjectForm)
