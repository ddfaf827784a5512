package world

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"
)

// Split says which half of the name space a world draws its names from. Every generated word
// belongs to exactly one half (by a hash of the word), so a training world and an evaluation
// world never share an entity name, whatever their seeds: answers cannot be memorised across
// them, only found.
type Split int

// The two halves of the name space.
const (
	Train Split = iota
	Eval
)

// String is "train" or "eval".
func (s Split) String() string {
	if s == Eval {
		return "eval"
	}
	return "train"
}

// Syllables are consonant-vowel pairs from a small alphabet, so that a tiny BPE vocabulary
// covers every name in a few merges.
const (
	consonants = "bdfgklmnprstvz"
	vowels     = "aeiou"
	finals     = "lnrs" // optional closing consonant
)

// wordSplit is the half of the name space a word belongs to.
func wordSplit(w string) Split {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(w)))
	return Split(h.Sum32() & 1)
}

// namer draws fresh capitalised words of one split, never the same word twice.
type namer struct {
	rng   *rand.Rand
	split Split
	used  map[string]bool
}

func newNamer(rng *rand.Rand, split Split) *namer {
	return &namer{rng: rng, split: split, used: map[string]bool{}}
}

// word returns a new word of syllables CV (2 or 3 of them) and an optional final consonant,
// with suffix appended, e.g. "Kalon", "Mirelia".
func (n *namer) word(minSyl, maxSyl int, suffix string) string {
	for {
		var b strings.Builder
		for range minSyl + n.rng.IntN(maxSyl-minSyl+1) {
			b.WriteByte(consonants[n.rng.IntN(len(consonants))])
			b.WriteByte(vowels[n.rng.IntN(len(vowels))])
		}
		if suffix == "" && n.rng.IntN(2) == 0 {
			b.WriteByte(finals[n.rng.IntN(len(finals))])
		}
		w := b.String() + suffix
		w = strings.ToUpper(w[:1]) + w[1:]
		if n.used[w] || wordSplit(w) != n.split {
			continue
		}
		n.used[w] = true
		return w
	}
}
