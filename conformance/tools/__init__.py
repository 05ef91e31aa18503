"""The post-run tools, for whoever reads or gates on a run's results after the session wrote them:
the ``beam-conformance`` command (cli: run, report, baseline, diff, merge, targets, capabilities,
fetch), an expectations file from a run's failures (baseline), changed outcomes between two runs
(diff), a partial run's records merged into a results file (merge), and the capability matrix and
its renderings (report/). They read results files and expectations; no case or target imports them.
"""
