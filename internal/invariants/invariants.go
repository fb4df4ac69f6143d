// Package invariants says whether expensive internal assertions are on. They
// are on in builds with the "invariants" tag and in race-detector builds
// (tests), and off in normal builds, where the checks compile away.
//
// It never does IO and holds no state.
package invariants
