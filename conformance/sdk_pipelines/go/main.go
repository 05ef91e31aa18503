// Command sdkpipelines runs one named Beam test pipeline with the Go SDK
// against a Beam Job API endpoint (LOOPBACK environment) and appends every
// element of the pipeline's final PCollection, with its metadata, as one JSON
// line to --output.
//
//	sdkpipelines --case=NAME --endpoint=HOST:PORT --output=PATH
//	sdkpipelines --list
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
)

// --endpoint and --environment_type are the SDK's own flags (package jobopts);
// only the flags below are ours.
var (
	caseName = flag.String("case", "", "Name of the test pipeline to run (see --list).")
	output   = flag.String("output", "", "File that captured elements are appended to, one JSON object per line.")
	list     = flag.Bool("list", false, "Print the known case names and exit.")
	timeout  = flag.Duration("timeout", 5*time.Minute, "Give up on the job after this long.")
)

func main() {
	// flag.Parse must come before beam.Init: Init looks at the SDK's --worker
	// flag to decide whether this process was started as a worker harness.
	flag.Parse()
	beam.Init()

	if *list {
		for _, name := range caseNames() {
			fmt.Println(name)
		}
		return
	}
	build, ok := cases[*caseName]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown case %q; known cases:\n", *caseName)
		for _, name := range caseNames() {
			fmt.Fprintln(os.Stderr, name)
		}
		os.Exit(2)
	}
	if *output == "" || *jobopts.Endpoint == "" {
		fmt.Fprintln(os.Stderr, "--output and --endpoint are required")
		os.Exit(2)
	}
	// The kit runs LOOPBACK: the worker runs inside this process, so the
	// capture DoFn writes --output from here. An explicit flag still wins.
	if *jobopts.EnvironmentType == "" {
		flag.Set("environment_type", "LOOPBACK")
	}
	// The in-process worker would otherwise swap the SDK's global logger for
	// one that ships to the runner, so this launcher's own log lines (which
	// echo the job's messages) travel to the runner, come back as job
	// messages, and are logged again: an endless echo while the job runs.
	// The worker shares our stderr, so keep its logs here.
	hooks.DisableHook(harness.DefaultRemoteLoggingHook)
	// Create the file up front so that an empty PCollection still leaves an
	// (empty) output file behind.
	if f, err := os.OpenFile(*output, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "cannot open --output: %v\n", err)
		os.Exit(1)
	} else {
		f.Close()
	}

	// In LOOPBACK mode the SDK stages an empty placeholder file from
	// os.TempDir() as the "worker binary" and never deletes it; give it a
	// private directory that we remove.
	tmp, err := os.MkdirTemp("", "sdkpipelines-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot make a temp dir: %v\n", err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)

	p, s := beam.NewPipelineWithRoot()
	capture(s, *output, build(s))

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	code := run(ctx, p)
	cancel()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// run submits the pipeline, waits for it, and returns the exit code: 0 only
// when the job service reports DONE.
func run(ctx context.Context, p *beam.Pipeline) int {
	res, runErr := universal.Execute(ctx, p)
	jobID := ""
	if res != nil {
		jobID = res.JobID()
	}
	if jobID == "" {
		fmt.Fprintf(os.Stderr, "job was not started: %v\n", runErr)
		return 1
	}
	// The SDK treats CANCELLED, and a message stream that just ends, as
	// success, and fails a DONE job whose metrics cannot be fetched, so ask
	// the job service for the final state ourselves.
	state, stateErr := finalState(ctx, *jobopts.Endpoint, jobID)
	if stateErr != nil {
		fmt.Fprintf(os.Stderr, "job %v: cannot get job state: %v (run error: %v)\n", jobID, stateErr, runErr)
		return 1
	}
	if state != jobpb.JobState_DONE {
		fmt.Fprintf(os.Stderr, "job %v ended in state %v: %v\n", jobID, state, runErr)
		return 1
	}
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "warning: job %v is DONE but the SDK reported: %v\n", jobID, runErr)
	}
	return 0
}

// finalState polls GetState until the job is in a terminal state.
func finalState(ctx context.Context, endpoint, jobID string) (jobpb.JobState_Enum, error) {
	cc, err := grpcx.Dial(ctx, endpoint, time.Minute)
	if err != nil {
		return jobpb.JobState_UNSPECIFIED, err
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)
	for {
		resp, err := client.GetState(ctx, &jobpb.GetJobStateRequest{JobId: jobID})
		if err != nil {
			return jobpb.JobState_UNSPECIFIED, err
		}
		switch st := resp.GetState(); st {
		case jobpb.JobState_DONE, jobpb.JobState_FAILED, jobpb.JobState_CANCELLED,
			jobpb.JobState_DRAINED, jobpb.JobState_UPDATED:
			return st, nil
		}
		select {
		case <-ctx.Done():
			return jobpb.JobState_UNSPECIFIED, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func caseNames() []string {
	var names []string
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
