"""Real storage emulators on loopback for the cloud tests: moto (S3), gcp-storage-emulator (GCS) and
Azurite (Azure Blob), each a subprocess on a free 127.0.0.1 port, killed by its own pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

AZURITE_DIRS = [Path(os.environ["KINETOSCOPE_AZURITE_DIR"])] if os.environ.get("KINETOSCOPE_AZURITE_DIR") else []
AZURITE_DIRS += [Path(__file__).parent / ".azurite", Path("/tmp/azurite_pkg")]
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"emulator exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"emulator did not listen on port {port}")


def azurite_bin() -> Path | None:
    for d in AZURITE_DIRS:
        exe = d / "node_modules" / ".bin" / "azurite-blob"
        if exe.exists():
            return exe
    return None


class Emulator:
    """One backend: ``env`` (the SDK's own variables), ``url(path)``, ``fs()``, ``kill()``."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.bucket = "traces"
        if backend == "s3":
            self.env = {
                "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            }
            self.scheme = "s3"
        elif backend == "gcs":
            self.env = {
                "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{self.port}",
                "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
            }
            self.scheme = "gs"
        elif backend == "azure":
            self.env = {
                "AZURE_STORAGE_CONNECTION_STRING": (
                    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                    f"AccountKey={AZURE_KEY};BlobEndpoint=http://127.0.0.1:{self.port}/devstoreaccount1;"
                )
            }
            self.scheme = "az"
        else:
            raise ValueError(backend)

    def url(self, path: str = "") -> str:
        return f"{self.scheme}://{self.bucket}/{path}".rstrip("/")

    def start(self) -> Emulator:
        if self.backend == "s3":
            cmd = [
                sys.executable,
                "-c",
                "import sys; from moto.server import main; sys.exit(main())",
                "-H",
                "127.0.0.1",
                "-p",
                str(self.port),
            ]
        elif self.backend == "gcs":
            cmd = [
                sys.executable,
                "-c",
                "import sys, time; from gcp_storage_emulator.server import create_server; "
                f"s = create_server('127.0.0.1', {self.port}, in_memory=True, default_bucket='{self.bucket}'); "
                "s.start(); time.sleep(10**9)",
            ]
        else:
            exe = azurite_bin()
            if exe is None:
                raise RuntimeError(
                    "Azurite is not installed: npm install --prefix tests/.azurite azurite@3.37.0 (.ci/run does this)"
                )
            cmd = [
                str(exe),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--inMemoryPersistence",
                "--skipApiVersionCheck",
                "--silent",
            ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_port(self.port, self.proc)
        return self

    def apply_env(self, monkeypatch) -> None:
        for k, v in self.env.items():
            monkeypatch.setenv(k, v)

    def fs(self):

        if self.backend == "s3":
            import s3fs

            return s3fs.S3FileSystem(
                endpoint_url=self.env["AWS_ENDPOINT_URL"], key="test", secret="test", skip_instance_cache=True
            )
        if self.backend == "gcs":
            from gcsfs.core import GCSFileSystem  # not gcsfs.GCSFileSystem: see remote._open_gcs_emulator

            return GCSFileSystem(
                project="test", token="anon", endpoint_url=self.env["STORAGE_EMULATOR_HOST"], skip_instance_cache=True
            )
        import adlfs

        return adlfs.AzureBlobFileSystem(
            connection_string=self.env["AZURE_STORAGE_CONNECTION_STRING"], skip_instance_cache=True
        )

    def make_bucket(self) -> None:
        fs = self.fs()
        if self.backend != "gcs":  # the GCS emulator made its default bucket
            fs.mkdir(self.bucket)

    def upload(self, local: Path, dest: str) -> None:
        fs = self.fs()
        for f in sorted(Path(local).iterdir()):
            if f.is_file():
                fs.put_file(str(f), f"{self.bucket}/{dest}/{f.name}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def clear_fsspec_instances() -> None:
    """fsspec caches filesystem instances: a new emulator (new port, new env) needs fresh ones."""
    import fsspec

    for name in ("s3", "gcs", "gs", "az", "abfs", "abfss"):
        try:
            fsspec.get_filesystem_class(name).clear_instance_cache()
        except (ImportError, ValueError):
            pass
    try:  # each class caches its own instances; on an emulator, remote.py uses this one
        from gcsfs.core import GCSFileSystem

        GCSFileSystem.clear_instance_cache()
    except ImportError:
        pass
