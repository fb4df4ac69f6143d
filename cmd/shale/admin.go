package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/shaledb/shale"
	"github.com/shaledb/shale/vfs"
	"github.com/spf13/cobra"
)

// errNotFound is returned by get for a missing key; main prints it as
// "not found" on stderr and exits 1.
var errNotFound = errors.New("not found")

// adminFS, when set (by tests), is the file system of the admin verbs and
// check instead of vfs.Default.
var adminFS vfs.FS

// access is how an admin verb opens its database.
type access int

const (
	// readOnly opens with shale.OpenForReadOnly: the verb writes nothing to
	// the directory, works on a read-only one and beside a writer.
	readOnly access = iota
	// writeExisting opens for writing; --create_if_missing defaults to
	// false, so that a mistyped --db fails instead of creating a database.
	writeExisting
	// writeOrCreate opens for writing; --create_if_missing defaults to true
	// (put is documented to create the database).
	writeOrCreate
)

// adminFlags are the flags every admin verb shares.
type adminFlags struct {
	access          access
	db              string
	hex             bool
	keyHex          bool   // --key_hex: keys only (ldb's flag)
	valueHex        bool   // --value_hex: values only (ldb's flag)
	createIfMissing bool   // --create_if_missing; the writing verbs only
	mergeOperator   string // --merge_operator: uint64add or stringappend
}

func (f *adminFlags) register(cmd *cobra.Command, a access) {
	f.access = a
	cmd.Flags().StringVar(&f.db, "db", "", "database directory (required)")
	cmd.Flags().BoolVar(&f.hex, "hex", false, "keys and values are hex-encoded on input and output")
	cmd.Flags().BoolVar(&f.keyHex, "key_hex", false, "keys are hex-encoded on input and output")
	cmd.Flags().BoolVar(&f.valueHex, "value_hex", false, "values are hex-encoded on input and output")
	cmd.Flags().StringVar(&f.mergeOperator, "merge_operator", "", "the database's merge operator, to read merged keys: uint64add or stringappend (\",\" between values); empty: none")
	if a != readOnly {
		cmd.Flags().BoolVar(&f.createIfMissing, "create_if_missing", a == writeOrCreate,
			"create the database when --db holds none")
	}
}

// open opens the database as f.access says and prints a warning on stderr
// for each WAL record the open dropped.
func (f *adminFlags) open(stderr io.Writer) (*shale.DB, error) {
	if f.db == "" {
		return nil, errors.New("--db is required")
	}
	var (
		db  *shale.DB
		err error
	)
	mergeOp, err := benchMergeOperator(f.mergeOperator)
	if err != nil {
		return nil, err
	}
	if f.access == readOnly {
		// Said here, since the library's message for a missing directory
		// suggests CreateIfMissing, which a read verb does not take.
		if _, serr := f.fs().Stat(f.db); errors.Is(serr, os.ErrNotExist) {
			return nil, fmt.Errorf("opening %s: no database there (the directory does not exist)", f.db)
		}
		db, err = shale.OpenForReadOnly(f.db, &shale.Options{FS: adminFS, MergeOperator: mergeOp})
	} else {
		db, err = shale.Open(f.db, &shale.Options{CreateIfMissing: f.createIfMissing, FS: adminFS, MergeOperator: mergeOp})
	}
	if err != nil {
		return nil, flagError(fmt.Errorf("opening %s: %w", f.db, err), adminOptionFlags)
	}
	warnRecoveryLosses(stderr, db)
	return db, nil
}

// fs is the file system of the admin verbs.
func (f *adminFlags) fs() vfs.FS {
	if adminFS != nil {
		return adminFS
	}
	return vfs.Default
}

// decode turns a command-line argument into bytes; what names the argument in
// error messages.
func (f *adminFlags) decode(what, s string) ([]byte, error) {
	if !f.hex {
		return []byte(s), nil
	}
	// At most one prefix: "0x0X12" is not hex.
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s = s[2:]
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not valid hex: %v", what, s, err)
	}
	return b, nil
}

func (f *adminFlags) encode(b []byte) string {
	if f.hex {
		return hex.EncodeToString(b)
	}
	return string(b)
}

// keyFlags and valueFlags are f as it applies to keys (--hex or --key_hex)
// and to values (--hex or --value_hex).
func (f *adminFlags) keyFlags() *adminFlags   { return &adminFlags{hex: f.hex || f.keyHex} }
func (f *adminFlags) valueFlags() *adminFlags { return &adminFlags{hex: f.hex || f.valueHex} }

// encodeKey and encodeValue print a key and a value as the flags say.
func (f *adminFlags) encodeKey(b []byte) string   { return f.keyFlags().encode(b) }
func (f *adminFlags) encodeValue(b []byte) string { return f.valueFlags().encode(b) }

// withDB opens the database, runs fn and closes it, keeping the first error.
func (f *adminFlags) withDB(cmd *cobra.Command, fn func(db *shale.DB) error) (err error) {
	db, err := f.open(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing %s: %w", f.db, cerr)
		}
	}()
	return fn(db)
}

// adminWrite makes admin writes durable before the command exits.
var adminWrite = &shale.WriteOptions{Sync: true}

// newArgsCmd builds an admin verb that opens its database as a says and
// takes one positional argument per entry of argNames (which name them in
// error messages); run gets the raw arguments and their decoded bytes,
// decoded before the database is opened.
func newArgsCmd(use, short string, a access, argNames []string, run func(cmd *cobra.Command, f *adminFlags, args []string, decoded [][]byte) error) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(len(argNames)),
		RunE: func(cmd *cobra.Command, args []string) error {
			decoded := make([][]byte, len(args))
			for i, a := range args {
				df := f.keyFlags()
				if argNames[i] == "value" {
					df = f.valueFlags()
				}
				b, err := df.decode(argNames[i], a)
				if err != nil {
					return err
				}
				decoded[i] = b
			}
			return run(cmd, f, args, decoded)
		},
	}
	f.register(cmd, a)
	return cmd
}

func newPutCmd() *cobra.Command {
	return newArgsCmd("put --db DIR KEY VALUE", "Set KEY to VALUE (creates the database if missing, unless --create_if_missing=false)", writeOrCreate, []string{"key", "value"},
		func(cmd *cobra.Command, f *adminFlags, _ []string, kv [][]byte) error {
			return f.withDB(cmd, func(db *shale.DB) error {
				return db.Put(kv[0], kv[1], adminWrite)
			})
		})
}

func newGetCmd() *cobra.Command {
	return newArgsCmd("get --db DIR KEY", "Print the value of KEY; exits 1 with \"not found\" when absent (opens read-only)", readOnly, []string{"key"},
		func(cmd *cobra.Command, f *adminFlags, _ []string, k [][]byte) error {
			return f.withDB(cmd, func(db *shale.DB) error {
				v, err := db.Get(k[0], nil)
				if errors.Is(err, shale.ErrNotFound) {
					return errNotFound
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), f.encodeValue(v))
				return nil
			})
		})
}

func newDeleteCmd() *cobra.Command {
	return newArgsCmd("delete --db DIR KEY", "Delete KEY", writeExisting, []string{"key"},
		func(cmd *cobra.Command, f *adminFlags, _ []string, k [][]byte) error {
			return f.withDB(cmd, func(db *shale.DB) error {
				return db.Delete(k[0], adminWrite)
			})
		})
}

func newDeleteRangeCmd() *cobra.Command {
	return newArgsCmd("deleterange --db DIR START END", "Delete every key in [START, END)", writeExisting, []string{"start", "end"},
		func(cmd *cobra.Command, f *adminFlags, args []string, r [][]byte) error {
			start, end := r[0], r[1]
			if string(start) > string(end) {
				return fmt.Errorf("deleterange: START %q sorts after END %q", args[0], args[1])
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				return db.DeleteRange(start, end, adminWrite)
			})
		})
}

func newIngestCmd() *cobra.Command {
	f := &adminFlags{}
	var move bool
	cmd := &cobra.Command{
		Use: "ingest --db DIR [--move] FILE...",
		Short: "Add external tables written by SSTFileWriter to the database in one step " +
			"(IngestExternalFile; creates the database if missing, unless --create_if_missing=false)",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			return f.withDB(cmd, func(db *shale.DB) error {
				return db.IngestExternalFile(files, &shale.IngestExternalFileOptions{MoveFiles: move})
			})
		},
	}
	f.register(cmd, writeOrCreate)
	cmd.Flags().BoolVar(&move, "move", false, "link the files in (copy where the file system cannot) and remove the originals (IngestExternalFileOptions.MoveFiles)")
	return cmd
}

func newScanCmd() *cobra.Command {
	var (
		f        adminFlags
		from, to string
		limit    int
		reverse  bool
	)
	cmd := &cobra.Command{
		Use:   "scan --db DIR [--from K] [--to K] [--limit N] [--reverse]",
		Short: "Print the entries in [--from, --to) as \"KEY : VALUE\" lines (opens read-only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit must be >= 0, got %d", limit)
			}
			ro := &shale.ReadOptions{}
			var err error
			if cmd.Flags().Changed("from") {
				if ro.LowerBound, err = f.keyFlags().decode("--from", from); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("to") {
				if ro.UpperBound, err = f.keyFlags().decode("--to", to); err != nil {
					return err
				}
			}
			return f.withDB(cmd, func(db *shale.DB) error {
				return scan(cmd, db, ro, &f, limit, reverse)
			})
		},
	}
	f.register(cmd, readOnly)
	cmd.Flags().StringVar(&from, "from", "", "first key to print (inclusive)")
	cmd.Flags().StringVar(&to, "to", "", "key to stop before (exclusive)")
	cmd.Flags().IntVar(&limit, "limit", 0, "print at most N entries (0 = all)")
	cmd.Flags().BoolVar(&reverse, "reverse", false, "print from the last key down")
	return cmd
}

func scan(cmd *cobra.Command, db *shale.DB, ro *shale.ReadOptions, f *adminFlags, limit int, reverse bool) (err error) {
	it := db.NewIterator(ro)
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	out := cmd.OutOrStdout()
	ok, step := it.First, it.Next
	if reverse {
		ok, step = it.Last, it.Prev
	}
	n := 0
	for valid := ok(); valid && (limit == 0 || n < limit); valid = step() {
		if _, err := fmt.Fprintf(out, "%s : %s\n", f.encodeKey(it.Key()), f.encodeValue(it.Value())); err != nil {
			return err
		}
		n++
	}
	return it.Err()
}
