// Package archtest holds no code: its tests check that the project's packages
// depend on each other only in the direction DESIGN.md sets.
package archtest
