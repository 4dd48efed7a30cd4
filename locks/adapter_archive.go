package locks

// adapter_archive.go: a JVM adapter's class-data archive (internal/appcds), so that its clients'
// JVMs start on about half the CPU: a matrix starts four Curator clients per cell.

import (
	"context"
	"errors"
	"time"

	"github.com/lockcheck/lockcheck/adapters"
)

// makeAdapterArchive makes the named adapter's archive if it is missing, once per machine: a
// client of its own, on a key of its own beside the run's, acquires, checks and releases once
// against the run's servers, then closes, and its JVM writes the archive as it exits. It runs
// while the run's clients start, before the run's clock (so before any fault); the run's other
// clients wait for it, then map the archive. Without an archive clients only start slower.
func makeAdapterArchive(name string, env Env) {
	archive, command, ok := adapters.Archive(name)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	archive.MakeOnce(ctx, func(ctx context.Context, flags []string) error {
		return trainingClient(ctx, name, command(flags), env)
	})
}

// trainingClient runs one hold of the adapter program cmd, as a run's client would, on its own key.
func trainingClient(ctx context.Context, name string, cmd []string, env Env) error {
	env.Client, env.Key = "appcds-training", env.Key+"-appcds-training"
	env.Point, env.OnRenewal = func(string) {}, nil
	x, validates, err := startProgram(name, cmd, "", nil, env)
	if err != nil {
		return err
	}
	x.closeWait = 30 * time.Second // the JVM writes the archive on its way out
	defer x.Close()
	if _, err := x.Acquire(ctx); err != nil {
		return err
	}
	if validates && !(externalValid{x}).ValidUntil().IsZero() {
		return errors.New("the training client's valid said it did not hold")
	}
	return x.Release(ctx)
}
