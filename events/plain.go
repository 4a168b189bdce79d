package events

import "reflect"

// Plain returns the plain form of v, a struct or a pointer to one, that
// the canonical encoder takes: its members by their json tags, as this
// package's own types are encoded (plainMembers), so a type outside the
// package is described by its tags alone too.
func Plain(v any) map[string]any {
	rv := reflect.Indirect(reflect.ValueOf(v))
	return plainMembers(rv, structFields(rv.Type()))
}
