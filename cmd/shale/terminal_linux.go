package main

import "golang.org/x/sys/unix"

// ioctlReadTermios is the ioctl that reads terminal attributes.
const ioctlReadTermios = unix.TCGETS
