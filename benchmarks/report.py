"""Where a benchmark's figures go besides the terminal."""

from __future__ import annotations

import json
import os


def write_json(path: str | None, figures: dict) -> None:
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(figures, f, indent=2)
