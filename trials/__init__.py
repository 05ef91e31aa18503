"""Programs other teams wrote (Beam's Java examples, the Go SDK's integration tests, the TypeScript
SDK's word count), run as their users run them against our job server and a peer: run_trials.py."""
