package data

import (
	"bufio"
	"strings"
	"testing"
)

func TestEmbeddedFilesDecode(t *testing.T) {
	want := map[string]int{"corpus": 19719, "hotpotqa": 844, "2wiki": 442, "musique": 133}
	if got := strings.Join(Names(), ","); got != "2wiki,corpus,hotpotqa,musique" {
		t.Fatalf("Names() = %s", got)
	}
	for name, n := range want {
		r, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		lines := 0
		for sc.Scan() {
			lines++
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.Close()
		if lines != n {
			t.Errorf("%s: %d lines, want %d", name, lines, n)
		}
	}
	if _, err := Open("nope"); err == nil {
		t.Error("Open(nope) succeeded")
	}
	if !strings.Contains(README(), "CC BY-SA") {
		t.Error("README lacks the licence")
	}
}
