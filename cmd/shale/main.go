package main

import (
	"fmt"
	"io"
	"os"

	"github.com/shaledb/shale"
	"github.com/spf13/cobra"
)

func main() {
	cmd := newRootCmd(os.Stdout, os.Stderr)
	if err := cmd.Execute(); err != nil {
		reportError(os.Stderr, err)
		os.Exit(1)
	}
}

// reportError prints err: "not found" for a missing key (as the get verb
// promises), otherwise the message with one "shale: " prefix (cliMessage).
func reportError(w io.Writer, err error) {
	fmt.Fprintln(w, cliMessage(err))
}

// newRootCmd builds the command tree writing results to stdout and messages
// to stderr. Errors are returned from Execute, not printed, so that main (and
// tests) decide how to report them.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "shale",
		Short:         "shale is an embeddable LSM key-value store; this tool administers and benchmarks it",
		Version:       shale.Version,
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
		newIngestCmd(),
		newScanCmd(),
		newBenchCmd(),
		newStressCmd(),
		newCheckCmd(),
		newCheckpointCmd(),
		// ldb and sst_dump verbs (issue 17, item 1).
		newDumpCmd(),
		newLoadCmd(),
		newIdumpCmd(),
		newManifestDumpCmd(),
		newDumpWALCmd(),
		newSSTDumpCmd(),
		newListLiveFilesCmd(),
		newGetPropertyCmd(),
		newCompactCmd(),
		newRepairCmd(),
		newBackupCmd(),
		newRestoreCmd(),
		newListBackupsCmd(),
	)
	return root
}
