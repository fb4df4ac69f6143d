package base

import (
	"fmt"
	"strconv"
	"strings"
)

// FileNum numbers the files of a database; the MANIFEST hands them out.
type FileNum uint64

func (n FileNum) String() string { return fmt.Sprintf("%06d", uint64(n)) }

// FileType is the kind of file in a database directory.
type FileType int

// The file types of a database directory.
const (
	FileTypeLog FileType = iota
	FileTypeTable
	FileTypeBlob
	FileTypeManifest
	FileTypeCurrent
	FileTypeLock
	FileTypeOptions
	FileTypeInfoLog
	FileTypeTemp
)

// MakeFilename returns the base name of a file of type t and number n.
func MakeFilename(t FileType, n FileNum) string {
	switch t {
	case FileTypeLog:
		return fmt.Sprintf("%s.log", n)
	case FileTypeTable:
		return fmt.Sprintf("%s.sst", n)
	case FileTypeBlob:
		return fmt.Sprintf("%s.blob", n)
	case FileTypeManifest:
		return fmt.Sprintf("MANIFEST-%s", n)
	case FileTypeCurrent:
		return "CURRENT"
	case FileTypeLock:
		return "LOCK"
	case FileTypeOptions:
		return fmt.Sprintf("OPTIONS-%s", n)
	case FileTypeInfoLog:
		return "LOG"
	case FileTypeTemp:
		return fmt.Sprintf("%s.dbtmp", n)
	}
	AssertionFailedf("unknown file type %d", t)
	return ""
}

// ParseFilename parses a base name made by MakeFilename.
func ParseFilename(name string) (t FileType, n FileNum, ok bool) {
	switch {
	case name == "CURRENT":
		return FileTypeCurrent, 0, true
	case name == "LOCK":
		return FileTypeLock, 0, true
	case name == "LOG" || strings.HasPrefix(name, "LOG.old"):
		return FileTypeInfoLog, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, ok := parseNum(name[len("MANIFEST-"):])
		return FileTypeManifest, n, ok
	case strings.HasPrefix(name, "OPTIONS-"):
		n, ok := parseNum(name[len("OPTIONS-"):])
		return FileTypeOptions, n, ok
	}
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return 0, 0, false
	}
	n, ok = parseNum(name[:dot])
	if !ok {
		return 0, 0, false
	}
	switch name[dot+1:] {
	case "log":
		return FileTypeLog, n, true
	case "sst":
		return FileTypeTable, n, true
	case "blob":
		return FileTypeBlob, n, true
	case "dbtmp":
		return FileTypeTemp, n, true
	}
	return 0, 0, false
}

func parseNum(s string) (FileNum, bool) {
	u, err := strconv.ParseUint(s, 10, 64)
	return FileNum(u), err == nil
}
