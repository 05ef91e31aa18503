"""The test session's machinery, for pytest and whoever runs the suite: the pytest plugin
(plugin: options, capability markers, timeouts, the runner fixture), the runner's known failures
(expectations; the committed files are data in conformance/expectations/), the results file a run
writes (results), and the targets the session starts, runs cases on and stops (targets). Nothing
here is imported by a case; the post-run tools (conformance.tools) read what it writes.
"""
