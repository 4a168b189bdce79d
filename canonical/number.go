package canonical

import (
	"encoding/json"
	"math"
	"strconv"
)

// Int returns a decoded JSON value as an int64 when it is an integer: a
// json.Number without fraction or exponent (as Decode gives numbers), or a
// Go integer within int64 (for values built in code). 1.0 is not an
// integer.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// Float returns a decoded JSON value as a float64 when it is a finite
// number of any representation Int or Decode accepts, or a Go float.
func Float(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	case float64:
		f = x
	case float32:
		f = float64(x)
	default:
		n, ok := Int(v)
		return float64(n), ok
	}
	return f, !math.IsInf(f, 0) && !math.IsNaN(f)
}
