package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockcheck/lockcheck/locks"
)

// lockCycles is figure 1: locks/bench_test.go.
func lockCycles(_ context.Context, c config) (string, error) {
	set, err := runGoBench("^(BenchmarkLockCycle|BenchmarkRoundTrip|BenchmarkLockPair)$", c.lockTime, c.lockCount, "./locks/")
	var b strings.Builder
	fmt.Fprintf(&b, "## 1. Lock cycle rate\n\n")
	fmt.Fprintf(&b, "Command: `%s` (locks/bench_test.go), n = %d rounds%s.\n\n", set.command, c.lockCount, rawNote(set))
	b.WriteString("A cycle is acquire + an empty critical section + release, against real servers started once per round " +
		"(5 Redis lock nodes under libfaketime as in every run, a standalone ZooKeeper), no faults, no proxies. " +
		"With 8 clients all contend for the same lock, each on its own connection, and a refused client retries at once. " +
		"**× 2 RT** is the time per cycle divided by two round trips on one connection to the design's (first) server, " +
		"measured right after the cycles so that both see the same machine (Redis PING with lockcheck's go-redis " +
		"settings; ZooKeeper `exists` for the zk designs): a cycle needs at least two, so 1.00× would be the physical " +
		"minimum. With 8 clients it is still one connection's round trip: holds of one lock follow each other, so the " +
		"hand-over cannot be faster than a release and an acquire in a row.\n\n")
	b.WriteString("| design | service, nodes | 1 client: cycles/s | × 2 RT | 8 clients: cycles/s | × 2 RT | refused attempts per cycle (8 clients) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, d := range locks.All() {
		service := d.Service
		if service == "" {
			service = locks.Redis
		}
		nodes := d.Nodes
		row := fmt.Sprintf("| `%s` | %s, %d |", d.Name, service, nodes)
		for _, clients := range []int{1, 8} {
			name := fmt.Sprintf("BenchmarkLockCycle/design=%s/clients=%d", d.Name, clients)
			rate := spreadOf(set.samples(name, "cycles/s"))
			mult := spreadOf(set.samples(name, "x2RT"))
			row += fmt.Sprintf(" %s | %s |", rate.format(num), mult.format(ratio))
		}
		busy := spreadOf(set.samples(fmt.Sprintf("BenchmarkLockCycle/design=%s/clients=8", d.Name), "busy/cycle"))
		row += fmt.Sprintf(" %s |\n", busy.format(num))
		b.WriteString(row)
	}
	b.WriteString("\nRaw round trips (BenchmarkRoundTrip; with 8 clients each has its own connection, and the rate is their sum):\n\n| round " +
		"trip | 1 client: ops/s | 8 clients: ops/s |\n| --- | --- | --- |\n")
	for _, server := range []struct{ name, what string }{
		{"redis", "Redis PING, lock node (libfaketime)"},
		{"redis-nofaketime", "Redis PING, resource node (no libfaketime)"},
		{"zookeeper", "ZooKeeper `exists /`"},
	} {
		fmt.Fprintf(&b, "| %s |", server.what)
		for _, clients := range []int{1, 8} {
			s := spreadOf(set.samples(fmt.Sprintf("BenchmarkRoundTrip/server=%s/clients=%d", server.name, clients), "ops/s"))
			fmt.Fprintf(&b, " %s |", s.format(num))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nOur re-implementations against the libraries doing the same job (BenchmarkLockPair, locks/pair_bench_test.go): " +
		"the two measured interleaved, in slices of 50 ms in the order ABBA ABBA... (24 slices each per round), so that both see the same " +
		"machine; measured one after the other, as in the table above, a ratio on this shared machine mostly measured its drift. " +
		"Ratio = our cycles/s ÷ the library's, per round; above 1 means ours is faster. CPU is this process's (the clients') CPU per cycle.\n\n")
	b.WriteString("| pair | 1 client: ratio | cycles/s ours / library | CPU per cycle ours / library | 8 clients: ratio | cycles/s ours / " +
		"library | CPU per cycle ours / library | refused per cycle ours / library |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	us := func(v float64) string { return num(v) + " µs" }
	for _, p := range [][2]string{{"set-nx-px", "redislock"}, {"redlock", "redsync"}} { // locks/pair_bench_test.go's pairs
		fmt.Fprintf(&b, "| `%s` / `%s` |", p[0], p[1])
		var refused string
		for _, clients := range []int{1, 8} {
			name := fmt.Sprintf("BenchmarkLockPair/ours=%s/library=%s/clients=%d", p[0], p[1], clients)
			fmt.Fprintf(&b, " %s | %s / %s | %s / %s |", spreadOf(set.samples(name, "ratio")).format(ratio),
				spreadOf(set.samples(name, "ours-cycles/s")).format(num), spreadOf(set.samples(name, "library-cycles/s")).format(num),
				spreadOf(set.samples(name, "ours-cpu-us/cycle")).format(us), spreadOf(set.samples(name, "library-cpu-us/cycle")).format(us))
			refused = spreadOf(set.samples(name, "ours-busy/cycle")).format(num) + " / " + spreadOf(set.samples(name, "library-busy/cycle")).format(num)
		}
		b.WriteString(" " + refused + " |\n")
	}
	b.WriteString("\n" + lockNotes)
	return b.String(), err
}

const lockNotes = `Reading it:
- ` + "`set-nx-px`" + ` takes its fencing token in the acquiring round trip: one script runs SET NX PX and, only if that
  took the key, INCR of the token counter. A cycle is then two round trips, as for ` + "`redislock`" + ` (which has no token);
  the script is loaded once and sent by its SHA.
- ` + "`redlock`" + ` holds the lock as soon as a majority of nodes said yes (the docs count a majority; ` + "`redsync`" + `
  waits for every node unless told to fail fast), so an acquisition waits for the third-fastest of five nodes rather than
  the slowest; and after a refused attempt it unlocks only the nodes that may hold its value (those that said yes or did
  not answer), not those that refused its SET NX. Under contention most attempts are refused, and unlocking every node
  after each (as ` + "`redsync`" + ` does, and ` + "`redlock`" + ` did) doubled what a refused attempt costs. Measured
  interleaved, the earlier ` + "`redlock`" + ` and ` + "`redsync`" + ` cost the same CPU per cycle and ran at the same rate
  within the noise, with 1 and with 8 clients: the 0.74–0.86× an earlier ` + "`make bench`" + ` reported with 8 clients was
  measured one after the other, on a machine whose speed drifts.
- The 5-node designs (` + "`redlock`, `redsync`, `multilock`" + `) talk to five servers per step; on 2 cores the five
  servers and the client share the CPU, so their multiple of the single-server round trip is high and says more about
  this machine than about the algorithm.
- With 8 clients on one lock the rate is bounded by the hand-over: a release, then one of the waiting clients' next
  attempt. Refused attempts per cycle show how hard the losers hammer the servers when they retry at once (the worker
  backs off 5–20 ms instead).
- A ZooKeeper cycle is at least three round trips (create the sequential node, list the children, delete; the
  ` + "`zk`" + ` wrapper adds two more, listing and reading the children again to find its own node for the czxid,
  since go-zookeeper hides its path), and a ZooKeeper round trip costs several Redis ones: a JVM, and every create or delete goes
  through the request pipeline and the transaction log (here without fsync, ` + "`forceSync=no`" + `). The ZooKeeper
  figures are also the noisiest: a JVM with a 64 MB heap on a shared 2-core machine gets descheduled.
`

// scale multiplies each value by f.
func scale(xs []float64, f float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * f
	}
	return out
}

// checkerThroughput is figure 3: checker/bench_test.go.
func checkerThroughput(_ context.Context, c config) (string, error) {
	pattern := "^BenchmarkCheck$"
	if c.quick {
		pattern = "^BenchmarkCheck$//^events=10k$"
	}
	set, err := runGoBench(pattern, "1s", c.checkerCount, "./checker/")
	var b strings.Builder
	fmt.Fprintf(&b, "## 3. Checker throughput\n\n")
	fmt.Fprintf(&b, "Command: `%s` (checker/bench_test.go), n = %d rounds%s.\n\n", set.command, c.checkerCount, rawNote(set))
	b.WriteString("One `checker.Check` = porcupine on each of the three registers (in parallel, a goroutine each) plus the " +
		"ownership-interval, lost-update and liveness checks. *serialised*: 5 clients take the lock in turn, 8 events per " +
		"tenure, every access accepted. *indeterminate*: the same, but 1 write in 10 times out (info): its outcome is " +
		"unknown, and it may land at any later moment (the register's model keeps it pending; before, such operations " +
		"stayed open, all concurrent, to the end of the history). Peak heap is the largest heap (live objects and garbage not yet swept) seen while " +
		"checking, above what was in use before, sampled every millisecond; allocated is `-benchmem`'s B/op.\n\n")
	b.WriteString("| history | events | time per check | events/s | peak heap | allocated per check | time vs 10k | events vs 10k |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, kind := range []string{"serialised", "indeterminate-1in10"} {
		var base float64
		for _, size := range []string{"10k", "100k", "300k", "1M"} {
			name := fmt.Sprintf("BenchmarkCheck/%s/events=%s", kind, size)
			if len(set.rounds[name]) == 0 {
				continue
			}
			t := spreadOf(set.samples(name, "ns/op"))
			if size == "10k" {
				base = t.median
			}
			events := spreadOf(set.samples(name, "events")).median
			growth := "1×"
			if base > 0 && size != "10k" {
				growth = fmt.Sprintf("%.0f×", t.median/base)
			}
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %s |\n", kind, events,
				t.format(func(v float64) string { return ms(v / 1e6) }),
				spreadOf(set.samples(name, "events/s")).format(num),
				spreadOf(set.samples(name, "MB-peak-heap")).format(mb),
				spreadOf(scale(set.samples(name, "B/op"), 1.0/(1<<20))).format(mb),
				growth, map[string]string{"10k": "1×", "100k": "10×", "300k": "30×", "1M": "100×"}[size])
		}
	}
	b.WriteString("\n" + checkerNotes)
	return b.String(), err
}

const checkerNotes = `Growth: porcupine clones a bitset with one bit per operation at every step of its search, so one call
costs O(n²/64) time and memory. The checker cuts a register's history where it is quiet (every section before the cut returned
before any after it began) into segments of at least 1024 sections and checks them one after another from the states the
earlier ones can end in (checker/segments.go): equivalent to one call on the whole history, and linear in the number of segments.
A write of unknown outcome used to stay open to the end of the run (it may land at any later moment), so no cut could follow
it: the indeterminate histories were one porcupine call per register, about 2 GB per register at 1M events. The register's
model now keeps such a write pending instead (it may still land, but only while the register holds what it read: values only
grow, so one flag is all the pending writes there can be), its section ends when it was sent, and cuts follow as before; where
a segment may end in more than one state, porcupine is asked which (at most three candidates). The histories here are built
in memory as []history.Event, which is most of the peak heap; ` + "`lockcheck check`" + ` reads a file into compact records instead (figure 7).
`

// startUp is figure 6: services/redis/bench_test.go and services/zookeeper/bench_test.go.
func startUp(_ context.Context, c config) (string, error) {
	set, err := runGoBench("^(BenchmarkStartRedis|BenchmarkStartZooKeeper)$", "1x", c.startCount,
		"./services/redis/", "./services/zookeeper/")
	var b strings.Builder
	fmt.Fprintf(&b, "## 6. Start-up\n\n")
	fmt.Fprintf(&b, "Command: `%s` (services/redis/bench_test.go, services/zookeeper/bench_test.go), n = %d start-ups "+
		"each%s.\n\n", set.command, c.startCount, rawNote(set))
	b.WriteString("Time from nothing to a ready cluster (every Redis answers PING; every ZooKeeper server answers `srvr` " +
		"and one leads), and the resident memory (VmRSS from /proc) of its server processes once ready.\n\n")
	b.WriteString("| cluster | ready in | RSS, all servers | RSS per server |\n| --- | --- | --- | --- |\n")
	for _, r := range []struct{ name, what string }{
		{"BenchmarkStartRedis", "5 Redis lock nodes + the resource's Redis (6 processes)"},
		{"BenchmarkStartZooKeeper", "3 ZooKeeper servers (java -Xmx64m)"},
	} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.what,
			spreadOf(set.samples(r.name, "ms/ready")).format(ms),
			spreadOf(set.samples(r.name, "MB-RSS-total")).format(mb),
			spreadOf(set.samples(r.name, "MB-RSS/server")).format(mb))
	}
	b.WriteString("\nRedis servers start in parallel; ZooKeeper is a JVM per server and must elect a leader, which is " +
		"why a ZooKeeper scenario costs about two seconds more than a Redis one.\n")
	return b.String(), err
}

// rawNote points at the file with go test's own output.
func rawNote(set benchSet) string {
	if set.raw == "" {
		return ""
	}
	return fmt.Sprintf("; its output: `%s`", set.raw)
}
