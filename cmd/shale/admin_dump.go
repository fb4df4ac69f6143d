package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// keyRange is the --from, --to and --max_keys flags of ldb's verbs that
// walk keys: [from, to), at most maxKeys of them (0: all).
type keyRange struct {
	from, to string
	maxKeys  int
	lo, hi   []byte // decoded; nil when the flag was not given
}

// register adds the flags; toInclusive says --to is the last key (compact,
// as ldb's) rather than the key to stop before.
func (r *keyRange) register(cmd *cobra.Command, withMax, toInclusive bool) {
	cmd.Flags().StringVar(&r.from, "from", "", "first key (inclusive)")
	if toInclusive {
		cmd.Flags().StringVar(&r.to, "to", "", "last key (inclusive)")
	} else {
		cmd.Flags().StringVar(&r.to, "to", "", "key to stop before (exclusive)")
	}
	if withMax {
		cmd.Flags().IntVar(&r.maxKeys, "max_keys", 0, "at most this many keys (0 = all)")
	}
}

// decode decodes the flags as f says keys are written.
func (r *keyRange) decode(cmd *cobra.Command, f *adminFlags) error {
	if r.maxKeys < 0 {
		return fmt.Errorf("--max_keys must be >= 0, got %d", r.maxKeys)
	}
	var err error
	if cmd.Flags().Changed("from") {
		if r.lo, err = f.keyFlags().decode("--from", r.from); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("to") {
		if r.hi, err = f.keyFlags().decode("--to", r.to); err != nil {
			return err
		}
	}
	if r.lo != nil && r.hi != nil && string(r.lo) > string(r.hi) {
		return fmt.Errorf("--from %q sorts after --to %q", r.from, r.to)
	}
	return nil
}

// contains says whether key is inside [lo, hi).
func (r *keyRange) contains(key []byte) bool {
	return (r.lo == nil || string(key) >= string(r.lo)) && (r.hi == nil || string(key) < string(r.hi))
}

func newDumpCmd() *cobra.Command {
	var (
		f    adminFlags
		kr   keyRange
		file string
	)
	cmd := &cobra.Command{
		Use:   "dump --db DIR --file F [--from K] [--to K] [--max_keys N]",
		Short: "Write the database's keys and values to a portable, checksummed dump file (opens read-only)",
		Long: `dump writes what a reader of the database sees, at one snapshot, to F in
shale's dump format (versioned and checksummed, see dumpfile.go): keys and
values only, merges resolved and range deletions applied, so that load
rebuilds the same contents under any options. --file - writes to stdout.
The summary (entries, bytes) goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("--file is required (- for stdout)")
			}
			if err := kr.decode(cmd, &f); err != nil {
				return err
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				var w io.Writer = cmd.OutOrStdout()
				var out vfs.File
				if file != "-" {
					var err error
					if out, err = f.fs().Create(file); err != nil {
						return fmt.Errorf("creating dump file: %w", err)
					}
					defer func() {
						if out != nil {
							out.Close()
						}
					}()
					w = out
				}
				n, bytes, err := dumpDB(db, newDumpWriter(w), &kr)
				if err != nil {
					return err
				}
				if out != nil {
					if err := out.Sync(); err != nil {
						return fmt.Errorf("syncing %s: %w", file, err)
					}
					err := out.Close()
					out = nil
					if err != nil {
						return fmt.Errorf("closing %s: %w", file, err)
					}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "dumped %d entries, %d bytes of keys and values\n", n, bytes)
				return nil
			})
		},
	}
	f.register(cmd, readOnly)
	kr.register(cmd, true, false)
	cmd.Flags().StringVar(&file, "file", "", "dump file to write (- for stdout)")
	return cmd
}

// dumpDB writes the entries of db inside kr to w and returns their number
// and bytes.
func dumpDB(db *shale.DB, w *dumpWriter, kr *keyRange) (n, bytes int64, err error) {
	it := db.NewIterator(&shale.ReadOptions{LowerBound: kr.lo, UpperBound: kr.hi})
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for ok := it.First(); ok && (kr.maxKeys == 0 || n < int64(kr.maxKeys)); ok = it.Next() {
		if err := w.add(it.Key(), it.Value()); err != nil {
			return n, bytes, fmt.Errorf("writing the dump: %w", err)
		}
		n++
		bytes += int64(len(it.Key()) + len(it.Value()))
	}
	if err := it.Err(); err != nil {
		return n, bytes, err
	}
	if err := w.finish(); err != nil {
		return n, bytes, fmt.Errorf("writing the dump: %w", err)
	}
	return n, bytes, nil
}

// errNotEmpty is returned by load when the database already holds keys.
var errNotEmpty = errors.New("the database already holds keys; load fills a new one (pass --allow_non_empty to add to it)")

func newLoadCmd() *cobra.Command {
	var (
		f             adminFlags
		file          string
		allowNonEmpty bool
	)
	cmd := &cobra.Command{
		Use:   "load --db DIR --file F [--allow_non_empty]",
		Short: "Load a dump file into a new database (created if missing)",
		Long: `load reads F, written by shale dump, checks all of it (every entry's checksum,
key order, the count and the whole-file checksum), and only then writes
its entries into the database, which it creates when missing. A database
that already holds keys is refused unless --allow_non_empty, which then
overwrites the keys the dump holds. The writes are synced and flushed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("--file is required")
			}
			// The whole file is checked before the database is touched:
			// a damaged dump loads nothing.
			if _, err := readDumpFile(f.fs(), file, nil); err != nil {
				return err
			}
			if !allowNonEmpty {
				// Looked at read-only, so that a refused load changes no
				// byte of the database.
				if err := refuseNonEmpty(cmd, &f); err != nil {
					return err
				}
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				b := db.NewBatch()
				n, err := readDumpFile(f.fs(), file, func(key, value []byte) error {
					b.Put(key, value)
					if b.Size() < 1<<20 {
						return nil
					}
					if err := db.Write(b, nil); err != nil {
						return err
					}
					b.Reset()
					return nil
				})
				if err == nil && !b.Empty() {
					err = db.Write(b, nil)
				}
				if err == nil {
					err = db.Flush()
				}
				if err != nil {
					return fmt.Errorf("loading %s: %w", file, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "loaded %d entries\n", n)
				return nil
			})
		},
	}
	f.register(cmd, writeOrCreate)
	cmd.Flags().StringVar(&file, "file", "", "dump file to read (written by shale dump)")
	cmd.Flags().BoolVar(&allowNonEmpty, "allow_non_empty", false, "load into a database that already holds keys")
	return cmd
}

// readDumpFile reads the dump file name from fs, calling fn (when not nil)
// with each entry, and returns the number of entries.
func readDumpFile(fs vfs.FS, name string, fn func(key, value []byte) error) (int64, error) {
	file, err := fs.Open(name)
	if err != nil {
		return 0, fmt.Errorf("opening dump file: %w", err)
	}
	defer file.Close()
	r, err := newDumpReader(io.NewSectionReader(file, 0, 1<<62), name)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		ok, err := r.next()
		if err != nil {
			return n, err
		}
		if !ok {
			return n, nil
		}
		n++
		if fn != nil {
			if err := fn(r.key, r.value); err != nil {
				return n, err
			}
		}
	}
}

// refuseNonEmpty returns errNotEmpty when f.db holds a database with keys;
// it opens it read-only, and not at all when there is no CURRENT.
func refuseNonEmpty(cmd *cobra.Command, f *adminFlags) error {
	if _, err := f.fs().Stat(f.fs().PathJoin(f.db, "CURRENT")); err != nil {
		return nil // no database yet: Open creates it, or says why not
	}
	ro := *f
	ro.access = readOnly
	return ro.withDB(cmd, func(db *shale.DB) error {
		it := db.NewIterator(nil)
		nonEmpty := it.First()
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return err
		}
		if nonEmpty {
			return errNotEmpty
		}
		return nil
	})
}
