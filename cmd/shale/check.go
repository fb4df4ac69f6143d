package main

import (
	"errors"
	"fmt"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// errDamaged is returned by check when it found damage; main prints it
// after the report and exits 1.
var errDamaged = errors.New("shale: check found damage (see the report above)")

func newCheckCmd() *cobra.Command {
	var (
		db       string
		progress bool
	)
	cmd := &cobra.Command{
		Use:   "check --db DIR",
		Short: "Verify every checksum of every live file of a database and report what is damaged",
		Long: `check verifies a database without opening it, so it also works on one that
does not open: CURRENT, every record of the live MANIFEST, every block of
every live table, every live blob file (its checksum, and the value behind
every blob index of every live table), every record of the WALs not yet in
tables, and the OPTIONS files. It prints one line per file: ok, recoverable (a torn tail
that Open drops, as after a crash), DAMAGED (with the error, file and
offset) or skipped (obsolete, temporary or not a shale file).

check modifies nothing and takes no lock, so it may run beside a process
that has the database open; a live database can then show a recoverable
WAL tail or a table a compaction just removed. Check a closed database for
a definitive answer.

Exit status: 0 when no file is damaged (recoverable tails included), 1
when damage was found or the check could not run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if db == "" {
				return errors.New("--db is required")
			}
			o := &shale.Options{FS: adminFS}
			stop := func() {}
			if w := progressWriter(cmd, progress); w != nil {
				// Progress: the bytes read so far of the directory's.
				fs := adminFS
				if fs == nil {
					fs = vfs.Default
				}
				counting := &readCountingFS{FS: fs}
				o.FS = counting
				stop = startProgressLine(w, "check", "bytes", dirBytes(fs, db), counting.read.Load)
			}
			rep, err := shale.Check(db, o)
			stop()
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), rep.String())
			if !rep.OK() {
				return errDamaged
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "database directory (required)")
	cmd.Flags().BoolVar(&progress, "progress", true, progressFlagUsage)
	return cmd
}
