"""Importing Apache Beam quietly: its import logs one warning on the root logger (the optional
BigQuery client libraries, never used by the kit) and, as the root logger has no handler yet,
``logging.warning`` installs one on stderr for every later record of the process. Both are noise in
a user's terminal, from every process that imports Beam, before any answer the kit gives."""

from __future__ import annotations

import logging

# the start of the message Beam logs when the optional GCP client libraries are missing
_OPTIONAL_GCP = "apitools not found"


class _DropOptionalGcpNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_OPTIONAL_GCP)


def quiet_beam_import() -> None:
    """Import apache_beam without the notice, and without giving the root logger a handler."""
    root = logging.getLogger()
    if not any(isinstance(f, _DropOptionalGcpNotice) for f in root.filters):
        root.addFilter(_DropOptionalGcpNotice())
    placeholder = None
    if not root.handlers:  # so logging.warning() does not call basicConfig()
        placeholder = logging.NullHandler()
        root.addHandler(placeholder)
    try:
        import apache_beam  # noqa: F401
    finally:
        if placeholder is not None:
            root.removeHandler(placeholder)
