package main

import "github.com/dfx-lab/dfx/toys"

func init() { experiments["access"] = toys.ReproduceAccess }
