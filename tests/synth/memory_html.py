"""``export_memory_timeline`` HTML files as PyTorch writes them (Composer's ``TorchProfiler`` names them
``rank{rank}.{batch}.pt.trace.memory.html``), a tiny PNG of known size, and hostile variants."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int = 7, height: int = 5, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid ``width``×``height`` RGB PNG of one colour."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def torch_memory_html(image: bytes) -> bytes:
    """The page ``torch.profiler`` writes for ``export_memory_timeline("….html")``."""
    encoded = base64.b64encode(image).decode()
    return (
        f"""<html>
<head><meta charset="utf-8" /><title>GPU Memory Timeline HTML</title></head>
<body>
  <img src='data:image/png;base64,{encoded}'>
</body>
</html>"""
    ).encode()


def hostile_memory_html(image: bytes) -> bytes:
    """Scripts, event handlers, an SVG data URL, a fake PNG (HTML bytes) and then the real PNG."""
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' onload='window.__xss=3'/>").decode()
    fake = base64.b64encode(b"<script>window.__xss=4</script>").decode()
    real = base64.b64encode(image).decode()
    return (
        f"""<html><head><script>window.__xss = 1;</script>
<meta http-equiv="refresh" content="0;url=javascript:window.__xss=5"></head>
<body onload="window.__xss = 2">
<img src=x onerror="window.__xss = 6">
<img src="data:image/svg+xml;base64,{svg}" onload="window.__xss = 7">
<img src="data:image/png;base64,{fake}">
<iframe src="javascript:window.__xss=8"></iframe>
<img onerror="window.__xss = 9" src="data:image/png;base64,{real}" onload="window.__xss = 10">
</body></html>"""
    ).encode()
