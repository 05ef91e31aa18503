"""The modules behind the case-author API, for whoever writes or reads a case. Cases import
``conformance.api`` only; these modules are what it gathers: in-pipeline checks and their
confirmation (checks), expected elements and the diff (elements), timestamped test input (inputs),
shared pane helpers (panes), the pipeline shapes the SDK submits (shapes), the transcript format
(transcripts), the executable model of the property cases (model), and the runner fixture every case
takes (case_runner: CaseRunner, RunResult, CaseFailure)."""
