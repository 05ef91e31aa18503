"""The reference executor: a Plan's stages on the engine (engine/), bundle by bundle on one SDK
worker (worker/), in this process; served to callers as a Backend (backend.py)."""
