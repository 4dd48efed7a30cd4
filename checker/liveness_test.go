package checker

import (
	"math/rand"
	"testing"
	"time"
)

func TestLivenessFindsUnavailabilityAndStuckLocks(t *testing.T) {
	type want struct {
		longest, offset float64 // ms
		stuck           bool
		stuckFor        float64 // ms
	}
	tests := []struct {
		name    string
		history *builder
		want    want
	}{
		{
			// The waiters' last attempts fail at 1914.5 and 1977.5ms and none follows: the
			// unavailability ends when the last of them gives up.
			name: "holder killed and the others keep failing until the end: stuck",
			history: newHistory().start(0).acquire("client-1", 5, 10).kill("client-1", 20).
				acquireFails("client-2", 15, 2000, 100).acquireFails("client-3", 18, 2000, 70).end(2000),
			want: want{longest: 1957.5, offset: 20, stuck: true, stuckFor: 1957.5},
		},
		{
			name: "holder killed and the lock freed after a while (a TTL): not stuck",
			history: newHistory().start(0).acquire("client-1", 5, 10).kill("client-1", 20).
				acquireFails("client-2", 15, 1500, 100).acquire("client-2", 1500, 1520).release("client-2", 1600, 1601).end(2000),
			want: want{longest: 1500, offset: 20},
		},
		{
			// client-2's last attempt failed at 1814.5ms; it died before its next one.
			name: "every waiter died and nobody acquired again: still stuck",
			history: newHistory().start(0).acquire("client-1", 5, 10).crash("client-1", 20).
				acquireFails("client-2", 15, 1900, 100).crash("client-2", 1900).end(2000),
			want: want{longest: 1794.5, offset: 20, stuck: true, stuckFor: 1794.5},
		},
		{
			name: "a short wait at the end of the run is not stuck",
			history: newHistory().start(0).hold("client-1", 10, 1990).
				acquireFails("client-2", 100, 1990, 100).op("client-2", "acquire", 1990, -1, "", nil).end(2000),
			want: want{longest: 10, offset: 1990},
		},
		{
			// hold() waits 1ms in acquire: that wait is the only unavailability.
			name: "a lock handed straight from holder to waiter is not unavailable in between",
			history: newHistory().start(0).hold("client-1", 10, 100).
				acquire("client-2", 50, 100).release("client-2", 200, 201).end(300),
			want: want{longest: 1, offset: 9},
		},
		{
			name:    "an idle lock nobody waits for is not unavailable",
			history: newHistory().start(0).hold("client-1", 10, 100).hold("client-2", 500, 600).end(2000),
			want:    want{longest: 1, offset: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Check(tt.history.build(), Options{}).Liveness
			got := want{float64(l.LongestUnavailable) / 1e6, float64(l.LongestUnavailableOffset) / 1e6,
				l.Stuck, float64(l.StuckFor) / 1e6}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStuckAfterIsTheThreshold(t *testing.T) {
	h := newHistory().start(0).acquire("client-1", 5, 10).kill("client-1", 20).
		acquireFails("client-2", 15, 2000, 100).end(2000).build()
	if Check(h, Options{StuckAfter: 3 * time.Second}).Liveness.Stuck {
		t.Error("a 1.98s wait was called stuck with StuckAfter 3s")
	}
	if !Check(h, Options{StuckAfter: time.Second}).Liveness.Stuck {
		t.Error("a 1.98s wait was not called stuck with StuckAfter 1s")
	}
}

func TestAcquireLatencyPercentilesOnKnownNumbers(t *testing.T) {
	tests := []struct {
		name      string
		latencies []float64 // ms
		p50, p99  float64
	}{
		{"no acquisitions", nil, 0, 0},
		{"one acquisition", []float64{7}, 7, 7},
		{"four acquisitions", []float64{40, 10, 30, 20}, 20, 40},
		{"one to a hundred ms, shuffled", shuffledRange(100), 50, 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newHistory().start(0)
			at := 0.0
			for _, lat := range tt.latencies {
				b.acquire("client-1", at, at+lat).release("client-1", at+lat+1, at+lat+2)
				at += lat + 10
			}
			b.op("client-2", "acquire", 1, 2, "fail", nil).op("client-2", "acquire", 3, 4, "info", nil)
			l := Check(b.build(), Options{}).Liveness
			if l.AcquireLatencyP50 != time.Duration(ms(tt.p50)) || l.AcquireLatencyP99 != time.Duration(ms(tt.p99)) {
				t.Errorf("p50, p99 = %v, %v; want %vms, %vms", l.AcquireLatencyP50, l.AcquireLatencyP99, tt.p50, tt.p99)
			}
			if l.Acquisitions != len(tt.latencies) || l.AcquireFailures != 1 || l.AcquireUnknown != 1 {
				t.Errorf("acquisitions, failures, unknown = %d, %d, %d; want %d, 1, 1", l.Acquisitions, l.AcquireFailures, l.AcquireUnknown, len(tt.latencies))
			}
		})
	}
}

func shuffledRange(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	r := rand.New(rand.NewSource(1))
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
