"""Module loggers made when first used (tb_plugin/logs.py): the same logger as ``logging.getLogger``
(name, level, records that ``caplog`` sees), ``logging`` imported only then."""

from __future__ import annotations

import logging
import subprocess
import sys

from tb_plugin.logs import module_logger


def test_a_module_logger_is_the_named_logger(caplog):
    logger = module_logger("tb_plugin.test_logs_probe")
    with caplog.at_level(logging.INFO, logger="tb_plugin.test_logs_probe"):
        logger.info("cache entry %s is unusable", "x")
        logger.debug("not shown at INFO")
        assert logger.isEnabledFor(logging.INFO) and not logger.isEnabledFor(logging.DEBUG)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("tb_plugin.test_logs_probe", "INFO", "cache entry x is unusable")
    ]
    assert logger.name == "tb_plugin.test_logs_probe"


def test_logging_is_imported_only_when_a_logger_is_used():
    code = (
        "import sys\n"
        "from tb_plugin.logs import module_logger\n"
        "log = module_logger('x')\n"
        "print('logging' in sys.modules)\n"
        "log.warning('now')\n"
        "print('logging' in sys.modules)\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert got.stdout.split() == ["False", "True"] and "now" in got.stderr
