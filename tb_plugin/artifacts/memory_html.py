"""The image inside an ``export_memory_timeline`` HTML file (``*.pt.trace.memory.html``, written by
``torch.profiler.profile.export_memory_timeline(path.html)`` and Composer's ``TorchProfiler``).

PyTorch writes a fixed page: ``<img src='data:image/png;base64,…'>`` in a bare body. We keep only the
image: the first ``<img>`` whose ``src`` is a base64 ``data:image/png`` URL whose bytes decode
strictly and start with the PNG signature. Nothing else of the file (markup, scripts, event
handlers, styles, other URLs) is kept or sent, so a hostile page can show at most a PNG.
Bounds: the file ≤ :data:`MAX_HTML_BYTES`, the image ≤ :data:`MAX_IMAGE_BYTES`.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

MAX_HTML_BYTES = 64 << 20  # bytes of the HTML file read (a 20×12 inch matplotlib PNG is ~0.2 MB)
MAX_IMAGE_BYTES = 32 << 20  # bytes of the decoded image
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CONTENT_TYPE = "image/png"  # the only type served: never SVG or HTML

# an <img ...> tag (no '>' inside), then its src attribute's data URL; both searched in linear time
_IMG = re.compile(rb"<img\b[^>]*>", re.IGNORECASE)
_SRC = re.compile(rb"""\ssrc\s*=\s*(["']?)data:image/png;base64,([A-Za-z0-9+/=\s]*)\1""", re.IGNORECASE)


class MemoryHtmlError(Exception):
    """Not a memory-timeline HTML file with a PNG image."""


def extract_png(data: bytes) -> dict:
    """``{"png": bytes, "width_px", "height_px", "html_bytes"}`` for the first embedded PNG of an HTML
    file. Raises :class:`MemoryHtmlError` when the file is too large or holds no valid PNG."""
    if len(data) > MAX_HTML_BYTES:
        raise MemoryHtmlError(f"the file is larger than {MAX_HTML_BYTES >> 20} MiB: not read")
    for tag in _IMG.finditer(data):
        src = _SRC.search(tag.group(0))
        if src is None:
            continue
        text = re.sub(rb"\s+", b"", src.group(2))
        if len(text) * 3 // 4 > MAX_IMAGE_BYTES:
            raise MemoryHtmlError(f"the embedded image is larger than {MAX_IMAGE_BYTES >> 20} MiB")
        try:
            png = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            continue
        size = png_size(png)
        if size is not None:
            return {"png": png, "width_px": size[0], "height_px": size[1], "html_bytes": len(data)}
    raise MemoryHtmlError("no embedded PNG image (an <img> with a data:image/png;base64 source) in this file")


def png_size(png: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from a PNG's ``IHDR`` chunk, or None when ``png`` is no PNG."""
    if len(png) < 24 or not png.startswith(PNG_SIGNATURE) or png[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", png[16:24])
    return (width, height) if width > 0 and height > 0 else None
