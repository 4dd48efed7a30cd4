package matrix

import "time"

// spread orders a grid's runs for admission by the cores' load: each family's runs (family: the
// lock service's kind and whether the clients are a program of their own, a JVM or a Python
// interpreter) keep their order, longest first, and the families are merged so that each is
// the same share of its way through at every point of the grid. Runs of one family cost alike,
// and a grid in length order brought them together: the JVM and etcd cells one after another
// kept the cores busy with a few runs at once, the Redis cells after them ran as many as the cap
// allows with cores to spare. Spread, the dear runs go beside the cheap ones all along, and the
// last to start are still every family's shortest.
func spread[J any](jobs []J, family func(J) string, length func(J) time.Duration) []J {
	type queue struct {
		jobs       []J
		total, run time.Duration // the family's weight in all, and what has been taken
	}
	var order []string
	queues := map[string]*queue{}
	// A run's weight is its length and a second for its start-up, so that none weighs nothing.
	weight := func(j J) time.Duration { return length(j) + time.Second }
	for _, j := range jobs {
		f := family(j)
		q, ok := queues[f]
		if !ok {
			q = &queue{}
			queues[f] = q
			order = append(order, f)
		}
		q.jobs = append(q.jobs, j)
		q.total += weight(j)
	}
	out := make([]J, 0, len(jobs))
	for len(out) < len(jobs) {
		// The family least far through (the share taken, compared without division), the one
		// with the longer run next on a tie, then the first seen.
		var best *queue
		for _, f := range order {
			q := queues[f]
			if len(q.jobs) == 0 {
				continue
			}
			if best == nil {
				best = q
				continue
			}
			a, b := float64(q.run)*float64(best.total), float64(best.run)*float64(q.total)
			if a < b || (a == b && length(q.jobs[0]) > length(best.jobs[0])) {
				best = q
			}
		}
		j := best.jobs[0]
		best.jobs = best.jobs[1:]
		best.run += weight(j)
		out = append(out, j)
	}
	return out
}
