"""Beam's Java ValidatesRunner suite, one item per JUnit test (collected with --suite java-vr or all;
see conformance/java_vr/). Each runs in this worker's launcher JVM against the target's Job API
endpoint; what Beam's test asserts is the verdict."""

import pytest

from conformance.java_vr import suite


@pytest.fixture(scope="session")
def java_vr_jvm(request, conformance_target):
    config = request.config
    holder = suite.JvmHolder(
        suite.build(conformance_target),
        conformance_target,
        suite.profile_of(config, conformance_target),
        suite.timeout_of(config, conformance_target),
    )
    yield holder
    holder.close()


def test_java_vr(java_vr_test, java_vr_jvm):
    suite.run_test(java_vr_test, java_vr_jvm)
