package shale

import (
	"fmt"
	"strings"

	"github.com/shaledb/shale/sstable"
)

// dumpKey lists every stored version of key, by source (for debugging tests).
func (d *DB) dumpKey(key string) string {
	var b strings.Builder
	rs := d.loadReadState()
	defer rs.unref()
	mems := append([]*memTable{rs.mem}, rs.imms...)
	for i, m := range mems {
		it := m.NewIter()
		for ok := it.SeekGE([]byte(key)); ok && string(it.Key().UserKey) == key; ok = it.Next() {
			fmt.Fprintf(&b, " mem%d:%s", i, it.Key())
		}
		it.Close()
	}
	for level, files := range rs.version.Levels {
		for _, f := range files {
			t, err := d.fileCache.findTable(f.FileNum)
			if err != nil {
				fmt.Fprintf(&b, " L%d/%s: %v", level, f.FileNum, err)
				continue
			}
			it := t.reader.NewIter(sstable.IterOptions{})
			for ok := it.SeekGE([]byte(key)); ok && string(it.Key().UserKey) == key; ok = it.Next() {
				fmt.Fprintf(&b, " L%d/%s:%s", level, f.FileNum, it.Key())
			}
			it.Close()
			t.release()
		}
	}
	return b.String()
}
