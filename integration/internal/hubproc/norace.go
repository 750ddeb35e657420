//go:build !race

package hubproc

const raceEnabled = false
