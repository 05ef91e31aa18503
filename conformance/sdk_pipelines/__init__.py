"""The kit's pipelines written with Beam's other SDKs: Java, Go and TypeScript.

Each SDK's directory holds one program that runs a named pipeline on a Job API endpoint with a
LOOPBACK environment and writes the elements of its final PCollection to a file (programs.py says
how each is built and run; cases/test_sdk_pipelines.py holds what the Beam model expects of each).
No binary is committed: the sources are built into the cache on first use.
"""
