package main

import (
	"fmt"

	"github.com/shaledb/shale"
	"github.com/spf13/cobra"
)

// errUnknownProperty is returned by get_property for a name the database
// does not know.
type errUnknownProperty string

func (e errUnknownProperty) Error() string {
	return fmt.Sprintf("unknown property %q (see DB.GetProperty for the names, e.g. rocksdb.stats)", string(e))
}

func newGetPropertyCmd() *cobra.Command {
	var (
		f      adminFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "get_property --db DIR NAME",
		Short: "Print the value of a database property (DB.GetProperty; opens read-only)",
		// The name is not a key: --hex does not decode it.
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withDB(cmd, func(db *shale.DB) error {
				v, ok := db.GetProperty(args[0])
				if !ok {
					return errUnknownProperty(args[0])
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]string{"name": args[0], "value": v})
				}
				fmt.Fprintln(cmd.OutOrStdout(), v)
				return nil
			})
		},
	}
	f.register(cmd, readOnly)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"name\": ..., \"value\": ...}")
	return cmd
}

func newCompactCmd() *cobra.Command {
	var (
		f        adminFlags
		kr       keyRange
		progress bool
	)
	cmd := &cobra.Command{
		Use:   "compact --db DIR [--from K] [--to K]",
		Short: "Compact the keys in [--from, --to] (all keys without them) down the LSM (DB.CompactRange)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := kr.decode(cmd, &f); err != nil {
				return err
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				stop := compactProgress(progressWriter(cmd, progress), db)
				defer stop()
				return db.CompactRange(kr.lo, kr.hi)
			})
		},
	}
	f.register(cmd, writeExisting)
	kr.register(cmd, false, true)
	cmd.Flags().BoolVar(&progress, "progress", true, progressFlagUsage)
	return cmd
}
