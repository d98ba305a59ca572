package mnist

import (
	"fmt"
	"os"
)

// CheckNets checks that dir ("" for the committed networks) holds every
// network of Specs, each a valid checkpoint for its spec.
func CheckNets(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("networks folder %s is not a folder", dir)
	}
	for _, s := range Specs() {
		if _, _, err := LoadNetwork(dir, s.Name); err != nil {
			return fmt.Errorf("networks folder %s: %w", dir, err)
		}
	}
	return nil
}
