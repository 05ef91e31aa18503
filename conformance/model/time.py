"""Beam's time constants in milliseconds (SEMANTICS 1): the one place they are spelled."""

MIN_TIMESTAMP_MS = -9223372036854775
MAX_TIMESTAMP_MS = 9223372036854775
# the global window's max timestamp: one day before the end of time
END_OF_GLOBAL_WINDOW_MS = 9223371950454775
