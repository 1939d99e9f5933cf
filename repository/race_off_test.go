//go:build !race

package repository_test

const raceEnabled = false
