package redact_test

import (
	"fmt"

	"github.com/cairnhq/cairn/internal/redact"
)

func ExampleString() {
	out, classes := redact.String("connect with postgres://app:s3cret@db:5432/app and password=hunter22")
	fmt.Println(out)
	fmt.Println(classes)
	// Output:
	// connect with postgres://app:[REDACTED:url_password]@db:5432/app and password=[REDACTED:password_assignment]
	// [url_password password_assignment]
}

func ExampleOnly() {
	fmt.Println(redact.Only("AKIA" + "IOSFODNN7EXAMPLE"))
	fmt.Println(redact.Only("the key is AKIA" + "IOSFODNN7EXAMPLE"))
	// Output:
	// true
	// false
}
