package shale

import (
	"slices"
	"strings"

	"github.com/shaledb/shale/internal/base"
)

// Options that change while the DB is open (DB.SetOptions, RocksDB's
// DB::SetOptions and DB::SetDBOptions in one call).
//
// The DB keeps two views of its options. d.opts is what Open settled on, and
// is read only for the options optionSpecs (option_specs.go) marks immutable
// and those without a name (functions and objects). The mutable ones are
// read through d.mutableOptions(): one atomic load of a pointer to a whole
// Options that is never modified once published. SetOptions copies it,
// changes the copy, validates it as Open does, writes the OPTIONS file from
// it, and publishes it under d.mu. A reader that loads the pointer once sees
// a consistent set of values, and the write path (makeRoomLocked) and
// iterator creation pay one atomic load; Get and MultiGet read no mutable
// option. Whatever reads a mutable option keeps the pointer it loaded for
// the rest of its work: a flush or compaction already running finishes with
// the values it started with.

// mutableOptions returns the current options: read the options SetOptions
// may change only through it (see above). The result must not be modified.
func (d *DB) mutableOptions() *Options { return d.liveOpts.Load() }

// GetOptions returns the options the DB runs with (RocksDB's GetOptions):
// those given to Open with their defaults filled in, and the changes of
// SetOptions since.
func (d *DB) GetOptions() Options {
	o := *d.mutableOptions()
	o.TablePropertiesCollectorFactories = slices.Clone(o.TablePropertiesCollectorFactories)
	return o
}

// SetOptions changes options of the open DB by their RocksDB names, as
// RocksDB's DB::SetOptions (and SetDBOptions), e.g.
// {"disable_auto_compactions": "true"} for a bulk load. It changes all of
// them or none: an unknown name, an option that cannot change while open
// (the error says why), or a value that does not parse or that Open would
// refuse returns an error naming the option and changes nothing. Values are
// read as ParseOptionsFile reads them: a zero value takes the option's
// default, as a zero Options field does, except that 0 turns
// memtable_op_scan_flush_trigger off and makes
// max_sequential_skip_in_iterations seek at once, as in RocksDB. On success
// the new values apply to the
// flushes, compactions, writes and iterators that start afterwards (the
// running ones finish with the old ones; write_buffer_size applies to the
// mutable memtable when lowered and from the next memtable when raised;
// re-enabling auto compactions schedules the work that waits), and the
// OPTIONS file is rewritten (temp file, sync, rename, directory sync) before
// SetOptions returns. If writing it fails, SetOptions returns the error and
// the DB keeps running with its old options. Open does not read the OPTIONS
// file: a program that wants the changes after a reopen opens with
// GetOptions (or ParseOptionsFile of the newest OPTIONS file), as with
// RocksDB's LoadLatestOptions.
func (d *DB) SetOptions(opts map[string]string) error {
	if d.readOnly {
		return d.readOnlyErr()
	}
	if len(opts) == 0 {
		return base.InvalidArgumentf("shale: SetOptions: no option given")
	}
	names := make([]string, 0, len(opts))
	for name := range opts {
		names = append(names, name)
	}
	slices.Sort(names)

	d.setOptionsMu.Lock()
	defer d.setOptionsMu.Unlock()
	if err := d.checkOpen(); err != nil {
		return err
	}
	prev := d.mutableOptions()
	next := *prev
	for _, name := range names {
		spec, ok := optionSpecsByName[name]
		value := strings.TrimSpace(opts[name])
		switch {
		case !ok:
			return base.InvalidArgumentf("shale: SetOptions: unknown option %q", name)
		case spec.immutable != "":
			return base.InvalidArgumentf("shale: SetOptions: %s cannot change while the DB is open: %s", name, spec.immutable)
		}
		if err := next.setOptionsFileField(name, value); err != nil {
			return base.InvalidArgumentf("shale: SetOptions: %s=%s: %s", name, value, strings.TrimPrefix(err.Error(), "shale: "))
		}
	}
	next.EnsureDefaults()
	if err := next.Validate(); err != nil {
		return base.InvalidArgumentf("shale: SetOptions: %s: %v", blame(names, opts, err), err)
	}

	num, err := d.writeOptionsFile(&next)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.liveOpts.Store(&next)
	d.picker.SetOptions(d.compactOptions())
	for _, name := range names {
		if apply := optionSpecsByName[name].apply; apply != nil {
			apply(d, prev)
		}
	}
	// Writers stalled on a bound that moved look again; new work is
	// scheduled for the new triggers (and auto compactions turned on).
	d.mu.compact.cond.Broadcast()
	d.maybeScheduleLocked()
	d.noteWriteStallLocked(false) // the stall bounds may have moved
	d.mu.Unlock()

	old := d.optionsFileNum
	d.optionsFileNum = num
	d.removeOptionsFile(old)
	attrs := make([]any, 0, 2*len(names))
	for _, name := range names {
		attrs = append(attrs, name, strings.TrimSpace(opts[name]))
	}
	d.logger.Info("options changed", attrs...)
	return nil
}

// blame names the options of a SetOptions call that a Validate error is
// about: those whose field it names, else every option of the call.
func blame(names []string, opts map[string]string, err error) string {
	var all, named []string
	for _, name := range names {
		kv := name + "=" + strings.TrimSpace(opts[name])
		all = append(all, kv)
		if strings.Contains(err.Error(), "Options."+optionSpecsByName[name].field+" ") {
			named = append(named, kv)
		}
	}
	if len(named) == 0 {
		named = all
	}
	return strings.Join(named, ", ")
}

// removeOptionsFile removes the OPTIONS file a SetOptions replaced; a failure
// only leaves it for the sweep of the next Open.
func (d *DB) removeOptionsFile(num base.FileNum) {
	if num == 0 {
		return
	}
	name := d.fs.PathJoin(d.dirname, base.MakeFilename(base.FileTypeOptions, num))
	if err := d.fs.Remove(name); err != nil {
		d.logger.Warn("removing the replaced OPTIONS file failed", "file", name, "err", err)
	}
}

// maxCompactions bounds concurrent compactions, from MaxBackgroundJobs as
// RocksDB splits it; one flush may run besides.
func (d *DB) maxCompactions() int {
	n := d.mutableOptions().MaxBackgroundJobs
	return max(1, n-max(1, n/4))
}
