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
	"slices"
	"strconv"
	"strings"
	"time"
)

// Several processes, on one host or on several sharing the run directory over a network file
// system, may work on one experiment at once. A process runs a unit only while it holds the
// unit's claim, a file in claims/ named after the unit (its '/' as '~'). The holder touches the
// file (its mtime is the heartbeat) every StaleAfter/5; a claim whose heartbeat is older than
// StaleAfter was left by a dead process and is taken over. The test of age compares the file's
// mtime with this host's clock, so the hosts' clocks must agree (NTP) to well within StaleAfter.
//
// Claims are numbered so that a take-over is as exclusive as a first claim: the first is
// <unit>.claim (generation 1), and a process taking over generation g creates <unit>.claim.<g+1>.
// Every file is created with O_CREATE|O_EXCL, so of two racing processes exactly one gets a
// generation (NFS v3 and later create exclusively too); nothing is renamed or removed before
// the new claim exists. The highest generation holds the unit; a winner removes the ones below.

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

// claim is a held claim: its unit, the file of its generation and its record.
type claim struct {
	dir, id string
	path    string
	rec     claimRecord
}

// claimFile is one generation of a unit's claim as found in the claims folder.
type claimFile struct {
	gen  int
	path string
	rec  claimRecord
	age  time.Duration // since its heartbeat
}

// claimPath is the file of generation gen of the unit with id's claim in the run directory dir.
func claimPath(dir, id string, gen int) string {
	name := strings.ReplaceAll(id, "/", "~") + ".claim"
	if gen > 1 {
		name += "." + strconv.Itoa(gen)
	}
	return filepath.Join(dir, claimsDir, name)
}

// listClaims returns the generations of the unit id's claim in dir, lowest first, with their
// records; a file removed while it is read is left out.
func listClaims(dir, id string) ([]claimFile, error) {
	base := strings.ReplaceAll(id, "/", "~") + ".claim"
	entries, err := os.ReadDir(filepath.Join(dir, claimsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	var files []claimFile
	for _, e := range entries {
		gen := 1
		if rest, ok := strings.CutPrefix(e.Name(), base+"."); ok {
			if gen, err = strconv.Atoi(rest); err != nil || gen < 2 {
				continue // not a generation of this unit's claim
			}
		} else if e.Name() != base {
			continue
		}
		path := filepath.Join(dir, claimsDir, e.Name())
		rec, age, err := readClaim(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, claimFile{gen: gen, path: path, rec: rec, age: age})
	}
	slices.SortFunc(files, func(a, b claimFile) int { return a.gen - b.gen })
	return files, nil
}

// currentClaim returns the generation of the unit id's claim that holds it, if any.
func currentClaim(dir, id string) (claimFile, bool, error) {
	files, err := listClaims(dir, id)
	if err != nil || len(files) == 0 {
		return claimFile{}, false, err
	}
	return files[len(files)-1], true, nil
}

// acquireClaim claims the unit id in dir. An existing claim is taken over when its heartbeat
// is older than staleAfter, or whatever its age when takeOver is set; otherwise the error wraps
// ErrBusy and names the holder.
func acquireClaim(dir, id string, staleAfter time.Duration, takeOver bool) (*claim, error) {
	if err := os.MkdirAll(filepath.Join(dir, claimsDir), 0o755); err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	host, _ := os.Hostname()
	token := make([]byte, 8)
	rand.Read(token)
	rec := claimRecord{Host: host, PID: os.Getpid(), Since: time.Now().UTC(), Token: hex.EncodeToString(token)}
	body, _ := json.Marshal(rec)
	// Three attempts: a process that loses the race for a generation looks again.
	for range 3 {
		seen, err := listClaims(dir, id)
		if err != nil {
			return nil, err
		}
		gen := 1
		if len(seen) > 0 {
			top := seen[len(seen)-1]
			if !takeOver && top.age < staleAfter {
				return nil, fmt.Errorf("unit %s: %w: %s, heartbeat %s ago (taken over after %s without one, or with --take-over)",
					id, ErrBusy, top.rec, top.age.Round(time.Second), staleAfter)
			}
			gen = top.gen + 1
		}
		c := &claim{dir: dir, id: id, path: claimPath(dir, id, gen), rec: rec}
		f, err := os.OpenFile(c.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue // another process got this generation first
		}
		if err != nil {
			return nil, fmt.Errorf("experiment: claim %s: %w", c.path, err)
		}
		_, werr := f.Write(append(body, '\n'))
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(c.path)
			return nil, fmt.Errorf("experiment: claim %s: %w", c.path, werr)
		}
		// A claim that appeared after the listing above was made by a process that did not see
		// this one's: yield to it rather than judge it, so that two can never both hold.
		now, err := listClaims(dir, id)
		if err != nil {
			os.Remove(c.path)
			return nil, err
		}
		for _, f := range now {
			if f.gen != gen && !slices.ContainsFunc(seen, func(s claimFile) bool { return s.path == f.path && s.rec.Token == f.rec.Token }) {
				os.Remove(c.path)
				return nil, fmt.Errorf("unit %s: %w: %s claimed it at the same time", id, ErrBusy, f.rec)
			}
		}
		for _, f := range seen {
			os.Remove(f.path)
		}
		return c, nil
	}
	return nil, fmt.Errorf("unit %s: %w: other processes keep taking it over", id, ErrBusy)
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

// holds reports whether c's file still carries its token and no later generation exists.
func (c *claim) holds() bool {
	top, ok, err := currentClaim(c.dir, c.id)
	return err == nil && ok && top.path == c.path && top.rec.Token == c.rec.Token
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

// release removes c's file if it still carries c's token.
func (c *claim) release() {
	if rec, _, err := readClaim(c.path); err == nil && rec.Token == c.rec.Token {
		os.Remove(c.path)
	}
}
