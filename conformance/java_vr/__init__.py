"""Beam's Java ValidatesRunner suite against any target (``--suite java-vr``).

The tests are the ``@Category(ValidatesRunner.class)`` JUnit 4 tests of Beam's Java SDK core
(its published test-jar), run with Beam's ``TestUniversalRunner`` against the target's Job API
endpoint, with the Java SDK harness serving a LOOPBACK environment inside the test JVM.

- ``launcher/``: a small Java program of ours (built into the cache with Maven) that lists the
  tests with their categories and runs them one at a time, in one long-lived JVM, speaking JSON
  lines (its class comment has the protocol).
- ``driver.py``: builds the launcher, caches the listing, keeps one launcher JVM per pytest(-xdist)
  worker and enforces the per-test time cap.
- ``selections.py``: Beam's own exclusion lists per runner (its Gradle ValidatesRunner tasks), as
  data with their sources, and the kit's ``all`` selection.
- ``placement.py``: which capability of ``conformance/capabilities.py`` each test counts under.
- ``suite.py``: the pytest side: one item per Java test, case id ``java_vr/<Class>.<method>``.
"""

# --suite: the kit's cases, Beam's Java ValidatesRunner tests, or both
SUITES = ("cases", "java-vr", "all")
