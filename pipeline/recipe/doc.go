// Package recipe is what the engine (package pipeline) and its workers
// (package remote) share, so that neither imports the other: the recipe
// of a stage actor (StageSpec, from a Model), the one function that builds
// the actor from it (Build), its wire form (ToWire, FromWire), and the
// actor system each process runs its actors in.
package recipe
