package canonical_test

import (
	"fmt"

	"github.com/cairnhq/cairn/canonical"
)

// Keys are sorted by their bytes, nothing is indented, and only control
// characters, '"' and '\' are escaped.
func ExampleEncode() {
	b, _ := canonical.Encode(map[string]any{"b": 1, "a": []any{true, nil, "x/y<\t>"}, "é": 1.0e3})
	fmt.Println(string(b))
	// Output:
	// {"a":[true,null,"x/y<\t>"],"b":1,"é":1.0e3}
}

func ExampleHash() {
	h, _ := canonical.Hash(map[string]any{"origin": "direct_user"})
	fmt.Println(h)
	// Output:
	// b1e4ff039f83558a6feec68fee9cd5148af0eb44508c4ab90aa8cf0730453f94
}

// Decode keeps integers and floats apart and rejects duplicate keys.
func ExampleDecode() {
	v, _ := canonical.Decode([]byte(`[1, 1.0]`))
	b, _ := canonical.Encode(v)
	fmt.Println(string(b))
	_, err := canonical.Decode([]byte(`{"a":1,"a":2}`))
	fmt.Println(err)
	// Output:
	// [1,1.0]
	// canonical: duplicate object key at byte 7: key "a" appears twice
}
