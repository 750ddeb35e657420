//go:build !unix

package main

import "os/exec"

// ownGroup does nothing where there are no process groups: the shell
// alone is killed when its context ends.
func ownGroup(*exec.Cmd) {}
