package consumer

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn/errcode"
)

func TestRecoverPanics(t *testing.T) {
	h := recoverPanics(func(context.Context, *delivery) error { panic("boom") })
	err := h(context.Background(), &delivery{})
	if e := errcode.As(err); e == nil || e.Code != errcode.Internal || e.Details["panic"] != "boom" {
		t.Fatalf("got %v, want internal_error naming the panic", err)
	}
	ok := recoverPanics(func(context.Context, *delivery) error { return nil })
	if err := ok(context.Background(), &delivery{}); err != nil {
		t.Fatal(err)
	}
}
