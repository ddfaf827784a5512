// Package docs holds the documents a reader meets after the README (TOUR.md, PAPER.md,
// RESULTS.md, USAGE.md) and the test that keeps their links true: every relative link in the
// repository's top-level documents and in docs/ must resolve to a file or folder inside the
// repository (and a #fragment to a heading of the linked document), and every code name a
// tour stop links to (`rl.GRPOAdvantage`, `Trainer.Step`) must be declared in the linked Go
// file. The package has no code beyond its test.
package docs
