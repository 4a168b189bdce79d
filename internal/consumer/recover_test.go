package consumer

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/internal/errcode"
)

func TestRecoverPanics(t *testing.T) {
	h := recoverPanics(func(context.Context, *delivery) error { panic("boom") })
	if err := h(context.Background(), &delivery{}); errcode.Code(err) != errcode.Internal {
		t.Fatalf("got %v, want internal_error", err)
	}
	ok := recoverPanics(func(context.Context, *delivery) error { return nil })
	if err := ok(context.Background(), &delivery{}); err != nil {
		t.Fatal(err)
	}
}
