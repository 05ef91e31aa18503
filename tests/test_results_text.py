from conformance.session.results import first_line, innermost_cause


def test_first_line_takes_the_next_when_the_first_only_introduces_it():
    assert first_line("boom\nat x") == "boom"
    assert first_line("\n  java.lang.RuntimeException: the error during execution:\n  JobFailed: x\n y") == (
        "java.lang.RuntimeException: the error during execution: JobFailed: x"
    )
    assert first_line("") == ""


def test_innermost_cause_of_a_jvm_failure():
    line = (
        "java.lang.RuntimeException: The Runner experienced the following error during execution: JobFailed: "
        "bundle b2 failed: org.apache.beam.sdk.util.UserCodeException: java.lang.IllegalStateException: "
        "Output with tag Tag<output> must have a schema"
    )
    assert innermost_cause(line) == "java.lang.IllegalStateException: Output with tag Tag<output> must have a schema"
    assert innermost_cause("java.lang.AssertionError: Expected: <3>") == "java.lang.AssertionError: Expected: <3>"
    assert innermost_cause("output differs from the Beam model") == "output differs from the Beam model"
