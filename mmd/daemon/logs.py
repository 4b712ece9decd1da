"""Logging to stderr, one event a line, friendly to journald.

Lines read ``<time> <level> <logger>: <event> key=value …``. Under journald
(``$JOURNAL_STREAM`` set, see :attr:`~.config.Config.journal`) the time is
left out (the journal stamps lines itself) and each line starts with the
syslog priority ``<N>`` so ``journalctl -p`` can filter. Line breaks inside a
message are escaped, so one event is always one line.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["setup_logging"]

_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


class _LineFormatter(logging.Formatter):
    def __init__(self, journal: bool) -> None:
        super().__init__()
        self.journal = journal

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info:
            text += " | " + self.formatException(record.exc_info)
        text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if self.journal:
            return f"<{_PRIORITY.get(record.levelno, 6)}>{record.name}: {text}"
        return f"{self.formatTime(record, '%Y-%m-%dT%H:%M:%S')} {record.levelname.lower()} {record.name}: {text}"


def setup_logging(level: str, journal: bool) -> None:
    """Send the ``mmd`` loggers to stderr at ``level`` (``debug`` | ``info`` | ``warning`` | ``error``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter(journal))
    logger = logging.getLogger("mmd")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False
    apscheduler = logging.getLogger("apscheduler")
    apscheduler.handlers[:] = [handler]
    apscheduler.setLevel(logging.WARNING)
    apscheduler.propagate = False
