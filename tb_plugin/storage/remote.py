"""Remote logdirs (S3, GCS, Azure Blob) through fsspec: opening, extras, clear errors, retries.

Credentials and endpoints are each SDK's own (see the README, "Cloud logdirs"): nothing here invents
a new convention. The only defaults we add apply to emulators: with ``STORAGE_EMULATOR_HOST`` set and
no ``GOOGLE_APPLICATION_CREDENTIALS``, GCS is opened anonymously (an emulator has no auth), and
gcsfs's hierarchical-namespace probe (a gRPC call an emulator never answers) is turned off.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from .local import LocalFS, is_plain_local, strip_protocol
from .urls import check_scheme, redact

# URL scheme → (pip extra, fsspec implementation package)
PROTOCOL_EXTRAS = {
    "s3": ("s3", "s3fs"),
    "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"),
    "gcs": ("gcs", "gcsfs"),
    "az": ("azure", "adlfs"),
    "abfs": ("azure", "adlfs"),
    "abfss": ("azure", "adlfs"),
    "adl": ("azure", "adlfs"),
}
RETRIES = 4  # attempts per request on a transient network error
BACKOFF_S = 0.5  # first wait; doubled after each failed attempt (waits 0.5 + 1 + 2 s)
RETRY_DEADLINE_S = 20.0  # no new attempt starts later than this after the first one began
# The SDKs retry too. s3fs's requests go through our loop (:func:`with_retries`). gcsfs retries every
# request itself (6 attempts, waits of 1+2+4+8+16 s, plus up to 1 s of jitter each: 34 s measured
# per dead request, so a killed endpoint took 34 s to fail a read and 34 s more to fail the next
# listing); :func:`_bound_gcs_retries` puts our policy (RETRIES, BACKOFF_S, RETRY_DEADLINE_S) in
# its place, inside gcsfs, for every request (listing, info, ranged read). The Azure SDK keeps its
# own retry loop, given the same attempts and waits by :func:`_bound_azure_retries` (its own
# exponential formula, initial + 2**n with n from 1, waited 3+5+9 s even when tuned: 18 s measured).
# For both, our read loop makes one attempt per request, so a dead endpoint becomes a per-file error
# in bounded time instead of retries of retries.
SDK_RETRIES = {"gs", "gcs", "az", "abfs", "abfss", "adl"}
AZURE_RETRY = {"total_retries": RETRIES - 1, "connect_retries": RETRIES - 1, "read_retries": RETRIES - 1}
AZURE_TIMEOUTS = {"connection_timeout": 20, "read_timeout": 60}  # seconds; the SDK's are 20 and 60000
# gcsfs ``requests_timeout`` (passed to aiohttp; its default is 300 s per request, in total): a
# connection must open within GCS_CONNECT_TIMEOUT_S, and a response that sends no byte for
# GCS_STALL_TIMEOUT_S is dropped (and retried); a slow download that keeps sending is never cut.
GCS_CONNECT_TIMEOUT_S = 10
GCS_STALL_TIMEOUT_S = 30


class StorageError(Exception):
    """A logdir (or one of its files) cannot be listed or read; the message is meant for users."""


def protocol_of(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def is_local_fs(fs) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


def missing_extra_message(url: str) -> str | None:
    extra = PROTOCOL_EXTRAS.get(protocol_of(url))
    if extra is None:
        return None
    name, package = extra
    return f'{protocol_of(url)}:// logdirs need the optional package {package}: pip install "kinetoscope[{name}]"'


def _storage_options(url: str) -> dict:
    protocol = protocol_of(url)
    if protocol in ("gs", "gcs"):
        import aiohttp

        options: dict[str, Any] = {
            "requests_timeout": aiohttp.ClientTimeout(
                total=None, connect=GCS_CONNECT_TIMEOUT_S, sock_read=GCS_STALL_TIMEOUT_S
            )
        }
        if os.environ.get("STORAGE_EMULATOR_HOST"):
            os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
            if not os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
                options["token"] = "anon"
        return options
    if protocol in ("az", "abfs", "abfss"):
        return dict(AZURE_TIMEOUTS)
    return {}


def _open_gcs_emulator(url: str):
    """``(fs, path)`` on a GCS emulator: always gcsfs's plain ``GCSFileSystem``. The class gcsfs
    registers for ``gs://`` depends on ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT`` *when gcsfs is first
    imported*; its experimental subclass asks a gRPC control API for each bucket's type, which an
    emulator never answers (the request hangs)."""
    from gcsfs.core import GCSFileSystem

    return GCSFileSystem(**_storage_options(url)), GCSFileSystem._strip_protocol(url)


def _bound_azure_retries(fs) -> None:
    """adlfs builds its Azure clients without retry settings (waits of 15, 18 and 24 s): give the
    retry policy its pipeline shares with every container and blob client our attempts
    (:data:`AZURE_RETRY`) and our waits (:func:`_azure_backoff`)."""
    clients = [getattr(fs, "service_client", None)]
    for client in clients:
        for policy in getattr(getattr(client, "_pipeline", None), "_impl_policies", []) or []:
            if hasattr(policy, "get_backoff_time") and hasattr(policy, "total_retries"):
                for name, value in AZURE_RETRY.items():
                    setattr(policy, name, value)
                policy.get_backoff_time = _azure_backoff


def _azure_backoff(settings: dict) -> float:
    """The Azure SDK's wait before retry number ``settings["count"]`` (from 1): our waits
    (:func:`backoff_wait`)."""
    return backoff_wait(max(1, settings.get("count", 1)))


def _gcs_retriable(exc: BaseException) -> bool:
    """gcsfs's own definition of a retriable failure (HTTP 408/429/5xx, connection errors, token
    refresh), or one of ours (:func:`is_transient`, e.g. aiohttp's timeouts); never a missing object."""
    from gcsfs.retry import is_retriable

    if any(isinstance(e, (FileNotFoundError, PermissionError)) for e in _chain(exc)):
        return False
    return is_retriable(exc) or is_transient(exc)


def _bound_gcs_retries(fs) -> None:
    """Replace gcsfs's fixed retry loop around each HTTP request of ``fs`` by our policy.

    gcsfs decorates ``GCSFileSystem._request`` (the one coroutine every listing, ``info`` and ranged
    read goes through) with ``gcsfs.retry.retry_request(retries=6)``, fixed when the class is
    defined; no constructor option changes it. The undecorated coroutine is its ``__wrapped__``: on
    this instance, ``_request`` becomes that coroutine inside :func:`retry_async`. A gcsfs without
    ``__wrapped__`` keeps its own policy."""
    if getattr(fs, "_kinetoscope_retries", False):
        return
    raw = getattr(type(fs)._request, "__wrapped__", None)
    if raw is None:
        return

    async def _request(*args, **kwargs):
        return await retry_async(lambda: raw(fs, *args, **kwargs), _gcs_retriable)

    fs._request = _request
    fs._kinetoscope_retries = True


def _protocols(fs) -> tuple:
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def attempts_for(fs) -> int:
    """Attempts per request of our outer loop (:func:`with_retries`): 1 where the retries happen
    inside the SDK (see :data:`SDK_RETRIES`)."""
    return 1 if SDK_RETRIES.intersection(_protocols(fs)) else RETRIES


def attempts_per_request(fs) -> int:
    """How many times a failing request was tried in all, for error messages."""
    if {"az", "abfs", "abfss", "adl"}.intersection(_protocols(fs)):
        return AZURE_RETRY["total_retries"] + 1
    return RETRIES


def url_to_fs(url: str):
    """``(fs, path)`` of a file's path or URL, as ``fsspec.core.url_to_fs`` gives them; a plain local
    path (:func:`~.local.is_plain_local`) without importing fsspec."""
    url = str(url)
    if is_plain_local(url):
        return LocalFS(), strip_protocol(url)
    import fsspec

    return fsspec.core.url_to_fs(url)


def open_logdir(logdir: str):
    """``(fs, root)`` for a logdir path or URL. Raises :class:`StorageError` with the pip command
    to run when the URL needs an extra that is not installed. A plain local path (or ``file://`` URL)
    opens without importing fsspec (:mod:`.local`), as the same path and root fsspec would give."""
    logdir = str(logdir)
    if is_plain_local(logdir):
        return LocalFS(), strip_protocol(logdir)
    if problem := check_scheme(logdir):
        raise StorageError(problem)
    try:
        if protocol_of(logdir) in ("gs", "gcs") and os.environ.get("STORAGE_EMULATOR_HOST"):
            fs, root = _open_gcs_emulator(logdir)
        else:
            import fsspec  # bucket URLs (and local spellings only fsspec resolves): its import costs 35-50 ms

            fs, root = fsspec.core.url_to_fs(logdir, **_storage_options(logdir))
    except ImportError as exc:
        message = missing_extra_message(logdir)
        raise StorageError(message or redact(f"cannot open {logdir}: {exc}")) from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise StorageError(
                f"unsupported URL scheme in {redact(logdir)!r}: use a local path or "
                "s3://, gs://, gcs://, az://, abfs://, abfss://"
            ) from None
        raise StorageError(redact(f"cannot open {logdir}: {exc}")) from None
    except Exception as exc:  # an SDK refusing its configuration (e.g. a malformed connection string)
        raise StorageError(redact(f"cannot open {logdir}: {describe_error(exc)}")) from None
    if protocol_of(logdir) in ("az", "abfs", "abfss"):
        _bound_azure_retries(fs)
    elif protocol_of(logdir) in ("gs", "gcs"):
        _bound_gcs_retries(fs)
    return fs, root.rstrip("/") or "/"


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
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
    if (
        "NoCredentialsError" in names
        or "DefaultAzureCredentialError" in names
        or "ClientAuthenticationError" in names
        or "unable to locate credentials" in lowered
        or "no credentials" in lowered
        or "credentialunavailable" in lowered
    ):
        return f"no credentials{at}: configure the SDK's credentials (see README, Cloud logdirs): {_short(exc)}"
    if (
        isinstance(exc, PermissionError)
        or "accessdenied" in lowered.replace(" ", "")
        or "403" in text
        or "forbidden" in lowered
        or "authorizationfailure" in lowered.replace(" ", "")
    ):
        return f"access denied{at}: {_short(exc)}"
    if (
        "nosuchbucket" in lowered.replace(" ", "")
        or "containernotfound" in lowered.replace(" ", "")
        or "bucket does not exist" in lowered
        or "specified container does not exist" in lowered
    ):
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
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "ConnectionAbortedError",
    "BrokenPipeError",
    "TimeoutError",
    "FSTimeoutError",
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ClientConnectorError",
    "ClientOSError",
    "ServerDisconnectedError",
    "ClientPayloadError",
    "ServerTimeoutError",
    "IncompleteRead",
    "ServiceRequestError",
    "ServiceResponseError",
    "HttpResponseError",
    "ResponseParserError",
    "ClientConnectionError",
    "TransportError",
    "RetryError",
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


def backoff_wait(attempt: int, backoff: float | None = None) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): ``backoff`` (default
    :data:`BACKOFF_S`, read at each call) doubled after each failed attempt."""
    return (BACKOFF_S if backoff is None else backoff) * 2 ** (attempt - 1)


def retry_delay(
    attempt: int, started: float, attempts: int | None = None, backoff: float | None = None
) -> float | None:
    """The wait, in seconds, before the next attempt once attempt ``attempt`` (1-based) failed
    transiently, or ``None`` to give up: after ``attempts`` attempts (default :data:`RETRIES`), or
    when the next attempt would start more than :data:`RETRY_DEADLINE_S` after ``started`` (a
    ``time.monotonic()``). Waits: ``backoff`` (default :data:`BACKOFF_S`), doubled each time."""
    attempts = RETRIES if attempts is None else attempts
    delay = backoff_wait(attempt, backoff)
    if attempt >= attempts or time.monotonic() + delay - started > RETRY_DEADLINE_S:
        return None
    return delay


def with_retries(call, what: str, retries: int | None = None, backoff: float | None = None):
    """``call()``, retried on transient network errors (:func:`is_transient`) with the waits of
    :func:`retry_delay`."""
    started = time.monotonic()
    attempt = 1
    while True:
        try:
            return call()
        except Exception as exc:
            delay = retry_delay(attempt, started, retries, backoff) if is_transient(exc) else None
            if delay is None:
                raise
        time.sleep(delay)
        attempt += 1


async def retry_async(call, retriable) -> object:
    """``await call()``, retried on ``retriable(exc)`` with the same policy as :func:`with_retries`
    (see :func:`retry_delay`)."""
    import asyncio

    started = time.monotonic()
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as exc:
            delay = retry_delay(attempt, started) if retriable(exc) else None
            if delay is None:
                raise
        await asyncio.sleep(delay)
        attempt += 1


def remote_message(exc: BaseException, url: str, start: int | None, attempts: int) -> str:
    """What a failed read of ``url`` says (``start``: the range's first byte, if one failed)."""
    url = redact(url)
    at = f" at byte {start}" if start else ""
    if isinstance(exc, FileNotFoundError):
        return f"the object was deleted or replaced after it was listed: {url} no longer exists"
    if is_transient(exc):
        return f"network error reading {url}{at}, still failing after {attempts} attempts: {describe_error(exc)}"
    return f"cannot read {url}{at}: {describe_error(exc)}"
