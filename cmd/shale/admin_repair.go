package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shaledb/shale"
	"github.com/spf13/cobra"
)

// errRepairLostData is returned by repair when it rebuilt the database but
// could not keep everything: main exits 1 after the report.
var errRepairLostData = errors.New("shale: the database was repaired, but some data could not be read (see the report above; the files are in lost/)")

func newRepairCmd() *cobra.Command {
	var db, mergeOperator string
	cmd := &cobra.Command{
		Use:   "repair --db DIR",
		Short: "Rebuild a lost or damaged MANIFEST from the tables, blob files and WALs (shale.RepairDB)",
		Long: `repair rebuilds the MANIFEST and CURRENT of a database whose MANIFEST is lost
or damaged, as RocksDB's RepairDB: it reads every table and blob file whole,
moves those that fail (and old MANIFESTs, and tables whose blob files are
gone) to DIR/lost/, registers the rest (tables in L0), replays the WALs
into tables and prints what it kept and what it could not read.

Exit status: 0 when everything was kept, 1 when the repair failed or some
table, blob file or WAL record could not be kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db == "" {
				return errors.New("--db is required")
			}
			op, err := benchMergeOperator(mergeOperator)
			if err != nil {
				return err
			}
			rep, err := shale.Repair(db, &shale.Options{FS: adminFS, MergeOperator: op})
			if rep != nil {
				fmt.Fprint(cmd.OutOrStdout(), rep.String())
			}
			if err != nil {
				return err
			}
			for _, l := range rep.Lost {
				if !strings.HasPrefix(l.Name, "MANIFEST-") {
					return errRepairLostData
				}
			}
			if len(rep.WALLosses) > 0 {
				return errRepairLostData
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "database directory (required)")
	cmd.Flags().StringVar(&mergeOperator, "merge_operator", "", "the database's merge operator: uint64add or stringappend; empty: none")
	return cmd
}
