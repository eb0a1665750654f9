// Package recipe is what the engine (package pipeline) and its workers
// share, so that neither imports the other: the recipe of a stage actor
// (StageSpec, from a Model), the one function that builds the actor from
// it (Build), and its wire form (ToWire, FromWire).
package recipe
