package tokenizer

import (
	"encoding/json"
	"strings"
)

// PyJSON re-prints the JSON value raw as Jinja's tojson filter in Qwen's chat templates prints
// it (Python's json.dumps(x, ensure_ascii=False) after json.loads): object keys in their
// order, ", " between items, ": " after keys, numbers as written. It is how RenderChat prints
// tool schemas, for callers that render tool-call arguments the same way.
func PyJSON(raw json.RawMessage) (string, error) {
	var b strings.Builder
	if err := writePyJSON(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}
