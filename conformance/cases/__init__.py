"""The conformance suite itself, for case authors and for pytest: one module of cases per area of
the Beam model, each case tagged with one capability and written against ``conformance.api`` alone
(collected with ``pytest --pyargs conformance.cases``)."""
