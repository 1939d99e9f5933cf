// Package archtest holds no code: its tests check that the project's packages
// depend on each other only in the direction DESIGN.md sets (the server links no
// implementation of sessiontree's ports), that no code asks a value of another
// package of the project for a type by type assertion (bucket capabilities, the
// uploader port), and that the shipped commands link no test support.
package archtest
