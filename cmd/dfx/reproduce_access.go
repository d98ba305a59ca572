package main

import "github.com/dfx-lab/dfx/dfx/access"

func init() { experiments["access"] = access.Reproduce }
