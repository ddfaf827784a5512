package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
)

// heatLevels is the number of colour steps on each side of zero in the advantage heat map.
const heatLevels = 10

// Diverging colour stops from white (t = 0) to the extremes (|t| = 1), ColorBrewer's RdBu:
// red for positive advantages (the update makes the token more likely), blue for negative.
var (
	redStops  = []rgb{{255, 255, 255}, {253, 219, 199}, {244, 165, 130}, {214, 96, 77}, {178, 24, 43}}
	blueStops = []rgb{{255, 255, 255}, {209, 229, 240}, {146, 197, 222}, {67, 147, 195}, {33, 102, 172}}
)

type rgb struct{ R, G, B float64 }

func (c rgb) hex() string {
	return fmt.Sprintf("#%02x%02x%02x", int(math.Round(c.R)), int(math.Round(c.G)), int(math.Round(c.B)))
}

// heatColor is the background of heat level l in [-heatLevels, heatLevels]: piecewise linear
// through the RdBu stops.
func heatColor(l int) rgb {
	stops := redStops
	if l < 0 {
		stops, l = blueStops, -l
	}
	t := float64(l) / heatLevels * float64(len(stops)-1) // position among the stops
	i := min(int(t), len(stops)-2)
	f := t - float64(i)
	a, b := stops[i], stops[i+1]
	return rgb{a.R + f*(b.R-a.R), a.G + f*(b.G-a.G), a.B + f*(b.B-a.B)}
}

// heatClass is the CSS class of heat level l: "hn3" for -3, "h0", "hp3" for +3.
func heatClass(l int) string {
	switch {
	case l < 0:
		return "hn" + strconv.Itoa(-l)
	case l > 0:
		return "hp" + strconv.Itoa(l)
	}
	return "h0"
}

// heatLevel maps an advantage to its level for a page whose largest |advantage| is scale.
func heatLevel(adv, scale float64) int {
	if math.IsNaN(adv) {
		return 0
	}
	l := int(math.Round(adv / scale * heatLevels))
	return max(-heatLevels, min(heatLevels, l))
}

// heatCSS is the style sheet of every heat level: one rule per class, dark levels with white
// text so the token stays readable.
func heatCSS() template.CSS {
	var b strings.Builder
	for l := -heatLevels; l <= heatLevels; l++ {
		fg := ""
		if abs(l) >= heatLevels*7/10 {
			fg = ";color:#fff"
		}
		fmt.Fprintf(&b, "body.heat .adv.%s{background:%s%s}\n", heatClass(l), heatColor(l).hex(), fg)
	}
	return template.CSS(b.String())
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// legendStop is one swatch of the heat legend.
type legendStop struct {
	Class, Color, Label string
}

// heatLegend lists every level from most negative to most positive, labelling the ends,
// the middle and the halves with the advantage they stand for.
func heatLegend(scale float64) []legendStop {
	var out []legendStop
	for l := -heatLevels; l <= heatLevels; l++ {
		s := legendStop{Class: heatClass(l), Color: heatColor(l).hex()}
		if l%(heatLevels/2) == 0 {
			s.Label = signed(scale * float64(l) / heatLevels)
		}
		out = append(out, s)
	}
	return out
}

// advantageScale is the largest |advantage| over the tokens the estimator ran on, so the
// colours mean the same on every trajectory of the page; 1 when there are none.
func advantageScale(steps []stepSamples) float64 {
	scale := 0.0
	for _, st := range steps {
		for _, s := range st.Samples {
			for _, t := range s.Tokens {
				if t.AdvantageMask != 0 && !math.IsNaN(t.Advantage) && !math.IsInf(t.Advantage, 0) {
					scale = max(scale, math.Abs(t.Advantage))
				}
			}
		}
	}
	if scale == 0 {
		return 1
	}
	return scale
}

// piece is a run of a token's text: plain text, or a newline shown as a visible mark.
type piece struct {
	Text    string
	Newline bool
}

// tokenView is one token as the page draws it.
type tokenView struct {
	Pieces     []piece
	Class      string // "tok role-agent act adv hp3": role, action mask, heat level
	Title      string // the hover text: role, masks, advantage, log-prob, reward
	Badge      string // the reward on this token, "" for none
	BadgeClass string // "pos", "neg" or "zero"
}

// sampleView is one trajectory as the page draws it.
type sampleView struct {
	Sample
	Index         int         // 1-based position among the step's samples
	Prompt        []tokenView // the leading prompt tokens (shown folded)
	Body          []tokenView // everything after the prompt
	Correct       bool
	Counts        map[string]int // tokens per role
	Trained       int            // tokens with ActionMask 1
	WithAdvantage int            // tokens with AdvantageMask 1
	Advantage     string         // the advantage on the first token with AdvantageMask 1, "" for none
	Members       []memberView   // the group's rewards, this trajectory's marked
}

// memberView is one member of a trajectory's group as the page lists it.
type memberView struct {
	Reward string
	Self   bool
}

// viewSample lays out one sample's tokens for a page whose heat scale is scale.
func viewSample(s Sample, scale float64) sampleView {
	v := sampleView{Sample: s, Correct: s.EM >= 1, Counts: map[string]int{}}
	if s.OutcomeReward == 0 && s.ProcessReward == 0 {
		// Samples written before the parts were recorded hold the outcome reward alone in
		// Reward; their tokens carry the process rewards too, so the parts follow.
		onTokens := 0.0
		for _, t := range s.Tokens {
			onTokens += t.Reward
		}
		v.OutcomeReward, v.ProcessReward, v.Reward = s.Reward, onTokens-s.Reward, onTokens
	}
	v.ToolCalls = slices.Clone(s.ToolCalls) // the results are cut below; s stays as read
	for i := range v.ToolCalls {
		v.ToolCalls[i].Result = ToolOutput(v.ToolCalls[i].Result)
	}
	if g := s.Group; g != nil {
		for i, r := range g.Rewards {
			v.Members = append(v.Members, memberView{Reward: signed(roundSig(r, 3)), Self: i == g.Member})
		}
	}
	// Where the outcome reward sits when the trainer logged it as 0: on the last agent token,
	// where verl and mdp place it. Marked so that a zero reward is visible too.
	zeroAt := -1
	if s.Reward == 0 {
		anyReward := false
		for i, t := range s.Tokens {
			anyReward = anyReward || t.Reward != 0
			if t.ActionMask != 0 {
				zeroAt = i
			}
		}
		if anyReward {
			zeroAt = -1
		}
	}
	inPrompt := true
	for i, t := range s.Tokens {
		v.Counts[t.Role]++
		if t.ActionMask != 0 {
			v.Trained++
		}
		if t.AdvantageMask != 0 {
			if v.WithAdvantage == 0 {
				v.Advantage = signed(t.Advantage)
			}
			v.WithAdvantage++
		}
		tv := viewToken(t, scale)
		if i == zeroAt {
			tv.Badge, tv.BadgeClass = "0", "zero"
		}
		if inPrompt && t.Role != RolePrompt {
			inPrompt = false
		}
		if inPrompt {
			v.Prompt = append(v.Prompt, tv)
		} else {
			v.Body = append(v.Body, tv)
		}
	}
	return v
}

func viewToken(t Token, scale float64) tokenView {
	role := t.Role
	switch role {
	case RolePrompt, RoleAgent, RoleObservation:
	default:
		role = "other"
	}
	class := "tok role-" + role
	title := t.Role
	if t.ActionMask != 0 {
		class += " act"
		title += " · action mask 1 (trained)"
	} else {
		title += " · action mask 0"
	}
	if t.AdvantageMask != 0 {
		class += " adv " + heatClass(heatLevel(t.Advantage, scale))
		title += " · A = " + signed(t.Advantage)
	} else {
		title += " · advantage mask 0"
	}
	if t.Role == RoleAgent || t.LogProb != 0 {
		title += " · log p = " + strconv.FormatFloat(float64(t.LogProb), 'f', 3, 32)
	}
	tv := tokenView{Pieces: splitVisible(t.Text), Class: class}
	if t.Reward != 0 {
		title += " · r = " + signed(t.Reward)
		tv.Badge = signed(t.Reward)
		tv.BadgeClass = "pos"
		if t.Reward < 0 {
			tv.BadgeClass = "neg"
		}
	}
	tv.Title = title
	return tv
}

// splitVisible cuts text at newlines so each can be drawn as a visible mark followed by the
// line break itself; carriage returns become a visible symbol.
func splitVisible(text string) []piece {
	text = strings.ReplaceAll(text, "\r", "␍")
	var out []piece
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		if i > 0 {
			out = append(out, piece{Text: text[:i]})
		}
		out = append(out, piece{Newline: true})
		text = text[i+1:]
	}
	if text != "" {
		out = append(out, piece{Text: text})
	}
	return out
}

// signed prints v with its sign and up to three significant digits.
func signed(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v > 0:
		return "+" + strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
