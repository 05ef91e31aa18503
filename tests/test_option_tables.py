"""The runners' settings records are their option tables (reference_runner/option_table.py): a
runner's keyword parameters, its --PREFIX_NAME pipeline options and its conformance target's
help are generated from the record's fields, so a setting added to the record is everywhere at
once."""

import argparse
import dataclasses
import inspect

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from reference_runner import ReferenceOptions, ReferenceRunner
from reference_runner.knobs import Knobs, integer
from reference_runner.option_table import (
    OptionError,
    add_arguments,
    keyword_parameters,
    option,
    read,
    table,
    target_syntax,
)
from reference_runner.spark.settings import SparkSettings


@dataclasses.dataclass(frozen=True)
class _Toy:
    """A settings record as Knobs and SparkSettings are written, one setting longer than it was."""

    depth: int = option(3, read=integer, form="N", expected="an integer", help="how deep")
    colour: str = option("red", read=str, form="NAME", expected="a colour", help="what colour", remote=False)


class _ToyOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add_arguments(parser, _Toy, "toy_")


class _ToyRunner:
    @keyword_parameters(_Toy)
    def __init__(self, **settings):
        self.settings = settings


def test_a_setting_added_to_the_record_is_a_parameter_an_option_and_in_the_target_syntax():
    assert list(inspect.signature(_ToyRunner).parameters) == ["depth", "colour"]
    assert _ToyRunner(colour="blue").settings == {"depth": None, "colour": "blue"}
    options = PipelineOptions(["--toy_depth=5", "--toy_colour", "green"]).view_as(_ToyOptions)
    assert (options.toy_depth, options.toy_colour) == ("5", "green")
    parser = argparse.ArgumentParser()
    add_arguments(parser, _Toy, "toy_")
    assert "--toy_depth N" in parser.format_help() and "how deep (default 3)" in parser.format_help()
    assert target_syntax(_Toy) == "depth=N,colour=NAME"
    assert read({"depth": "5"}, table(_Toy), "toy_") == {"depth": 5}
    with pytest.raises(OptionError, match="toy_depth must be an integer, not 'five'"):
        read({"depth": "five"}, table(_Toy), "toy_")


def test_an_unknown_keyword_is_refused_at_once_naming_it_and_the_known_ones():
    with pytest.raises(TypeError, match="unexpected keyword argument 'sead'; its parameters: seed, bundle_size"):
        ReferenceRunner(sead=7)
    with pytest.raises(TypeError, match="unexpected keyword argument 'depht'"):
        _ToyRunner(depht=1)


def test_every_knob_is_a_runner_parameter_and_a_pipeline_option():
    names = [f.name for f in dataclasses.fields(Knobs)]
    assert list(inspect.signature(ReferenceRunner).parameters) == names
    args = [f"--reference_{name}=x" for name in names]
    options = PipelineOptions(args).view_as(ReferenceOptions)
    assert [getattr(options, f"reference_{name}") for name in names] == ["x"] * len(names)


def test_every_spark_setting_is_a_runner_parameter_and_a_pipeline_option():
    from reference_runner.spark.runner import SparkOptions, SparkRunner

    names = [f.name for f in dataclasses.fields(SparkSettings)]
    assert list(inspect.signature(SparkRunner).parameters) == names
    options = PipelineOptions(["--spark_conf", "a=1", "--spark_conf", "b=2", "--spark_seed=4"]).view_as(SparkOptions)
    assert (options.spark_conf, options.spark_seed) == (["a=1", "b=2"], "4")
