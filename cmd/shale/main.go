package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	cmd := newRootCmd(os.Stdout, os.Stderr)
	if err := cmd.Execute(); err != nil {
		reportError(os.Stderr, err)
		os.Exit(1)
	}
}

// reportError prints err on one line: "not found" for a missing key (as the
// get verb promises), otherwise the message with a "shale: " prefix.
func reportError(w io.Writer, err error) {
	msg := err.Error()
	if err != errNotFound && !strings.HasPrefix(msg, "shale: ") {
		msg = "shale: " + msg
	}
	fmt.Fprintln(w, msg)
}

// newRootCmd builds the command tree writing results to stdout and messages
// to stderr. Errors are returned from Execute, not printed, so that main (and
// tests) decide how to report them.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "shale",
		Short:         "shale is an embeddable LSM key-value store; this tool administers and benchmarks it",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newPutCmd(),
		newGetCmd(),
		newDeleteCmd(),
		newDeleteRangeCmd(),
		newScanCmd(),
		newBenchCmd(),
		newStressCmd(),
		newCheckCmd(),
	)
	return root
}
