//go:build race

package model

// raceEnabled reports a -race build, where sync.Pool drops buffers and allocation counts mean
// nothing.
const raceEnabled = true
