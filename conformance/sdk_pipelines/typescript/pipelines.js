// The conformance kit's cross-SDK cases, written with Beam's TypeScript SDK (npm apache-beam).
//
//   node pipelines.js --case=NAME --endpoint=HOST:PORT --output=PATH
//
// Runs one pipeline on the Job API endpoint with a LOOPBACK environment (the SDK's worker runs in
// this process), and appends every element of its final PCollection to PATH as one JSON line:
// {"value", "timestamp_ms", "window": null | [start_ms, end_ms], "pane": {...}}. The kit compares
// those lines with what the Beam model says (conformance/sdk_cases.py). Exit code 0 when the job
// ended DONE, 1 when it did not, 2 for a usage error.
"use strict";

const beam = require("apache-beam");
const { PortableRunner } = require("apache-beam/runners/portable_runner/runner");
const internal = require("apache-beam/transforms/internal");
const pardo = require("apache-beam/transforms/pardo");
const windowings = require("apache-beam/transforms/windowings");
const { windowInto, assignTimestamps } = require("apache-beam/transforms/window");
const runnerApi = require("apache-beam/proto/beam_runner_api");

// User functions travel as source text (ts-serialize-closures): what one uses from outside itself
// must be named in its __closure (and be serializable: node's modules are not).
function closed(fn, captured) {
  fn.__closure = () => captured;
  return fn;
}

const groupText = beam.withName("formatGroup", closed((kv) => `${kv.key}:${[...kv.value].sort((a, b) => a - b).join(",")}`, {}));

// The TypeScript SDK has no user state or timers: the kit's state_timer case has no version here.
const CASES = {
  pardo: (root) => root.apply(beam.create(["a b", "b c", "c"], false)).flatMap((line) => line.split(" ")),

  flatten: (root) => beam.P([root.apply(beam.withName("createXY", beam.create(["x", "y"], false))), root.apply(beam.withName("createZ", beam.create(["z"], false)))]).apply(beam.flatten()),

  group_by_key: (root) =>
    keyed(root)
      .apply(internal.groupByKey())
      .map(groupText),

  // The idiomatic per-key combine of this SDK: its output is coded with the SDK's own object coder,
  // not a KV coder, so a runner must not take it apart.
  combine_per_key: (root) =>
    keyed(root)
      .apply(beam.groupBy("key").combining("value", (a, b) => a + b, "total"))
      .map((row) => `${row.key}:${row.total}`),

  side_input: (root) => {
    const side = root.apply(beam.withName("createSide", beam.create([10], false)));
    return root
      .apply(beam.withName("createMain", beam.create([1, 2, 3], false)))
      .map((x, context) => String(x + context.side.lookup()), { side: pardo.singletonSideInput(side) });
  },

  windowed_trigger: (root) =>
    root
      .apply(
        beam.create([
          ["a", 1, 1],
          ["a", 2, 2],
          ["a", 3, 3],
          ["a", 4, 4],
          ["a", 5, 5],
          ["a", 11, 11],
          ["b", 7, 3],
        ], false),
      )
      // (a Long made from the element's old timestamp: the long module does not serialize)
      .apply(assignTimestamps(beam.withName("atSeconds", closed((e, old) => old.subtract(old).add(e[2] * 1000), {}))))
      .map((e) => ({ key: e[0], value: e[1] }))
      .apply(windowInto(windowings.fixedWindows(10), earlyCountTrigger(2)))
      .apply(internal.groupByKey())
      .map(groupText),
};

function keyed(root) {
  return root.apply(
    beam.create([
      { key: "a", value: 1 },
      { key: "b", value: 2 },
      { key: "a", value: 3 },
    ], false),
  );
}

// AfterWatermark with early firings after `count` elements, accumulating, no allowed lateness: the
// SDK has no trigger API, so the windowing strategy is given as the Runner API proto it starts from.
function earlyCountTrigger(count) {
  return runnerApi.WindowingStrategy.create({
    trigger: {
      trigger: {
        oneofKind: "afterEndOfWindow",
        afterEndOfWindow: {
          earlyFirings: { trigger: { oneofKind: "elementCount", elementCount: { elementCount: count } } },
        },
      },
    },
    accumulationMode: runnerApi.AccumulationMode_Enum.ACCUMULATING,
    outputTime: runnerApi.OutputTime_Enum.END_OF_WINDOW,
    closingBehavior: runnerApi.ClosingBehavior_Enum.EMIT_ALWAYS,
    onTimeBehavior: runnerApi.OnTimeBehavior_Enum.FIRE_ALWAYS,
    allowedLateness: BigInt(0),
  });
}

// Appends each element with its timestamp, window and pane to `path`, one JSON line each.
function capture(path) {
  const processElement = closed(
    function (value, context) {
      const w = context.window.lookup();
      const p = context.pane.lookup();
      const line = {
        value,
        timestamp_ms: Number(context.timestamp.lookup().toString()),
        window: w.start === undefined ? null : [Number(w.start.toString()), Number(w.end.toString())],
        pane: { first: p.isFirst, last: p.isLast, timing: p.timing, index: p.index, nonspec: p.onTimeIndex },
      };
      // (node's own modules do not serialize: the worker looks fs up where it runs)
      process.getBuiltinModule("fs").appendFileSync(path, JSON.stringify(line) + "\n");
    },
    { path },
  );
  return pardo.parDo(
    { process: processElement },
    { window: pardo.windowParam(), timestamp: pardo.timestampParam(), pane: pardo.paneInfoParam() },
  );
}

function parseArgs(argv) {
  const args = {};
  for (const arg of argv) {
    const match = /^--([a-z_]+)(?:=(.*))?$/.exec(arg);
    if (!match) usage(`unexpected argument ${JSON.stringify(arg)}`);
    args[match[1]] = match[2] === undefined ? true : match[2];
  }
  return args;
}

function usage(problem) {
  console.error(`${problem}\nusage: node pipelines.js --case=NAME --endpoint=HOST:PORT --output=PATH | --list`);
  console.error(`cases: ${Object.keys(CASES).join(", ")}`);
  process.exit(2);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.list) {
    console.log(Object.keys(CASES).join("\n"));
    return;
  }
  for (const needed of ["case", "endpoint", "output"]) if (!args[needed]) usage(`--${needed} is required`);
  const build = CASES[args.case];
  if (!build) usage(`unknown case ${JSON.stringify(args.case)}`);
  const runner = new PortableRunner({ jobEndpoint: args.endpoint, environmentType: "LOOPBACK" });
  await runner.run((root) => {
    build(root).apply(capture(args.output));
  });
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`the job did not end DONE: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
