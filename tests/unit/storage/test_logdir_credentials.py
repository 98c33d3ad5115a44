"""Credentials in a logdir URL are never shown, and only the documented schemes are accepted
(hardening round three, item 13: ``ftp://user:pass@…`` was echoed to every client by the ``runs``
route and the MCP ``list_runs`` tool)."""

from __future__ import annotations

import io
import json
import logging

import pytest

from tb_plugin import api
from tb_plugin.cli.report import run_report
from tb_plugin.interfaces.mcp_tools import Tools
from tb_plugin.registry.multi import MultiRegistry
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.storage.remote import StorageError, open_logdir
from tb_plugin.storage.urls import check_scheme, redact

SECRET = "hunter2-S3CRET"


@pytest.mark.parametrize(
    "url",
    [
        f"ftp://user:{SECRET}@127.0.0.1:1/logs",
        f"https://{SECRET}@example.invalid/x",
        f"memory://u:{SECRET}@x/y",
        f"simplecache::ftp://u:{SECRET}@h/x",
    ],
)
def test_undocumented_schemes_are_refused_and_never_echo_credentials(url, caplog):
    with pytest.raises(StorageError, match="unsupported URL scheme") as info:
        open_logdir(url)
    assert SECRET not in str(info.value)
    caplog.set_level(logging.DEBUG)
    reg = RunRegistry(url)
    reg.scan()
    status, doc = api.runs(reg)
    assert status == 200 and SECRET not in json.dumps(doc) and "unsupported URL scheme" in json.dumps(doc)
    listed = Tools(reg, wait_s=0.1).list_runs()
    assert SECRET not in json.dumps(listed)
    out, err = io.StringIO(), io.StringIO()
    assert run_report(url, None, True, False, out, err) != 0
    assert SECRET not in out.getvalue() + err.getvalue()
    assert SECRET not in caplog.text
    assert SECRET not in MultiRegistry([("a", url)]).logdir


def test_redaction_keeps_what_is_no_secret():
    assert redact("s3://bucket/prefix") == "s3://bucket/prefix"
    assert (
        redact("abfs://container@account.dfs.core.windows.net/p") == "abfs://container@account.dfs.core.windows.net/p"
    )
    assert redact(f"abfs://container:{SECRET}@account/p") == "abfs://***@account/p"
    assert redact(f"az://c/p?sv=2020&sig={SECRET}") == "az://c/p?sv=***&sig=***"
    assert redact(f"cannot open s3://k:{SECRET}@bucket/x: denied") == "cannot open s3://***@bucket/x: denied"
    assert redact("/home/me/logs") == "/home/me/logs"
    for ok in (
        "s3://b/p",
        "gs://b",
        "gcs://b",
        "az://c",
        "abfs://c@a/p",
        "abfss://c",
        "adl://x",
        "file:///tmp",
        "/tmp",
        "rel",
    ):
        assert check_scheme(ok) is None, ok
