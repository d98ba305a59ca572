package main

import "github.com/dfx-lab/dfx/dfx/fields"

func init() { experiments["fields"] = fields.Reproduce }
