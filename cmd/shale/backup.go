package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/shaledb/shale"
	"github.com/spf13/cobra"
)

func newBackupCmd() *cobra.Command {
	f := &adminFlags{}
	var backupDir string
	cmd := &cobra.Command{
		Use:   "backup --db DIR --backup_dir BACKUPDIR",
		Short: "Add a backup of a database to a backup directory, copying only the tables and blob files it does not hold yet",
		Long: `backup adds a backup of the database in --db to the backup directory
--backup_dir (created if missing), as BackupEngine.CreateNewBackup: tables
and blob files already there (same number, size and CRC-32C) are shared, not
copied again; the MANIFEST, the WALs and OPTIONS are copied. It prints the
new backup's ID, size and the bytes it copied.

backup opens --db read-only and changes no byte of it. Beside a process
writing the database it may fail if that process removes a file while it
is copied; run it again, or call CreateNewBackup in that process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if backupDir == "" {
				return errors.New("--backup_dir is required")
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				e, err := shale.OpenBackupEngine(backupDir, nil)
				if err != nil {
					return err
				}
				if err := e.CreateNewBackup(db); err != nil {
					_ = e.Close()
					return err
				}
				infos := e.GetBackupInfo()
				bi := infos[len(infos)-1]
				fmt.Fprintf(cmd.OutOrStdout(), "backup %d in %s: %d files, %d bytes, copied %d bytes\n",
					bi.ID, backupDir, bi.NumFiles, bi.Size, bi.BytesCopied)
				return e.Close()
			})
		},
	}
	f.access = readOnly
	cmd.Flags().StringVar(&f.db, "db", "", "database directory (required)")
	cmd.Flags().StringVar(&backupDir, "backup_dir", "", "backup directory (required; created if missing)")
	return cmd
}

func newRestoreCmd() *cobra.Command {
	var db, backupDir string
	var id uint32
	cmd := &cobra.Command{
		Use:   "restore --backup_dir BACKUPDIR --db DIR [--backup_id N]",
		Short: "Restore a backup (the latest by default) into a database directory",
		Long: `restore verifies every file of a backup in --backup_dir (the latest, or
--backup_id), then makes --db hold its database, as
BackupEngine.RestoreDBFromBackup: it takes the lock of --db (failing while a
database is open there), removes the database files already in --db (CURRENT
first; other files stay), copies the backup's files and writes CURRENT last.
A damaged backup is reported, naming the file, and changes nothing in --db.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case backupDir == "":
				return errors.New("--backup_dir is required")
			case db == "":
				return errors.New("--db is required")
			}
			e, err := shale.OpenBackupEngine(backupDir, nil)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("backup_id") {
				if id == 0 {
					_ = e.Close()
					return errors.New("--backup_id must be at least 1")
				}
				err = e.RestoreDBFromBackup(id, db)
			} else {
				err = e.RestoreDBFromLatestBackup(db)
			}
			if err != nil {
				_ = e.Close()
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s\n", backupDir, db)
			return e.Close()
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "database directory to restore into (required)")
	cmd.Flags().StringVar(&backupDir, "backup_dir", "", "backup directory (required)")
	cmd.Flags().Uint32Var(&id, "backup_id", 0, "the backup to restore (default: the latest)")
	return cmd
}

func newListBackupsCmd() *cobra.Command {
	var backupDir string
	var verify bool
	cmd := &cobra.Command{
		Use:   "list_backups --backup_dir BACKUPDIR [--verify]",
		Short: "List the backups of a backup directory, optionally verifying every file's checksum",
		Long: `list_backups prints one line per backup in --backup_dir: its ID, when it
was made (UTC), its sequence number, number of files and bytes, and the bytes
it copied when made. With --verify it also reads every file of every backup
and checks its size and CRC-32C (BackupEngine.VerifyBackup), printing "ok" or
the damage. Backups whose metadata cannot be read are listed as damaged, and
any damage found makes it exit 1.

Opening the backup directory removes what interrupted backups left behind.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if backupDir == "" {
				return errors.New("--backup_dir is required")
			}
			e, err := shale.OpenBackupEngine(backupDir, nil)
			if err != nil {
				return err
			}
			defer e.Close()
			out := cmd.OutOrStdout()
			damaged := 0
			for _, bi := range e.GetBackupInfo() {
				fmt.Fprintf(out, "backup %d: %s, sequence %d, %d files, %d bytes, copied %d bytes",
					bi.ID, time.Unix(bi.Timestamp, 0).UTC().Format(time.RFC3339), bi.SequenceNumber, bi.NumFiles, bi.Size, bi.BytesCopied)
				if verify {
					if err := e.VerifyBackup(bi.ID); err != nil {
						damaged++
						fmt.Fprintf(out, ": %s", cliMessage(err))
					} else {
						fmt.Fprint(out, ": ok")
					}
				}
				fmt.Fprintln(out)
			}
			for _, id := range e.GetCorruptedBackups() {
				damaged++
				fmt.Fprintf(out, "backup %d: damaged: %s\n", id, cliMessage(e.VerifyBackup(id)))
			}
			if damaged > 0 {
				return fmt.Errorf("%d damaged backups in %s", damaged, backupDir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&backupDir, "backup_dir", "", "backup directory (required)")
	cmd.Flags().BoolVar(&verify, "verify", false, "read every file of every backup and check its checksum")
	return cmd
}
