package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"agentr1/tokenizer"
)

func init() {
	c := &command{
		name:    "tokenize",
		summary: "print the token ids of a text (or the text of ids), to check what the model sees",
		usage: "agentr1 tokenize --tokenizer FILE [--decode] [--pieces] [TEXT|-]\n" +
			"  e.g. agentr1 tokenize --tokenizer testdata/golden/tokenizer_qwen3/tokenizer.json 'Hello, world!'\n" +
			"       echo 9707 11 1879 0 | agentr1 tokenize --tokenizer testdata/golden/tokenizer_qwen3/tokenizer.json --decode -",
	}
	c.flags = tokenizeFlags(new(tokenizeOptions))
	c.run = func(args []string, stdout, stderr io.Writer) error {
		var opt tokenizeOptions
		fs := newFlagSet(c, stderr)
		tokenizeFlags(&opt)(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		return runTokenize(opt, fs.Args(), os.Stdin, stdout)
	}
	register(c)
}

type tokenizeOptions struct {
	path   string
	decode bool
	pieces bool
}

func tokenizeFlags(opt *tokenizeOptions) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) {
		fs.StringVar(&opt.path, "tokenizer", "", "tokenizer.json (or .json.gz, or a folder holding one); tokenizer_config.json beside it is read too")
		fs.BoolVar(&opt.decode, "decode", false, "read token ids (separated by spaces, commas or newlines) and print their text")
		fs.BoolVar(&opt.pieces, "pieces", false, "print one line per token: id, then the token's text quoted")
	}
}

// runTokenize encodes (or decodes) the arguments joined by spaces, or standard input for "-"
// or no argument, and prints the ids on one line separated by spaces (or the text).
func runTokenize(opt tokenizeOptions, args []string, stdin io.Reader, stdout io.Writer) error {
	if opt.path == "" {
		return fmt.Errorf("%w: --tokenizer is required", errUsage)
	}
	var input string
	if len(args) == 0 || (len(args) == 1 && args[0] == "-") {
		raw, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
		input = string(raw)
	} else {
		input = strings.Join(args, " ")
	}
	t, err := tokenizer.Load(opt.path)
	if err != nil {
		return err
	}
	var ids []int
	if opt.decode {
		fields := strings.FieldsFunc(input, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' || r == '[' || r == ']'
		})
		for _, f := range fields {
			id, err := strconv.Atoi(f)
			if err != nil || id < 0 || id >= t.VocabSize() {
				return fmt.Errorf("%w: %q is not a token id (0..%d)", errUsage, f, t.VocabSize()-1)
			}
			ids = append(ids, id)
		}
		if !opt.pieces {
			_, err := fmt.Fprintln(stdout, t.Decode(ids))
			return err
		}
	} else {
		ids = t.Encode(input)
	}
	if opt.pieces {
		for _, id := range ids {
			if _, err := fmt.Fprintf(stdout, "%d\t%q\n", id, t.Decode([]int{id})); err != nil {
				return err
			}
		}
		return nil
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	_, err = fmt.Fprintln(stdout, strings.Join(parts, " "))
	return err
}
