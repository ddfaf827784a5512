package main

import (
	"fmt"
	"io"
)

func init() {
	register(&command{
		name:    "help",
		summary: "show the commands, or one command's flags and an example",
		usage: "agentr1 help [COMMAND]\n" +
			"  e.g. agentr1 help train   (train's flags by section: run, environment, model, SFT, RL, algorithm, evaluation)",
		run: func(args []string, stdout, stderr io.Writer) error {
			if len(args) == 0 {
				printHelp(stdout)
				return nil
			}
			c, ok := lookup(args[0])
			if !ok {
				return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
			}
			printCommandHelp(stdout, c)
			return nil
		},
	})
}
