"""A file's format told by its first bytes, with nothing imported: what the readers started before the
registry's imports (:mod:`tb_plugin.artifacts.early`) and the sniffing of a logdir's files
(:mod:`.sniff`) both check."""

from __future__ import annotations

GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip member


def is_pickle_head(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) starts a pickle of protocol 2–5 (its PROTO opcode)."""
    return head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")
