// Command handoff measures the floor under a step spread over processes on
// this machine: the six hand-offs of one 1F1B step of the MNIST MLP at one
// micro-batch on two workers (the input to the first stage, the activation
// to the second, the logits to the coordinator's loss, their gradient back,
// the activation's gradient to the first stage, and its report to the
// coordinator), with the step's bytes, between three processes over
// loopback TCP, and nothing else: no kernels, no actors, no control
// messages. Each process blocks in a read until its bytes come, as a
// worker waiting for its next message does.
//
//	go run ./bench/handoff -rounds 5
//
// It prints each round's median step and the CPU the three processes spent
// a step (user and system, from the kernel's counters of the children and
// of itself), then the medians over the rounds. With -block N a step is
// instead N bytes from one worker to the other and back, as two replicas'
// gradients and new weights cross, started and acknowledged by the
// coordinator:
//
//	go run ./bench/handoff -rounds 5 -steps 300 -block 4194304
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// hops are one step's hand-offs: from, to, bytes (process 0 is the
// coordinator, 1 and 2 the workers).
var hops = [][3]int{
	{0, 1, 128 * 784 * 4}, // the input batch
	{1, 2, 128 * 512 * 4}, // the first stage's activation
	{2, 0, 128 * 10 * 4},  // the logits
	{0, 2, 128 * 10 * 4},  // their gradient
	{2, 1, 128 * 512 * 4}, // the activation's gradient
	{1, 0, 64},            // the first stage's report
}

func main() {
	role := flag.Int("role", 0, "internal: 1 or 2 for a worker process")
	steps := flag.Int("steps", 3000, "steps a round")
	rounds := flag.Int("rounds", 5, "rounds")
	block := flag.Int("block", 0, "bytes one worker sends the other and gets back a step, instead of the MNIST step")
	flag.Parse()
	if *block > 0 {
		hops = [][3]int{{0, 1, 64}, {1, 2, *block}, {2, 1, *block}, {1, 0, 64}}
	}
	if *role > 0 {
		check(peer(*role, *steps))
		return
	}
	var walls, cpus []float64
	for r := range *rounds {
		wall, cpu, err := round(*steps, *block)
		check(err)
		fmt.Printf("round %d: step %.1f µs, CPU %.1f µs a step (three processes)\n", r+1, wall, cpu)
		walls, cpus = append(walls, wall), append(cpus, cpu)
	}
	fmt.Printf("medians of %d rounds of %d steps: step %.1f µs, CPU %.1f µs a step\n", *rounds, *steps, median(walls), median(cpus))
}

// round starts the two worker processes, runs steps with them and returns
// the median step and the mean CPU a step of the three, in µs.
func round(steps, block int) (wall, cpu float64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()
	addrs := []string{ln.Addr().String()}
	var ins []io.WriteCloser
	for r := 1; r <= 2; r++ {
		p := exec.Command(os.Args[0], "-role", fmt.Sprint(r), "-steps", fmt.Sprint(steps), "-block", fmt.Sprint(block))
		p.Stderr = os.Stderr
		in, err := p.StdinPipe()
		if err != nil {
			return 0, 0, err
		}
		out, err := p.StdoutPipe()
		if err != nil {
			return 0, 0, err
		}
		if err := p.Start(); err != nil {
			return 0, 0, err
		}
		procs, ins = append(procs, p), append(ins, in)
		line, err := readLine(out, 20*time.Second)
		if err != nil {
			return 0, 0, fmt.Errorf("worker %d: %w", r, err)
		}
		addrs = append(addrs, line)
	}
	for _, in := range ins { // each worker learns every address
		fmt.Fprintln(in, strings.Join(addrs, " "))
	}
	conns, err := connect(0, addrs, ln)
	if err != nil {
		return 0, 0, err
	}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	times, err := run(0, steps, conns)
	if err != nil {
		return 0, 0, err
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	self := used(after) - used(before)
	var children float64
	for _, p := range procs {
		if err := waitFor(p, 20*time.Second); err != nil {
			return 0, 0, err
		}
		children += p.ProcessState.UserTime().Seconds() + p.ProcessState.SystemTime().Seconds()
	}
	procs = nil
	// the workers' CPU includes their setup; the steps dominate it
	return median(times), (self + children) / float64(steps) * 1e6, nil
}

func used(u syscall.Rusage) float64 {
	return time.Duration(syscall.TimevalToNsec(u.Utime) + syscall.TimevalToNsec(u.Stime)).Seconds()
}

// peer is worker process me: it listens, prints its address, reads every
// address and runs the steps.
func peer(me, steps int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().String())
	line, err := readLine(os.Stdin, 20*time.Second)
	if err != nil {
		return err
	}
	conns, err := connect(me, strings.Fields(line), ln)
	if err != nil {
		return err
	}
	_, err = run(me, steps, conns)
	return err
}

// connect links process me with the others: it dials those after it and
// accepts those before it, each dialer naming itself in one byte.
func connect(me int, addrs []string, ln net.Listener) (map[int]net.Conn, error) {
	conns := map[int]net.Conn{}
	for j := me + 1; j < len(addrs); j++ {
		c, err := net.DialTimeout("tcp", addrs[j], 10*time.Second)
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte{byte(me)}); err != nil {
			return nil, err
		}
		conns[j] = c
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
	for range me {
		c, err := ln.Accept()
		if err != nil {
			return nil, err
		}
		var who [1]byte
		if _, err := io.ReadFull(c, who[:]); err != nil {
			return nil, err
		}
		conns[int(who[0])] = c
	}
	return conns, nil
}

// run plays process me's part of steps steps and returns each step's time
// in µs.
func run(me, steps int, conns map[int]net.Conn) ([]float64, error) {
	size := 0
	for _, h := range hops {
		size = max(size, h[2])
	}
	buf := make([]byte, size)
	times := make([]float64, 0, steps)
	deadline := time.Now().Add(5 * time.Minute)
	for _, c := range conns {
		_ = c.SetDeadline(deadline)
	}
	for range steps {
		t0 := time.Now()
		for _, h := range hops {
			var err error
			switch me {
			case h[0]:
				_, err = conns[h[1]].Write(buf[:h[2]])
			case h[1]:
				_, err = io.ReadFull(conns[h[0]], buf[:h[2]])
			}
			if err != nil {
				return nil, err
			}
		}
		times = append(times, float64(time.Since(t0).Microseconds()))
	}
	return times, nil
}

func readLine(r io.Reader, within time.Duration) (string, error) {
	got := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	select {
	case s := <-got:
		if s == "" {
			return "", fmt.Errorf("no line")
		}
		return s, nil
	case <-time.After(within):
		return "", fmt.Errorf("no line within %v", within)
	}
}

func waitFor(p *exec.Cmd, within time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		_ = p.Process.Kill()
		<-done
		return fmt.Errorf("worker did not end within %v", within)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "handoff:", err)
		os.Exit(1)
	}
}
