package registry

// The `_schemas` record format: Confluent's, so that a topic written by
// either reads in the other. Key and value are JSON.
//
//	key   {"keytype":"SCHEMA","subject":"s","version":3,"magic":1}
//	value {"subject":"s","version":3,"id":7,"schemaType":"JSON","schema":"...",
//	       "references":[...],"deleted":false}     (schemaType absent for AVRO)
//	      null: the version was deleted permanently
//
//	key   {"keytype":"CONFIG","subject":"s"|null,"magic":0}
//	value {"compatibilityLevel":"FULL"}             null: back to the default
//
//	key   {"keytype":"MODE","subject":"s"|null,"magic":0}
//	value {"mode":"READONLY"}                       null: back to the default
//
//	key   {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
//	value {"subject":"s","version":3}  every version up to 3 soft-deleted
//
// Tributary writes a soft delete of a subject as one SCHEMA record per
// version with deleted=true (the state lives in the keys compaction keeps)
// and reads DELETE_SUBJECT too. A key it does not know (NOOP, CLEAR_SUBJECT,
// a newer keytype) is skipped, as Confluent skips one.

import "encoding/json"

const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyMode          = "MODE"
	keyDeleteSubject = "DELETE_SUBJECT"
)

type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

// Reference is a schema reference: the name the schema uses for a type
// defined by the version of another subject.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type schemaValue struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	Schema     string      `json:"schema"`
	References []Reference `json:"references,omitempty"`
	Deleted    bool        `json:"deleted"`
}

type configValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

type modeValue struct {
	Mode string `json:"mode"`
}

type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func schemaKey(subject string, version int) []byte {
	b, _ := json.Marshal(recordKey{KeyType: keySchema, Subject: &subject, Version: version, Magic: 1})
	return b
}

// subjectKey is a CONFIG or MODE key; subject "" is the global one.
func subjectKey(keyType, subject string) []byte {
	k := recordKey{KeyType: keyType}
	if subject != "" {
		k.Subject = &subject
	}
	b, _ := json.Marshal(k)
	return b
}

// noopKey is the key of the record a registry writes at start to find the
// end of the topic; Confluent's readers skip it as ours do.
func noopKey() []byte { return []byte(`{"keytype":"NOOP","magic":0}`) }
