package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// stdEncode is encoding/json's form, which matches the canonical one for
// the plain ASCII keys and values used here (it sorts map keys too).
func stdEncode(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func checkAgainstStd(t *testing.T, v any) {
	t.Helper()
	got, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := stdEncode(t, v); !bytes.Equal(got, want) {
		t.Fatalf("Encode = %s\nwant     %s", got, want)
	}
}

// Objects of one size with different keys, in one value, so the key order
// kept for one is tried on the next.
func TestKeyOrderSameSizeDifferentKeys(t *testing.T) {
	checkAgainstStd(t, []any{
		map[string]any{"b": 1, "a": 2, "c": 3},
		map[string]any{"b": 1, "a": 2, "d": 3},
		map[string]any{"a": 1, "b": 2, "c": 3},
		map[string]any{"c": 1, "z": 2, "a": 3},
		map[string]any{"a": 1, "b": 2, "c": 3},
		map[string]any{"x": map[string]any{"b": 1, "a": 2, "c": 3}, "a": 1, "b": 2},
	})
}

// An object whose key is not valid UTF-8, or with a value outside the
// domain, is rejected whether or not an object of its size was written
// before it, and does not spoil the order kept for later objects.
func TestKeyOrderInvalidKey(t *testing.T) {
	good := map[string]any{"a": 1, "b": 2}
	bad := map[string]any{"a": 1, "\xff": 2}
	badValue := map[string]any{"a": 1, "b": func() {}}
	for _, v := range []any{
		[]any{bad},
		[]any{good, bad},
		[]any{bad, good},
		[]any{badValue, good},
		[]any{good, badValue},
		map[string]any{"a": bad, "b": 1},
	} {
		if _, err := Encode(v); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("Encode(%q) = %v; want ErrNotCanonical", v, err)
		}
	}
	checkAgainstStd(t, []any{good, good})
}

// A map changed between encodings (same size, one key swapped) must not be
// written with the old keys; nor must one that shrinks or grows.
func TestKeyOrderMapMutated(t *testing.T) {
	m := map[string]any{"event_id": "e1", "role": "user", "content": "hi"}
	checkAgainstStd(t, []any{m, m})
	delete(m, "role")
	m["a_first"] = true
	checkAgainstStd(t, []any{m, m})
	delete(m, "content")
	checkAgainstStd(t, []any{m, m})
	m["content"], m["zz"] = "again", 1
	checkAgainstStd(t, []any{m, m})
}

// Random objects drawn from a small key alphabet, so many share a size and
// most of their keys.
func TestKeyOrderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := []string{"a", "b", "c", "d", "e", "f", "aa", "ab", "", "zz", "q\"uote", "é", "t\tab"}
	for range 200 {
		var list []any
		for range 20 {
			m := map[string]any{}
			for range r.IntN(len(keys) + 1) {
				if r.IntN(4) == 0 {
					m[keys[r.IntN(len(keys))]] = map[string]any{keys[r.IntN(len(keys))]: 1, "a": 2}
				} else {
					m[keys[r.IntN(len(keys))]] = r.IntN(100)
				}
			}
			list = append(list, m)
		}
		checkAgainstStd(t, list)
	}
}

// More keys than a kept order holds, and more sizes than there are slots.
func TestKeyOrderLargeAndManySizes(t *testing.T) {
	var list []any
	for n := range 3 * maxKeyOrder {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%03d", (i*37)%(3*maxKeyOrder))] = i
		}
		list = append(list, m, m)
	}
	checkAgainstStd(t, list)
}

// Goroutines hashing objects of the same size with different keys through
// pooled encoders must each get their own answer. Run with -race.
func TestKeyOrderConcurrent(t *testing.T) {
	values := make([]map[string]any, 8)
	want := make([]string, len(values))
	for i := range values {
		values[i] = map[string]any{fmt.Sprint("k", i): i, "shared": "x", fmt.Sprint("z", i%3): nil}
		want[i] = mustHash(t, values[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(values))
	for g := range values {
		wg.Go(func() {
			for n := range 500 {
				i := (g + n) % len(values)
				if got, err := Hash(values[i]); err != nil || got != want[i] {
					errs <- fmt.Errorf("Hash(%v) = %s, %v; want %s", values[i], got, err, want[i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func mustHash(t *testing.T, v any) string {
	t.Helper()
	h, err := Hash(v)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Kept keys of many lengths, written into buffers of every spare capacity,
// including a caller's dst.
func TestKeyOrderKeyLengths(t *testing.T) {
	const keyMove = 32
	for n := range 2*keyMove + 3 {
		long := strings.Repeat("k", n)
		m := map[string]any{long: 1, "b" + long: "x", "\"" + long: true}
		v := []any{m, m, m}
		want := stdEncode(t, v)
		for spare := range 2*keyMove + 3 {
			dst := make([]byte, 3, 3+spare)
			got, err := AppendEncode(dst, v)
			if err != nil || !bytes.Equal(got[3:], want) {
				t.Fatalf("key length %d, spare %d: got %s, %v; want %s", n, spare, got[3:], err, want)
			}
		}
	}
}
