package main

import "github.com/dfx-lab/dfx/toys"

func init() {
	experiments["toys"] = toys.Reproduce
	experiments["toys-others"] = toys.ReproduceOthers
}
