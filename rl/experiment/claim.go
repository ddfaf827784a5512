package experiment

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Several processes, on one host or on several sharing the run directory over a network file
// system, may work on one experiment at once. A process runs a unit only while it holds the
// unit's claim: a file claims/<unit id with '/' as '~'>.claim, created with O_CREATE|O_EXCL so
// that exactly one of two racing processes gets it (NFS v3 and later create exclusively too).
// The holder touches the file (its mtime is the heartbeat) every StaleAfter/5; a claim whose
// heartbeat is older than StaleAfter was left by a dead process and is taken over. The test of
// age compares the file's mtime with this host's clock, so the hosts' clocks must agree (NTP)
// to well within StaleAfter.

// DefaultStaleAfter is how long a claim may go without a heartbeat before another process
// takes it over: long enough for a busy NFS server, short enough that a preempted job's units
// are soon picked up again.
const DefaultStaleAfter = 10 * time.Minute

// claimsDir is the folder of the claim files in the run directory.
const claimsDir = "claims"

// ErrBusy is returned (wrapped) by RunUnit when another live process holds the unit's claim.
var ErrBusy = errors.New("claimed by another process")

// errClaimLost is the cause with which a unit's context is cancelled when its claim file no
// longer holds this process's token: another process took it over (a clock or a network
// stall made this one look dead).
var errClaimLost = errors.New("the unit's claim was taken over by another process")

// claimRecord is the content of a claim file: who holds it. Token tells two claims apart even
// when host and pid repeat (a restarted container).
type claimRecord struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
	Token string    `json:"token"`
}

func (c claimRecord) String() string {
	return fmt.Sprintf("%s pid %d since %s", c.Host, c.PID, c.Since.Format(time.RFC3339))
}

// claim is a held claim: its file and its record.
type claim struct {
	path string
	rec  claimRecord
}

// claimPath is the claim file of the unit with id in the run directory dir.
func claimPath(dir, id string) string {
	return filepath.Join(dir, claimsDir, strings.ReplaceAll(id, "/", "~")+".claim")
}

// acquireClaim claims the unit id in dir. An existing claim is taken over when its heartbeat
// is older than staleAfter, or whatever its age when takeOver is set; otherwise the error wraps
// ErrBusy and names the holder.
func acquireClaim(dir, id string, staleAfter time.Duration, takeOver bool) (*claim, error) {
	path := claimPath(dir, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	host, _ := os.Hostname()
	token := make([]byte, 8)
	rand.Read(token)
	c := &claim{path: path, rec: claimRecord{Host: host, PID: os.Getpid(), Since: time.Now().UTC(), Token: hex.EncodeToString(token)}}
	body, _ := json.Marshal(c.rec)
	// Three attempts: a take-over moves the old claim away and creates anew, racing others.
	for range 3 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_, werr := f.Write(append(body, '\n'))
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return nil, fmt.Errorf("experiment: claim %s: %w", path, werr)
			}
			return c, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("experiment: claim %s: %w", path, err)
		}
		old, age, err := readClaim(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, err
		}
		if !takeOver && age < staleAfter {
			return nil, fmt.Errorf("unit %s: %w: %s, heartbeat %s ago (taken over after %s without one, or with --take-over)",
				id, ErrBusy, old, age.Round(time.Second), staleAfter)
		}
		if err := moveAwayClaim(path, old, c.rec.Token); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("unit %s: %w: other processes keep taking it over", id, ErrBusy)
}

// moveAwayClaim removes the stale claim old at path by renaming it to a name of this process's
// own (rename is atomic: of two processes taking over, one moves it, the other finds it gone).
// If what was moved is not old, another process took over first and this one moved that
// process's fresh claim: it is linked back (link does not overwrite), leaving the next attempt
// to find it held.
func moveAwayClaim(path string, old claimRecord, token string) error {
	moved := path + ".stale-" + token
	if err := os.Rename(path, moved); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("experiment: take over %s: %w", path, err)
	}
	defer os.Remove(moved)
	got, _, err := readClaim(moved)
	if err == nil && got.Token != old.Token {
		os.Link(moved, path)
	}
	return nil
}

// readClaim reads the claim file at path and the age of its heartbeat.
func readClaim(path string) (claimRecord, time.Duration, error) {
	var rec claimRecord
	st, err := os.Stat(path)
	if err != nil {
		return rec, 0, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return rec, 0, err
	}
	if err := json.Unmarshal(bytes.TrimSpace(raw), &rec); err != nil {
		// A claim file torn by a crash between create and write: nobody's, so stale.
		return claimRecord{Host: "unknown (unreadable claim)"}, time.Since(st.ModTime()), nil
	}
	return rec, time.Since(st.ModTime()), nil
}

// holds reports whether the claim file still carries c's token.
func (c *claim) holds() bool {
	rec, _, err := readClaim(c.path)
	return err == nil && rec.Token == c.rec.Token
}

// heartbeat touches the claim every interval until ctx ends, and cancels the unit (cancel with
// errClaimLost) if the claim has passed to another process. It returns when ctx is done.
func (c *claim) heartbeat(ctx context.Context, interval time.Duration, cancel context.CancelCauseFunc) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !c.holds() {
				cancel(errClaimLost)
				return
			}
			now := time.Now()
			os.Chtimes(c.path, now, now)
		}
	}
}

// release removes the claim if this process still holds it.
func (c *claim) release() {
	if c.holds() {
		os.Remove(c.path)
	}
}
