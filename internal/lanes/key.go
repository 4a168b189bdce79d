package lanes

import (
	"encoding/base64"

	"github.com/cairnhq/cairn/errcode"
)

// maxIDBytes bounds each lane component, so every key stays well under the
// server's subject length limits.
const maxIDBytes = 256

var keyEncoding = base64.RawURLEncoding

// Lane names one conversation lane: an agent run and a checkpoint namespace.
type Lane struct {
	RunAgentID          string `json:"run_agent_id"`
	CheckpointNamespace string `json:"checkpoint_namespace"`
}

// Key returns the lane's key in the heads bucket: both components in
// unpadded base64url joined by a dot. The alphabet is a subset of the valid
// KV key characters and the dot cannot occur inside a component, so the
// encoding is reversible. Empty or oversized components are
// invalid_compaction_request.
func (l Lane) Key() (string, error) {
	if l.RunAgentID == "" || l.CheckpointNamespace == "" {
		return "", errcode.New(errcode.InvalidRequest, "lane needs run_agent_id and checkpoint_namespace")
	}
	if len(l.RunAgentID) > maxIDBytes || len(l.CheckpointNamespace) > maxIDBytes {
		return "", errcode.New(errcode.InvalidRequest, "lane identifiers are too long")
	}
	return keyEncoding.EncodeToString([]byte(l.RunAgentID)) + "." +
		keyEncoding.EncodeToString([]byte(l.CheckpointNamespace)), nil
}

// IDKey encodes an identifier such as a checkpoint or request id as a valid
// KV key (unpadded base64url). Empty or oversized ids are
// invalid_compaction_request.
func IDKey(id string) (string, error) {
	if id == "" || len(id) > maxIDBytes {
		return "", errcode.New(errcode.InvalidRequest, "identifier is empty or too long")
	}
	return keyEncoding.EncodeToString([]byte(id)), nil
}
