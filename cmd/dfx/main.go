// Command dfx is the command line of the dfx toolkit:
//
//	dfx analytic   exact quantities of a data mixture at given points (JSON)
//	dfx ckpt       verify a checkpoint, list its variables and configuration
//	dfx reproduce  regenerate the paper's tables and figures into figures/
//
// Bad input prints one line on stderr and exits with status 2.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: it gets its arguments and returns an exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"analytic":  {"exact log q_t, score, denoiser, Fisher trace / matrix / products of a data mixture", runAnalytic},
	"ckpt":      {"verify a checkpoint and list its variables and configuration: dfx ckpt [--json] FILE", runCkpt},
	"reproduce": {"regenerate tables and figures: dfx reproduce <experiment|all> [-quick] [-out figures]", runReproduce},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		return runVersion(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dfx: unknown command %q (want one of %s)\n", args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dfx <command> [flags]   (dfx <command> -h for its flags; dfx --version)")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// fail prints a one-line error and returns exit status 2.
func fail(stderr io.Writer, cmd string, err error) int {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	fmt.Fprintf(stderr, "dfx %s: %s\n", cmd, msg)
	return 2
}
