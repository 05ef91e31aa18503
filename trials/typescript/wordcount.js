// The TypeScript SDK's own word count (npm apache-beam 2.49.0,
// dist/src/apache_beam/examples/wordcount.js), run against a Job API endpoint:
//
//   node wordcount.js --endpoint=HOST:PORT [--input=FILE]
//
// The transform is the shipped example's, unchanged: lower-case each line, split it on /[^a-z]+/
// (so a line that ends in punctuation yields an empty word, counted like any other) and count
// each word with countPerElement; each count is printed with console.log, as the example does.
// Two things differ, and only because the shipped file cannot be pointed at an endpoint: it picks
// its runner with createRunner(argv), whose runners do not take a job endpoint (its "universal"
// runner starts a Python job service of its own), so this program makes the SDK's PortableRunner
// with the endpoint and a LOOPBACK environment (the SDK's worker runs in this process); and it
// reads its lines from --input when given (the example's four lines of Genesis otherwise).
//
// Exit code 0 when the job ended DONE, 1 when it did not (the error on stderr), 2 on a usage error.
"use strict";

const fs = require("fs");
const beam = require("apache-beam");
const { countPerElement } = require("apache-beam/transforms/group_and_combine");
const { PortableRunner } = require("apache-beam/runners/portable_runner/runner");

const GENESIS = [
  "In the beginning God created the heaven and the earth.",
  "And the earth was without form, and void; and darkness was upon the face of the deep.",
  "And the Spirit of God moved upon the face of the waters.",
  "And God said, Let there be light: and there was light.",
];

function wordCount(lines) {
  return lines
    .map((s) => s.toLowerCase())
    .flatMap(function* (line) {
      yield* line.split(/[^a-z]+/);
    })
    .apply(countPerElement());
}

function parseArgs(argv) {
  const args = {};
  for (const arg of argv) {
    const match = /^--([a-z_]+)=(.*)$/.exec(arg);
    if (!match) usage(`unexpected argument ${JSON.stringify(arg)}`);
    args[match[1]] = match[2];
  }
  if (!args.endpoint) usage("--endpoint is required");
  return args;
}

function usage(problem) {
  console.error(`${problem}\nusage: node wordcount.js --endpoint=HOST:PORT [--input=FILE]`);
  process.exit(2);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const input = args.input ? fs.readFileSync(args.input, "utf8").split("\n") : GENESIS;
  if (args.input && input[input.length - 1] === "") input.pop(); // the file's final newline ends a line
  const runner = new PortableRunner({ jobEndpoint: args.endpoint, environmentType: "LOOPBACK" });
  await runner.run((root) => {
    const lines = root.apply(beam.create(input));
    lines.apply(wordCount).map(console.log);
  });
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`the job did not end DONE: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
