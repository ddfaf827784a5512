package env

import "context"

// Passage is one document of a retrieval corpus: a wiki paragraph with its article title.
// It is what search tools index and what questions name as their supporting evidence.
type Passage struct {
	ID    string `json:"id"`    // stable id; the mhqa corpus uses sha1(title+"\n"+text)[:12]
	Title string `json:"title"` // article title, e.g. "Gian Carlo Menotti"
	Text  string `json:"text"`  // paragraph text, without the title
}

// PassageTool is a Tool that also reports which passages a call returned, so that an
// environment can score the call (the multi-hop QA environment's optional process reward is
// paid for a search whose results contain a supporting passage) and evaluation can measure
// retrieval recall along the agent's trajectory.
//
// ToolEnv uses CallPassages instead of Call when a tool implements it. The method must be safe
// for concurrent use: one search tool serves many environments at once, which is why the ids
// are returned with the call rather than kept as "the last call's ids" on the tool.
type PassageTool interface {
	Tool
	// CallPassages runs the tool like Call and also returns the ids of the passages its text
	// shows, best first (Passage.ID values, e.g. the mhqa corpus "pid").
	CallPassages(ctx context.Context, args map[string]any) (text string, passageIDs []string, err error)
}
