package vfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// renameFile is MoveFileEx with MOVEFILE_REPLACE_EXISTING, so that renaming a
// temporary file over CURRENT is atomic as on POSIX, and
// MOVEFILE_WRITE_THROUGH, so that the call returns only once the rename is on
// disk (Windows has no directory fsync to do it afterwards).
//
// MoveFileEx refuses to replace a file another handle holds open. Then the
// rename is retried with POSIX semantics (FileRenameInfoEx, Windows 10 1709
// and later on NTFS), which replaces it atomically; where that is
// unsupported (Wine, FAT), the open target is first renamed aside and
// deleted, which leaves a moment in which newname does not exist.
func renameFile(oldname, newname string) error {
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	from, err := windows.UTF16PtrFromString(oldname)
	if err != nil {
		return linkErr(err)
	}
	to, err := windows.UTF16PtrFromString(newname)
	if err != nil {
		return linkErr(err)
	}
	err = windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH)
	if err == nil {
		return nil
	}
	if !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return linkErr(err)
	}
	if fi, serr := os.Lstat(newname); serr != nil || fi.IsDir() {
		return linkErr(err)
	}
	if posixRename(from, newname) == nil {
		return nil
	}
	aside, ap, aerr := asideName(newname)
	if aerr != nil {
		return linkErr(err)
	}
	if windows.MoveFileEx(to, ap, 0) != nil {
		return linkErr(err)
	}
	if err := windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH); err != nil {
		_ = windows.MoveFileEx(ap, to, 0) // put the target back
		return linkErr(err)
	}
	if err := windows.DeleteFile(ap); err != nil {
		return linkErr(fmt.Errorf("renamed, but the replaced file stays as %s: %w", aside, err))
	}
	return nil
}

// posixRename renames the file from to the absolute path of newname with
// SetFileInformationByHandle(FileRenameInfoEx) and
// FILE_RENAME_FLAG_REPLACE_IF_EXISTS|FILE_RENAME_FLAG_POSIX_SEMANTICS, which
// replaces newname even while another handle has it open.
func posixRename(from *uint16, newname string) error {
	abs, err := filepath.Abs(newname)
	if err != nil {
		return err
	}
	target, err := windows.UTF16FromString(abs)
	if err != nil {
		return err
	}
	target = target[:len(target)-1] // FileNameLength counts no terminator
	h, err := windows.CreateFile(from, windows.DELETE|windows.SYNCHRONIZE, shareAll, nil,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	// FILE_RENAME_INFO: Flags (a DWORD in a union), RootDirectory (a HANDLE,
	// pointer-aligned), FileNameLength in bytes, then the name.
	type fileRenameInfo struct {
		Flags          uint32
		RootDirectory  windows.Handle
		FileNameLength uint32
		FileName       [1]uint16
	}
	var hdr fileRenameInfo
	nameOff := unsafe.Offsetof(hdr.FileName)
	buf := make([]uint64, (int(nameOff)+2*len(target)+2+7)/8) // 8-byte aligned
	info := (*fileRenameInfo)(unsafe.Pointer(&buf[0]))
	info.Flags = windows.FILE_RENAME_REPLACE_IF_EXISTS | windows.FILE_RENAME_POSIX_SEMANTICS
	info.FileNameLength = uint32(2 * len(target))
	name := unsafe.Slice((*uint16)(unsafe.Add(unsafe.Pointer(info), nameOff)), len(target))
	copy(name, target)
	return windows.SetFileInformationByHandle(h, windows.FileRenameInfoEx,
		(*byte)(unsafe.Pointer(info)), uint32(len(buf)*8))
}

// deletedPrefix starts the names that removeFile's fallback renames a file
// to before deleting it; List hides them.
const deletedPrefix = ".shale-deleted-"

// fileDispositionInfoEx is FILE_DISPOSITION_INFO_EX.
type fileDispositionInfoEx struct {
	Flags uint32
}

// removeFile deletes name with POSIX semantics: the name is gone when the
// call returns, even while other handles (opened with FILE_SHARE_DELETE)
// still read the file, which keeps its data until they close it. That is
// SetFileInformationByHandle(FileDispositionInfoEx) with
// FILE_DISPOSITION_POSIX_SEMANTICS (Windows 10 1809 and later, on NTFS).
// Where that is unsupported (older Windows, FAT, Wine), a plain delete would
// leave the name in place until the last handle closes, so the file is first
// renamed aside to a hidden name in the same directory and then deleted.
func removeFile(name string) error {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	h, err := windows.CreateFile(p, windows.DELETE, shareAll, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	info := fileDispositionInfoEx{Flags: windows.FILE_DISPOSITION_DELETE |
		windows.FILE_DISPOSITION_POSIX_SEMANTICS | windows.FILE_DISPOSITION_IGNORE_READONLY_ATTRIBUTE}
	err = windows.SetFileInformationByHandle(h, windows.FileDispositionInfoEx,
		(*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	_ = windows.CloseHandle(h)
	if err == nil {
		return nil
	}
	if !isUnsupported(err) {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return removeAside(name, p)
}

// removeAside is removeFile where POSIX deletion is unsupported.
func removeAside(name string, p *uint16) error {
	fi, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		// Directories are never held open by shale: delete in place.
		return os.Remove(name)
	}
	_, ap, err := asideName(name)
	if err != nil {
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	if err := windows.MoveFileEx(p, ap, 0); err != nil {
		// Cannot rename (another handle lacks FILE_SHARE_DELETE, say):
		// delete in place, the name lingering until that handle closes.
		if err := windows.DeleteFile(p); err != nil {
			return &os.PathError{Op: "remove", Path: name, Err: err}
		}
		return nil
	}
	if err := windows.DeleteFile(ap); err != nil {
		// Put the file back rather than leave it under a hidden name.
		_ = windows.MoveFileEx(ap, p, 0)
		return &os.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// asideName returns a fresh hidden name in the directory of name.
func asideName(name string) (string, *uint16, error) {
	var r [8]byte
	_, _ = rand.Read(r[:])
	aside := filepath.Join(filepath.Dir(name), deletedPrefix+hex.EncodeToString(r[:]))
	p, err := windows.UTF16PtrFromString(aside)
	return aside, p, err
}

// removeAll removes a directory tree entry by entry, with removeFile for
// files. os.RemoveAll is not used: it needs FileDispositionInfoEx, which Wine
// lacks, and fails there on any non-empty directory. A missing name is not an
// error; the first failure is returned after trying every entry.
func removeAll(name string) error {
	fi, err := os.Lstat(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if !fi.IsDir() {
		if err := removeFile(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return err
	}
	var first error
	for _, n := range names {
		if err := removeAll(filepath.Join(name, n)); err != nil && first == nil {
			first = err
		}
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
		first = err
	}
	return first
}

// listHidden drops from a directory listing the names of files removeFile
// renamed aside and that another handle still holds open.
func listHidden(names []string) []string {
	out := names[:0]
	for _, n := range names {
		if !strings.HasPrefix(n, deletedPrefix) {
			out = append(out, n)
		}
	}
	return out
}
