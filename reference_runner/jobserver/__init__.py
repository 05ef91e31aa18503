"""Our runners served over the Beam Job API (see __main__ for the command line)."""
