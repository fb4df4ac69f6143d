//go:build !invariants && !race

package invariants

// Enabled is false: expensive internal assertions are compiled out.
const Enabled = false
