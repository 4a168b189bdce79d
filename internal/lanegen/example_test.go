package lanegen_test

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/lanegen"
)

func ExampleLane() {
	lane := lanegen.Lane(lanegen.Options{Events: 4, Seed: 1})
	for _, e := range lane {
		fmt.Println(e["chat_seq"], e["role"])
	}
	// Output:
	// 1 user
	// 2 user
	// 3 assistant
	// 4 tool
}

func ExampleRequest() {
	req := lanegen.Request(lanegen.RequestOptions{Lane: lanegen.Options{Events: 300, Seed: 1}})
	fmt.Println(req["trigger"], len(req["events"].([]any)), req["model_profile"].(map[string]any)["context_limit_kind"])
	// Output: manual 300 separate_input
}
