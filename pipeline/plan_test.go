package pipeline

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pipetrain/pipetrain/actors"
	"github.com/pipetrain/pipetrain/nn"
	"github.com/pipetrain/pipetrain/tensor"
)

// TestPlan: the plan is a plain value, made without an actor system: the
// positions, the slots with their names, shards and hosts, and the thread
// budgets follow the config.
func TestPlan(t *testing.T) {
	layers := func() []nn.Layer { // 8 -> 6 -> relu -> 4 -> relu
		l1, _ := nn.NewLinear(tensor.Float32, 8, 6, nn.XavierUniform, rand.New(rand.NewPCG(1, 1)))
		l2, _ := nn.NewLinear(tensor.Float32, 6, 4, nn.XavierUniform, rand.New(rand.NewPCG(1, 2)))
		return []nn.Layer{l1, nn.NewReLU(), l2, nn.NewReLU()}
	}
	cores := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		name      string
		cfg       Config
		positions [][]int // each position's layers
		names     []string
		hosts     []int
		threads   int
	}{
		{"an actor per layer, sequential", Config{Schedule: actors.Sequential, MicroBatches: 4},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0", "stage 1", "stage 2", "stage 3"}, []int{-1, -1, -1, -1}, cores},
		{"one stage", Config{Schedule: actors.OneFOneB, MicroBatches: 4, Stages: 1},
			[][]int{{0, 1, 2, 3}}, []string{"stage 0"}, []int{-1}, cores},
		{"1f1b over an actor per layer shares the cores", Config{Schedule: actors.OneFOneB, MicroBatches: 4},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0", "stage 1", "stage 2", "stage 3"}, []int{-1, -1, -1, -1}, max(1, cores/4)},
		{"one micro-batch: one actor busy at a time", Config{Schedule: actors.OneFOneB, MicroBatches: 1},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0", "stage 1", "stage 2", "stage 3"}, []int{-1, -1, -1, -1}, cores},
		{"a sharded layer", Config{Schedule: actors.GPipe, MicroBatches: 2, Shards: []int{2}, GEMMThreads: 3},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0 shard 0", "stage 0 shard 1", "stage 1", "stage 2", "stage 3"}, []int{-1, -1, -1, -1, -1}, 3},
		{"hosts in contiguous blocks", Config{Schedule: actors.OneFOneB, MicroBatches: 2, Hosts: []string{"a:1", "b:2"}},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0", "stage 1", "stage 2", "stage 3"}, []int{0, 0, 1, 1}, max(1, cores/4)},
		// 2 rows a replica and step: the turn (82 weights: the gradients
		// across, the weights back) costs more than the activations at the cut.
		{"few rows: replicas beside their owners' hosts", Config{Schedule: actors.OneFOneB, MicroBatches: 2, Replicas: 2, GEMMThreads: 1, Hosts: []string{"a:1", "b:2"}},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0", "stage 1", "stage 2", "stage 3", "replica 1 stage 0", "replica 1 stage 1", "replica 1 stage 2", "replica 1 stage 3"},
			[]int{0, 0, 1, 1, 0, 0, 1, 1}, 1},
		// replicas go over the hosts in the turn's order, the owner last
		{"many rows: a replica a host", Config{Schedule: actors.OneFOneB, MicroBatches: 2, Replicas: 2, SampleRows: 1000, GEMMThreads: 1, Hosts: []string{"a:1", "b:2"}},
			[][]int{{0}, {1}, {2}, {3}}, []string{"stage 0", "stage 1", "stage 2", "stage 3", "replica 1 stage 0", "replica 1 stage 1", "replica 1 stage 2", "replica 1 stage 3"},
			[]int{1, 1, 1, 1, 0, 0, 0, 0}, 1},
		{"fewer slots than hosts: replica after replica", Config{Schedule: actors.Sequential, MicroBatches: 1, Stages: 1, Replicas: 4, GEMMThreads: 1, Hosts: []string{"a:1", "b:2"}},
			[][]int{{0, 1, 2, 3}}, []string{"stage 0", "replica 1 stage 0", "replica 2 stage 0", "replica 3 stage 0"}, []int{1, 0, 0, 1}, 1},
	} {
		p, err := makePlan(layers(), 8, []int{6, 6, 4, 4}, c.cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var positions [][]int
		for _, pos := range p.Positions {
			positions = append(positions, pos.Layers)
		}
		var names []string
		var hosts []int
		for id, s := range p.Slots {
			names, hosts = append(names, s.Name), append(hosts, s.Host)
			if !slices.Contains(p.Positions[s.Position].Slots, s.Owner) { // a position lists replica 0's slots
				t.Errorf("%s: slot %d (owner %d) is not among its position's %v", c.name, id, s.Owner, p.Positions[s.Position].Slots)
			}
		}
		if !slices.EqualFunc(positions, c.positions, slices.Equal) || !slices.Equal(names, c.names) || !slices.Equal(hosts, c.hosts) || p.Threads != c.threads {
			t.Errorf("%s: positions %v, names %q, hosts %v, threads %d; want %v, %q, %v, %d",
				c.name, positions, names, hosts, p.Threads, c.positions, c.names, c.hosts, c.threads)
		}
	}
	sharded, _ := makePlan(layers(), 8, nil, Config{Schedule: actors.GPipe, MicroBatches: 2, Shards: []int{2}}, nil)
	if pos := sharded.Positions[0]; !slices.Equal(pos.Units, []int{0, 3, 6}) || !slices.Equal(pos.Split, []int{0, 3, 6}) || !sharded.Sharded(0) || sharded.Sharded(1) {
		t.Errorf("a linear layer of 6 units over 2 shards: units %v, split %v", pos.Units, pos.Split)
	}
	if _, err := makePlan(layers(), 8, nil, Config{Schedule: actors.GPipe, MicroBatches: 2, Shards: []int{1, 2}}, nil); err == nil || !strings.Contains(err.Error(), "layer 1 (relu) cannot be sharded") {
		t.Errorf("shards on a relu layer: %v", err)
	}
}

// TestPlanTurn: with a replica's chain kept on one host, the turn visits
// the replicas in ReplicaOf's order and crosses from host to host once per
// boundary between hosts: each parameter block's gradients cross the wire
// once on two hosts, whatever the replicas; the owner's weights then cross
// back to every copy on another host.
func TestPlanTurn(t *testing.T) {
	layers := func() []nn.Layer { // one position: a chain a replica on one host
		l, _ := nn.NewLinear(tensor.Float32, 8, 6, nn.XavierUniform, rand.New(rand.NewPCG(1, 1)))
		return []nn.Layer{l, nn.NewReLU()}
	}
	for _, c := range []struct{ replicas, hosts, crossings int }{
		{2, 2, 1}, {4, 2, 1}, {3, 3, 2}, {4, 4, 3}, {6, 3, 2},
	} {
		hosts := make([]string, c.hosts)
		for h := range hosts {
			hosts[h] = fmt.Sprintf("h%d:1", h)
		}
		p, err := makePlan(layers(), 8, []int{6, 6}, Config{Schedule: actors.Sequential, MicroBatches: 1, Stages: 1, Replicas: c.replicas, GEMMThreads: 1, Hosts: hosts}, nil)
		if err != nil {
			t.Fatal(err)
		}
		copies := p.Copies(0)
		crossings := 0
		for i := 1; i < c.replicas; i++ {
			if p.Slots[copies[actors.ReplicaOf(i-1, c.replicas)]].Host != p.Slots[copies[actors.ReplicaOf(i, c.replicas)]].Host {
				crossings++
			}
		}
		if actors.ReplicaOf(c.replicas-1, c.replicas) != 0 {
			t.Errorf("%d replicas: the last share goes to replica %d, want the owner's", c.replicas, actors.ReplicaOf(c.replicas-1, c.replicas))
		}
		if crossings != c.crossings {
			t.Errorf("%d replicas on %d hosts: the turn crosses %d times, want %d", c.replicas, c.hosts, crossings, c.crossings)
		}
	}
}
