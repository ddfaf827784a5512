// Command agentr1 trains, evaluates and inspects tool-using LLM agents with end-to-end
// reinforcement learning (Agent-R1, arXiv 2511.14460), in pure Go on a CPU.
//
// Each subcommand lives in its own file and adds itself to the command table in init.
// Run `agentr1 help` for the list and `agentr1 help CMD` for one command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: its name, a one-line summary, a usage example, and the function
// that runs it with the arguments after the name.
type command struct {
	name    string
	summary string
	usage   string                 // e.g. "agentr1 golden FILE..."
	aliases []string               // other names that run it, e.g. "report" for view
	flags   func(fs *flag.FlagSet) // declares the flags, for help; may be nil
	run     func(args []string, stdout, stderr io.Writer) error

	// flagGroup, when set, names the section of the help a flag is listed under, and
	// groupOrder orders the sections (for commands with many flags, such as train).
	flagGroup  func(name string) string
	groupOrder []string
}

var commands = map[string]*command{}

// aliases maps each command's other names to its own.
var aliases = map[string]string{}

func register(c *command) {
	for _, n := range append([]string{c.name}, c.aliases...) {
		if _, dup := commands[n]; dup || aliases[n] != "" {
			panic("agentr1: command name registered twice: " + n)
		}
	}
	commands[c.name] = c
	for _, a := range c.aliases {
		aliases[a] = c.name
	}
}

// lookup returns the command name n names, itself or through an alias.
func lookup(n string) (*command, bool) {
	if a, ok := aliases[n]; ok {
		n = a
	}
	c, ok := commands[n]
	return c, ok
}

// errUsage marks an error caused by the command line; main prints it with the usage line and
// exits with status 2.
var errUsage = errors.New("usage")

// exitError carries an exit status for a command that ran but must report failure (for example
// `golden` with failing cases) without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printHelp(stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "-help" {
		name = "help"
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "agentr1: unknown command %q\n\n", name)
		printHelp(stderr)
		return 2
	}
	stop, err := startProfiles()
	if err != nil {
		fmt.Fprintf(stderr, "agentr1 %s: %v\n", name, err)
		return 1
	}
	err = c.run(args[1:], stdout, stderr)
	if perr := stop(); perr != nil && err == nil {
		err = perr
	}
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "agentr1 %s: %v\nusage: %s\n", name, err, c.usage)
		return 2
	default:
		fmt.Fprintf(stderr, "agentr1 %s: %v\n", name, err)
		return 1
	}
}

// parseFlags parses args into fs and refuses an argument left over, the same way for every
// command: a bad flag or an extra argument is a usage error (status 2), -h is flag.ErrHelp
// (status 0).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// newFlagSet returns a flag set for command c that reports errors instead of exiting.
func newFlagSet(c *command, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentr1 "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printCommandHelp(stderr, c) }
	return fs
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "agentr1: end-to-end RL for tool-using LLM agents (Agent-R1), in pure Go.")
	fmt.Fprintln(w, "\nusage: agentr1 COMMAND [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		summary := commands[n].summary
		if a := commands[n].aliases; len(a) > 0 {
			summary += " (also: " + strings.Join(a, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-12s %s\n", n, summary)
	}
	fmt.Fprintln(w, "\nRun 'agentr1 help COMMAND' for a command's flags and an example.")
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "%s\n\nusage: %s\n", c.summary, strings.TrimRight(c.usage, "\n"))
	if c.flags != nil {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.flags(fs)
		if c.flagGroup != nil {
			printGroupedFlags(w, fs, c.flagGroup, c.groupOrder)
			return
		}
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		if b.Len() > 0 {
			fmt.Fprintf(w, "\nflags:\n%s", b.String())
		}
	}
}
