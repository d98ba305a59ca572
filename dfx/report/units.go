package report

// Percent is a column of fractions shown in percent ("12.34%"; "–" for
// NaN) whose CSV keeps the fraction; key is its CSV key (name when empty).
func Percent(name, key string) Column {
	return Column{Name: name, Key: key, Format: "%.2f%%", Scale: 100}
}

// Millis is a column of times in seconds shown in milliseconds ("1.23 ms")
// whose CSV keeps seconds; key is its CSV key (name when empty).
func Millis(name, key string) Column {
	return Column{Name: name, Key: key, Unit: "s", Format: "%.3g ms", Scale: 1e3}
}
