package mixture

import "github.com/dfx-lab/dfx/dfx/schedule"

// scheduleAt evaluates the schedule at q.T (already checked by checkQuery).
func scheduleAt(q Query) (schedule.Coefficients, error) {
	return schedule.At(q.Schedule, q.T)
}
