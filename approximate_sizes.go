package shale

import "fmt"

// Range is the key range [Start, Limit) (RocksDB's Range); a nil Limit
// is no upper bound.
type Range struct {
	Start, Limit []byte
}

// GetApproximateSizes returns, for each range, the approximate bytes of the
// table files holding its keys (RocksDB's GetApproximateSizes with its
// default of files only): a table inside the range counts whole, one that
// crosses an end counts the part of its data the index places inside, and
// a range ending past a table's last key takes the table's tail (index,
// filter, properties). Memtables and blob files are not counted. A range
// whose Limit is not above its Start is an error.
func (d *DB) GetApproximateSizes(ranges []Range) ([]uint64, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	cmp := d.cmp.Compare
	for i, r := range ranges {
		if r.Limit != nil && cmp(r.Start, r.Limit) >= 0 {
			return nil, fmt.Errorf("shale: GetApproximateSizes: range %d: limit %q is not above start %q: %w", i, r.Limit, r.Start, ErrInvalidArgument)
		}
	}
	v := d.versions.Current()
	defer v.Unref()
	sizes := make([]uint64, len(ranges))
	for i, r := range ranges {
		for l := range v.Levels {
			for _, f := range v.Overlaps(cmp, l, r.Start, r.Limit) {
				sizes[i] += d.bytesInRange(f, r.Start, r.Limit)
			}
		}
	}
	return sizes, nil
}
