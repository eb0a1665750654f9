package recipe_test

import (
	"fmt"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/pipeline/recipe"
)

func Example() {
	// the second shard of a 6-unit linear layer, as the plan writes its
	// slot's recipe: a worker gets the same spec through the wire
	s := recipe.StageSpec{ID: 1, Name: "stage 0 shard 1", Lo: 0, Hi: 1, Cols: [2]int{3, 6}, Shard: 1, Layers: []int{0}, Threads: 1,
		Model: recipe.Model{Specs: []nn.Spec{{Type: "linear", Units: 6, Init: nn.XavierUniform}}, Sample: []int{4}, Seed: 1}}
	b, err := s.ToWire(nil)
	if err != nil {
		panic(err)
	}
	got, err := recipe.FromWire(b)
	if err != nil {
		panic(err)
	}
	if _, err := recipe.Build(got, nil, actors.NewGraph(false)); err != nil {
		panic(err)
	}
	fmt.Println(got.Name, "builds units", got.Cols[0], "to", got.Cols[1])
	// Output:
	// stage 0 shard 1 builds units 3 to 6
}
