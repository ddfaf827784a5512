package main

import (
	"path/filepath"
	"strings"

	"agentr1/report"
	"agentr1/rl/pipeline"
)

// writeRunConfig writes cfg as the run directory's config.json. The folders inside the run
// (checkpoints, the SFT base) are written relative to it, so a copied or moved run still
// reads; folders outside it are written as absolute paths, which do not depend on the
// directory the run was started from.
func writeRunConfig(dir string, cfg pipeline.Config) error {
	cfg.CheckpointDir = pathInRun(dir, cfg.CheckpointDir)
	cfg.BasePolicy = pathInRun(dir, cfg.BasePolicy)
	return writeJSONFile(filepath.Join(dir, report.ConfigFile), cfg)
}

// readRunConfig decodes the run directory's config.json over cfg and resolves its relative
// folders against the directory (writeRunConfig).
func readRunConfig(dir string, cfg *pipeline.Config) error {
	if err := loadConfigFile(filepath.Join(dir, report.ConfigFile), cfg); err != nil {
		return err
	}
	cfg.CheckpointDir = resolveInRun(dir, cfg.CheckpointDir)
	cfg.BasePolicy = resolveInRun(dir, cfg.BasePolicy)
	return nil
}

// pathInRun is path relative to the run directory dir when it lies inside it, else absolute
// ("" stays "").
func pathInRun(dir, path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(absDir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs
	}
	return rel
}

// resolveInRun is the inverse of pathInRun: a relative path is taken inside dir.
func resolveInRun(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
