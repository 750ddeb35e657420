//go:build race

package hubproc

const raceEnabled = true
