package locks

// Our designs against the libraries doing the same job (BENCH.md figure 1's ratios), measured
// interleaved: short slices of one design and then the other, in the order ABBA ABBA..., so that
// both see the same machine. On a shared 2-core machine the rate drifts by tens of percent within
// a minute; measured one after the other (BenchmarkLockCycle), a ratio mostly measured the drift.
//
//	go test -run '^$' -bench 'LockPair' -benchtime 1x -count 3 ./locks/

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Pairs are (ours, the library): the same algorithm, ours as lockcheck's reference design
// (tools/lockbench/gofigures.go names the same pairs for its table).
var Pairs = [][2]string{{"set-nx-px", "redislock"}, {"redlock", "redsync"}}

const (
	pairSlice  = 50 * time.Millisecond
	pairSlices = 24 // of each design per round
)

func BenchmarkLockPair(b *testing.B) {
	s := startBenchServers(b)
	for _, p := range Pairs {
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("ours=%s/library=%s/clients=%d", p[0], p[1], clients), func(b *testing.B) {
				benchPair(b, s, p, clients)
			})
		}
	}
}

func benchPair(b *testing.B, s benchServers, pair [2]string, clients int) {
	sets := make([][]Lock, 2)
	for i, name := range pair {
		d, err := Get(name)
		if err != nil {
			b.Fatal(err)
		}
		key := fmt.Sprintf("bench:pair:%s:%d:%d", name, clients, time.Now().UnixNano())
		for c := range clients {
			l, err := d.New(Env{Client: fmt.Sprintf("client-%d", c+1), Nodes: s.redis[:d.Nodes], Key: key,
				TTL: 10 * time.Second, Timeout: 2 * time.Second, Point: func(string) {}})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if err := cycle(l); err != nil { // connect outside the measured slices
				b.Fatalf("%s warm-up cycle: %v", name, err)
			}
			sets[i] = append(sets[i], l)
		}
	}
	var cycles, busy [2]int64
	var spent, cpu [2]time.Duration
	b.ResetTimer()
	for range b.N {
		for k := range 2 * pairSlices {
			i := []int{0, 1, 1, 0}[k%4] // ABBA: the one measured second in a pair goes first next
			cpu0 := processCPU()
			n, nbusy, took, err := slice(sets[i], pairSlice)
			if err != nil {
				b.Fatalf("%s, %d clients: %v", pair[i], clients, err)
			}
			cpu[i] += processCPU() - cpu0
			cycles[i] += n
			busy[i] += nbusy
			spent[i] += took
		}
	}
	b.StopTimer()
	ours, lib := float64(cycles[0])/spent[0].Seconds(), float64(cycles[1])/spent[1].Seconds()
	b.ReportMetric(ours, "ours-cycles/s")
	b.ReportMetric(lib, "library-cycles/s")
	b.ReportMetric(ours/lib, "ratio")
	// What each cycle cost this process (the clients), and how many attempts were refused: on a
	// machine whose cores are all busy, CPU is what the rate trades against.
	b.ReportMetric(float64(cpu[0].Microseconds())/float64(cycles[0]), "ours-cpu-us/cycle")
	b.ReportMetric(float64(cpu[1].Microseconds())/float64(cycles[1]), "library-cpu-us/cycle")
	b.ReportMetric(float64(busy[0])/float64(cycles[0]), "ours-busy/cycle")
	b.ReportMetric(float64(busy[1])/float64(cycles[1]), "library-busy/cycle")
}

// processCPU is the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// slice runs cycles on every lock at once until d has passed; a cycle started is finished. It
// returns the cycles done, the attempts refused as busy, and the time they took.
func slice(ls []Lock, d time.Duration) (int64, int64, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	var n, busy, errs int64
	var firstErr error
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				refused, failed, err := pairCycle(l)
				mu.Lock()
				busy += refused
				errs += failed
				if err != nil {
					firstErr = err
				}
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if errs > n || (n == 0 && firstErr != nil) { // an attempt may time out on a loaded machine; most must not
		return n, busy, time.Since(start), fmt.Errorf("%d attempts ended in errors for %d cycles: %w", errs, n, firstErr)
	}
	return n, busy, time.Since(start), nil
}

// pairCycle acquires (retrying at once after a refusal or an error: on a loaded machine a node
// may not answer within its timeout) and releases. It returns the refused attempts, the attempts
// and releases that ended in an error, and the last such error.
func pairCycle(l Lock) (refused, failed int64, last error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := l.Acquire(ctx)
		cancel()
		if err == nil {
			break
		}
		if errors.Is(err, ErrBusy) {
			refused++
			continue
		}
		if failed, last = failed+1, err; failed == 100 {
			return refused, failed, fmt.Errorf("100 attempts in a row ended in errors, the last: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		failed, last = failed+1, err
	}
	return refused, failed, last
}
