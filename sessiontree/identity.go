package sessiontree

import "github.com/transcriptstore/transcript/transcript"

// Identity is who a tree acts for: the namespace (tenant) and the user it is
// bound to when it is opened. The namespace decides every local path and store
// key of the tree, for its whole life, including flushes that run later in the
// background.
type Identity struct {
	// Namespace is the owner's namespace (tenant or user); empty means
	// transcript.DefaultNamespace. It is validated like a TranscriptRef part.
	Namespace string
	// UserID identifies the acting user (informational; not part of any path).
	UserID string
}

// NamespaceName returns the effective namespace.
func (id Identity) NamespaceName() string {
	if id.Namespace == "" {
		return transcript.DefaultNamespace
	}
	return id.Namespace
}

// Ref returns the TranscriptRef of one session in id's namespace, validated.
func (id Identity) Ref(agentID, sessionID string) (transcript.TranscriptRef, error) {
	ref := transcript.TranscriptRef{Namespace: id.NamespaceName(), AgentID: agentID, SessionID: sessionID}
	if err := ref.Validate(); err != nil {
		return transcript.TranscriptRef{}, err
	}
	return ref, nil
}
