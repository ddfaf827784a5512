package rollout

import "fmt"

// ObsCutMarker is the text, formatted with the number of tokens removed, that replaces the
// part of an observation cut to Config.MaxObsTokens, so the agent reads that the tool said more
// than it sees rather than a silently shortened result.
const ObsCutMarker = "...[truncated %d tokens]"

// EncodeObservation tokenises an observation (a transition's, or the one a baseline puts in
// its prompt) and, when it is longer than maxTokens (> 0), cuts it to fit: it keeps the head of the observation, then the marker
// ObsCutMarker naming how many tokens were removed, then the observation's last tail bytes
// (the closing tag and the next assistant header, Transition.ObservationTail), each part
// encoded on its own. The head shrinks to make room for the marker and the tail, which are
// always kept: if they alone exceed maxTokens the result is the marker and the tail.
// It returns the tokens (len <= maxTokens unless the marker and tail alone exceed it) and the
// length of the whole observation in tokens (it was cut when whole > maxTokens > 0). It fails
// if tail is outside [0, len(text)].
func EncodeObservation(enc Encoder, text string, tail, maxTokens int) (obs []int, whole int, err error) {
	if tail < 0 || tail > len(text) {
		return nil, 0, fmt.Errorf("ObservationTail %d outside the observation's %d bytes", tail, len(text))
	}
	obs = enc.Encode(text)
	whole = len(obs)
	if maxTokens <= 0 || whole <= maxTokens {
		return obs, whole, nil
	}
	head := enc.Encode(text[:len(text)-tail]) // (h) the part a cut may shorten
	end := enc.Encode(text[len(text)-tail:])  // (e) kept whole
	// The marker's length depends on the count it shows, which depends on the room the marker
	// takes: reserve the longest marker seen until the marker fits (it grows by digits only,
	// so this ends after a few rounds).
	reserved := 0
	for {
		keep := min(max(0, maxTokens-reserved-len(end)), len(head))
		marker := enc.Encode(fmt.Sprintf(ObsCutMarker, len(head)-keep))
		if len(marker) <= reserved {
			out := make([]int, 0, keep+len(marker)+len(end)) // (keep + m + e)
			out = append(out, head[:keep]...)
			out = append(out, marker...)
			return append(out, end...), whole, nil
		}
		reserved = len(marker)
	}
}
