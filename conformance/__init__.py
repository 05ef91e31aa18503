"""The Beam runner conformance kit, laid out by audience. Case authors import ``conformance.api``
(the modules behind it are in ``authoring``); the test session's machinery (the pytest plugin,
expectations, results, the targets) is in ``session``, with ``conformance.targets`` the public path
for target authors; the post-run tools (the ``beam-conformance`` command, baseline, diff, the
reports) are in ``tools``. Shared by all three: ``capabilities`` (the taxonomy of capability ids,
matrix rows and categories). Data and the rest: ``cases`` (the suite), ``peers`` (runners we did not
write), ``sdk_pipelines`` (pipelines of Beam's other SDKs), ``expectations/`` (committed known
failures) and ``transcript_files`` (scripted trigger scenarios).
"""
