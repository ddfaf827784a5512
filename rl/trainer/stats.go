package trainer

import (
	"math"

	"agentr1/model"
	"agentr1/rl/rollout"
)

// Keys of rollout.Outcome.Stats (rollout.Result.Stats) that the trainer logs and evaluates. Episodes (QAEpisode)
// fill them; a missing key counts as 0.
const (
	StatEM         = "em"          // exact match of the final answer, 0 or 1
	StatF1         = "f1"          // token F1 of the final answer
	StatFormat     = "format"      // 1 when the trajectory's format is valid (r_format = 1)
	StatSearches   = "searches"    // tool calls made
	StatToolErrors = "tool_errors" // tool calls that failed (bad JSON, unknown tool, bad arguments, tool error)
	StatToolCalls  = "tool_calls"  // tool call attempts, well-formed or not
)

func samplerGreedy() model.Sampler { return model.Sampler{Greedy: true} }

// rolloutStats fills the rollout part of m from the step's rollout results.
func rolloutStats(m *StepMetrics, results []*rollout.Result) {
	n := float64(len(results))
	if n == 0 {
		return
	}
	var sum, sq, em, f1, format, resp, agent, turns, searches, toolErr, cut float64
	for _, s := range results {
		r := s.TotalReward()
		sum += r
		sq += r * r
		em += s.Stats[StatEM]
		f1 += s.Stats[StatF1]
		format += s.Stats[StatFormat]
		searches += s.Stats[StatSearches]
		toolErr += s.Stats[StatToolErrors]
		resp += float64(s.ResponseLen())
		agent += float64(s.AgentTokens())
		turns += float64(len(s.Turns))
		if s.Truncated() {
			cut++
		}
	}
	mean := sum / n
	m.RewardMean = Num(mean)
	m.RewardStd = Num(math.Sqrt(math.Max(0, sq/n-mean*mean)))
	m.EM, m.F1, m.FormatRate = Num(em/n), Num(f1/n), Num(format/n)
	m.ResponseLen, m.AgentTokens, m.Turns = Num(resp/n), Num(agent/n), Num(turns/n)
	m.Searches, m.ToolErrors, m.TruncatedRate = Num(searches/n), Num(toolErr/n), Num(cut/n)
}
