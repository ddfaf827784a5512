package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentr1/env/search"
)

// TestEvalToolsChecksRetriever: a --retriever that does not answer stops eval and chat before
// they start (an error naming the URL), where every tool call used to fail in silence; one that
// answers gives the remote search tool.
func TestEvalToolsChecksRetriever(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/retrieve"
	dead.Close()
	for _, url := range []string{deadURL, "http://127.0.0.1:1/retrieve"} {
		_, err := evalTools(&agentFlags{retriever: url, topK: 3})
		if err == nil || !strings.Contains(err.Error(), "--retriever "+url) || !strings.Contains(err.Error(), "does not answer") {
			t.Errorf("%s: error %v, want one naming the URL and saying it does not answer", url, err)
		}
	}
	wrong := httptest.NewServer(http.NotFoundHandler()) // answers, but is no retrieval service
	defer wrong.Close()
	if _, err := evalTools(&agentFlags{retriever: wrong.URL + "/retrieve", topK: 3}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a server without /retrieve: error %v, want its 404", err)
	}
	passages, err := search.LoadCorpus("mhqa")
	if err != nil {
		t.Fatal(err)
	}
	ix, err := search.Build(passages[:200], search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	live := httptest.NewServer(search.NewHandler(ix, search.DefaultLimits()))
	defer live.Close()
	tools, err := evalTools(&agentFlags{retriever: live.URL + "/retrieve", topK: 3})
	if err != nil || len(tools) != 1 {
		t.Fatalf("a live retriever: %v, %d tools", err, len(tools))
	}
}
