package lanes

import (
	"strings"

	"github.com/cairnhq/cairn/errcode"
)

// ParseKey reverses Key.
func ParseKey(key string) (Lane, error) {
	agent, ns, ok := strings.Cut(key, ".")
	if !ok || agent == "" || ns == "" {
		return Lane{}, errcode.New(errcode.InvalidRequest, "malformed lane key")
	}
	a, err1 := keyEncoding.DecodeString(agent)
	n, err2 := keyEncoding.DecodeString(ns)
	if err1 != nil || err2 != nil {
		return Lane{}, errcode.New(errcode.InvalidRequest, "malformed lane key")
	}
	return Lane{RunAgentID: string(a), CheckpointNamespace: string(n)}, nil
}
