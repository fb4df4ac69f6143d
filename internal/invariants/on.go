//go:build invariants || race

package invariants

// Enabled is true: expensive internal assertions run.
const Enabled = true
