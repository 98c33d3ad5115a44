"""Remote logdirs (S3, GCS, Azure Blob) through fsspec: opening, extras, clear errors, retries.

Credentials and endpoints are each SDK's own (see the README, "Cloud logdirs"): nothing here invents
a new convention. The only defaults we add apply to emulators: with ``STORAGE_EMULATOR_HOST`` set and
no ``GOOGLE_APPLICATION_CREDENTIALS``, GCS is opened anonymously (an emulator has no auth), and
gcsfs's hierarchical-namespace probe (a gRPC call an emulator never answers) is turned off.
"""

from __future__ import annotations

import os
import time

import fsspec

# URL scheme → (pip extra, fsspec implementation package)
PROTOCOL_EXTRAS = {
    "s3": ("s3", "s3fs"), "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"), "gcs": ("gcs", "gcsfs"),
    "az": ("azure", "adlfs"), "abfs": ("azure", "adlfs"), "abfss": ("azure", "adlfs"), "adl": ("azure", "adlfs"),
}
RETRIES = 4  # attempts per chunk on a transient network error
BACKOFF_S = 0.5  # first wait; doubled after each failed attempt
# gcsfs and the Azure SDK retry every request themselves, with backoff: for them, our own loop makes
# one attempt, so a dead endpoint becomes a per-file error in bounded time instead of retries of
# retries. gcsfs: 6 attempts, waits of about 1+2+4+8+16 s (its fixed policy). Azure: the policy below.
SDK_RETRIES = {"gs", "gcs", "az", "abfs", "abfss", "adl"}
AZURE_RETRY = {"total_retries": 3, "connect_retries": 3, "read_retries": 3, "initial_backoff": 1,
               "increment_base": 2, "random_jitter_range": 1}  # waits ≈ 1+3+5 s, not 15+18+24 s
AZURE_TIMEOUTS = {"connection_timeout": 20, "read_timeout": 60}  # seconds; the SDK's are 20 and 60000
GCS_REQUEST_TIMEOUT_S = 120  # gcsfs ``requests_timeout`` (aiohttp's default is 300 s per request)


class StorageError(Exception):
    """A logdir (or one of its files) cannot be listed or read; the message is meant for users."""


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def is_remote_url(url: str) -> bool:
    return protocol_of(url) not in ("file", "local")


def is_local_fs(fs) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


def missing_extra_message(url: str) -> str | None:
    extra = PROTOCOL_EXTRAS.get(protocol_of(url))
    if extra is None:
        return None
    name, package = extra
    return (f"{protocol_of(url)}:// logdirs need the optional package {package}: "
            f'pip install "kinetoscope[{name}]"')


def _storage_options(url: str) -> dict:
    protocol = protocol_of(url)
    if protocol in ("gs", "gcs"):
        options = {"requests_timeout": GCS_REQUEST_TIMEOUT_S}
        if os.environ.get("STORAGE_EMULATOR_HOST"):
            os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
            if not os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
                options["token"] = "anon"
        return options
    if protocol in ("az", "abfs", "abfss"):
        return dict(AZURE_TIMEOUTS)
    return {}


def _bound_azure_retries(fs) -> None:
    """adlfs builds its Azure clients without retry settings (15 s first backoff): tune the
    retry policy its pipeline shares with every container and blob client."""
    clients = [getattr(fs, "service_client", None)]
    for client in clients:
        for policy in getattr(getattr(client, "_pipeline", None), "_impl_policies", []) or []:
            if hasattr(policy, "initial_backoff") and hasattr(policy, "total_retries"):
                for name, value in AZURE_RETRY.items():
                    setattr(policy, name, value)


def attempts_for(fs) -> int:
    """Our attempts per request: 1 where the SDK retries itself (see :data:`SDK_RETRIES`)."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return 1 if SDK_RETRIES.intersection(protocols) else RETRIES


def open_logdir(logdir: str):
    """``(fs, root)`` for a logdir path or URL. Raises :class:`StorageError` with the pip command
    to run when the URL needs an extra that is not installed."""
    logdir = str(logdir)
    try:
        fs, root = fsspec.core.url_to_fs(logdir, **_storage_options(logdir))
    except ImportError as exc:
        message = missing_extra_message(logdir)
        raise StorageError(message or f"cannot open {logdir}: {exc}") from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise StorageError(f"unsupported URL scheme in {logdir!r}: use a local path or "
                               "s3://, gs://, gcs://, az://, abfs://, abfss://") from None
        raise StorageError(f"cannot open {logdir}: {exc}") from None
    except Exception as exc:  # an SDK refusing its configuration (e.g. a malformed connection string)
        raise StorageError(f"cannot open {logdir}: {describe_error(exc)}") from None
    if protocol_of(logdir) in ("az", "abfs", "abfss"):
        _bound_azure_retries(fs)
    return fs, root.rstrip("/") or "/"


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def describe_error(exc: BaseException, where: str = "") -> str:
    """A one-line, user-facing description of a storage failure."""
    at = f" ({where})" if where else ""
    names = {type(e).__name__ for e in _chain(exc)}
    text = " ".join(str(e) for e in _chain(exc))
    lowered = text.lower()
    if "NoCredentialsError" in names or "DefaultAzureCredentialError" in names or \
            "ClientAuthenticationError" in names or "unable to locate credentials" in lowered or \
            "no credentials" in lowered or "credentialunavailable" in lowered:
        return (f"no credentials{at}: configure the SDK's credentials (see README, Cloud logdirs): "
                f"{_short(exc)}")
    if isinstance(exc, PermissionError) or "accessdenied" in lowered.replace(" ", "") or "403" in text or \
            "forbidden" in lowered or "authorizationfailure" in lowered.replace(" ", ""):
        return f"access denied{at}: {_short(exc)}"
    if "nosuchbucket" in lowered.replace(" ", "") or "containernotfound" in lowered.replace(" ", "") or \
            "bucket does not exist" in lowered or "specified container does not exist" in lowered:
        return f"bucket or container not found{at}: {_short(exc)}"
    if isinstance(exc, FileNotFoundError):
        return f"not found{at}: {_short(exc)}"
    if is_transient(exc):
        return f"network error{at}: {_short(exc)}"
    return f"{type(exc).__name__}{at}: {_short(exc)}"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]


_TRANSIENT_NAMES = {
    "ConnectionError", "ConnectionRefusedError", "ConnectionResetError", "ConnectionAbortedError",
    "BrokenPipeError", "TimeoutError", "FSTimeoutError", "EndpointConnectionError", "ConnectTimeoutError",
    "ReadTimeoutError", "ClientConnectorError", "ClientOSError", "ServerDisconnectedError",
    "ClientPayloadError", "ServerTimeoutError", "IncompleteRead", "ServiceRequestError", "ServiceResponseError",
    "HttpResponseError", "ResponseParserError", "ClientConnectionError", "TransportError", "RetryError",
}


def is_transient(exc: BaseException) -> bool:
    """A network failure worth retrying (not: missing object, access denied, bad request)."""
    for e in _chain(exc):
        if isinstance(e, (FileNotFoundError, PermissionError)):
            return False
        if isinstance(e, (ConnectionError, TimeoutError)) or type(e).__name__ in _TRANSIENT_NAMES:
            return True
        status = getattr(e, "status", None) or getattr(e, "status_code", None) or getattr(e, "code", None)
        if isinstance(status, int) and status in (408, 429, 500, 502, 503, 504):
            return True
    return False


def with_retries(call, what: str, retries: int | None = None, backoff: float | None = None):
    """``call()``, retried with exponential backoff on transient network errors."""
    retries = RETRIES if retries is None else retries
    delay = BACKOFF_S if backoff is None else backoff
    for attempt in range(1, retries + 1):
        try:
            return call()
        except Exception as exc:
            if attempt == retries or not is_transient(exc):
                raise
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")
