package cli

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v as one line of JSON (escaped with EscapeJSON) to w. It is the
// --json output of every command: a summary is one such line, a listing one line
// per item. docs/cli-json.schema.json describes the objects of each command.
func WriteJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(EscapeJSON(data), '\n'))
	return err
}
