package main

import (
	"errors"
	"fmt"

	"github.com/shaledb/shale"
	"github.com/spf13/cobra"
)

func newCheckpointCmd() *cobra.Command {
	f := &adminFlags{}
	var to string
	cmd := &cobra.Command{
		Use:   "checkpoint --db DIR --to NEWDIR",
		Short: "Make an openable copy of a database in a new directory, hard-linking its tables and blob files where possible",
		Long: `checkpoint writes into --to, which must not exist, a copy of the database in
--db that opens as a database of its own (DB.Checkpoint): tables and blob
files are hard-linked when --to is on the same file system, copied
otherwise; the MANIFEST, the WALs and OPTIONS are copied. The copy is built
in NEWDIR.tmp and renamed to NEWDIR once complete.

checkpoint opens --db read-only and changes no byte of it. Beside a process
writing the database it may fail if that process removes a file while it
is copied; run it again. For a checkpoint of a database under load, call
DB.Checkpoint in the process that has it open.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return errors.New("--to is required")
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				stats, err := db.CheckpointWithStats(to)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "checkpoint %s: %d files; linked %d (%d bytes), copied %d (%d bytes) in %v\n",
					to, stats.Files, stats.LinkedFiles, stats.LinkedBytes, stats.CopiedFiles, stats.CopiedBytes, stats.Duration)
				return nil
			})
		},
	}
	// Not f.register: --hex means nothing here.
	f.access = readOnly
	cmd.Flags().StringVar(&f.db, "db", "", "database directory (required)")
	cmd.Flags().StringVar(&to, "to", "", "directory to create the checkpoint in; must not exist (required)")
	return cmd
}
