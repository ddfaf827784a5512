package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"agentr1/env/search"
)

func init() {
	c := &command{
		name:    "serve",
		summary: "run a service; 'serve search' answers Search-R1's retrieval API (POST /retrieve) with BM25",
		usage: "agentr1 serve search (--corpus FILE|mhqa | --index INDEX) [--addr HOST:PORT] [--log-format text|json]\n" +
			"  e.g. agentr1 serve search --corpus mhqa --addr 127.0.0.1:8000\n" +
			"       curl -s localhost:8000/retrieve -d '{\"queries\": [\"Maria Golovin\"], \"topk\": 3, \"return_scores\": true}'",
	}
	c.flags = serveFlags(new(serveOptions))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		if len(args) == 0 || args[0] != "search" {
			return fmt.Errorf("%w: the only service is \"search\"", errUsage)
		}
		var opt serveOptions
		fs := newFlagSet(c, stderr)
		serveFlags(&opt)(fs)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		logger, err := newLogger(stderr, opt.logFormat)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := runServeSearch(ctx, opt, logger); err != nil {
			if errors.Is(err, errUsage) {
				return err
			}
			logger.Error("search service failed", "err", err)
			return exitError{code: 1}
		}
		return nil
	}
	register(c)
}

type serveOptions struct {
	src       indexSource
	addr      string
	limits    search.Limits
	drain     time.Duration
	logFormat string
}

func serveFlags(opt *serveOptions) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		def := search.DefaultLimits()
		indexSourceFlags(fs, &opt.src)
		fs.StringVar(&opt.addr, "addr", "127.0.0.1:8000", "HOST:PORT to listen on")
		fs.Int64Var(&opt.limits.MaxBodyBytes, "max-body", def.MaxBodyBytes, "largest request body in bytes")
		fs.IntVar(&opt.limits.MaxQueries, "max-queries", def.MaxQueries, "most queries in one request")
		fs.IntVar(&opt.limits.MaxQueryBytes, "max-query-bytes", def.MaxQueryBytes, "longest query in bytes")
		fs.IntVar(&opt.limits.MaxTopK, "max-topk", def.MaxTopK, "largest topk a request may ask for")
		fs.IntVar(&opt.limits.DefaultTopK, "topk", def.DefaultTopK, "topk when a request gives none")
		fs.IntVar(&opt.limits.MaxResults, "max-results", def.MaxResults, "most passages one answer may hold (queries x topk); more is refused with 413")
		fs.IntVar(&opt.limits.Compute, "compute", 0, "requests decoded, queries searched or answers encoded at once (0: one per core); the service runs one more P (GOMAXPROCS) than this, for the network and /healthz")
		fs.IntVar(&opt.limits.MaxInFlight, "max-in-flight", def.MaxInFlight, "most /retrieve requests answered at once; more are refused with 429 and Retry-After")
		fs.DurationVar(&opt.drain, "drain", 10*time.Second, "on SIGINT/SIGTERM, how long in-flight requests may take to finish")
		declareLogFlag(fs, &opt.logFormat)
	}
}

// runServeSearch serves the index until ctx is cancelled (SIGINT or SIGTERM), then drains;
// it logs when it is ready and when it has stopped.
func runServeSearch(ctx context.Context, opt serveOptions, log *slog.Logger) error {
	lim := opt.limits
	if err := lim.Validate(); err != nil {
		return fmt.Errorf("%w: every --max-* limit and --topk must be positive, --compute not negative, and --topk at most --max-topk", errUsage)
	}
	ix, took, err := opt.src.load()
	if err != nil {
		return err
	}
	// Every core computes (--compute, one per core by default), and one P more than that is
	// left for the network: new connections and /healthz are then answered at once, not after
	// the runtime's next 10 ms look for network events behind a queue of searches.
	if lim.Compute == 0 {
		lim.Compute = runtime.GOMAXPROCS(0)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(lim.Compute + 1)) // restored for in-process callers (tests)
	h := search.NewHandler(ix, lim)
	err = search.ListenAndServe(ctx, opt.addr, h, opt.drain, func(a net.Addr) {
		log.Info(fmt.Sprintf("serving %d passages (index ready in %.2f s) on http://%s/retrieve", ix.Len(), took.Seconds(), a),
			"passages", ix.Len(), "index_s", took.Seconds(), "url", fmt.Sprintf("http://%s/retrieve", a))
	})
	if err == nil {
		log.Info("search service stopped")
	}
	return err
}
