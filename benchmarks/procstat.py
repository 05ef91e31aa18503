"""Resources of a process and everything it started, read from /proc (Linux)."""

from __future__ import annotations

import os
from dataclasses import dataclass

_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Usage:
    rss_mib: float  # resident memory of the whole tree
    threads: int
    fds: int
    processes: int
    by_name: dict  # command name -> RSS MiB (e.g. "python", "java"), to tell the JVM apart


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids.extend(int(k) for k in f.read().split())
    except OSError:
        pass
    return kids


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants, as they are now."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(_children(p))
    return found


def _one(pid: int) -> tuple[str, float, int, int] | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * _PAGE / (1 << 20)
        with open(f"/proc/{pid}/comm") as f:
            name = f.read().strip()
        threads = len(os.listdir(f"/proc/{pid}/task"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:  # it ended while we looked
        return None
    return name, rss, threads, fds


def usage(pid: int, children: bool = True) -> Usage:
    """What ``pid`` uses, with everything it started unless ``children`` is False."""
    rss = 0.0
    threads = fds = processes = 0
    by_name: dict[str, float] = {}
    for p in tree(pid) if children else [pid]:
        one = _one(p)
        if one is None:
            continue
        name, r, t, f = one
        rss, threads, fds, processes = rss + r, threads + t, fds + f, processes + 1
        by_name[name] = by_name.get(name, 0.0) + r
    return Usage(rss, threads, fds, processes, by_name)
