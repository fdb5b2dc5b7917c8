package gate

import _ "embed"

// RequestSchema is the JSON Schema (draft 2020-12) of a request, the file
// gate/request.schema.json. It states the structural rules only; ParseRequest
// and Request.Check are the authority (byte lengths, duplicate keys and
// everything on disk are beyond a schema).
//
//go:embed request.schema.json
var RequestSchema []byte

// ResultSchema is the JSON Schema (draft 2020-12) of a result, the file
// gate/result.schema.json.
//
//go:embed result.schema.json
var ResultSchema []byte
