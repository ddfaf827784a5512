// Package docs holds the documents a reader meets after the README (TOUR.md, PAPER.md,
// RESULTS.md, USAGE.md) and the tests that keep them true: every relative link in the
// repository's top-level documents and in docs/ must resolve to a file or folder inside the
// repository (and a #fragment to a heading of the linked document), every code name a tour
// stop links to (`rl.GRPOAdvantage`, `Trainer.Step`) must be declared in the linked Go file,
// and DESIGN.md's package graph must match the imports of the module's packages
// (dag_test.go). The package has no code beyond its tests.
package docs
