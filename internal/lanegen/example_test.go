package lanegen_test

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/lanegen"
)

func ExampleLane() {
	lane := lanegen.Lane(lanegen.Options{Events: 4, Seed: 1})
	for _, e := range lane {
		fmt.Println(e.ChatSeq, e.Role)
	}
	// Output:
	// 1 user
	// 2 user
	// 3 assistant
	// 4 tool
}

func ExampleRequest() {
	req := lanegen.Request(lanegen.RequestOptions{Lane: lanegen.Options{Events: 300, Seed: 1}})
	fmt.Println(req.Trigger, len(req.Events), req.ModelProfile.ContextLimitKind)
	// Output: manual 300 separate_input
}
