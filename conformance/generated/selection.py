"""Which generated programs a run judges, when ``--generated-capabilities`` (``beam-conformance
generate --capabilities``) narrows it: the programs that touch one of the named capabilities.

A name is a capability id (``triggers.count``), a group of them (``triggers``) or a matrix row
(``Count triggers``). The plugin reads this module at option parsing, so it imports neither
hypothesis nor Beam."""

from __future__ import annotations

from conformance import capabilities


def parse(text: str) -> tuple[str, ...]:
    """The capability ids a comma-separated list of names stands for; refuses an unknown name."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("name at least one capability id, group or matrix row")
    rows = {r.name.lower() for r in capabilities.ROWS}
    wanted: set[str] = set()
    for name in names:
        hits = {
            c.id
            for c in capabilities.CAPABILITIES
            if name in (c.id, c.group) or (name.lower() in rows and c.row.lower() == name.lower())
        }
        if not hits:
            raise ValueError(
                f"{name!r} is no capability id, group or matrix row (beam-conformance capabilities lists them)"
            )
        wanted |= hits
    return tuple(sorted(wanted))


def touches(program_capabilities: list[str], wanted: tuple[str, ...]) -> bool:
    """Does a program naming these capabilities belong to a run narrowed to ``wanted`` (empty: all)?"""
    return not wanted or not set(wanted).isdisjoint(program_capabilities)
