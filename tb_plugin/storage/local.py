"""The local file system without fsspec: what storage/ and registry/ call on a logdir's filesystem
(``info``, ``find``, ``open``, ``cat_file``...), answering as fsspec's ``LocalFileSystem`` does (same
info keys, paths, URLs and listing order), so a local report never imports fsspec (its import pulls
asyncio, ssl and email: 35-50 ms of a cold ``kinetoscope report``). Bucket URLs, and local paths whose
spelling only fsspec resolves (``file:x``, chained URLs, Windows drives), still go through fsspec.
"""

from __future__ import annotations

import os
import stat


def is_plain_local(url: str) -> bool:
    """Whether ``url`` is a POSIX path or a ``file://`` URL that :class:`LocalFS` resolves exactly as
    fsspec would (anything else, e.g. ``file:x``, ``data:``, chained ``a::b`` or a Windows path, is
    left to fsspec)."""
    if os.sep != "/" or "::" in url:
        return False
    if url.startswith("file://"):
        return "://" not in url[7:]
    return "://" not in url and not url.startswith(("file:", "local:", "data:"))


def strip_protocol(path) -> str:
    """fsspec's ``LocalFileSystem._strip_protocol`` on POSIX: no ``file://``, absolute, no trailing ``/``
    (elsewhere, drives and backslashes: fsspec's own)."""
    if os.sep != "/":
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem._strip_protocol(path)
    path = os.fspath(path)
    if path.startswith("file://"):
        path = path[7:]
    elif path.startswith("local://"):
        path = path[8:]
    if not path.startswith("/"):
        if path.startswith("~"):
            path = os.path.expanduser(path)
        else:
            path = path[2:] if path.startswith("./") else ("" if path == "." else path)
            path = f"{os.getcwd()}/{path}"
    return path.rstrip("/") or "/"


class LocalFS:
    """The local file system (POSIX), duck-typed like fsspec's ``LocalFileSystem`` for reading."""

    protocol = ("file", "local")
    root_marker = "/"

    @classmethod
    def _strip_protocol(cls, path) -> str:
        return strip_protocol(path)

    def unstrip_protocol(self, name: str) -> str:
        return f"file://{strip_protocol(name)}"

    def info(self, path, **kwargs) -> dict:
        """Size (of the link's target for a symlink), type, times, mode, inode, links (bytes, s)."""
        if isinstance(path, os.DirEntry):
            out = path.stat(follow_symlinks=False)
            link = path.is_symlink()
            kind = (
                "directory"
                if path.is_dir(follow_symlinks=False)
                else ("file" if path.is_file(follow_symlinks=False) else "other")
            )
            size = out.st_size
            if link:
                try:
                    size = path.stat(follow_symlinks=True).st_size
                except OSError:
                    size = 0
            path = strip_protocol(path.path)
        else:
            path = strip_protocol(path)
            out = os.stat(path, follow_symlinks=False)
            link = stat.S_ISLNK(out.st_mode)
            if link:
                out = os.stat(path, follow_symlinks=True)
            size = out.st_size
            kind = "directory" if stat.S_ISDIR(out.st_mode) else ("file" if stat.S_ISREG(out.st_mode) else "other")
        result = {
            "name": path,
            "size": size,
            "type": kind,
            "created": getattr(out, "st_birthtime", out.st_ctime),
            "islink": link,
        }
        for field in ("mode", "uid", "gid", "mtime", "ino", "nlink"):
            result[field] = getattr(out, f"st_{field}")
        if link:
            result["destination"] = os.readlink(path)
        return result

    def ls(self, path, detail: bool = False, **kwargs) -> list:
        path = strip_protocol(path)
        path_info = self.info(path)
        if path_info["type"] != "directory":
            return [path_info] if detail else [path_info["name"]]
        infos = []
        with os.scandir(path) as it:
            for entry in it:
                try:
                    infos.append(self.info(entry) if detail else strip_protocol(entry.path))
                except FileNotFoundError:
                    pass
        return infos

    def _walk(self, path: str, out: dict) -> None:
        """Every non-directory below ``path`` into ``out`` (name → info); symlinked directories are
        not descended into (their type is "other"); unreadable directories are skipped."""
        try:
            listing = self.ls(path, detail=True)
        except OSError:
            return
        dirs = []
        for info in listing:
            name = info["name"].rstrip("/")
            if info["type"] == "directory" and name != path:
                dirs.append(name)
            else:
                out[info["name"]] = info
        for d in dirs:
            self._walk(d, out)

    def find(self, path, maxdepth=None, withdirs: bool = False, detail: bool = False, **kwargs):
        """Every file below ``path`` (any depth), sorted by name: ``{name: info}`` with ``detail``."""
        if maxdepth is not None or withdirs:
            raise NotImplementedError("LocalFS.find lists files at any depth only")
        path = strip_protocol(path)
        out: dict = {}
        self._walk(path, out)
        if not out and self.isfile(path):
            out[path] = {}
        names = sorted(out)
        return {name: out[name] for name in names} if detail else names

    def exists(self, path, **kwargs) -> bool:
        try:
            self.info(path)
            return True
        except Exception:
            return False

    def isfile(self, path) -> bool:
        try:
            return self.info(path)["type"] == "file"
        except Exception:
            return False

    def isdir(self, path) -> bool:
        try:
            return self.info(path)["type"] == "directory"
        except OSError:
            return False

    def size(self, path) -> int:
        return self.info(path)["size"]  # (every entry info() returns has one)

    def _open(self, path, mode: str = "rb", block_size=None, **kwargs):
        return open(strip_protocol(path), mode)

    def open(self, path, mode: str = "rb", block_size=None, **kwargs):
        """A file object for reading (``rb``); text modes decode as ``open`` does."""
        if mode not in ("rb", "r"):
            raise ValueError(f"LocalFS opens files for reading only, not {mode!r}")
        f = self._open(path, "rb", block_size=block_size)
        if mode == "r":
            import io

            return io.TextIOWrapper(
                f, encoding=kwargs.get("encoding"), errors=kwargs.get("errors"), newline=kwargs.get("newline")
            )
        return f

    def cat_file(self, path, start: int | None = None, end: int | None = None, **kwargs) -> bytes:
        """Bytes ``[start, end)`` of the file (negative: from its end, like slices)."""
        with self.open(path, "rb") as f:
            if start is not None:
                f.seek(start if start >= 0 else max(0, os.fstat(f.fileno()).st_size + start))
            if end is not None:
                if end < 0:
                    end = os.fstat(f.fileno()).st_size + end
                return f.read(end - f.tell())
            return f.read()
