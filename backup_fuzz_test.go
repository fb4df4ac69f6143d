package shale

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/shaledb/shale/internal/checksum"
)

// FuzzDecodeBackupMeta decodes arbitrary backup metadata, as read and with
// a correct crc32c line appended (so the parser behind the checksum is
// reached): a corruption error naming the file, or metadata whose files
// all lie in shared/ or the backup's private directory and that encodes
// back to what was decoded.
func FuzzDecodeBackupMeta(f *testing.F) {
	m := &backupMeta{id: 3, timestamp: 1700000000, seq: 42, copied: 100, files: []backupFile{
		{dbName: "000012.sst", path: "shared/000012_0a0b0c0d_4096.sst", size: 4096, crc: 0x0a0b0c0d},
		{dbName: "000013.blob", path: "shared/000013_01020304_99.blob", size: 99, crc: 0x01020304},
		{dbName: "MANIFEST-000005", path: "private/3/MANIFEST-000005", size: 300, crc: 7},
		{dbName: "CURRENT", path: "private/3/CURRENT", size: 16, crc: 8},
	}}
	enc := m.encode()
	f.Add(enc)
	f.Add(enc[:bytes.LastIndex(enc, []byte("crc32c "))])
	f.Add([]byte("shale-backup 1\nid 3\nfile ../../etc/passwd private/3/../../x 1 0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		withCRC := append(append([]byte(nil), data...), fmt.Sprintf("crc32c %08x\n", checksum.CRC32C(data))...)
		for _, in := range [][]byte{data, withCRC} {
			got, err := decodeBackupMeta(in, "/b/meta/3", 3)
			if err != nil {
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "/b/meta/3") {
					t.Fatalf("decode: %v", err)
				}
				continue
			}
			for _, bf := range got.files {
				if bf.path != "shared/"+sharedName(bf.dbName, bf.crc, bf.size) && bf.path != "private/3/"+bf.dbName {
					t.Fatalf("decoded a file outside the backup's directories: %+v", bf)
				}
			}
			again, err := decodeBackupMeta(got.encode(), "/b/meta/3", 3)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip: %v\n%+v\n%+v", err, got, again)
			}
		}
	})
}
