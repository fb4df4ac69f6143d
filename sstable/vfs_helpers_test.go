package sstable

import "github.com/shaledb/shale/vfs"

func vfsCreate(path string) (vfs.File, error) { return vfs.Default.Create(path) }
func vfsOpen(path string) (vfs.File, error)   { return vfs.Default.Open(path) }
