package search

import (
	"sort"
	"strings"
)

// stringTable is a list of strings stored end to end in one string: string i is
// text[ends[i-1]:ends[i]] (from 0 for i = 0). An index holds its passages and its terms this
// way, so that both can be read in place from a mapped index file (file.go) with no string
// header or map entry per passage or term in each process.
type stringTable struct {
	text string
	ends []uint64 // (n) end of each string in text
}

// newStringTable copies the n strings str(0), ..., str(n-1) into a table.
func newStringTable(n int, str func(i int) string) stringTable {
	size := 0
	for i := range n {
		size += len(str(i))
	}
	var text strings.Builder
	text.Grow(size)
	ends := make([]uint64, n)
	for i := range n {
		text.WriteString(str(i))
		ends[i] = uint64(text.Len())
	}
	return stringTable{text: text.String(), ends: ends}
}

// len is the number of strings.
func (t *stringTable) len() int { return len(t.ends) }

// at returns string i. It panics if i is out of range.
func (t *stringTable) at(i int) string {
	start := uint64(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.text[start:t.ends[i]]
}

// find returns the i with at(i) == s, in a table whose strings are in increasing order, by
// binary search.
func (t *stringTable) find(s string) (int, bool) {
	return sort.Find(t.len(), func(i int) int { return strings.Compare(s, t.at(i)) })
}
