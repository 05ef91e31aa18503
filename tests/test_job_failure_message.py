"""The message of a failed job keeps the end of the runner's error text and, when that is cut, its
first line: a Java job server's error names the exception there and then dumps the proto it refused."""

from conformance.authoring.case_runner import _tail


def test_a_short_error_is_kept_whole():
    assert _tail("Traceback\n  line\nValueError: boom") == "    Traceback\n      line\n    ValueError: boom"


def test_a_long_error_keeps_its_first_line_and_its_end():
    text = "RuntimeError: java.lang.IllegalArgumentException: consumed but never produced\n" + "\n".join(
        f"proto line {i}" for i in range(100)
    )
    kept = _tail(text).splitlines()
    assert len(kept) == 25
    assert kept[0] == "    RuntimeError: java.lang.IllegalArgumentException: consumed but never produced"
    assert kept[1] == "    ..."
    assert kept[-1] == "    proto line 99" and kept[2] == "    proto line 77"
