// Package archtest holds no code: its tests check that the project's packages
// depend on each other only in the direction DESIGN.md sets, that no code asks a
// bucket for a capability by type assertion, and that the shipped commands link no
// test support.
package archtest
