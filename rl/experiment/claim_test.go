package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClaimExclusive: while one process holds a unit's claim, another's attempt fails naming
// the holder; once released, the unit can be claimed again.
func TestClaimExclusive(t *testing.T) {
	dir := t.TempDir()
	a, err := acquireClaim(dir, "seed-1/grpo", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = acquireClaim(dir, "seed-1/grpo", time.Minute, false)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), a.rec.String()) {
		t.Fatalf("second claim: %v, want ErrBusy naming %s", err, a.rec)
	}
	if _, err := acquireClaim(dir, "seed-1/ppo", time.Minute, false); err != nil {
		t.Fatalf("another unit: %v", err)
	}
	a.release()
	if _, err := acquireClaim(dir, "seed-1/grpo", time.Minute, false); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestClaimStaleTakenOver: a claim whose heartbeat is older than the stale time is taken over
// (and a fresh one with takeOver); the old holder's heartbeat then finds the claim lost and
// cancels its unit.
func TestClaimStaleTakenOver(t *testing.T) {
	dir := t.TempDir()
	old, err := acquireClaim(dir, "seed-1/sft", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquireClaim(dir, "seed-1/sft", time.Minute, false); !errors.Is(err, ErrBusy) {
		t.Fatalf("fresh claim: %v, want ErrBusy", err)
	}
	ago := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(old.path, ago, ago); err != nil {
		t.Fatal(err)
	}
	c, err := acquireClaim(dir, "seed-1/sft", time.Minute, false)
	if err != nil {
		t.Fatalf("stale claim not taken over: %v", err)
	}
	if old.holds() || !c.holds() {
		t.Fatalf("after take-over: old holds %v, new holds %v", old.holds(), c.holds())
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	go old.heartbeat(ctx, time.Millisecond, cancel)
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), errClaimLost) {
			t.Fatalf("old holder cancelled with %v", context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the old holder's heartbeat did not notice the take-over")
	}
	old.release() // must not remove the new holder's claim
	if !c.holds() {
		t.Fatal("the old holder's release removed the new claim")
	}

	forced, err := acquireClaim(dir, "seed-1/sft", time.Minute, true)
	if err != nil || c.holds() || !forced.holds() {
		t.Fatalf("take-over of a fresh claim: %v", err)
	}
}

// TestClaimRace: of many claimers racing for a free unit or for one stale claim, exactly one
// gets it, and its claim is the only file left. A round takes milliseconds; many rounds give
// an interleaving that breaks a take-over which is not exclusive a good chance to occur.
func TestClaimRace(t *testing.T) {
	for round := range 40 {
		dir := t.TempDir()
		if round%2 == 1 {
			old, err := acquireClaim(dir, "seed-2/rloo", time.Minute, false)
			if err != nil {
				t.Fatal(err)
			}
			ago := time.Now().Add(-time.Hour)
			os.Chtimes(old.path, ago, ago)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []*claim
		for range 8 {
			wg.Go(func() {
				c, err := acquireClaim(dir, "seed-2/rloo", time.Minute, false)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won = append(won, c)
				} else if !errors.Is(err, ErrBusy) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("round %d (stale claim %v): %d claimers won, want 1", round, round%2 == 1, len(won))
		}
		left, _ := os.ReadDir(filepath.Join(dir, claimsDir))
		if !won[0].holds() || len(left) != 1 {
			t.Fatalf("round %d: the winner holds %v; files left %v", round, won[0].holds(), left)
		}
	}
}

// TestRunUnitDependency: a unit whose SFT base is missing fails at once naming the SFT unit,
// or after waiting, saying who holds that unit; an unknown ID lists the plan's; a unit whose
// claim another process holds is ErrBusy. None of these runs anything.
func TestRunUnitDependency(t *testing.T) {
	dir := t.TempDir()
	p, err := Open(dir, tinyPlan(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, u := range p.Units() {
		ids = append(ids, u.ID())
	}
	want := []string{"seed-1/sft", "seed-1/base-tool-call", "seed-1/naive-rag", "seed-1/ppo"}
	if len(ids) != 2*(1+len(p.Methods)) || !slices.Equal(ids[:4], want) || ids[1+len(p.Methods)] != "seed-2/sft" {
		t.Fatalf("unit IDs %v", ids)
	}
	first := p.UnitsSFTFirst()
	if len(first) != len(ids) || first[0].ID() != "seed-1/sft" || first[1].ID() != "seed-2/sft" || first[2].ID() != "seed-1/base-tool-call" || first[len(first)-1].ID() != ids[len(ids)-1] {
		t.Fatalf("units with the SFT bases first: %v", first)
	}

	_, err = RunUnit(context.Background(), p, "seed-2/grpo", Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "starts from the SFT base of unit seed-2/sft, which has not finished") ||
		!strings.Contains(err.Error(), "no process holds it") {
		t.Fatalf("missing base: %v", err)
	}
	c, err := acquireClaim(dir, "seed-1/sft", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = RunUnit(context.Background(), p, "seed-1/grpo", Options{Dir: dir, Wait: 50 * time.Millisecond, poll: 10 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "after waiting 50ms (claimed by "+c.rec.String()) || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("waited for a base being made: %v", err)
	}
	if _, err := RunUnit(context.Background(), p, "seed-1/sft", Options{Dir: dir}); !errors.Is(err, ErrBusy) {
		t.Fatalf("held unit: %v, want ErrBusy", err)
	}
	if _, err := RunUnit(context.Background(), p, "seed-3/grpo", Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "want one of seed-1/sft, seed-1/base-tool-call") {
		t.Fatalf("unknown unit: %v", err)
	}
}
